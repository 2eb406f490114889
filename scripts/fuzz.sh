#!/usr/bin/env bash
# Runs the libFuzzer harnesses (test/fuzz/) for SECONDS each on their seed corpora, which it
# writes first from the tools of the main build (a compiled plan, checkpoints, a dataset, the
# model files). Without --build it builds build-fuzz/ (clang-22, UBSan, the MLIR model fuzzer
# included; ASan needs an ASan-built LLVM, so the runtime's ASan harnesses are scripts/
# sanitize.sh's build-asan/: pass --build build-asan for those). Crashes are saved as build-*/fuzz/<target>/crash-*; exit 1 on any.
# Usage: scripts/fuzz.sh [--build DIR] [--seconds N] [TARGET ...]   (targets: plan safetensors
#        dataset model; default all)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
die() { printf '[fuzz] error: %s\n' "$*" >&2; exit 1; }
build="" seconds=60 targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    plan|safetensors|dataset|model) targets+=("$1"); shift ;;
    *) die "unknown argument '$1' (targets: plan safetensors dataset model)" ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(plan safetensors dataset model)
[[ "$seconds" =~ ^[0-9]+$ ]] || die "--seconds needs a whole number, got '$seconds'"

if [ -z "$build" ]; then
  build=build-fuzz
  command -v clang++-22 > /dev/null || die "clang++-22 is missing: run scripts/setup.sh"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLPERFC_SANITIZE=undefined -DMLPERFC_FUZZ=ON -DMLPERFC_ENABLE_CUDA=OFF > /dev/null
  cmake --build "$build"
fi
tools=build/bin
[ -x "$tools/mlperfc" ] && [ -x "$tools/mlperf-run" ] || die "the seed corpora come from the main build: run scripts/build.sh first"

# Seeds: real inputs of each kind, from the tools (so they follow the formats as they change).
seeds="$build/fuzz-seeds"
rm -rf "$seeds" && mkdir -p "$seeds"/{plan,safetensors,dataset,model}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Small sizes: the fuzzer mutates every byte, so seeds should be kilobytes, not megabytes.
"$tools/mlperfc" emit-model llama3 --preset llama31_8b_tiny \
  --set layers=1,hidden=8,heads=2,kv_heads=1,ffn=8,vocab=256,seq=8,gbs=2,lr=1e-3,warmup_steps=1,max_steps=10,eval_every=2,eval_samples=2,dtype=f32 \
  -o "$work/m.mlir" 2> /dev/null
"$tools/mlperfc" compile "$work/m.mlir" -o "$seeds/plan/tiny.pb" > /dev/null
python3 test/tools/mlperfc/Inputs/make_text.py "$work/text.txt"
"$tools/mlperf-prepare-data" --output "$work/text" "$work/text.txt" > /dev/null
"$tools/mlperf-run" "$seeds/plan/tiny.pb" --data "$work/text" --max-steps 1 --print-every 0 \
  --save "$seeds/safetensors/state.safetensors" > /dev/null
python3 - "$work/text" "$seeds/dataset/text" <<'PY'
import struct, sys
idx = open(sys.argv[1] + ".idx", "rb").read()
bin_ = open(sys.argv[1] + ".bin", "rb").read()[:4096]
open(sys.argv[2], "wb").write(struct.pack("<I", len(idx)) + idx + bin_)
PY
cp models/llama31_8b_tiny.mlir models/llama2_70b_tiny.mlir test/tools/mlperfc/Inputs/*.mlir "$seeds/model/"

export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/test/fuzz/lsan.supp:print_suppressions=0}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=0
for target in "${targets[@]}"; do
  binary="$build/bin/mlperf-fuzz-$target"
  [ -x "$binary" ] || die "$binary was not built (the model fuzzer needs a full build: omit --build)"
  corpus="$build/fuzz/$target"
  mkdir -p "$corpus"
  echo "[fuzz] $target for ${seconds} s"
  # -close_fd_mask=2: the tools' own error messages (expected on bad input) stay quiet.
  if ! "$binary" -max_total_time="$seconds" -close_fd_mask=2 -print_final_stats=1 \
       -artifact_prefix="$corpus/" "$corpus" "$seeds/$target" 2> "$corpus.log"; then
    failed=1
    tail -40 "$corpus.log"
    echo "[fuzz] $target: FAILED (reproducer in $corpus/)"
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$corpus.log" | sed "s/^/[fuzz] $target: /"
  fi
done
exit $failed
