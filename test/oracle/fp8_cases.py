"""Writes test/oracle/data/fp8_quantize.txt: tg.fp8_quantize (scale, round to nearest even,
saturate) as numpy and ml_dtypes compute it (an implementation independent of ours):
  q = float8(clip(float32(x) * float32(scale), -max, max))
with numpy's float32 product (one rounding) and ml_dtypes' conversion. runtime/cpu's
quantizeFp8 must reproduce every case (NumericsTest.Fp8QuantizeMatchesMlDtypes).

Usage: python fp8_cases.py OUT.txt        (write)
       python fp8_cases.py --check FILE  (exit 1 unless FILE is what this writes)

Format (version 1):
  a header line;
  'case <x f32 hex> <scale f32 hex> <e4m3 code> <e5m2 code>' lines: inputs on both sides of
    every rounding boundary (midpoint) of both formats, at scale 1 and at scales that are not
    powers of two (the product's f32 rounding decides), saturation and specials;
  'bf16 <scale f32 hex> <format>' then 512 lines of 128 hex digits: the code of every bf16
    bit pattern 0..65535 in order (exhaustive);
codes are the fp8 encodings in hex; every NaN is written ff.
"""
import struct
import sys

import ml_dtypes
import numpy as np

FORMATS = ((ml_dtypes.float8_e4m3fn, 448.0), (ml_dtypes.float8_e5m2, 57344.0))
SCALES = (1.0, 448.0 / 3.7, 0.0078125 * 3.0, 57344.0 / 1234.5)


def f32_hex(value):
    return "%08x" % struct.unpack("<I", struct.pack("<f", np.float32(value)))[0]


def quantize(x, scale, dtype, limit):
    """x: float32 array; the fp8 codes as uint8 (NaN as 0xff)."""
    with np.errstate(over="ignore", invalid="ignore"):
        product = np.asarray(x, dtype=np.float32) * np.float32(scale)
        clipped = np.where(np.isnan(product), product,
                           np.clip(product, np.float32(-limit), np.float32(limit)))
        codes = clipped.astype(np.float32).astype(dtype).view(np.uint8).copy()
    codes[np.isnan(clipped)] = 0xFF
    return codes


def boundary_inputs():
    values = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 3.0e38, -3.0e38,
              1e-30, -1e-30]
    for dtype, limit in FORMATS:
        codes = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
        finite = np.unique(codes[np.isfinite(codes)])
        finite = finite[finite >= 0]
        # Every midpoint between neighbours, and one step beyond the largest value.
        points = list((finite[:-1] + finite[1:]) / 2)
        top = finite[-1]
        points += [top, top + (top - finite[-2]) / 2, top * 1.5, top * 4]
        for p in points:
            for sign in (1.0, -1.0):
                values.append(sign * p)
    return np.array(values, dtype=np.float64)


def neighbours(targets):
    """float32 values at, just below and just above each target (and bf16 neighbours)."""
    out = []
    for t in targets:
        f = np.float32(t)
        out += [f, np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(-np.inf))]
        if np.isfinite(f):
            b = np.array([f], dtype=np.float32).astype(ml_dtypes.bfloat16)
            up = np.nextafter(b.astype(np.float32), np.float32(np.inf)).astype(ml_dtypes.bfloat16)
            out += [b.astype(np.float32)[0], up.astype(np.float32)[0]]
    return np.array(out, dtype=np.float32)


def render():
    lines = ["# mlperfc fp8 quantize cases v1 (numpy %s, ml_dtypes %s)"
             % (np.__version__, ml_dtypes.__version__)]
    boundaries = boundary_inputs()
    for scale in SCALES:
        s = np.float32(scale)
        with np.errstate(over="ignore", invalid="ignore"):
            xs = neighbours(boundaries / np.float64(s))
        results = [quantize(xs, s, dtype, limit) for dtype, limit in FORMATS]
        for i, x in enumerate(xs):
            lines.append("case %s %s %02x %02x" % (f32_hex(x), f32_hex(s), results[0][i],
                                                   results[1][i]))
    patterns = np.arange(65536, dtype=np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    for scale in (448.0 / 3.7,):
        for (dtype, limit), name in zip(FORMATS, ("f8E4M3FN", "f8E5M2")):
            lines.append("bf16 %s %s" % (f32_hex(scale), name))
            codes = quantize(patterns, np.float32(scale), dtype, limit)
            hexed = codes.tobytes().hex()
            lines += [hexed[i:i + 128] for i in range(0, len(hexed), 128)]
    return "\n".join(lines) + "\n"


def main():
    if sys.argv[1] == "--check":
        if open(sys.argv[2]).read() != render():
            sys.exit(f"{sys.argv[2]} differs from what ml_dtypes gives now: regenerate it")
        print("fp8 quantize data matches ml_dtypes")
        return
    with open(sys.argv[1], "w") as f:
        f.write(render())


if __name__ == "__main__":
    main()
