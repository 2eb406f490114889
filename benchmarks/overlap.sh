#!/usr/bin/env bash
# Exposed communication with and without plan-schedule, measured on this machine's CPUs:
# the same model, strategy and buckets compiled twice (--schedule=true / false) and trained
# under mpirun on the CPU backend, whose communication thread runs stream 1 while the
# compute stream goes on. Prints per configuration the mean per-step seconds of rank 0 (the
# first step, warm-up, left out): the compute stream's time (running commands plus waiting
# for communication: the step), compute, communication and exposed communication, and the ratio exposed(scheduled) / exposed(unscheduled).
#
#   bash benchmarks/overlap.sh            # tiny and mid-size Llama, 2 and 4 ranks
#   STEPS=8 RANKS="2" MODELS=mid bash benchmarks/overlap.sh
#   SCHEDULE_FLAGS="--schedule-memory-limit 1GiB --max-outstanding 16" bash benchmarks/overlap.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-build/bin}
out=${OUT:-build/overlap}
steps=${STEPS:-6}
ranks=${RANKS:-"2 4"}
mpirun=(mpirun --oversubscribe)
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mkdir -p "$out"
python3 test/tools/mlperfc/Inputs/make_text.py "$out/text.txt"
"$bin/mlperf-prepare-data" --output "$out/text" "$out/text.txt" > /dev/null
# tiny: the shipped 2-layer preset; mid: 4 layers of width 256 (about 4.6 M parameters).
"$bin/mlperfc" emit-model llama3 --preset llama31_8b_tiny --set gbs=16,micro_batch=1 -o "$out/tiny.mlir" 2> /dev/null
"$bin/mlperfc" emit-model llama3 --preset llama31_8b_tiny \
  --set layers=4,hidden=256,ffn=768,heads=8,kv_heads=4,gbs=16,micro_batch=1 -o "$out/mid.mlir" 2> /dev/null
printf '%-6s %-5s %-11s %9s %9s %9s %9s\n' model ranks schedule step_s compute_s comm_s exposed_s
for model in ${MODELS:-tiny mid}; do
  # Several buckets per step, so that there is something to overlap: the tiny model's 476 KB
  # of fp32 gradients in 0.1 MiB buckets (5), the mid-size model's 18 MB in 2 MiB ones (9).
  bucket=$([ "$model" = tiny ] && echo 0.1 || echo 2)
  for np in $ranks; do
    declare -A exposed=()
    for schedule in false true; do
      plan="$out/$model.np$np.$schedule.pb"
      "$bin/mlperfc" compile "$out/$model.mlir" --precision fp32 --cluster 1x"$np" \
        --parallel zero=1 --bucket-mib "${BUCKET_MIB:-$bucket}" --schedule="$schedule" \
        $([ "$schedule" = true ] && echo "${SCHEDULE_FLAGS:-}") -o "$plan" > /dev/null
      metrics="$out/$model.np$np.$schedule.jsonl"
      "${mpirun[@]}" -np "$np" "$bin/mlperf-run" "$plan" --data "$out/text" --seed 1 \
        --max-steps "$steps" --print-every 0 --metrics-out "$metrics" > /dev/null
      line=$(python3 - "$metrics" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])][1:]
mean = lambda key: sum(r[key] for r in rows) / len(rows)
print(mean("compute_s"), mean("communication_s"), mean("exposed_communication_s"))
PY
)
      read -r compute comm exp <<< "$line"
      exposed[$schedule]=$exp
      printf '%-6s %-5s %-11s %9s %9.4f %9.4f %9.4f\n' "$model" "$np" "$schedule" \
        "$(python3 -c "print('%.4f' % (float('$compute') + float('$exp')))")" "$compute" "$comm" "$exp"
    done
    python3 -c "u=float('${exposed[false]}'); s=float('${exposed[true]}'); print('  %s np=%s: exposed scheduled / unscheduled = %.2f' % ('$model', '$np', s / u if u > 0 else float('nan')))"
    unset exposed
  done
done
