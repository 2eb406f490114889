#!/usr/bin/env python3
"""Compile time against depth: the tiny Llama declaration with 128 to 1024 layers, compiled
with -o on one rank, to show that compile time grows linearly with the layers.

usage: benchmarks/compile_depth.py [--mlperfc build/bin/mlperfc] [--repeat 3]
       [--layers 128,256,512,1024]

Time and peak memory are measured as in dist_compile.py (wall time of the whole command, the
child's peak resident set), best of --repeat runs. The last column is the time per layer:
constant when compile time is linear in depth.
"""
import argparse
import os
import re
import subprocess
import tempfile

from dist_compile import run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--mlperfc", default=os.path.join(here, "..", "build", "bin", "mlperfc"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--layers", default="128,256,512,1024")
    args = parser.parse_args()
    print("| layers | commands | buffers | compile time | per layer | peak memory |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for layers in [int(n) for n in args.layers.split(",")]:
            model = os.path.join(scratch, f"tiny_{layers}.mlir")
            subprocess.run([args.mlperfc, "emit-model", "llama3", "--preset", "llama31_8b_tiny",
                            "--set", f"layers={layers}", "-o", model], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            best = None
            for _ in range(args.repeat):
                result = run(args.mlperfc, model, "1x1", "dp=1", scratch)
                best = result if best is None or result[0] < best[0] else best
            seconds, megabytes, output = best
            placed = re.search(r"placed plan: (\d+) commands, (\d+) buffers", output)
            print(f"| {layers} | {placed.group(1)} | {placed.group(2)} | {seconds:.2f} s | "
                  f"{1000 * seconds / layers:.1f} ms | {megabytes:.0f} MiB |")


if __name__ == "__main__":
    main()
