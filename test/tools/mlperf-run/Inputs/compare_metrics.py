"""Compares two mlperf-run --metrics-out files step by step.

usage: compare_metrics.py REFERENCE RUN --rtol R   (loss and grad_norm within R relative)
       compare_metrics.py REFERENCE RUN --exact    (the same loss and grad_norm bits)
Prints the largest relative differences; exits 1 when a step is missing or out of tolerance.
"""
import json
import math
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    args = sys.argv[1:]
    exact = "--exact" in args
    rtol = float(args[args.index("--rtol") + 1]) if "--rtol" in args else 0.0
    reference, run = load(args[0]), load(args[1])
    if len(reference) != len(run) or not reference:
        print(f"steps differ: {len(reference)} vs {len(run)}")
        return 1
    worst = {"loss": 0.0, "grad_norm": 0.0}
    for ref, got in zip(reference, run):
        if ref["step"] != got["step"] or ref["lr"] != got["lr"]:
            print(f"step/lr differ: {ref} vs {got}")
            return 1
        for key in worst:
            for name, value in (("run", got[key]), ("reference", ref[key])):
                if not math.isfinite(value):
                    print(f"step {ref['step']} {key}: {value} in the {name} is not finite")
                    return 1
            difference = abs(ref[key] - got[key]) / abs(ref[key])
            worst[key] = max(worst[key], difference)
            if (exact and ref[key] != got[key]) or difference > rtol:
                print(f"step {ref['step']} {key}: {ref[key]} vs {got[key]} "
                      f"(relative {difference:.3g}, allowed {0 if exact else rtol})")
                return 1
    print(f"{len(run)} steps agree: largest relative difference loss "
          f"{worst['loss']:.3g}, grad_norm {worst['grad_norm']:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
