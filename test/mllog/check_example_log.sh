#!/bin/sh
# Writes the example llama31_8b log with the runtime's logger and runs the official MLPerf
# Training 6.0.0 compliance checker on it (scripts/check_mllog.py), which must pass outright.
# Usage: check_example_log.sh WRITER OUTDIR SOURCEDIR
set -eu
writer=$1
out=$2
source=$3
mkdir -p "$out"
"$writer" "$out/llama31_8b.log"
"$MLPERF_PYTHON" "$source/scripts/check_mllog.py" "$out/llama31_8b.log"
