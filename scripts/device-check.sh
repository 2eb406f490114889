#!/usr/bin/env bash
# The GPU check, run on a GPU node that has only the NVIDIA driver, Python with PyTorch (cu130)
# and its nvidia-* wheels: no MLIR, protobuf or MPI. Everything it runs is built elsewhere:
#
#   here (any machine):  bash scripts/device-check.sh --prepare
#                        (builds the `device` preset into build-device/ and puts its stripped
#                         binaries, a tiny plan and its data into .device-inputs/)
#   on the GPU node:     OUT=/some/dir bash scripts/device-check.sh
#
# It reports the environment (driver, GPU, library versions, ldd of mlperf-run), runs the `gpu`
# tests, the op checker (every op with a CUDA kernel against the CPU twin), the tiny Llama 3.1
# for 20 steps on the GPU against the CPU backend in fp32 and bf16, the same GPU run twice
# (bit-identical) and a resume (bit-identical), the tiny LoRA and fp8 plans for 10 steps against
# the CPU, and a bf16 8192^3 GEMM through the backend next to torch.matmul in the same run. Results: $OUT/device-check.log and $OUT/device-check.json
# (plus $OUT/opcheck.json); the last line is "N passed, N failed". Prepared to finish in a few
# minutes on one H200; every step has its own timeout.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)
inputs=$repo/.device-inputs
bin=$inputs/bin

if [ "${1:-}" = "--prepare" ]; then
  set -e
  cmake --preset device >/dev/null
  cmake --build --preset device
  [ -x build/bin/mlperfc ] || bash scripts/build.sh
  rm -rf "$inputs" && mkdir -p "$bin"
  # Stripped copies of what runs there: the device tool carries at most 64 MiB.
  for tool in mlperf-run mlperf-opcheck mlperf-cuda-device-tests mlperf-cuda-host-tests; do
    strip -o "$bin/$tool" "build-device/bin/$tool"
  done
  .venv/bin/python test/tools/mlperfc/Inputs/make_text.py "$inputs/text.txt"
  build/bin/mlperf-prepare-data --output "$inputs/text" "$inputs/text.txt" >/dev/null
  build/bin/mlperfc emit-model llama3 --preset llama31_8b_tiny \
    --set gbs=8,micro_batch=4,lr=3e-3,warmup_steps=2,max_steps=20,eval_every=16,eval_samples=8 -o "$inputs/tiny.mlir"
  build/bin/mlperfc compile "$inputs/tiny.mlir" -o "$inputs/tiny.pb" >/dev/null
  build/bin/mlperfc compile "$inputs/tiny.mlir" --precision fp32 -o "$inputs/tiny-fp32.pb" >/dev/null
  build/bin/mlperfc compile "$inputs/tiny.mlir" --precision fp8 -o "$inputs/tiny-fp8.pb" >/dev/null
  build/bin/mlperfc compile models/llama2_70b_lora_tiny.mlir -o "$inputs/lora.pb" >/dev/null
  echo "[device-check] prepared .device-inputs/ ($(du -sh "$inputs" | cut -f1)): carry it to the GPU node"
  exit 0
fi

OUT=${OUT:-$repo/out/device-check}
mkdir -p "$OUT"
# Training metrics and checkpoints stay out of $OUT: the device tool brings back 8 files at most.
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
log=$OUT/device-check.log
: >"$log"
passed=0
failed=0
json_steps=""

say() { echo "$*" | tee -a "$log"; }
# step NAME TIMEOUT COMMAND...: runs it, logs its output, counts it passed (exit 0) or failed.
step() {
  local name=$1 limit=$2
  shift 2
  say "== $name"
  local start=$(date +%s.%N)
  timeout "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  local seconds=$(python3 -c "print(round($(date +%s.%N) - $start, 2))")
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    say "   passed (${seconds} s)"
  else
    failed=$((failed + 1))
    say "   FAILED: exit $rc (${seconds} s)"
  fi
  json_steps+="${json_steps:+,}{\"name\": \"$name\", \"exit\": $rc, \"seconds\": $seconds}"
}

# The CUDA libraries the binaries load (cuBLASLt; later cuDNN and NCCL) come from PyTorch's
# nvidia-* wheels on a node without a system CUDA install.
nvidia_root=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' \
              2>/dev/null || true)
if [ -n "$nvidia_root" ]; then
  for lib in "$nvidia_root"/nvidia/*/lib "$nvidia_root"/nvidia/cu*/lib; do
    [ -d "$lib" ] && LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
  export LD_LIBRARY_PATH
fi

say "== environment ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version(),
"device", torch.cuda.get_device_name(0))' 2>&1
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "ldd mlperf-run:"
  ldd "$bin/mlperf-run" 2>&1
} | tee -a "$log"
if ldd "$bin/mlperf-run" | grep -E -q 'libprotobuf|libmpi|libLLVM|libstdc\+\+'; then
  say "   FAILED: mlperf-run links protobuf, MPI, LLVM or libstdc++ dynamically"
  failed=$((failed + 1))
else
  passed=$((passed + 1))
fi

step "gpu.device: device self-test" 60 "$bin/mlperf-cuda-device-tests"
step "unit.cuda_host: CUDA host logic" 60 "$bin/mlperf-cuda-host-tests" --gtest_brief=1
step "gpu.opcheck: every CUDA kernel against its CPU twin, bf16 GEMM 8192^3" 300 \
  "$bin/mlperf-opcheck" --json "$OUT/opcheck.json" --bench-gemm 8192 --iterations 20
grep -E "^(PASS|FAIL) " "$log" | grep -v "max_ulps 0 rel_err 0$" | tee -a "$OUT/opcheck-inexact.txt"
# The tiny Llama 3.1 on the GPU against the CPU backend from the same seed (the CPU is the twin),
# 20 steps in fp32 and bf16; the CUDA run twice (bit-identical); a resume (bit-identical).
compare() { python3 "$repo/scripts/compare_runs.py" "$1" "$2" --tolerance "$3" || echo FAILED; }
# verdict OUTPUT: logs compare's line and counts it (its output ends in FAILED when it failed).
verdict() {
  say "   $1"
  case "$1" in
  *FAILED) failed=$((failed + 1)) ;;
  *) passed=$((passed + 1)); say "   passed" ;;
  esac
}
identical() { python3 "$repo/scripts/compare_runs.py" "$1" "$2" --identical --skip "$3"; }
if [ -f "$inputs/tiny.pb" ]; then
  for precision in fp32 bf16; do
    plan=$inputs/tiny.pb; bound=2e-2
    [ $precision = fp32 ] && plan=$inputs/tiny-fp32.pb && bound=1e-5
    timeout 120 "$bin/mlperf-run" "$plan" --data "$inputs/text" --backend cpu --seed 5 \
      --max-steps 20 --metrics-out "$runs/cpu-$precision.jsonl" >>"$log" 2>&1
    step "tiny Llama $precision on the GPU, 20 steps" 180 "$bin/mlperf-run" "$plan" \
      --data "$inputs/text" --backend cuda --seed 5 --max-steps 20 \
      --metrics-out "$runs/cuda-$precision.jsonl"
    say "== tiny Llama $precision: cuda against cpu (relative loss difference at most $bound)"
    verdict "$(compare "$runs/cuda-$precision.jsonl" "$runs/cpu-$precision.jsonl" $bound 2>&1)"
  done
  step "tiny Llama bf16: the same CUDA run again" 180 "$bin/mlperf-run" "$inputs/tiny.pb" \
    --data "$inputs/text" --backend cuda --seed 5 --max-steps 20 --metrics-out "$runs/cuda-again.jsonl"
  say "== the two CUDA runs: bit-identical"
  if identical "$runs/cuda-bf16.jsonl" "$runs/cuda-again.jsonl" 0 >>"$log" 2>&1; then
    passed=$((passed + 1)); say "   passed: loss and grad norm of every step identical"
  else
    failed=$((failed + 1)); say "   FAILED: $(tail -1 "$log")"
  fi
  step "tiny Llama bf16: 10 CUDA steps, save" 120 "$bin/mlperf-run" "$inputs/tiny.pb" \
    --data "$inputs/text" --backend cuda --seed 5 --max-steps 10 --save "$runs/ckpt.safetensors" \
    --metrics-out "$runs/cuda-first.jsonl"
  step "tiny Llama bf16: resume to step 20" 120 "$bin/mlperf-run" "$inputs/tiny.pb" \
    --data "$inputs/text" --backend cuda --resume "$runs/ckpt.safetensors" --max-steps 20 \
    --metrics-out "$runs/cuda-resumed.jsonl"
  say "== the resumed run: bit-identical to the uninterrupted one"
  if identical "$runs/cuda-bf16.jsonl" "$runs/cuda-resumed.jsonl" 10 >>"$log" 2>&1; then
    passed=$((passed + 1)); say "   passed: steps 10-19 identical"
  else
    failed=$((failed + 1)); say "   FAILED: $(tail -1 "$log")"
  fi
  # --gemm-cache: the first run times cuBLASLt's candidates and writes the cache, the second
  # reads it: the same algorithms, so the same bits; both within bf16 rounding of the CPU.
  step "tiny Llama bf16, --gemm-cache: timing every GEMM" 180 "$bin/mlperf-run" "$inputs/tiny.pb" \
    --data "$inputs/text" --backend cuda --seed 5 --max-steps 20 --gemm-cache "$runs/gemm.cache" \
    --metrics-out "$runs/cuda-tuned.jsonl"
  step "tiny Llama bf16, --gemm-cache: from the cache" 180 "$bin/mlperf-run" "$inputs/tiny.pb" \
    --data "$inputs/text" --backend cuda --seed 5 --max-steps 20 --gemm-cache "$runs/gemm.cache" \
    --metrics-out "$runs/cuda-cached.jsonl"
  say "   $(wc -l < "$runs/gemm.cache" 2>/dev/null || echo 0) GEMMs in the cache"
  say "== timed and cached runs: bit-identical, and within 2e-2 of the CPU"
  if identical "$runs/cuda-tuned.jsonl" "$runs/cuda-cached.jsonl" 0 >>"$log" 2>&1; then
    verdict "$(compare "$runs/cuda-tuned.jsonl" "$runs/cpu-bf16.jsonl" 2e-2 2>&1)"
  else
    failed=$((failed + 1)); say "   FAILED: $(tail -1 "$log")"
  fi
  # LoRA (frozen base, adapters, dropout) and fp8 (delayed scaling, fp8 weights), 10 steps each.
  for run in lora:lora.pb tiny-fp8:tiny-fp8.pb; do
    name=${run%%:*}; plan=$inputs/${run#*:}
    timeout 120 "$bin/mlperf-run" "$plan" --data "$inputs/text" --backend cpu --seed 5 \
      --max-steps 10 --metrics-out "$runs/cpu-$name.jsonl" >>"$log" 2>&1
    step "$name on the GPU, 10 steps" 180 "$bin/mlperf-run" "$plan" --data "$inputs/text" \
      --backend cuda --seed 5 --max-steps 10 --metrics-out "$runs/cuda-$name.jsonl"
    say "== $name: cuda against cpu (relative loss difference at most 2e-2)"
    verdict "$(compare "$runs/cuda-$name.jsonl" "$runs/cpu-$name.jsonl" 2e-2 2>&1)"
  done
  rm -f "$runs/ckpt.safetensors"
fi

say "== torch.matmul bf16 8192^3 (the peer, same run)"
torch_tflops=$(timeout 120 python3 - 2>>"$log" <<'EOF'
import torch
n = 8192
a = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
b = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
for _ in range(3):
    torch.matmul(a, b)
torch.cuda.synchronize()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(20):
    torch.matmul(a, b)
end.record()
torch.cuda.synchronize()
seconds = start.elapsed_time(end) / 1e3 / 20
print(f"{2 * n**3 / seconds / 1e12:.1f}")
EOF
)
say "   torch.matmul: ${torch_tflops:-?} TFLOP/s"
gemm() { python3 -c "import json; print(json.load(open('$OUT/opcheck.json'))['gemm']['$1']['tflops'])" 2>/dev/null || echo null; }
ours=$(gemm heuristic); tuned=$(gemm timed)
say "   mlperfc cuBLASLt GEMM: ${ours} TFLOP/s (heuristic's first choice), ${tuned} TFLOP/s (timed at prepare)"

cat >"$OUT/device-check.json" <<EOF
{"steps": [$json_steps], "gemm_8192_bf16_tflops": {"mlperfc": ${ours:-null}, "mlperfc_timed": ${tuned:-null}, "torch": ${torch_tflops:-null}},
 "passed": $passed, "failed": $failed}
EOF
say "$passed passed, $failed failed"
