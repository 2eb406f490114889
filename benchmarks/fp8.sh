#!/usr/bin/env bash
# Steps to the quickstart's target with bf16 and with fp8 (mlperfc compile --precision fp8):
# the tiny Llama 3.1 of scripts/quickstart.sh (16 sequences of 32 bytes per step, LR 3e-3 after
# 10 warmup steps, eval loss <= 2.6 on 256 held-out sequences), evaluated every 10 steps, on
# the fortune cookie database, for each seed. Prints per seed the steps each precision needed
# and their ratio, then the ratio of the totals, and the wall time per step of each.
#
#   bash benchmarks/fp8.sh              # seeds 1 to 5
#   SEEDS="1 2" bash benchmarks/fp8.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-build/bin}
out=${OUT:-build/fp8-bench}
fortunes=/usr/share/games/fortunes
mkdir -p "$out"
"$bin/mlperf-prepare-data" --output "$out/train" --split-on % "$fortunes/fortunes" \
  "$fortunes/riddles" > /dev/null
"$bin/mlperf-prepare-data" --output "$out/eval" --split-on % "$fortunes/literature" > /dev/null
"$bin/mlperfc" emit-model llama3 --preset llama31_8b_tiny \
  --set gbs=16,micro_batch=16,lr=3e-3,warmup_steps=10,max_steps=400,eval_every=160,eval_samples=256,target=2.6 \
  -o "$out/tiny.mlir" 2> /dev/null
"$bin/mlperfc" compile "$out/tiny.mlir" -o "$out/bf16.pb" > /dev/null
"$bin/mlperfc" compile "$out/tiny.mlir" --precision fp8 -o "$out/fp8.pb" > /dev/null
steps_to_target() { # plan seed -> "steps seconds"
  local start end log
  start=$(date +%s.%N)
  log=$("$bin/mlperf-run" "$out/$1.pb" --data "$out/train" --eval-data "$out/eval" --seed "$2" \
    --print-every 0 2>&1 || true)
  end=$(date +%s.%N)
  local samples
  samples=$(grep -oE 'after [0-9]+ samples' <<< "$log" | grep -oE '[0-9]+' || echo 0)
  echo "$((samples / 16)) $(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"
}
printf '%-5s %10s %10s %7s\n' seed bf16_steps fp8_steps ratio
total_bf16=0 total_fp8=0 time_bf16=0 time_fp8=0
for seed in ${SEEDS:-1 2 3 4 5}; do
  read -r b tb <<< "$(steps_to_target bf16 "$seed")"
  read -r f tf <<< "$(steps_to_target fp8 "$seed")"
  if [ "$b" = 0 ] || [ "$f" = 0 ]; then
    echo "seed $seed: a run did not reach the target" >&2
    exit 1
  fi
  printf '%-5s %10d %10d %7.3f\n' "$seed" "$b" "$f" "$(awk -v f="$f" -v b="$b" 'BEGIN { print f / b }')"
  total_bf16=$((total_bf16 + b)) total_fp8=$((total_fp8 + f))
  time_bf16=$(awk -v a="$time_bf16" -v b="$tb" 'BEGIN { print a + b }')
  time_fp8=$(awk -v a="$time_fp8" -v b="$tf" 'BEGIN { print a + b }')
done
printf 'total %10d %10d %7.3f\n' "$total_bf16" "$total_fp8" \
  "$(awk -v f="$total_fp8" -v b="$total_bf16" 'BEGIN { print f / b }')"
printf 'wall time per step (evaluations included): bf16 %.1f ms, fp8 %.1f ms\n' \
  "$(awk -v t="$time_bf16" -v n="$total_bf16" 'BEGIN { print 1000 * t / n }')" \
  "$(awk -v t="$time_fp8" -v n="$total_fp8" 'BEGIN { print 1000 * t / n }')"
