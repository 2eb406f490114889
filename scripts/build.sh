#!/usr/bin/env bash
# Configures and builds mlperfc with the `default` preset (executables in build/bin/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

start=$(date +%s)
echo "[build] configuring (cmake --preset default)"
cmake --preset default >build.configure.log 2>&1 || { cat build.configure.log; echo "[build] error: configure failed" >&2; exit 1; }
rm -f build.configure.log
echo "[build] building on $(nproc) core(s) (cmake --build --preset default)"
cmake --build --preset default
echo "[build] done in $(( $(date +%s) - start )) s: $(ls build/bin | tr '\n' ' ')"
