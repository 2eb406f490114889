"""Exits 0 when two safetensors files hold the same tensors, byte for byte.

Usage: same_tensors.py A.safetensors B.safetensors. The metadata (which names the plan that
wrote the file) may differ; names, dtypes, shapes and every data byte must not.
"""
import json
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    header.pop("__metadata__", None)
    return header, data[8 + length :]


def main():
    (header_a, data_a), (header_b, data_b) = load(sys.argv[1]), load(sys.argv[2])
    if header_a != header_b:
        sys.exit(f"{sys.argv[1]} and {sys.argv[2]} hold different tensors")
    for name, entry in sorted(header_a.items()):
        begin, end = entry["data_offsets"]
        if data_a[begin:end] != data_b[begin:end]:
            sys.exit(f"{name} differs between {sys.argv[1]} and {sys.argv[2]}")
    print(f"{len(header_a)} tensors identical")


if __name__ == "__main__":
    main()
