#!/usr/bin/env bash
# The README's main-job command: installs what is needed, builds, and runs the compiler on
# every model declaration in models/ and prints each one's summary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
bash scripts/build.sh

mapfile -t models < <(find models -name '*.mlir' | sort)
if [ ${#models[@]} -eq 0 ]; then
  echo "[quickstart] error: no model declarations found under models/" >&2
  exit 1
fi
echo "[quickstart] build/bin/mlperfc check ${models[*]}"
build/bin/mlperfc check "${models[@]}"
for model in "${models[@]}"; do
  echo "[quickstart] build/bin/mlperfc summary $model"
  build/bin/mlperfc summary "$model"
done
echo "[quickstart] all ${#models[@]} model file(s) parse and verify"
