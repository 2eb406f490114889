#!/usr/bin/env bash
# The README's main-job command: installs what is needed, builds, verifies and summarizes every
# model declaration in models/, compiles the Llama 3.1 8B train step (and audits its 8x8 plan),
# and compiles and trains the tiny Llama 3.1 with mlperf-run (CPU backend) on the fortune cookie
# database (byte-level tokens) to its target eval loss, writing an MLPerf log that the official
# checker reads.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
bash scripts/build.sh

mapfile -t models < <(find models -name '*.mlir' | sort)
if [ ${#models[@]} -eq 0 ]; then
  echo "[quickstart] error: no model declarations found under models/" >&2
  exit 1
fi
echo "[quickstart] build/bin/mlperfc check ${models[*]}"
build/bin/mlperfc check "${models[@]}"
for model in "${models[@]}"; do
  echo "[quickstart] build/bin/mlperfc summary $model"
  build/bin/mlperfc summary "$model"
done
echo "[quickstart] all ${#models[@]} model file(s) parse and verify"

echo "[quickstart] build/bin/mlperfc compile models/llama31_8b.mlir"
build/bin/mlperfc compile models/llama31_8b.mlir

work=build/quickstart
mkdir -p "$work"
# The 8B on 8 nodes of 8 GPUs, and its compliance audit (pass classes, certificates, numeric
# evidence on the tiny variant, the closed-division rules); the report is kept next to the plan.
echo "[quickstart] build/bin/mlperfc compile models/llama31_8b.mlir --cluster 8x8 --parallel tp=8,zero=1 -o $work/llama31_8b.pb"
build/bin/mlperfc compile models/llama31_8b.mlir --cluster 8x8 --parallel tp=8,zero=1 \
  -o "$work/llama31_8b.pb" | tail -n 1
echo "[quickstart] build/bin/mlperfc audit models/llama31_8b.mlir $work/llama31_8b.pb > $work/llama31_8b.audit.txt"
build/bin/mlperfc audit models/llama31_8b.mlir "$work/llama31_8b.pb" > "$work/llama31_8b.audit.txt"
tail -n 1 "$work/llama31_8b.audit.txt"
fortunes=/usr/share/games/fortunes
echo "[quickstart] byte-level datasets from $fortunes: train on fortunes + riddles, evaluate on literature"
build/bin/mlperf-prepare-data --output "$work/train" --split-on % \
  "$fortunes/fortunes" "$fortunes/riddles"
build/bin/mlperf-prepare-data --output "$work/eval" --split-on % "$fortunes/literature"
# The tiny Llama 3.1 with a batch and schedule for a short run: 16 sequences of 32 bytes per
# step, LR 3e-3 after 10 warmup steps, evaluation on 256 sequences every 50 steps, target eval
# loss 2.6 nats/byte (ln 256 = 5.55 at the start).
build/bin/mlperfc emit-model llama3 --preset llama31_8b_tiny \
  --set gbs=16,micro_batch=16,lr=3e-3,warmup_steps=10,max_steps=400,eval_every=800,eval_samples=256,target=2.6 \
  -o "$work/tiny.mlir"
echo "[quickstart] build/bin/mlperfc compile $work/tiny.mlir -o $work/tiny.pb"
build/bin/mlperfc compile "$work/tiny.mlir" -o "$work/tiny.pb" | tail -n 1
echo "[quickstart] build/bin/mlperf-run $work/tiny.pb (CPU backend) until the target eval loss"
build/bin/mlperf-run "$work/tiny.pb" --data "$work/train" --eval-data "$work/eval" --seed 1 \
  --print-every 25 --mllog "$work/tiny.mllog" --metrics-out "$work/tiny.metrics.jsonl" \
  --save "$work/tiny-trained.safetensors"
.venv/bin/python scripts/check_mllog.py --reduced-model "$work/tiny.mllog"
echo "[quickstart] MLPerf log $work/tiny.mllog, per-step metrics $work/tiny.metrics.jsonl,"
echo "[quickstart] trained weights and optimizer state $work/tiny-trained.safetensors"
