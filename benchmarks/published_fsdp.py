#!/usr/bin/env python3
"""Published FSDP throughput rows against `mlperfc predict` (issue 38, item 6).

The rows are KempnerForge's MFU benchmark (github.com/KempnerInstitute/KempnerForge,
benchmarks/mfu_scaling/mfu_scaling_2026-04-05.md, git 01b461a): Llama-3-architecture models
trained with PyTorch FSDP2 (and tensor parallelism inside a node) on nodes of 4 H200s, bf16,
full activation checkpointing, fused AdamW, sequence 4096, steady-state tokens/s over the last
5 of 20 steps. Their per-GPU micro-batch and gradient accumulation (7B: 4 x 2, 13B: 4 x 4, 70B:
2 x 4) give each row's global batch. Each row is predicted for the same model, cluster, strategy
(ZeRO-3 over the FSDP ranks, tp without sequence parallelism, which this project supports only
at micro-batch 1), micro-batch and batch, with `--recompute full` on the built-in `h200`
figures. Their 7B is the Llama 3.1 8B structure (8.03B parameters); their 13B is dim 5120, 40
layers, 40 heads, 8 key-value heads and FFN 17920 (14.84B parameters, as they state); their 70B
is the Llama 3.1 70B structure.

Prints a markdown table (published and predicted tokens/s per GPU, the error) and the median
absolute error. docs/benchmarks.md quotes it.

    python3 benchmarks/published_fsdp.py
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

MODELS = {
    "7B": dict(hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336, micro_batch=4, accum=2),
    "13B": dict(hidden=5120, layers=40, heads=40, kv_heads=8, ffn=17920, micro_batch=4, accum=4),
    "70B": dict(hidden=8192, layers=80, heads=64, kv_heads=8, ffn=28672, micro_batch=2, accum=4),
}

# (row, GPUs, model, tp, fsdp, published tokens/s over all GPUs)
ROWS = [
    (2, 2, "7B", 1, 2, 18728),
    (4, 4, "7B", 1, 4, 38983),
    (6, 4, "7B", 2, 2, 25980),
    (7, 8, "7B", 4, 2, 44299),
    (8, 8, "13B", 1, 8, 35405),
    (9, 8, "13B", 4, 2, 27345),
    (10, 16, "7B", 4, 4, 82988),
    (11, 16, "13B", 4, 4, 53814),
    (12, 32, "7B", 4, 8, 155917),
    (13, 32, "13B", 4, 8, 104309),
    (14, 32, "70B", 4, 8, 17657),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=os.environ.get("BIN", "build/bin"))
    args = parser.parse_args()
    mlperfc = os.path.join(os.path.abspath(args.bin), "mlperfc")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    print(f"published_fsdp.py: KempnerForge MFU rows (4 H200 per node) against mlperfc predict "
          f"--device h200 --recompute full, commit {commit}")
    print()
    print("| row | GPUs | model | strategy | published tokens/s/GPU | predicted | error |")
    print("|---|---|---|---|---|---|---|")
    errors = []
    with tempfile.TemporaryDirectory() as scratch:
        for row, gpus, name, tp, fsdp, published in ROWS:
            m = MODELS[name]
            gbs = fsdp * m["micro_batch"] * m["accum"]
            model = os.path.join(scratch, f"{name}_{gbs}.mlir")
            settings = (f"hidden={m['hidden']},layers={m['layers']},heads={m['heads']},"
                        f"kv_heads={m['kv_heads']},ffn={m['ffn']},seq=4096,"
                        f"micro_batch={m['micro_batch']},gbs={gbs},lr=1e-3,warmup_steps=10")
            subprocess.run([mlperfc, "emit-model", "llama3", "--preset", "llama31_8b", "--set",
                            settings, "-o", model], check=True, capture_output=True)
            nodes = max(1, gpus // 4)
            parallel = f"tp={tp},zero=3" if fsdp > 1 else f"tp={tp}"
            run = subprocess.run([mlperfc, "predict", model, "--cluster", f"{nodes}x{gpus // nodes}",
                                  "--parallel", parallel, "--device", "h200", "--recompute", "full"],
                                 capture_output=True, text=True)
            found = re.search(r"\(([\d,]+) per GPU\)", run.stdout)
            strategy = f"FSDP={fsdp}" if tp == 1 else f"TP={tp}+FSDP={fsdp}"
            if run.returncode != 0 or not found:
                last = (run.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"| {row} | {gpus} | {name} | {strategy} | {published // gpus:,} | — | "
                      f"{last[:80]} |")
                continue
            predicted = int(found.group(1).replace(",", ""))
            error = 100.0 * (predicted - published / gpus) / (published / gpus)
            errors.append(abs(error))
            print(f"| {row} | {gpus} | {name} | {strategy} | {published // gpus:,} | "
                  f"{predicted:,} | {error:+.1f} % |")
            sys.stdout.flush()
    if errors:
        print()
        print(f"median absolute error {statistics.median(errors):.1f} % over {len(errors)} rows "
              f"(largest {max(errors):.1f} %)")


if __name__ == "__main__":
    main()
