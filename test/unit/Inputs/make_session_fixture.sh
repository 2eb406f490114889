#!/usr/bin/env sh
# Compiles the tiny Llama to a plan (4 micro-batches of 1 per step, eval every 2 steps) and
# writes a small dataset: what the TrainingSession unit tests run on.
# usage: make_session_fixture.sh BIN_DIR SOURCE_DIR OUT_DIR
set -eu
bin=$1 source=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
python3 "$source/test/tools/mlperfc/Inputs/make_text.py" "$out/text.txt"
"$bin/mlperf-prepare-data" --output "$out/text" "$out/text.txt" > /dev/null
"$bin/mlperfc" emit-model llama3 --preset llama31_8b_tiny \
  --set gbs=4,micro_batch=1,lr=3e-3,warmup_steps=2,max_steps=5,eval_every=8,eval_samples=4,target=0.5 \
  -o "$out/tiny.mlir" > /dev/null
"$bin/mlperfc" compile "$out/tiny.mlir" --precision fp32 -o "$out/plan.pb" > /dev/null
