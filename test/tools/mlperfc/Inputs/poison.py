"""Copies a safetensors file, setting the first element of 'lm_head.weight' to NaN (the bf16
bit pattern 0x7fc0), as another tool would write it: without mlperfc's checksum (which would
otherwise, rightly, refuse the edit). Standard library only. Usage: poison.py IN OUT"""
import json
import struct
import sys

data = open(sys.argv[1], "rb").read()
(size,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + size])
body = bytearray(data[8 + size:])
assert header["lm_head.weight"]["dtype"] == "BF16"
begin = header["lm_head.weight"]["data_offsets"][0]
body[begin:begin + 2] = struct.pack("<H", 0x7FC0)
header.get("__metadata__", {}).pop("checksum", None)
encoded = json.dumps(header).encode()
encoded += b" " * ((8 - len(encoded) % 8) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(encoded)) + encoded + bytes(body))
