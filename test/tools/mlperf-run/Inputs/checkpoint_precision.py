"""Checkpoints in another precision than the plan's, and what --init-from made of them.

Usage:
  checkpoint_precision.py to-f32 IN.safetensors OUT.safetensors [--exact] [--huge NAME]
      IN's bf16 tensors as f32, as a Hugging Face checkpoint (no metadata). Without --exact
      each value gets low mantissa bits below bf16's precision (every 7th element exactly half
      a bf16 step, so that rounding meets ties), so no value is a bf16 value. --huge makes
      NAME's first element f32's largest value, which bf16 cannot hold.
  checkpoint_precision.py check-rounded F32.safetensors STATE.safetensors...
      STATE (mlperf-run --save of a bf16 plan started --init-from F32; one file per rank of a
      distributed run) holds each parameter as F32's value rounded to bf16, nearest with ties
      to even, and its f32 master (optimizer.master.<name>) as F32's value, bit for bit: the
      rank's tensor-parallel part and ZeRO shard of them, as its "split:" and "shard:"
      metadata say.
  checkpoint_precision.py check-widened BF16.safetensors STATE.safetensors
      STATE (of an f32 plan started --init-from BF16) holds each parameter as BF16's value.

The rounding here is written for the test from the bit patterns (not the runtime's code).
Standard library only.
"""
import json
import struct
import sys
from array import array

from to_hf_checkpoint import write  # the safetensors writer of these helpers


def read(path, with_metadata=False):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    metadata = header.pop("__metadata__", {})
    body = data[8 + length:]
    tensors = {name: (entry["dtype"], entry["shape"],
                      body[entry["data_offsets"][0]:entry["data_offsets"][1]])
               for name, entry in header.items()}
    return (tensors, metadata) if with_metadata else tensors


def fields(text):
    return dict(item.split("=", 1) for item in text.split(","))


def rank_part(values, shape, metadata, name, parameter):
    """The part of the full tensor `values` [shape] that a rank's file holds of `name`: the
    tensor-parallel split of its `parameter` along a dim (each block of that dim split on its
    own; optimizer state is of the rank's part), then its ZeRO shard of the flattened result."""
    values, shape = list(values), list(shape)
    if "split:" + parameter in metadata:
        split = fields(metadata["split:" + parameter])
        dim, parts, part = int(split["dim"]), int(split["parts"]), int(split["part"])
        blocks = [int(b) for b in split["blocks"].split(";")] if "blocks" in split else [shape[dim]]
        inner = 1
        for size in shape[dim + 1:]:
            inner *= size
        outer = len(values) // (shape[dim] * inner)
        rows = []  # the full tensor's indices along dim that this part holds, in order
        start = 0
        for block in blocks:
            width = block // parts
            rows += range(start + part * width, start + (part + 1) * width)
            start += block
        values = [values[(o * shape[dim] + r) * inner + i]
                  for o in range(outer) for r in rows for i in range(inner)]
        shape[dim] = len(rows)
    if "shard:" + name in metadata:
        shard = fields(metadata["shard:" + name])
        parts, part = int(shard["parts"]), int(shard["part"])
        size = len(values) // parts
        values, shape = values[part * size:(part + 1) * size], [size]
    return values, shape


def words(raw, code):
    values = array(code)
    values.frombytes(raw)
    assert sys.byteorder == "little"
    return values


def rne_bf16(bits32):
    """The bf16 bit pattern nearest the finite f32 bit pattern, ties to even."""
    return (bits32 + 0x7FFF + ((bits32 >> 16) & 1)) >> 16


def to_f32(source, target, exact, huge):
    out = {}
    for name, (dtype, shape, raw) in read(source).items():
        if dtype != "BF16":
            sys.exit(f"{name} is {dtype}, not BF16")
        wide = array("I")
        for i, half in enumerate(words(raw, "H")):
            low = 0 if exact else (0x8000 if i % 7 == 0 else (i * 2654435761 >> 7) & 0xFFFF or 1)
            wide.append(half << 16 | low)
        if name == huge:
            wide[0] = 0x7F7FFFFF
        out[name] = ("F32", shape, wide.tobytes())
    write(target, out)


def check_rounded(wide_path, *state_paths):
    wide = read(wide_path)
    parameters = masters = 0
    for state_path in state_paths:
        state, metadata = read(state_path, with_metadata=True)
        for name, (dtype, shape, raw) in sorted(wide.items()):
            if name not in state:
                continue  # another pipeline stage's
            full = words(raw, "I")
            got_dtype, got_shape, got = state[name]
            expected, expected_shape = rank_part([rne_bf16(b) for b in full], shape, metadata, name,
                                                name)
            if got_dtype != "BF16" or got_shape != expected_shape:
                sys.exit(f"{state_path}: {name} is {got_dtype}{got_shape}, not BF16{expected_shape}")
            if list(words(got, "H")) != expected:
                sys.exit(f"{state_path}: {name} is not the checkpoint rounded to bf16 (RNE)")
            parameters += 1
            key = "optimizer.master." + name
            if key in state:
                expected, expected_shape = rank_part(full, shape, metadata, key, name)
                got_dtype, got_shape, got = state[key]
                if got_dtype != "F32" or got_shape != expected_shape or \
                        list(words(got, "I")) != expected:
                    sys.exit(f"{state_path}: {key} is not the checkpoint's value")
                masters += 1
    if parameters == 0:
        sys.exit("no parameter of the checkpoint in the states")
    print(f"{parameters} parameters rounded to bf16, {masters} masters exact")


def check_widened(narrow_path, state_path):
    narrow, state = read(narrow_path), read(state_path)
    for name, (dtype, shape, raw) in sorted(narrow.items()):
        got_dtype, got_shape, got = state[name]
        expected = array("I", (h << 16 for h in words(raw, "H")))
        if got_dtype != "F32" or got_shape != shape or words(got, "I") != expected:
            sys.exit(f"{name}: the parameter is not the checkpoint's bf16 value widened")
    print(f"{len(narrow)} parameters widened exactly")


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "to-f32":
        huge = args[args.index("--huge") + 1] if "--huge" in args else None
        to_f32(args[0], args[1], "--exact" in args[2:], huge)
    elif command == "check-rounded":
        check_rounded(*args)
    elif command == "check-widened":
        check_widened(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
