"""Reads a Megatron MMIDIDX dataset with the standard library only, following Megatron-LM's
`megatron/core/datasets/indexed_dataset.py` layout, and prints each document as text, or with --ids as its token ids.

Usage: read_megatron.py PREFIX [--ids]
"""
import struct
import sys

DTYPES = {1: ("B", 1), 2: ("b", 1), 3: ("h", 2), 4: ("i", 4), 5: ("q", 8), 8: ("H", 2)}


def main():
    prefix = sys.argv[1]
    with open(prefix + ".idx", "rb") as f:
        idx = f.read()
    assert idx[:9] == b"MMIDIDX\x00\x00", "bad magic"
    (version,) = struct.unpack_from("<Q", idx, 9)
    assert version == 1, version
    code = idx[17]
    sequences, documents = struct.unpack_from("<QQ", idx, 18)
    at = 34
    lengths = struct.unpack_from("<%di" % sequences, idx, at)
    at += 4 * sequences
    pointers = struct.unpack_from("<%dq" % sequences, idx, at)
    at += 8 * sequences
    doc_index = struct.unpack_from("<%dq" % documents, idx, at)
    assert at + 8 * documents == len(idx), "trailing bytes"
    fmt, size = DTYPES[code]
    with open(prefix + ".bin", "rb") as f:
        data = f.read()
    print(f"dtype {code} sequences {sequences} documents {documents - 1}")
    for d in range(documents - 1):
        tokens = []
        for s in range(doc_index[d], doc_index[d + 1]):
            tokens += struct.unpack_from("<%d%s" % (lengths[s], fmt), data, pointers[s])
        if "--ids" in sys.argv[2:]:
            print(f"document {d}: {' '.join(map(str, tokens))}")
            continue
        text = "".join(chr(t) if t < 256 else f"<{t}>" for t in tokens)
        print(f"document {d}: {text!r}")


if __name__ == "__main__":
    main()
