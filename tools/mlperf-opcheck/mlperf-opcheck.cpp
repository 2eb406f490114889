//===- mlperf-opcheck.cpp - The CUDA kernels against their CPU twins ------===//
//
// Runs every op the CUDA backend has a kernel for on random inputs on both backends and
// compares by tolerance class (runtime/cuda/OpCheck.h); with --bench-gemm N also times the
// backend's bf16 GEMM at N³. Exits 0 when every case passes, 1 when one fails or on an error,
// and 77 (ctest's "skipped") without a usable GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/OpCheck.h"
#include "runtime/dist/Communicator.h"
#include "runtime/plan/PlanBuilding.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/PlanOps.h"
#include "runtime/support/CommandLine.h"
#include "runtime/support/FileOutput.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include <unistd.h>

using namespace mlperf;
using namespace mlperf::rt;

namespace {

constexpr int kSkipped = 77;

/// A benchmark plan on the CUDA backend: validated, prepared, its `inputs` (bf16) filled with
/// uniform values in [-1, 1) from a fixed seed.
struct BenchBackend {
  std::unique_ptr<Communicator> single = createSingleRankCommunicator();
  std::unique_ptr<Backend> backend;

  Status prepare(const plan::Plan &p, const BackendOptions &options,
                 const std::vector<uint32_t> &inputs) {
    MLPERF_RETURN_IF_ERROR(validatePlan(p));
    backend = cuda::createCudaBackend(options);
    MLPERF_RETURN_IF_ERROR(backend->prepare(p, *single));
    std::mt19937 random(7);
    std::uniform_real_distribution<float> values(-1.0f, 1.0f);
    for (uint32_t id : inputs) {
      const plan::Buffer &b = p.buffers(id);
      HostTensor input = HostTensor::zeros(DType::kBF16, {b.shape().begin(), b.shape().end()});
      for (float &value : input.values) {
        value = values(random);
      }
      MLPERF_RETURN_IF_ERROR(backend->write(id, input));
    }
    return Status::ok();
  }
};

/// bf16 C [n, n] = A [n, n] · B [n, n] on the CUDA backend: mean seconds per GEMM over
/// `iterations` programs after three untimed ones (each program ends with a device sync); with
/// `gemmCache`, the algorithm timed at prepare (BackendOptions).
Status benchGemm(int64_t n, int64_t iterations, const std::string &gemmCache, double &seconds) {
  plan::Plan p;
  p.set_format_version(kPlanFormatVersion);
  const uint64_t bytes = n * n * 2;
  for (int i = 0; i < 3; ++i) {
    plan::Buffer *b = p.add_buffers();
    b->set_id(i);
    b->set_name(i == 0 ? "a" : i == 1 ? "b" : "c");
    b->set_dtype(plan::BF16);
    b->add_shape(n);
    b->add_shape(n);
    b->set_memory_class(plan::PERSISTENT);
    b->set_offset(i * bytes);
    b->set_size(bytes);
  }
  plan::Arena *arena = p.add_arenas();
  arena->set_memory_class(plan::PERSISTENT);
  arena->set_size(3 * bytes);
  plan::Program *program = p.add_programs();
  program->set_name("gemm");
  plan::Command *command = program->add_commands();
  command->set_op("matmul");
  command->add_operands(0);
  command->add_operands(1);
  command->add_results(2);
  BackendOptions options;
  options.gemmAlgorithmCache = gemmCache;
  BenchBackend bench;
  MLPERF_RETURN_IF_ERROR(bench.prepare(p, options, {0, 1}));
  Backend *backend = bench.backend.get();
  for (int i = 0; i < 3; ++i) {
    MLPERF_RETURN_IF_ERROR(backend->execute(0));
  }
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    MLPERF_RETURN_IF_ERROR(backend->execute(0));
  }
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
            static_cast<double>(iterations);
  return Status::ok();
}

/// Causal GQA attention at Llama 3.1 8B's shape (batch 1, 32 query and 8 KV heads, head dim
/// 128, `seq` positions, bf16) on the CUDA backend, forward and backward: mean seconds per
/// command over `iterations` programs of kRepeats commands each, after one untimed program.
/// `cudnn` false: the backend's own kernel.
constexpr int kAttentionRepeats = 10;
Status benchAttention(int64_t seq, int64_t iterations, bool cudnn, double &forwardSeconds,
                      double &backwardSeconds) {
  const int64_t heads = 32, kvHeads = 8, dim = 128;
  plan::Plan p;
  p.set_format_version(kPlanFormatVersion);
  uint64_t used = 0;
  auto buffer = [&](const char *name, plan::DType type, std::vector<int64_t> shape) {
    plan::Buffer *b = p.add_buffers();
    b->set_id(p.buffers_size() - 1);
    b->set_name(name);
    b->set_dtype(type);
    uint64_t bytes = planDTypeBytes(type);
    for (int64_t d : shape) {
      b->add_shape(d);
      bytes *= d;
    }
    b->set_memory_class(plan::PERSISTENT);
    b->set_offset(used);
    b->set_size(bytes);
    used += (bytes + 255) / 256 * 256;
    return b->id();
  };
  const std::vector<int64_t> queryShape{1, heads, seq, dim}, keyShape{1, kvHeads, seq, dim};
  uint32_t q = buffer("q", plan::BF16, queryShape), k = buffer("k", plan::BF16, keyShape),
           v = buffer("v", plan::BF16, keyShape), o = buffer("o", plan::BF16, queryShape),
           lse = buffer("lse", plan::F32, {1, heads, seq}),
           dout = buffer("dout", plan::BF16, queryShape), dq = buffer("dq", plan::BF16, queryShape),
           dk = buffer("dk", plan::BF16, keyShape), dv = buffer("dv", plan::BF16, keyShape);
  plan::Arena *arena = p.add_arenas();
  arena->set_memory_class(plan::PERSISTENT);
  arena->set_size(used);
  auto program = [&](const char *name, const char *op, std::vector<uint32_t> operands,
                     std::vector<uint32_t> results) {
    plan::Program *program = p.add_programs();
    program->set_name(name);
    for (int r = 0; r < kAttentionRepeats; ++r) {
      plan::Command *command = rt::addCommand(*program, op, operands, results);
      plan::Attribute *scale = command->add_attributes();
      scale->set_name("scale");
      scale->set_f(1.0 / std::sqrt(static_cast<double>(dim)));
      plan::Attribute *causal = command->add_attributes();
      causal->set_name("causal");
      causal->set_i(1);
    }
  };
  program("forward", "attention", {q, k, v}, {o, lse});
  program("backward", "attention_grad", {q, k, v, o, lse, dout}, {dq, dk, dv});
  BackendOptions options;
  options.cudnnAttention = cudnn;
  BenchBackend bench;
  MLPERF_RETURN_IF_ERROR(bench.prepare(p, options, {q, k, v, dout}));
  Backend *backend = bench.backend.get();
  for (int index : {0, 1}) {
    MLPERF_RETURN_IF_ERROR(backend->execute(index)); // warm-up; the backward's o and lse
    auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iterations; ++i) {
      MLPERF_RETURN_IF_ERROR(backend->execute(index));
    }
    (index == 0 ? forwardSeconds : backwardSeconds) =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        static_cast<double>(iterations * kAttentionRepeats);
  }
  return Status::ok();
}

} // namespace

int main(int argc, char **argv) {
  std::string jsonPath;
  int64_t gemmSize = 0, iterations = 20;
  CommandLine cli("mlperf-opcheck",
                  "mlperf-opcheck: every op with a CUDA kernel on random inputs, on the CUDA and "
                  "the CPU backend, compared by tolerance class (exact, ulps, norm); exits 77 "
                  "without a usable GPU");
  std::string family;
  cli.addString("json", &jsonPath, "PATH", "Also write the results as JSON (atomically)");
  cli.addString("family", &family, "NAME",
                "Only the cases of one family of ops (gemm, elementwise, layout, norms, attention, "
                "losses, embedding, random, optimizer, fp8, program)");
  cli.addInt("bench-gemm", &gemmSize, "Also time a bf16 N x N x N GEMM on the CUDA backend");
  cli.addInt("iterations", &iterations, "Timed GEMMs for --bench-gemm (default 20)");
  int64_t attentionSeq = 0;
  cli.addInt("bench-attention", &attentionSeq,
             "Also time causal attention forward and backward at Llama 3.1 8B's heads (32 query, "
             "8 KV, head dim 128, bf16) and N positions: cuDNN's fused SDPA and the backend's "
             "own kernel");
  if (std::optional<int> exit = cli.parse(argc, argv)) {
    return *exit;
  }
  if (gemmSize < 0 || attentionSeq < 0 || iterations <= 0) {
    return cli.error("--bench-gemm and --bench-attention must be positive and --iterations at "
                     "least 1");
  }
  const std::vector<std::string> *familyOps = nullptr;
  if (!family.empty()) {
    auto it = cuda::opCheckFamilies().find(family);
    if (it == cuda::opCheckFamilies().end()) {
      return cli.error("unknown --family '" + family + "'");
    }
    familyOps = &it->second;
  }
  Status usable = cuda::checkUsableDevice();
  if (!usable.isOk()) {
    std::printf("skipped: no usable GPU: %s\n", usable.message().c_str());
    return kSkipped;
  }
  int passed = 0, failed = 0;
  std::string json = "{\n  \"cases\": [";
  for (const cuda::OpCheckCase &check : cuda::opCheckCases()) {
    if (familyOps &&
        std::find(familyOps->begin(), familyOps->end(), check.op) == familyOps->end()) {
      continue;
    }
    std::unique_ptr<Backend> reference = createCpuBackend();
    std::unique_ptr<Backend> candidate = cuda::createCudaBackend();
    cuda::OpCheckResult result;
    Status status = cuda::runOpCheck(check, *reference, *candidate, result);
    if (!status.isOk()) {
      result.passed = false;
      result.detail = status.toString();
    }
    (result.passed ? passed : failed)++;
    std::printf("%s %-50s %-5s max_ulps %lld rel_err %.3g%s%s\n", result.passed ? "PASS" : "FAIL",
                check.name.c_str(), cuda::toleranceName(check.tolerance),
                static_cast<long long>(result.maxUlps), result.relativeError,
                result.detail.empty() ? "" : ": ", result.detail.c_str());
    json += std::string(passed + failed > 1 ? "," : "") +
            "\n    {\"name\": " + jsonQuote(check.name) + ", \"op\": " + jsonQuote(check.op) +
            ", \"tolerance\": " + jsonQuote(cuda::toleranceName(check.tolerance)) +
            ", \"passed\": " + (result.passed ? "true" : "false") +
            ", \"max_ulps\": " + std::to_string(result.maxUlps) +
            ", \"relative_error\": " + jsonNumber(result.relativeError) +
            ", \"detail\": " + jsonQuote(result.detail) + "}";
  }
  json += "\n  ]";
  if (gemmSize > 0) {
    // cuBLASLt's first heuristic choice, then the fastest of its top eight timed at prepare
    // (a fresh cache file, removed afterwards).
    char cachePath[] = "/tmp/mlperf-opcheck-gemm-XXXXXX";
    int fd = mkstemp(cachePath);
    if (fd >= 0) {
      close(fd);
      unlink(cachePath);
    }
    json += ",\n  \"gemm\": {\"n\": " + std::to_string(gemmSize);
    for (bool timed : {false, true}) {
      double seconds = 0;
      Status status = fd < 0 && timed
                          ? Status(StatusCode::kInternal, "no temporary file")
                          : benchGemm(gemmSize, iterations, timed ? cachePath : "", seconds);
      const char *how = timed ? "timed choice" : "heuristic's first choice";
      if (!status.isOk()) {
        std::printf("FAIL gemm bench bf16 %lld^3 (%s): %s\n", static_cast<long long>(gemmSize), how,
                    status.toString().c_str());
        ++failed;
        continue;
      }
      double tflops = 2.0 * gemmSize * gemmSize * gemmSize / seconds / 1e12;
      std::printf("gemm bf16 %lld^3 (cuBLASLt, %s): %.3f ms, %.1f TFLOP/s\n",
                  static_cast<long long>(gemmSize), how, seconds * 1e3, tflops);
      json += std::string(", \"") + (timed ? "timed" : "heuristic") +
              "\": {\"seconds\": " + jsonNumber(seconds) + ", \"tflops\": " + jsonNumber(tflops) +
              "}";
    }
    json += "}";
    unlink(cachePath);
  }
  if (attentionSeq > 0) {
    // FLOPs as FlashAttention counts them: 4·b·h·s²·d, halved when causal; the backward 2.5×.
    const double forwardFlops = 4.0 * 32 * attentionSeq * attentionSeq * 128 / 2;
    json += ",\n  \"attention\": {\"seq\": " + std::to_string(attentionSeq);
    for (bool cudnn : {true, false}) {
      double forward = 0, backward = 0;
      // The own kernel is unfused and far slower: fewer programs.
      Status status =
          benchAttention(attentionSeq, cudnn ? iterations : 2, cudnn, forward, backward);
      const char *how = cudnn ? "cudnn" : "own";
      if (!status.isOk()) {
        std::printf("FAIL attention bench seq %lld (%s): %s\n",
                    static_cast<long long>(attentionSeq), how, status.toString().c_str());
        ++failed;
        continue;
      }
      double forwardTflops = forwardFlops / forward / 1e12,
             backwardTflops = 2.5 * forwardFlops / backward / 1e12;
      std::printf("attention bf16 causal GQA 32/8 heads, head dim 128, seq %lld (%s): forward "
                  "%.3f ms, %.1f TFLOP/s; backward %.3f ms, %.1f TFLOP/s\n",
                  static_cast<long long>(attentionSeq), how, forward * 1e3, forwardTflops,
                  backward * 1e3, backwardTflops);
      json += std::string(", \"") + how + "\": {\"forward_seconds\": " + jsonNumber(forward) +
              ", \"forward_tflops\": " + jsonNumber(forwardTflops) +
              ", \"backward_seconds\": " + jsonNumber(backward) +
              ", \"backward_tflops\": " + jsonNumber(backwardTflops) + "}";
    }
    json += "}";
  }
  json += ",\n  \"passed\": " + std::to_string(passed) + ", \"failed\": " + std::to_string(failed) +
          "\n}\n";
  if (!jsonPath.empty()) {
    Status written = writeFileAtomically(jsonPath, {json});
    if (!written.isOk()) {
      return cli.error(written.toString());
    }
  }
  std::printf("opcheck: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
