#!/usr/bin/env bash
# The runtime under AddressSanitizer + UndefinedBehaviorSanitizer (clang-22, no MLIR): builds
# build-asan/ with the libFuzzer harnesses of every untrusted input the runtime reads, runs the
# runtime unit tests once, then each fuzzer for SECONDS (default 15) on its seed corpus.
# scripts/test.sh (CI) runs it; scripts/fuzz.sh runs the fuzzers longer, the MLIR one too.
# Usage: scripts/sanitize.sh [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-15}"
die() { printf '[sanitize] error: %s\n' "$*" >&2; exit 1; }
command -v clang++-22 > /dev/null || die "clang++-22 is missing: run scripts/setup.sh"

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DMLPERFC_RUNTIME_ONLY=ON -DMLPERFC_SANITIZE=address,undefined -DMLPERFC_FUZZ=ON \
  -DMLPERFC_ENABLE_CUDA=OFF \
  > build-asan.configure.log || { cat build-asan.configure.log; die "configure failed"; }
echo "[sanitize] building the runtime, its unit tests and fuzzers with ASan + UBSan"
cmake --build build-asan

# Open MPI keeps allocations for the life of the process; nothing else may leak.
export LSAN_OPTIONS="suppressions=$PWD/test/fuzz/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
echo "[sanitize] unit.runtime under ASan + UBSan"
./build-asan/bin/mlperf-runtime-tests --gtest_brief=1

bash scripts/fuzz.sh --build build-asan --seconds "$seconds" plan safetensors dataset
