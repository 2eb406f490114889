"""Copies a safetensors file, setting the first element of 'lm_head.weight' to NaN (the bf16
bit pattern 0x7fc0). Standard library only. Usage: poison.py IN OUT"""
import json
import struct
import sys

data = open(sys.argv[1], "rb").read()
(size,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + size])
begin = 8 + size + header["lm_head.weight"]["data_offsets"][0]
assert header["lm_head.weight"]["dtype"] == "BF16"
data = data[:begin] + struct.pack("<H", 0x7FC0) + data[begin + 2:]
open(sys.argv[2], "wb").write(data)
