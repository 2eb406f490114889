#!/usr/bin/env python3
"""The FSDP scaling study of issue 38 (Fernandez et al., arXiv 2411.13055): a 7B-class Llama
(the Llama 3.1 8B structure, sequence 8192) at one global batch on 16 to 256 nodes of 8 H100s
under flat FSDP (zero=3 over all data-parallel ranks), HSDP (zero=3 sharded inside a node,
replicated across nodes) and FSDP with tensor parallelism 2 and 4 (sequence parallel), each
predicted by `mlperfc predict --device h100` (the plan compiled as `compile --device h100`
builds it: recompute `auto`, collectives overlapped by plan-schedule, then simulated).

Prints one markdown table: tokens/s per GPU, its change from the smallest cluster, MFU, the
step, its exposed data-parallel communication (with HSDP, the part inside the node and the
part across nodes) and tensor-parallel communication, and the per-rank peak memory.
docs/benchmarks.md quotes it with the date and commit.

    python3 benchmarks/fsdp_study.py               # 128 to 2,048 GPUs, GBS 2048
    python3 benchmarks/fsdp_study.py --gbs 4096 --nodes 16 32
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

STRATEGIES = [
    ("flat FSDP", "zero=3"),
    ("HSDP (node)", "zero=3,hsdp=8"),  # a node's 8 data-parallel ranks
    ("FSDP + TP 2", "tp=2,sp=on,zero=3"),
    ("FSDP + TP 4", "tp=4,sp=on,zero=3"),
]


def seconds(text):
    value, unit = text.split()
    return float(value) * {"s": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0}[unit]


def predict(mlperfc, model, nodes, parallel):
    command = [mlperfc, "predict", model, "--cluster", f"{nodes}x8", "--parallel", parallel,
               "--device", "h100"]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["failed"])[-1]
        return {"error": last.split("error: ")[-1][:90]}
    out = run.stdout
    throughput = re.search(r"\(([\d,]+) per GPU\), ([\d.]+) model TFLOP/s per GPU, MFU ([\d.]+)%",
                           out)
    step = re.search(r": ([\d.]+ (?:s|ms)) = compute ([\d.]+ (?:s|ms|us)), recompute "
                     r"([\d.]+ (?:s|ms|us)), exposed communication ([\d.]+ (?:s|ms|us)) "
                     r"\(dp ([\d.]+ (?:s|ms|us))(?: \[dp_shard ([\d.]+ (?:s|ms|us)), "
                     r"dp_replicate ([\d.]+ (?:s|ms|us))\])?, tp ([\d.]+ (?:s|ms|us))", out)
    peak = re.search(r"per-rank peak memory ([\d.]+ GiB)", out)
    if not throughput or not step or not peak:
        sys.exit(f"fsdp_study.py: cannot read mlperfc predict's output:\n{out}")
    return {
        "per_gpu": int(throughput.group(1).replace(",", "")),
        "mfu": float(throughput.group(3)),
        "step": seconds(step.group(1)),
        "compute": seconds(step.group(2)) + seconds(step.group(3)),
        "dp": seconds(step.group(5)),
        "shard": seconds(step.group(6)) if step.group(6) else None,
        "replicate": seconds(step.group(7)) if step.group(7) else None,
        "tp": seconds(step.group(8)),
        "peak": peak.group(1),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gbs", type=int, default=2048, help="global batch (sequences)")
    parser.add_argument("--nodes", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    parser.add_argument("--bin", default=os.environ.get("BIN", "build/bin"))
    args = parser.parse_args()
    mlperfc = os.path.join(os.path.abspath(args.bin), "mlperfc")
    with tempfile.TemporaryDirectory() as scratch:
        model = os.path.join(scratch, "llama8b.mlir")
        # lr and warmup set: there is no reference convergence point at this batch.
        subprocess.run([mlperfc, "emit-model", "llama3", "--preset", "llama31_8b", "--set",
                        f"gbs={args.gbs},lr=1e-3,warmup_steps=10", "-o", model],
                       check=True, capture_output=True)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "unknown"
        print(f"fsdp_study.py: Llama 3.1 8B structure, seq 8192, GBS {args.gbs}, H100 figures, "
              f"commit {commit}")
        print()
        print("| GPUs | strategy | tokens/s/GPU | vs smallest | MFU | step | exposed dp "
              "(in node / across) | exposed tp | peak per rank |")
        print("|---|---|---|---|---|---|---|---|---|")
        first = {}
        for nodes in args.nodes:
            for name, parallel in STRATEGIES:
                r = predict(mlperfc, model, nodes, parallel)
                gpus = nodes * 8
                if "error" in r:
                    print(f"| {gpus:,} | {name} | — | | | | {r['error']} | | |")
                    continue
                base = first.setdefault(name, r["per_gpu"])
                change = 100.0 * (r["per_gpu"] - base) / base
                split = (f" ({r['shard']:.2f} s / {r['replicate']:.2f} s)"
                         if r["shard"] is not None else "")
                print(f"| {gpus:,} | {name} | {r['per_gpu']:,} | {change:+.1f} % | "
                      f"{r['mfu']:.1f} % | {r['step']:.2f} s | {r['dp']:.2f} s{split} | "
                      f"{r['tp']:.2f} s | {r['peak']} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
