#!/bin/sh
# gpu.train_tiny: the tiny Llama 3.1 trains on the GPU as on the CPU backend (its twin): 8 steps
# in fp32 within 1e-5 relative loss, the same CUDA run twice bit-identical, and a traced run
# (--trace: every command timed) bit-identical too. Exits 77 (skipped) without a usable GPU.
set -e
bin=$1 src=$2 work=$3 python=$4
"$bin/mlperf-opcheck" --family program >/dev/null 2>&1 || {
  rc=$?
  [ $rc -eq 77 ] && { echo "skipped: no usable GPU"; exit 77; }
  echo "error: mlperf-opcheck --family program failed (exit $rc)"; exit 1
}
rm -rf "$work" && mkdir -p "$work"
"$python" "$src/test/tools/mlperfc/Inputs/make_text.py" "$work/text.txt"
"$bin/mlperf-prepare-data" --output "$work/text" "$work/text.txt" >/dev/null
"$bin/mlperfc" emit-model llama3 --preset llama31_8b_tiny \
  --set gbs=8,micro_batch=4,lr=3e-3,warmup_steps=2,max_steps=8,eval_every=16,eval_samples=8 \
  -o "$work/tiny.mlir" >/dev/null
"$bin/mlperfc" compile "$work/tiny.mlir" --precision fp32 -o "$work/tiny.pb" >/dev/null
for backend in cpu cuda cuda-again; do
  "$bin/mlperf-run" "$work/tiny.pb" --data "$work/text" --backend "${backend%-again}" --seed 3 \
    --metrics-out "$work/$backend.jsonl" >/dev/null
done
"$python" "$src/scripts/compare_runs.py" "$work/cuda.jsonl" "$work/cpu.jsonl" --tolerance 1e-5
"$python" "$src/scripts/compare_runs.py" "$work/cuda.jsonl" "$work/cuda-again.jsonl" --identical
# --trace on the GPU: every command of the last step timed, and the traced run still computes
# the same bits.
"$bin/mlperf-run" "$work/tiny.pb" --data "$work/text" --backend cuda --seed 3 \
  --metrics-out "$work/cuda-traced.jsonl" --trace "$work/trace.json" >/dev/null
"$python" "$src/scripts/compare_runs.py" "$work/cuda.jsonl" "$work/cuda-traced.jsonl" --identical
"$python" - "$work/trace.json" <<'PY'
import json, sys
spans = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
assert len(spans) > 100 and all(e["dur"] >= 0 for e in spans), len(spans)
assert sum(e["dur"] for e in spans) > 0, "every traced command took 0 us"
print(f"trace: {len(spans)} commands, {sum(e['dur'] for e in spans) / 1e3:.2f} ms of GPU time")
PY
