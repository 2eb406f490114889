#!/bin/sh
# Writes example run logs with the runtime's logger and runs the official MLPerf Training 6.0.0
# compliance checker on them (scripts/check_mllog.py), which must pass outright:
#  - llama31_8b with the reference's hyperparameters;
#  - llama2_70b_lora at full size, its configuration taken from the plan mlperfc compiles from
#    models/llama2_70b_lora.mlir (the keys only its closed rules require: lora_rank,
#    lora_alpha, opt_learning_rate_training_steps; its evaluation delay).
# Usage: check_example_log.sh WRITER MLPERFC OUTDIR SOURCEDIR
set -eu
writer=$1
mlperfc=$2
out=$3
source=$4
mkdir -p "$out"
"$writer" "$out/llama31_8b.log"
"$MLPERF_PYTHON" "$source/scripts/check_mllog.py" "$out/llama31_8b.log"
"$mlperfc" compile "$source/models/llama2_70b_lora.mlir" --cluster 1x8 --parallel tp=8 \
  -o "$out/llama2_70b_lora.pb"
"$writer" "$out/llama2_70b_lora.log" "$out/llama2_70b_lora.pb"
"$MLPERF_PYTHON" "$source/scripts/check_mllog.py" "$out/llama2_70b_lora.log"
