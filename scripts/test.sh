#!/usr/bin/env bash
# The README's test command: installs what is needed, builds, and runs every test (lit suite,
# GoogleTest suites; GPU tests report as skipped without a GPU). CI runs exactly this.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
bash scripts/build.sh
echo "[test] ctest --preset default"
ctest --preset default
