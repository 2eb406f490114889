"""Prints a safetensors file's tensor count, then each tensor's name, dtype and shape, sorted.

usage: list_safetensors.py FILE   (exits 1 on a file that is not safetensors)
"""
import json
import struct
import sys


def main():
    with open(sys.argv[1], "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            print("not a safetensors file: no header length")
            return 1
        header = json.loads(f.read(struct.unpack("<Q", raw)[0]))
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    print(f"{len(tensors)} tensors")
    for name in sorted(tensors):
        print(f"{name} {tensors[name]['dtype']} {tensors[name]['shape']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
