#!/usr/bin/env bash
# The README's test command: installs what is needed, builds, and runs every test (lit suite,
# GoogleTest suites; GPU tests report as skipped without a GPU). CI runs exactly this.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
# Formatting is checked, not hoped for (.clang-format): every C++ and CUDA file of the tree.
echo "[test] clang-format-22 --dry-run -Werror on $(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | wc -l) files"
git ls-files -z '*.cpp' '*.h' '*.cu' '*.cuh' | xargs -0 clang-format-22 --dry-run -Werror
bash scripts/build.sh
echo "[test] ctest --preset default"
ctest --preset default
if [ -x /usr/local/cuda/bin/nvcc ]; then
  # The single-rank GPU runtime a node without MLIR, protobuf or MPI runs (docs/building.md):
  # it builds, its unit tests pass, and ldd shows it deployable.
  echo "[test] the device preset (cmake --preset device; ctest -L unit)"
  cmake --preset device >build-device.configure.log 2>&1 || { cat build-device.configure.log; exit 1; }
  rm -f build-device.configure.log
  cmake --build --preset device
  ctest --test-dir build-device -L unit --output-on-failure
fi
# Untrusted inputs: the runtime's unit tests once under ASan + UBSan, and each libFuzzer
# harness of the runtime for a short smoke run (scripts/fuzz.sh runs them longer).
bash scripts/sanitize.sh 15
