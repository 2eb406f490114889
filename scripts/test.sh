#!/usr/bin/env bash
# The README's test command: installs what is needed, builds, and runs every test (lit suite,
# GoogleTest suites; GPU tests report as skipped without a GPU). CI runs exactly this.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
# Formatting is checked, not hoped for (.clang-format): every C++ and CUDA file of the tree.
echo "[test] clang-format-22 --dry-run -Werror on $(git ls-files '*.cpp' '*.h' '*.cu' | wc -l) files"
git ls-files -z '*.cpp' '*.h' '*.cu' | xargs -0 clang-format-22 --dry-run -Werror
bash scripts/build.sh
echo "[test] ctest --preset default"
ctest --preset default
# Untrusted inputs: the runtime's unit tests once under ASan + UBSan, and each libFuzzer
# harness of the runtime for a short smoke run (scripts/fuzz.sh runs them longer).
bash scripts/sanitize.sh 15
