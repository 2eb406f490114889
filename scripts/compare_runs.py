#!/usr/bin/env python3
"""Compares two mlperf-run --metrics-out files step by step (no third-party packages).

  compare_runs.py A.jsonl B.jsonl --tolerance T   largest relative loss difference at most T
  compare_runs.py A.jsonl B.jsonl --identical [--skip N]
                                                   B's steps equal A's from step N on, bit for bit
                                                   (step, loss and grad norm)
Prints one line; exits 0 when the runs agree, 1 otherwise (also on a missing or empty file).
"""
import argparse
import json
import sys


def steps(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--tolerance", type=float)
    parser.add_argument("--identical", action="store_true")
    parser.add_argument("--skip", type=int, default=0)
    args = parser.parse_args()
    try:
        a, b = steps(args.a)[args.skip:], steps(args.b)
    except (OSError, ValueError) as error:
        print(f"cannot compare: {error}")
        return 1
    if not a or len(a) != len(b):
        print(f"cannot compare: {len(a)} and {len(b)} steps")
        return 1
    if args.identical:
        key = lambda r: (r["step"], r["loss"], r["grad_norm"])
        same = list(map(key, a)) == list(map(key, b))
        print(f"{len(a)} steps {'identical' if same else 'differ'}; first {key(a[0])} vs {key(b[0])}")
        return 0 if same else 1
    loss = max(abs(x["loss"] - y["loss"]) / abs(y["loss"]) for x, y in zip(a, b))
    norm = max(abs(x["grad_norm"] - y["grad_norm"]) / abs(y["grad_norm"]) for x, y in zip(a, b))
    print(f"{len(a)} steps: largest relative loss difference {loss:.3g}, grad norm {norm:.3g} "
          f"(bound {args.tolerance:g}); loss {a[0]['loss']:.6f} -> {a[-1]['loss']:.6f}")
    return 0 if loss <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
