#!/usr/bin/env bash
# mlperfc plan-search on the declared benchmarks: how long the search takes on this machine,
# what it ranks first, and (through test/tools/mlperfc/Inputs/search_commands.py) that the
# commands it prints for its top strategies build plans whose `mlperfc predict` step equals the
# ranked step within 1 %. docs/benchmarks.md quotes its output with the date and commit.
#
#   bash benchmarks/plan_search.sh           # Llama 3.1 8B on 1x8 and 405B on 256x8, H100
#   MODELS=8b bash benchmarks/plan_search.sh # the 8B only (seconds; the 405B takes minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(cd "${BIN:-build/bin}" && pwd)
out=${OUT:-build/plan-search-bench}
python=${PYTHON:-python3}
rm -rf "$out" && mkdir -p "$out"
echo "plan_search.sh: $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores"
search() { # NAME MODEL CLUSTER CHECKED
  local name=$1 model=$PWD/$2 cluster=$3 checked=$4
  local started=$SECONDS
  mkdir -p "$out/$name"
  # In its own directory, so the commands it prints (an emit-model output among them) run there.
  (cd "$out/$name" && "$bin/mlperfc" plan-search "$model" --cluster "$cluster" --device h100 \
    --top "$checked" > search.txt 2> search.err)
  echo "$name on $cluster: $((SECONDS - started)) s wall"
  sed -n '1p;/^   1\./,/^   2\./p' "$out/$name/search.txt" | sed '$d'
  PATH="$bin:$PATH" "$python" test/tools/mlperfc/Inputs/search_commands.py "$out/$name" "$checked" \
    --from "$out/$name/search.txt"
}
for model in ${MODELS:-8b 405b}; do
  case $model in
    8b) search llama31_8b models/llama31_8b.mlir 1x8 3 ;;
    405b) search llama31_405b models/llama31_405b.mlir 256x8 1 ;;
    *) echo "plan_search.sh: unknown model '$model' (8b, 405b)" >&2; exit 2 ;;
  esac
done
