#!/bin/sh
# Writes the example llama31_8b log with the runtime's logger and runs the official MLPerf
# Training 6.0.0 compliance checker on it. Usage: check_example_log.sh WRITER OUTDIR
set -eu
writer=$1
out=$2
mkdir -p "$out"
"$writer" "$out/llama31_8b.log"
cd "$out"
"$MLPERF_PYTHON" -m mlperf_logging.compliance_checker --usage training --ruleset 6.0.0 \
  --log_output "$out/checker.log" "$out/llama31_8b.log"
