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
# (bit-identical) and a resume (bit-identical), the evaluation losses of an fp32 run against
# the CPU's, the tiny LoRA and fp8 plans for 10 steps against
# the CPU, a bf16 8192^3 GEMM through the backend next to torch.matmul, causal GQA attention at
# seq 8192 (cuDNN's fused SDPA and the backend's own kernel) next to torch's
# scaled_dot_product_attention, and the whole training step of a one- and a two-layer Llama
# with 8B's shapes at seq 8192 next to the same model in PyTorch eager and torch.compile, all in
# the same run. Results: $OUT/device-check.log and $OUT/device-check.json (plus
# $OUT/opcheck.json); the last line is "N passed, N failed". Prepared to finish in under eight
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
  # Llama 3.1 8B's shapes with one and two layers at seq 8192, one sequence per step, nothing
  # recomputed, for the training-step benchmark; its data: byte tokens, 24 sequences' worth.
  python3 -c "import sys; t=open(sys.argv[1]).read(); open(sys.argv[2],'w').write(t*120)" \
    "$inputs/text.txt" "$inputs/long.txt"
  build/bin/mlperf-prepare-data --output "$inputs/long" "$inputs/long.txt" >/dev/null
  rm "$inputs/long.txt"
  for layers in 1 2; do
    build/bin/mlperfc emit-model llama3 --set layers=$layers,gbs=1,micro_batch=1,lr=1e-4,warmup_steps=1,max_steps=8 \
      -o "$inputs/8b-$layers.mlir" 2>/dev/null
    build/bin/mlperfc compile "$inputs/8b-$layers.mlir" --recompute none -o "$inputs/8b-$layers.pb" |
      sed -n 's/.* model FLOPs per step (\([0-9.e+]*\) per token).*/\1/p' >"$inputs/8b-$layers.flops"
  done
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
step "gpu.opcheck: every CUDA kernel against its CPU twin, bf16 GEMM 8192^3, attention at seq 8192" 300 \
  "$bin/mlperf-opcheck" --json "$OUT/opcheck.json" --bench-gemm 8192 --bench-attention 8192 \
  --iterations 20
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
  # Traced (--trace: every command between CUDA events): timing must not change a bit.
  step "tiny Llama bf16: the same CUDA run again, traced" 180 "$bin/mlperf-run" "$inputs/tiny.pb" \
    --data "$inputs/text" --backend cuda --seed 5 --max-steps 20 --metrics-out "$runs/cuda-again.jsonl" \
    --trace "$runs/tiny-trace.json"
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
  # Evaluation in the plan (eval_step adds each loss to an f64 running mean, eval_finish
  # divides): every evaluation of a CUDA fp32 run equals the CPU's within 1e-5 relative.
  for backend in cpu cuda; do
    timeout 180 "$bin/mlperf-run" "$inputs/tiny-fp32.pb" --data "$inputs/text" \
      --eval-data "$inputs/text" --backend $backend --seed 5 --max-steps 20 --target 0 \
      --print-every 0 2>>"$log" | grep '^eval' > "$runs/eval-$backend.txt"
  done
  say "== tiny Llama fp32 evaluation: cuda against cpu (relative difference at most 1e-5)"
  verdict "$(python3 - "$runs/eval-cpu.txt" "$runs/eval-cuda.txt" <<'PY'
import sys
def losses(path):
    return [float(line.split("eval_loss ")[1].split()[0]) for line in open(path) if "eval_loss " in line]
cpu, cuda = losses(sys.argv[1]), losses(sys.argv[2])
if not cpu or len(cpu) != len(cuda):
    print(f"{len(cuda)} CUDA evaluations for {len(cpu)} on the CPU: FAILED")
else:
    worst = max(abs(a - b) / abs(a) for a, b in zip(cpu, cuda))
    print(f"{len(cpu)} evaluations, largest relative difference {worst:.3g}" + (" FAILED" if worst > 1e-5 else ""))
PY
)"
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

say "== torch scaled_dot_product_attention, causal GQA 32/8 heads, head dim 128, seq 8192, bf16 (the peer, same run)"
torch_attention=$(timeout 120 python3 - 2>>"$log" <<'EOF'
import torch, torch.nn.functional as F
s, h, kv, d = 8192, 32, 8, 128
g = torch.Generator(device="cuda").manual_seed(7)
q = (torch.rand(1, h, s, d, device="cuda", generator=g) * 2 - 1).bfloat16().requires_grad_()
k = (torch.rand(1, kv, s, d, device="cuda", generator=g) * 2 - 1).bfloat16().requires_grad_()
v = (torch.rand(1, kv, s, d, device="cuda", generator=g) * 2 - 1).bfloat16().requires_grad_()
dout = (torch.rand(1, h, s, d, device="cuda", generator=g) * 2 - 1).bfloat16()
flops = 4 * h * s * s * d / 2
def forward():
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
def timed(fn, n=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / n
fwd = timed(forward)
both = timed(lambda: torch.autograd.grad(forward(), (q, k, v), dout))
print(f"{flops / fwd / 1e12:.1f} {2.5 * flops / (both - fwd) / 1e12:.1f}")
EOF
)
torch_fwd=${torch_attention% *}; torch_bwd=${torch_attention#* }
attention() { python3 -c "import json; print(json.load(open('$OUT/opcheck.json'))['attention']['$1']['$2'])" 2>/dev/null || echo null; }
say "   torch SDPA: forward ${torch_fwd:-?} TFLOP/s, backward ${torch_bwd:-?} TFLOP/s (backward: forward+backward minus forward)"
say "   mlperfc cuDNN SDPA: forward $(attention cudnn forward_tflops), backward $(attention cudnn backward_tflops) TFLOP/s; own kernel: forward $(attention own forward_tflops), backward $(attention own backward_tflops)"

# The whole training step at Llama 3.1 8B's shapes (one and two layers, seq 8192, one sequence
# per step): mlperf-run on the GPU against the same model in PyTorch eager and torch.compile
# (benchmarks/torch_llama_step.py), tokens/s (median of steps 2-7) and model FLOPs utilization
# against the H200's 989 TFLOP/s dense bf16.
train_json=""
if [ -f "$inputs/8b-1.pb" ]; then
  for layers in 1 2; do
    step "8B-shaped Llama, $layers layer(s), seq 8192: 8 CUDA steps" 300 "$bin/mlperf-run" \
      "$inputs/8b-$layers.pb" --data "$inputs/long" --backend cuda --seed 5 --max-steps 8 \
      --metrics-out "$runs/8b-$layers.jsonl"
    ours=$(python3 -c "import json, statistics; r=[json.loads(l) for l in open('$runs/8b-$layers.jsonl') if '\"tokens_per_s\"' in l]; print(round(statistics.median(x['tokens_per_s'] for x in r[2:]), 1))" 2>/dev/null || echo null)
    peer() { timeout 300 python3 "$repo/benchmarks/torch_llama_step.py" --layers $layers --mode "$1" \
      --steps 6 2>>"$log" | python3 -c "import json, sys; print(json.loads(sys.stdin.read())['tokens_per_s'])" 2>/dev/null || echo null; }
    eager=$(peer eager); compiled=$(peer compile)
    flops=$(cat "$inputs/8b-$layers.flops")
    mfu() { python3 -c "print('null' if '$1' == 'null' else round($1 * $flops / 989e12, 4))"; }
    ratio() { python3 -c "print('null' if 'null' in ('$1', '$2') else round($1 / $2, 3))"; }
    say "   $layers layer(s): tokens/s mlperfc ${ours} (MFU $(mfu $ours)), torch eager ${eager} (MFU $(mfu $eager)), torch.compile ${compiled} (MFU $(mfu $compiled)); mlperfc/eager $(ratio $ours $eager), mlperfc/compile $(ratio $ours $compiled)"
    train_json+="${train_json:+, }\"$layers\": {\"mlperfc\": $ours, \"torch_eager\": $eager, \"torch_compile\": $compiled, \"model_flops_per_token\": $flops}"
  done
  # Where the one-layer step's GPU time goes: --trace times every command between CUDA events.
  step "8B-shaped Llama, 1 layer: a traced CUDA step (--trace)" 120 "$bin/mlperf-run" \
    "$inputs/8b-1.pb" --data "$inputs/long" --backend cuda --seed 5 --max-steps 3 \
    --trace "$OUT/trace-8b-1.json"
  python3 - "$OUT/trace-8b-1.json" <<'EOF' 2>&1 | tee -a "$log"
import collections, json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
by_op = collections.defaultdict(lambda: [0, 0.0])
for e in events:
    by_op[e["name"].split()[0]][0] += 1
    by_op[e["name"].split()[0]][1] += e["dur"]
busy = sum(e["dur"] for e in events)
span = max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events)
print(f"   traced step: {len(events)} commands, {busy / 1e3:.1f} ms of GPU time within "
      f"{span / 1e3:.1f} ms from the first command's start to the last one's end")
for op, (count, us) in sorted(by_op.items(), key=lambda item: -item[1][1])[:16]:
    print(f"   {op:28s} {count:4d} x {us / 1e3:9.2f} ms {100 * us / busy:5.1f}%")
EOF
  # The GPU measured for the step-time model: mlperfc predict --calibrate reads this file
  # (here: the model's sweeps, and the one-layer plan's own commands, up to four sizes each).
  step "mlperf-run --calibrate-out on the GPU (with the one-layer plan's commands)" 240 \
    "$bin/mlperf-run" --calibrate-out "$OUT/calibration-h200.json" --backend cuda "$inputs/8b-1.pb"
fi

cat >"$OUT/device-check.json" <<EOF
{"steps": [$json_steps], "gemm_8192_bf16_tflops": {"mlperfc": ${ours:-null}, "mlperfc_timed": ${tuned:-null}, "torch": ${torch_tflops:-null}},
 "train_step_8192_tokens_per_s": {$train_json},
 "attention_8192_tflops": {"mlperfc_cudnn": [$(attention cudnn forward_tflops), $(attention cudnn backward_tflops)], "mlperfc_own": [$(attention own forward_tflops), $(attention own backward_tflops)], "torch": [${torch_fwd:-null}, ${torch_bwd:-null}]},
 "passed": $passed, "failed": $failed}
EOF
say "$passed passed, $failed failed"
