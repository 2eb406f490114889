"""Copies an mlperf-run train state without the tensors whose names contain a substring.

Usage: drop_tensors.py IN.safetensors OUT.safetensors SUBSTRING. The metadata is kept; its
checksum is recomputed as mlperf-run writes it (CRC-32 over each metadata key and value and
each tensor's name, NUL-terminated, and bytes, in name order), so that the file is a valid
train state that lacks those tensors (exits 1 when IN's own checksum does not verify).
"""
import json
import struct
import sys
import zlib


def checksum(metadata, tensors):
    crc = zlib.crc32(b"")
    for key in sorted(metadata):
        if key != "checksum":
            crc = zlib.crc32(key.encode() + b"\0", crc)
            crc = zlib.crc32(metadata[key].encode() + b"\0", crc)
    for name in sorted(tensors):
        crc = zlib.crc32(name.encode() + b"\0", crc)
        crc = zlib.crc32(tensors[name], crc)
    return "crc32:%08x" % crc


def main():
    source, target, pattern = sys.argv[1:4]
    with open(source, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    metadata = header.pop("__metadata__", {})
    tensors = {name: body[e["data_offsets"][0]:e["data_offsets"][1]] for name, e in header.items()}
    if metadata.get("checksum") != checksum(metadata, tensors):
        sys.exit(f"{source}: its checksum does not verify")
    kept = {name: data for name, data in tensors.items() if pattern not in name}
    metadata["checksum"] = checksum(metadata, kept)
    out, chunks, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(kept):
        out[name] = {**header[name], "data_offsets": [offset, offset + len(kept[name])]}
        chunks.append(kept[name])
        offset += len(kept[name])
    encoded = json.dumps(out).encode()
    encoded += b" " * ((8 - len(encoded) % 8) % 8)
    with open(target, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))


if __name__ == "__main__":
    main()
