"""Writes test/oracle/data/rounding.txt: float32 inputs and their round-to-nearest-even
conversions to bf16, f8E4M3FN and f8E5M2 as computed by ml_dtypes (an implementation
independent of ours). runtime/cpu/Numerics.cpp must reproduce every line.

Usage: python rounding_cases.py OUT.txt        (write)
       python rounding_cases.py --check FILE  (exit 1 unless FILE is what this writes)
Format (version 1): a header line, then one case per line:
  <input as float32 hex bits> <bf16 result> <e4m3fn result> <e5m2 result>
results as float32 hex bits of the converted value (NaN written as 'nan').
"""
import struct
import sys

import ml_dtypes
import numpy as np


def bits(value):
    value = np.float32(value)
    if np.isnan(value):
        return "nan"
    return "%08x" % struct.unpack("<I", struct.pack("<f", value))[0]


def cases():
    rng = np.random.default_rng(20261130)
    values = [0.0, -0.0, 1.0, -1.0, 448.0, 464.0, 465.0, 480.0, 57344.0, 61440.0, 61441.0,
              1e-10, -1e-10, 2.0**-9, 2.0**-10, 2.0**-16, 2.0**-17, 2.0**-18, 3.0e38, -3.4e38,
              float("inf"), float("-inf"), 1.00390625, 1.01171875, 0.1, 1.0 / 3.0]
    # Exact ties for each format's spacing near 1 and in subnormal ranges.
    for e in range(-20, 20):
        for m in (1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 1.0 + 2.0**-4, 1.0 + 3 * 2.0**-4,
                  1.0 + 2.0**-3, 1.0 + 3 * 2.0**-3):
            values.append(m * 2.0**e)
    values += list(rng.standard_normal(2000).astype(np.float32))
    values += list((rng.standard_normal(1000) * 300).astype(np.float32))
    values += list((rng.standard_normal(1000) * 1e-3).astype(np.float32))
    values += list(rng.uniform(-70000, 70000, 500).astype(np.float32))
    return values


def render():
    lines = ["# mlperfc rounding cases v1: input bf16 f8E4M3FN f8E5M2 (float32 bits; ml_dtypes %s)"
             % ml_dtypes.__version__]
    for value in cases():
        x = np.float32(value)
        results = []
        for dtype in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
            with np.errstate(over="ignore", invalid="ignore"):
                results.append(bits(np.array([x]).astype(dtype).astype(np.float32)[0]))
        lines.append(" ".join([bits(x)] + results))
    return "\n".join(lines) + "\n"


def main():
    if sys.argv[1] == "--check":
        if open(sys.argv[2]).read() != render():
            sys.exit(f"{sys.argv[2]} differs from what ml_dtypes gives now: regenerate it")
        print("rounding data matches ml_dtypes")
        return
    with open(sys.argv[1], "w") as f:
        f.write(render())


if __name__ == "__main__":
    main()
