#!/usr/bin/env bash
# The README's main-job command: installs what is needed, builds, verifies and summarizes every
# model declaration in models/, compiles the Llama 3.1 8B train step, and trains the tiny
# Llama 3.1 model on the fortune cookie database (byte-level tokens) on the CPU reference.
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
fortunes=/usr/share/games/fortunes
echo "[quickstart] byte-level dataset from $fortunes (fortunes, literature)"
build/bin/mlperf-prepare-data --output "$work/fortunes" --split-on % \
  "$fortunes/fortunes" "$fortunes/literature"
# The tiny model with a batch and schedule for a short run: 16 sequences of 32 bytes per
# step, 300 steps, LR 3e-3 after 10 warmup steps.
build/bin/mlperfc emit-model llama3 --preset llama31_8b_tiny \
  --set gbs=16,micro_batch=16,lr=3e-3,warmup_steps=10,max_steps=300 -o "$work/tiny.mlir"
echo "[quickstart] training (every 25th step shown; loss starts near ln 256 = 5.55)"
build/bin/mlperfc run-reference "$work/tiny.mlir" --data "$work/fortunes" --train-steps 300 \
  --seed 1 -o "$work/tiny-trained.safetensors" | awk 'NR % 25 == 1 || NR == 300'
echo "[quickstart] trained weights and optimizer state: $work/tiny-trained.safetensors"
