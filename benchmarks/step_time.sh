#!/usr/bin/env bash
# The step-time model against mlperf-run on this machine's CPU backend: the tiny and the
# mid Llama 3.1 (HARDWARE.md's sizes: 2 layers d=64 seq 32 batch 8; 4 layers d=512, 8/2 heads,
# FFN 1408, vocab 256, seq 256, batch 8), calibrated with `mlperf-run --calibrate-out` on both
# plans' commands, predicted with `mlperfc predict --device cpu --calibrate`, measured as the
# median step of `mlperf-run --max-steps STEPS` (steps after the first). Prints per model the
# predicted and measured step and their ratio.
#
#   bash benchmarks/step_time.sh            # STEPS=8
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-build/bin}
out=${OUT:-build/step-time-bench}
steps=${STEPS:-8}
python=${PYTHON:-.venv/bin/python}
mkdir -p "$out"
"$python" test/tools/mlperfc/Inputs/make_text.py "$out/text.txt"
"$bin/mlperf-prepare-data" --output "$out/text" "$out/text.txt" > /dev/null
common=gbs=8,micro_batch=8,lr=3e-3,warmup_steps=2,max_steps=100,eval_every=800,eval_samples=8
"$bin/mlperfc" emit-model llama3 --preset llama31_8b_tiny --set "$common" -o "$out/tiny.mlir" 2> /dev/null
"$bin/mlperfc" emit-model llama3 --preset llama31_8b_tiny \
  --set "layers=4,hidden=512,heads=8,kv_heads=2,ffn=1408,vocab=256,seq=256,$common" \
  -o "$out/mid.mlir" 2> /dev/null
for model in tiny mid; do
  "$bin/mlperfc" compile "$out/$model.mlir" -o "$out/$model.pb" > /dev/null
done
"$bin/mlperf-run" --calibrate-out "$out/calibration.json" "$out/tiny.pb" "$out/mid.pb" > /dev/null
for model in tiny mid; do
  predicted=$("$bin/mlperfc" predict "$out/$model.mlir" --device cpu \
    --calibrate "$out/calibration.json" | sed -n 's/^predicted step.*: \(.*\)$/\1/p')
  "$bin/mlperf-run" "$out/$model.pb" --data "$out/text" --max-steps "$steps" --print-every 0 \
    --metrics-out "$out/$model.jsonl" > /dev/null
  "$python" - "$out/$model.jsonl" "$model" "$predicted" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])][1:]
tokens = {"tiny": 8 * 32, "mid": 8 * 256}[sys.argv[2]]
measured = statistics.median(tokens / r["tokens_per_s"] for r in rows)
value, unit = sys.argv[3].split()
predicted = float(value) * {"s": 1, "ms": 1e-3, "us": 1e-6}[unit]
print(f"{sys.argv[2]}: predicted {predicted * 1e3:.2f} ms, measured {measured * 1e3:.2f} ms "
      f"(median of {len(rows)} steps), predicted/measured {predicted / measured:.3f}")
PY
done
