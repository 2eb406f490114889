//===- CudaBackend.cpp - Plans on one NVIDIA GPU ---------------*- C++ -*-===//
//
// The plan's arenas are one cudaMalloc each, taken at prepare; nothing is allocated during a
// step. Program streams are CUDA streams (stream 0 computes, stream 1 communicates), plan
// events are CUDA events, and a `call` is a barrier between the two streams as on the CPU
// (runtime/plan/StreamOrder.h). Host <-> device copies happen only in write and read, between
// programs. Every command is checked at prepare (CudaOps.h): a plan holding one this backend
// cannot run is refused before any kernel runs, naming the command and why.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaBackend.h"
#include "runtime/plan/AttributeCodec.h"
#include "runtime/plan/PlanOps.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Numerics.h"
#include "runtime/cuda/CudaOps.h"
#include "runtime/cuda/CudaStatus.h"
#include "runtime/cuda/CudnnAttention.h"
#include "runtime/cuda/Device.h"
#include "runtime/cuda/GemmAlgorithmCache.h"
#include "runtime/cuda/GemmLayout.h"
#include "runtime/cuda/Kernels.h"
#include "runtime/cuda/Reserves.h"
#include "runtime/dist/Mesh.h"
#include "runtime/exec/BufferCodec.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/support/NumberFormat.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <optional>
#include <vector>

namespace mlperf::rt::cuda {
namespace {

/// The cuBLASLt objects of one matmul command, built once at prepare.
struct PreparedMatmul {
  GemmLayout layout;
  cublasLtMatmulDesc_t description = nullptr;
  cublasLtMatrixLayout_t x = nullptr, y = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algorithm{};
};

/// A GEMM a command runs: its shape and the storage types of A, B and C.
struct GemmSpec {
  cpu::MatmulShape shape;
  plan::DType a, b, c;
};

cudaDataType_t cudaTypeOf(plan::DType type) {
  return type == plan::BF16 ? CUDA_R_16BF : CUDA_R_32F; // CudaOps admits f32 and bf16 only
}

int64_t elementsOf(const plan::Buffer &buffer) {
  int64_t count = 1;
  for (int64_t dim : buffer.shape()) {
    count *= dim;
  }
  return count;
}

std::vector<int64_t> shapeOf(const plan::Buffer &buffer) {
  return {buffer.shape().begin(), buffer.shape().end()};
}

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i) {
    result *= shape[i];
  }
  return result;
}

std::string bytesText(uint64_t bytes) {
  return humanBytes(bytes) + " (" + std::to_string(bytes) + " bytes)";
}

size_t alignedBytes(size_t bytes) { return (bytes + 255) / 256 * 256; }

/// The GEMM of a matmul or fp8_matmul command (its operands and result in their storage types;
/// `inF32`: all f32, fp8_matmul's decoded operands).
GemmSpec matmulSpec(const plan::Plan &plan, const plan::Command &command, bool inF32) {
  const plan::Buffer &a = plan.buffers(command.operands(0)), &b = plan.buffers(command.operands(1)),
                     &result = plan.buffers(command.results(0));
  auto flag = [&](const char *name) {
    const plan::Attribute *attribute = findAttribute(command, name);
    return attribute && attribute->i() != 0;
  };
  cpu::MatmulShape shape = cpu::matmulShapeOf(shapeOf(a), shapeOf(b), shapeOf(result),
                                              flag("transpose_lhs"), flag("transpose_rhs"));
  if (inF32) {
    return {shape, plan::F32, plan::F32, plan::F32};
  }
  return {shape, a.dtype(), b.dtype(), result.dtype()};
}

/// Attention on the GPU, until cuDNN (part 2): per (batch, KV head) the unfused graph's steps
/// over its group of query heads, in scratch: scores = Q·Kᵀ (f32), scale, causal mask,
/// softmax, P rounded to V's type, out = P·V; the backward as the CPU's attentionBackward.
struct AttentionLayout {
  int64_t batch = 0, heads = 0, kvHeads = 0, queries = 0, keys = 0, headDim = 0, group = 0;
  int64_t rows = 0;   // group · queries: one GEMM's rows
  int64_t scores = 0; // rows · keys
  size_t scoresAt = 0, probabilitiesAt = 0, dpAt = 0, dsAt = 0, keyHeadsAt = 0, valueHeadsAt = 0,
         bytes = 0;
  std::vector<GemmSpec> gemms; // forward: scores, pv; backward: scores, dp, dq, dk, dv
};

AttentionLayout attentionLayout(const plan::Plan &plan, const plan::Command &command) {
  const bool backward = command.op() == "attention_grad";
  const plan::Buffer &q = plan.buffers(command.operands(0)), &k = plan.buffers(command.operands(1)),
                     &v = plan.buffers(command.operands(2));
  AttentionLayout l;
  l.batch = q.shape(0);
  l.heads = q.shape(1);
  l.queries = q.shape(2);
  l.headDim = q.shape(3);
  l.kvHeads = k.shape(1);
  l.keys = k.shape(2);
  l.group = l.heads / l.kvHeads;
  l.rows = l.group * l.queries;
  l.scores = l.rows * l.keys;
  const size_t valueBytes = planDTypeBytes(v.dtype()), queryBytes = planDTypeBytes(q.dtype());
  size_t at = 0;
  auto take = [&](size_t bytes) {
    size_t offset = at;
    at += alignedBytes(bytes);
    return offset;
  };
  l.scoresAt = take(l.scores * 4);
  l.probabilitiesAt = take(l.scores * valueBytes);
  const plan::DType out = plan.buffers(command.results(0)).dtype();
  l.gemms.push_back(
      {cpu::matmulShape(l.rows, l.keys, l.headDim, false, true), q.dtype(), k.dtype(), plan::F32});
  if (!backward) {
    l.gemms.push_back({cpu::matmulShape(l.rows, l.headDim, l.keys), v.dtype(), v.dtype(), out});
  } else {
    l.dpAt = take(l.scores * 4);
    l.dsAt = take(l.scores * queryBytes);
    l.keyHeadsAt = take(l.group * l.keys * l.headDim * 4);
    l.valueHeadsAt = take(l.group * l.keys * l.headDim * 4);
    const plan::DType dout = plan.buffers(command.operands(5)).dtype();
    l.gemms.push_back(
        {cpu::matmulShape(l.rows, l.keys, l.headDim, false, true), dout, v.dtype(), plan::F32});
    l.gemms.push_back({cpu::matmulShape(l.rows, l.headDim, l.keys), q.dtype(), k.dtype(), out});
    l.gemms.push_back({cpu::matmulShape(l.keys, l.headDim, l.queries, true, false, l.group),
                       q.dtype(), q.dtype(), plan::F32});
    l.gemms.push_back({cpu::matmulShape(l.keys, l.headDim, l.queries, true, false, l.group),
                       v.dtype(), dout, plan::F32});
  }
  l.bytes = at;
  return l;
}

/// The fused output layer and loss on the GPU: tokens in chunks of at most kLossChunkTokens, each
/// chunk's logits (rounded to logits_type) by one GEMM, the loss terms per token in f64 and
/// added in token order; the backward's weight gradient summed over chunks in f32 scratch.
struct LinearCrossEntropyLayout {
  int64_t tokens = 0, hidden = 0, vocab = 0, chunk = 0;
  plan::DType logitsType = plan::F32;
  size_t logitsAt = 0, dlogitsAt = 0, lossesAt = 0, weightsAt = 0, statsAt = 0, normalizerAt = 0,
         weightSumsAt = 0, bytes = 0;
  /// forward: logits (full chunk, last chunk); backward also hidden grad and weight grad.
  std::vector<GemmSpec> gemms;
  int64_t lastChunk() const { return tokens - (tokens - 1) / chunk * chunk; }
};

LinearCrossEntropyLayout linearCrossEntropyLayout(const plan::Plan &plan,
                                                  const plan::Command &command) {
  const bool backward = command.op() == "linear_cross_entropy_grad";
  const plan::Buffer &hidden = plan.buffers(command.operands(0)),
                     &weight = plan.buffers(command.operands(1));
  LinearCrossEntropyLayout l;
  l.hidden = hidden.shape(hidden.shape_size() - 1);
  l.tokens = elementsOf(hidden) / std::max<int64_t>(l.hidden, 1);
  l.vocab = weight.shape(0);
  l.chunk = std::max<int64_t>(1, std::min(l.tokens, kLossChunkTokens));
  const plan::Attribute *logitsType = findAttribute(command, "logits_type");
  l.logitsType = logitsType && logitsType->s() == "bf16" ? plan::BF16 : plan::F32;
  size_t at = 0;
  auto take = [&](size_t bytes) {
    size_t offset = at;
    at += alignedBytes(bytes);
    return offset;
  };
  const size_t logitBytes = planDTypeBytes(l.logitsType);
  l.logitsAt = take(l.chunk * l.vocab * logitBytes);
  l.lossesAt = take(l.tokens * sizeof(double));
  l.weightsAt = take(l.tokens * sizeof(double));
  for (int64_t rows : {l.chunk, l.lastChunk()}) {
    l.gemms.push_back({cpu::matmulShape(rows, l.vocab, l.hidden, false, true), hidden.dtype(),
                       weight.dtype(), l.logitsType});
  }
  if (backward) {
    l.dlogitsAt = take(l.chunk * l.vocab * logitBytes);
    l.statsAt = take(l.chunk * sizeof(cuda::RowStats));
    l.normalizerAt = take(sizeof(double));
    l.weightSumsAt = take(l.vocab * l.hidden * sizeof(float));
    const plan::DType hiddenGrad = plan.buffers(command.results(0)).dtype();
    for (int64_t rows : {l.chunk, l.lastChunk()}) {
      l.gemms.push_back(
          {cpu::matmulShape(rows, l.hidden, l.vocab), l.logitsType, weight.dtype(), hiddenGrad});
    }
    for (int64_t rows : {l.chunk, l.lastChunk()}) {
      l.gemms.push_back({cpu::matmulShape(l.vocab, l.hidden, rows, true, false), l.logitsType,
                         hidden.dtype(), plan::F32});
    }
  }
  l.bytes = at;
  return l;
}

/// The labels operand and mask of a loss op (OpKernels' lossInputs).
LossLabels lossLabelsOf(const plan::Plan &plan, const plan::Command &command, void *const *arenas,
                        int labelsIndex, int maskIndex) {
  auto address = [&](uint32_t id) {
    const plan::Buffer &b = plan.buffers(id);
    return static_cast<uint8_t *>(arenas[b.memory_class()]) + b.offset();
  };
  LossLabels labels;
  const plan::Buffer &l = plan.buffers(command.operands(labelsIndex));
  labels.labels = {address(l.id()), l.dtype() == plan::I64};
  if (command.operands_size() > maskIndex) {
    const plan::Buffer &m = plan.buffers(command.operands(maskIndex));
    labels.mask = {address(m.id()), fromPlanDType(m.dtype())};
  }
  if (const plan::Attribute *ignore = findAttribute(command, "ignore_index")) {
    labels.hasIgnore = true;
    labels.ignoreIndex = ignore->i();
  }
  return labels;
}

/// What prepare worked out for one command, so that a step only enqueues.
struct PreparedCommand {
  OpAttributes attributes;  // the command's, decoded once
  std::vector<int> gemms;   // indices into matmuls, in the order the command's layout lists them
  int64_t frequencies = -1; // rope: offset of its headDim/2 frequencies in the constants
  int64_t errorWord = -1;   // ops that check their inputs on the device: index of their word
  std::optional<AttentionLayout> attention; // attention, attention_grad
  std::shared_ptr<const SdpaGraph> sdpa;    // attention through cuDNN (then `attention` is empty)
  std::optional<LinearCrossEntropyLayout> linearCrossEntropy; // and its gradient
  std::optional<ElementwiseProgram> elementwise;              // its program, compiled once
};

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(const BackendOptions &options) : options(options) {}
  const char *name() const override { return "cuda"; }

  ~CudaBackend() override { release(); }

  /// The event the traced times count from: recorded on stream 0 before the first command
  /// run since the last reset.
  Status recordEpoch() {
    if (!epochEvent) {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaEventCreate(&epochEvent));
    }
    MLPERF_CUDA_RETURN_IF_ERROR(cudaEventRecord(epochEvent, streams[0]));
    epochRecorded = true;
    return Status::ok();
  }

  /// Two events from the pool (grown on first use, reused after each reset).
  Status timingEvents(cudaEvent_t &start, cudaEvent_t &end) {
    while (usedTimingEvents + 2 > timingPool.size()) {
      cudaEvent_t event = nullptr;
      MLPERF_CUDA_RETURN_IF_ERROR(cudaEventCreate(&event));
      timingPool.push_back(event);
    }
    start = timingPool[usedTimingEvents++];
    end = timingPool[usedTimingEvents++];
    return Status::ok();
  }

  /// The timed commands of the program just synchronized, as spans and stream totals.
  Status collectTimings() {
    for (const TimedCommand &command : timed) {
      float fromEpoch = 0, duration = 0;
      MLPERF_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&fromEpoch, epochEvent, command.start));
      MLPERF_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&duration, command.start, command.end));
      spans.push_back(
          {command.program, command.command, command.stream, fromEpoch * 1e-3, duration * 1e-3});
      (command.stream == 1 ? times.communication : times.compute) += duration * 1e-3;
    }
    timed.clear();
    return Status::ok();
  }

  Status prepare(const plan::Plan &plan, Communicator &communicator) override {
    this->plan = &plan;
    this->communicator = &communicator;
    MLPERF_RETURN_IF_ERROR(checkUsableDevice());
    MLPERF_CUDA_RETURN_IF_ERROR(cudaSetDevice(0));
    // Refuse what cannot run before taking any memory.
    for (int p = 0; p < plan.programs_size(); ++p) {
      const plan::Program &program = plan.programs(p);
      programIndex[program.name()] = p;
      for (int c = 0; c < program.commands_size(); ++c) {
        std::string reason = unsupportedReason(plan, program.commands(c));
        if (!reason.empty()) {
          return Status(StatusCode::kInvalidArgument, "the cuda backend cannot run program '" +
                                                          program.name() + "', command " +
                                                          std::to_string(c) + ": " + reason);
        }
      }
    }
    MLPERF_RETURN_IF_ERROR(planReserves());
    // The memory check: the arenas and every reserve against what the device has free now.
    size_t freeBytes = 0, totalBytes = 0;
    MLPERF_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&freeBytes, &totalBytes));
    uint64_t arenaBytes = 0;
    for (const plan::Arena &arena : plan.arenas()) {
      arenaBytes += arena.size();
    }
    uint64_t reserveBytes = workspaceBytes + constants.size() * sizeof(float) + scratchBytes +
                            errorWordCount * sizeof(BadIdWords);
    if (arenaBytes + reserveBytes > freeBytes) {
      return Status(StatusCode::kUnavailable,
                    "the plan does not fit GPU 0: it needs " +
                        bytesText(arenaBytes + reserveBytes) + " (arenas " + bytesText(arenaBytes) +
                        ", backend reserves " + bytesText(reserveBytes) + ") and " +
                        bytesText(freeBytes) + " of " + bytesText(totalBytes) + " are free");
    }
    for (const plan::Arena &arena : plan.arenas()) {
      void *&base = arenas[arena.memory_class()];
      MLPERF_CUDA_RETURN_IF_ERROR(cudaMalloc(&base, std::max<uint64_t>(arena.size(), 1)));
      MLPERF_CUDA_RETURN_IF_ERROR(cudaMemset(base, 0, arena.size()));
    }
    for (cudaStream_t &stream : streams) {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    }
    for (cudaEvent_t &event : barrierEvents) {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    }
    for (auto &[id, event] : events) {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    }
    if (workspaceBytes > 0) {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaMalloc(&workspace, workspaceBytes));
    }
    if (!constants.empty()) {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaMalloc(&deviceConstants, constants.size() * sizeof(float)));
      MLPERF_CUDA_RETURN_IF_ERROR(cudaMemcpy(deviceConstants, constants.data(),
                                             constants.size() * sizeof(float),
                                             cudaMemcpyHostToDevice));
    }
    if (scratchBytes > 0) {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaMalloc(&scratch, scratchBytes));
    }
    if (errorWordCount > 0) {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaMalloc(&errorWords, errorWordCount * sizeof(BadIdWords)));
    }
    return prepareMatmuls();
  }

  Status execute(int index) override {
    if (errorWordCount > 0) {
      MLPERF_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(errorWords, 0xff, errorWordCount * sizeof(BadIdWords), streams[0]));
    }
    Status status = run(index);
    // The program boundary: both streams drained, any kernel fault reported here.
    for (cudaStream_t stream : streams) {
      Status drained = statusFromCudaError(cudaStreamSynchronize(stream), "cudaStreamSynchronize",
                                           __FILE__, __LINE__);
      if (status.isOk()) {
        status = drained;
      }
    }
    MLPERF_RETURN_IF_ERROR(status);
    MLPERF_RETURN_IF_ERROR(collectTimings());
    return checkErrorWords();
  }

  // --trace on the GPU: each command between two CUDA events on its stream, read after the
  // program's synchronization; times count from the last resetStreamTimes (an event on
  // stream 0). Only while tracing: two event records per command cost a few microseconds.
  void traceCommands(bool on) override { tracing = on; }
  void resetStreamTimes() override {
    spans.clear();
    timed.clear();
    times = StreamTimes();
    usedTimingEvents = 0;
    epochRecorded = false; // at the next program's start
  }
  StreamTimes streamTimes() const override { return times; }
  std::vector<CommandSpan> commandSpans() const override {
    std::vector<CommandSpan> all = spans;
    std::sort(all.begin(), all.end(),
              [](const CommandSpan &a, const CommandSpan &b) { return a.start < b.start; });
    return all;
  }

  Status write(uint32_t id, const HostTensor &value) override {
    const plan::Buffer &buffer = plan->buffers(id);
    std::vector<uint8_t> staging(buffer.size());
    MLPERF_RETURN_IF_ERROR(encodeBuffer(buffer, value, staging.data()));
    MLPERF_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
    MLPERF_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(address(buffer), staging.data(), staging.size(), cudaMemcpyHostToDevice));
    return Status::ok();
  }

  Status read(uint32_t id, HostTensor &value) const override {
    const plan::Buffer &buffer = plan->buffers(id);
    std::vector<uint8_t> staging(buffer.size());
    MLPERF_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
    MLPERF_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(staging.data(), address(buffer), staging.size(), cudaMemcpyDeviceToHost));
    decodeBuffer(buffer, staging.data(), value);
    return Status::ok();
  }

private:
  /// Sizes what the backend holds besides the arenas (workspace, scratch, RoPE tables, error
  /// words) and lists the GEMMs of every command.
  Status planReserves() {
    prepared.assign(plan->programs_size(), {});
    for (int p = 0; p < plan->programs_size(); ++p) {
      const plan::Program &program = plan->programs(p);
      prepared[p].assign(program.commands_size(), PreparedCommand());
      for (int c = 0; c < program.commands_size(); ++c) {
        const plan::Command &command = program.commands(c);
        const std::string &op = command.op();
        PreparedCommand &entry = prepared[p][c];
        std::vector<GemmSpec> gemms;
        size_t scratchNeeded = 0;
        entry.attributes = commandAttributes(command);
        if (op == "event_record" || op == "event_wait") {
          events.emplace(command.event(), nullptr);
        } else if (op == "matmul") {
          gemms.push_back(matmulSpec(*plan, command, false));
        } else if (op == "elementwise") {
          // The loader checked the program (CommandTypes.cpp); compiled here once, not per step.
          entry.elementwise.emplace();
          const std::string *text = entry.attributes.getString("program");
          const std::string *arithmetic = entry.attributes.getString("arithmetic");
          std::string error = compileElementwiseProgram(
              text ? *text : "", command.operands_size(), command.results_size(),
              arithmetic ? *arithmetic : "f32", *entry.elementwise);
          if (!error.empty()) {
            return Status(StatusCode::kInvalidArgument, program.name() + " command " +
                                                            std::to_string(c) +
                                                            ": elementwise program " + error);
          }
        } else if (op == "attention" || op == "attention_grad") {
          std::string why;
          entry.sdpa = cudnnAttention(command, why);
          if (entry.sdpa) {
            scratchNeeded = static_cast<size_t>(entry.sdpa->workspaceBytes());
            checkSdpaWorkspace(program, c, scratchNeeded);
            cudnnWorkspace = std::max(cudnnWorkspace, scratchNeeded);
            ++cudnnCommands;
          } else {
            ownAttention.try_emplace(why, program.name(), c).first->second.count++;
            entry.attention = attentionLayout(*plan, command);
            gemms = entry.attention->gemms;
            scratchNeeded = entry.attention->bytes;
            const AttentionLayout &l = *entry.attention;
            const plan::Buffer &q = plan->buffers(command.operands(0)),
                               &v = plan->buffers(command.operands(2));
            MLPERF_RETURN_IF_ERROR(checkScratchModel(
                program, c, scratchNeeded,
                ownAttentionScratchBytes(l.group, l.queries, l.keys, l.headDim,
                                         planDTypeBytes(q.dtype()), planDTypeBytes(v.dtype()),
                                         op == "attention_grad")));
          }
        } else if (op == "linear_cross_entropy" || op == "linear_cross_entropy_grad") {
          entry.linearCrossEntropy = linearCrossEntropyLayout(*plan, command);
          gemms = entry.linearCrossEntropy->gemms;
          scratchNeeded = entry.linearCrossEntropy->bytes;
          const LinearCrossEntropyLayout &l = *entry.linearCrossEntropy;
          MLPERF_RETURN_IF_ERROR(
              checkScratchModel(program, c, scratchNeeded,
                                linearCrossEntropyScratchBytes(l.tokens, l.hidden, l.vocab,
                                                               planDTypeBytes(l.logitsType),
                                                               op == "linear_cross_entropy_grad")));
        } else if (op == "cross_entropy") {
          scratchNeeded = 2 * alignedBytes(elementsOf(plan->buffers(command.operands(1))) * 8);
        } else if (op == "cross_entropy_grad") {
          scratchNeeded = alignedBytes(sizeof(double)) +
                          elementsOf(plan->buffers(command.operands(1))) * sizeof(RowStats);
        } else if (op == "embedding_grad") {
          const plan::Buffer &table = plan->buffers(command.results(0));
          scratchNeeded = embeddingGradScratchBytes(elementsOf(plan->buffers(command.operands(0))),
                                                    table.shape(0));
        } else if (op == "fp8_matmul") {
          const plan::Buffer &a = plan->buffers(command.operands(0)),
                             &b = plan->buffers(command.operands(1)),
                             &result = plan->buffers(command.results(0));
          gemms.push_back(matmulSpec(*plan, command, true));
          scratchNeeded = fp8MatmulScratchBytes(elementsOf(a), elementsOf(b), elementsOf(result));
        } else if (op == "global_norm" || op == "sum_squares" || op == "amax") {
          for (uint32_t id : command.operands()) {
            scratchNeeded += sumSquaresPartials(elementsOf(plan->buffers(id))) * sizeof(double);
          }
        } else if (op == "rms_norm_grad") {
          const plan::Buffer &x = plan->buffers(command.operands(0));
          scratchNeeded = elementsOf(x) / x.shape(x.shape_size() - 1) * sizeof(double);
        } else if (op == "rope" || op == "rope_qk") {
          const OpAttributes &attributes = entry.attributes;
          auto real = [&](const char *name) -> double {
            const double *value = attributes.getFloat(name);
            return value ? *value : 0.0;
          };
          if (!attributes.getFloat("theta")) {
            return invalidCommand(program, c, "missing float attribute 'theta'");
          }
          bool scaled = attributes.has("scaling_factor");
          const int64_t *original = attributes.getInt("original_max_position");
          int64_t headDim = plan->buffers(command.results(0)).shape(3);
          std::vector<double> frequencies = cpu::ropeFrequencies(
              headDim, real("theta"), scaled, real("scaling_factor"), real("low_freq_factor"),
              real("high_freq_factor"), scaled && original ? *original : 0);
          entry.frequencies = static_cast<int64_t>(constants.size());
          for (double frequency : frequencies) {
            constants.push_back(static_cast<float>(frequency)); // f32 values held in f64
          }
        }
        if (op == "softmax" || op == "attention" || op == "attention_grad" || op == "embedding" ||
            op == "embedding_grad" || op == "cross_entropy" || op == "linear_cross_entropy" ||
            op == "dropout" || op == "dropout_key") {
          entry.errorWord = errorWordCount++;
        }
        if ((!gemms.empty() || scratchNeeded > 0) && command.stream() == 1) {
          // One workspace and one scratch, both the compute stream's.
          return invalidCommand(
              program, c, "the cuda backend runs GEMMs and ops with scratch on stream 0 only");
        }
        scratchBytes = std::max(scratchBytes, alignedBytes(scratchNeeded));
        for (const GemmSpec &gemm : gemms) {
          entry.gemms.push_back(static_cast<int>(gemmSpecs.size()));
          gemmSpecs.push_back(gemm);
        }
      }
    }
    if (!gemmSpecs.empty()) {
      workspaceBytes = kCublasLtWorkspaceBytes;
    }
    reportAttentionKernels();
    return Status::ok();
  }

  /// The compiler's memory model (compiler/Analysis/DeviceMemory) sizes the scratch by the
  /// formulas of runtime/cuda/Reserves.h: a layout that takes other bytes is a bug here.
  Status checkScratchModel(const plan::Program &program, int command, size_t bytes,
                           int64_t modelled) const {
    if (static_cast<int64_t>(bytes) == modelled) {
      return Status::ok();
    }
    return invalidCommand(program, command,
                          "internal: its scratch layout takes " + std::to_string(bytes) +
                              " bytes and runtime/cuda/Reserves.h models " +
                              std::to_string(modelled));
  }

  /// cuDNN's workspace against the model's formula (measured on cuDNN 9.19): another cuDNN
  /// version may ask for more, which the fit check of `mlperfc compile` did not count. Prepare
  /// still counts what cuDNN asks for; this says why a plan that "fit" may not.
  void checkSdpaWorkspace(const plan::Program &program, int command, size_t bytes) {
    const plan::Command &attention = program.commands(command);
    if (attention.op() != "attention_grad" || sdpaWorkspaceWarned) {
      return;
    }
    const plan::Buffer &q = plan->buffers(attention.operands(0)),
                       &k = plan->buffers(attention.operands(1));
    int64_t modelled =
        cudnnSdpaBackwardWorkspaceBytes(q.shape(0), q.shape(1), q.shape(2), k.shape(2), q.shape(3));
    if (static_cast<int64_t>(bytes) > modelled) {
      sdpaWorkspaceWarned = true;
      std::fprintf(stderr,
                   "cuda backend: warning: cuDNN asks %s of workspace for the attention backward "
                   "of program '%s', command %d; the compiler's memory model counted %s "
                   "(runtime/cuda/Reserves.h, measured with cuDNN 9.19)\n",
                   bytesText(bytes).c_str(), program.name().c_str(), command,
                   bytesText(static_cast<size_t>(modelled)).c_str());
    }
  }

  /// cuDNN's fused SDPA graph for an attention command, or nullptr and why the backend's own
  /// kernel runs it instead.
  std::shared_ptr<const SdpaGraph> cudnnAttention(const plan::Command &command, std::string &why) {
#ifndef MLPERFC_HAVE_CUDNN
    (void)command;
    why = "this build has no cuDNN attention (configured without cudnn-frontend's headers; "
          "scripts/setup.sh installs them)";
    return nullptr;
#else
    if (!options.cudnnAttention) {
      why = "--no-cudnn-attention";
      return nullptr;
    }
    const bool backward = command.op() == "attention_grad";
    const plan::Buffer &q = plan->buffers(command.operands(0)),
                       &k = plan->buffers(command.operands(1));
    // Every tensor but the f32 log-sum-exp is bf16: q, k, v (and o, dO) in, o (or dq, dk, dv)
    // out. The lse is the forward's second result and the backward's fifth operand.
    std::vector<uint32_t> tensors(command.operands().begin(), command.operands().end());
    tensors.insert(tensors.end(), command.results().begin(), command.results().end());
    constexpr size_t lseAt = 4; // forward q, k, v | o, lse; backward q, k, v, o, lse, dO | ...
    for (size_t i = 0; i < tensors.size(); ++i) {
      const plan::DType want = i == lseAt ? plan::F32 : plan::BF16;
      const plan::DType have = plan->buffers(tensors[i]).dtype();
      if (have != want) {
        why = "cuDNN's SDPA takes bf16 tensors and an f32 log-sum-exp; this command has " +
              plan::DType_Name(have) + " '" + plan->buffers(tensors[i]).name() + "'";
        return nullptr;
      }
    }
    if (!cudnnOpened) {
      cudnnOpened = true;
      cudnn = Cudnn::open(cudnnUnavailable);
    }
    if (!cudnn) {
      why = cudnnUnavailable;
      return nullptr;
    }
    SdpaShape shape;
    shape.batch = q.shape(0);
    shape.heads = q.shape(1);
    shape.queries = q.shape(2);
    shape.headDim = q.shape(3);
    shape.kvHeads = k.shape(1);
    shape.keys = k.shape(2);
    const plan::Attribute *causal = findAttribute(command, "causal");
    const plan::Attribute *scale = findAttribute(command, "scale");
    shape.causal = causal && causal->i() != 0;
    shape.scale = scale ? scale->f() : 1.0;
    shape.backward = backward;
    const plan::Attribute *tokensMajor = findAttribute(command, "output_tokens_major");
    shape.outputTokensMajor = tokensMajor && tokensMajor->i() != 0;
    return cudnn->sdpa(shape, why);
#endif
  }

  /// One line on stderr for what runs attention: cuDNN's fused SDPA, and for each reason the
  /// backend's own (unfused, slower) kernel runs some commands instead, how many and the first.
  void reportAttentionKernels() {
#ifdef MLPERFC_HAVE_CUDNN
    if (cudnnCommands > 0 && cudnn) {
      std::fprintf(stderr,
                   "cuda backend: %d attention command(s) through cuDNN %s fused SDPA "
                   "(workspace %s)\n",
                   cudnnCommands, cudnn->version().c_str(), bytesText(cudnnWorkspace).c_str());
    }
#endif
    for (const auto &[why, first] : ownAttention) {
      if (why == "--no-cudnn-attention") {
        continue; // asked for
      }
      std::fprintf(stderr,
                   "cuda backend: warning: %d attention command(s) run the backend's own kernel, "
                   "not cuDNN's fused SDPA (first: program '%s', command %d): %s\n",
                   first.count, first.program.c_str(), first.command, why.c_str());
    }
  }

  Status prepareMatmuls() {
    if (gemmSpecs.empty()) {
      return Status::ok();
    }
    MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&lt));
    MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&preference));
    uint64_t limit = workspaceBytes;
    MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof(limit)));
    const bool tuning = !options.gemmAlgorithmCache.empty();
    GemmAlgorithmCache cache;
    std::string gpu;
    if (tuning) {
      MLPERF_RETURN_IF_ERROR(GemmAlgorithmCache::load(options.gemmAlgorithmCache, cache));
      cudaDeviceProp properties{};
      MLPERF_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&properties, 0));
      gpu = properties.name;
    }
    const size_t cached = cache.size();
    matmuls.resize(gemmSpecs.size());
    for (size_t i = 0; i < gemmSpecs.size(); ++i) {
      MLPERF_RETURN_IF_ERROR(prepareGemm(gemmSpecs[i], matmuls[i], tuning ? &cache : nullptr, gpu));
    }
    if (tuning && cache.size() != cached) {
      MLPERF_RETURN_IF_ERROR(cache.save(options.gemmAlgorithmCache));
    }
    return Status::ok();
  }

  /// The fastest of `candidates` for `m`, timed on random operands (MLPerf's untimed
  /// initialization): one warm-up and five timed runs each; candidates that fail are skipped.
  Status timeCandidates(const GemmSpec &spec, PreparedMatmul &m,
                        const std::vector<cublasLtMatmulHeuristicResult_t> &candidates) {
    const GemmLayout &g = m.layout;
    auto elements = [&](const LtMatrix &matrix) {
      return (g.batch - 1) * matrix.batchStride + matrix.ld * matrix.columns;
    };
    struct Temporary {
      void *pointer = nullptr;
      ~Temporary() {
        if (pointer) {
          cudaFree(pointer);
        }
      }
    } a, b, c, seed;
    cudaEvent_t start = nullptr, stop = nullptr;
    MLPERF_CUDA_RETURN_IF_ERROR(cudaMalloc(&a.pointer, elements(g.y) * planDTypeBytes(spec.a)));
    MLPERF_CUDA_RETURN_IF_ERROR(cudaMalloc(&b.pointer, elements(g.x) * planDTypeBytes(spec.b)));
    MLPERF_CUDA_RETURN_IF_ERROR(cudaMalloc(&c.pointer, elements(g.d) * planDTypeBytes(spec.c)));
    const int64_t seedValue = 7;
    MLPERF_CUDA_RETURN_IF_ERROR(cudaMalloc(&seed.pointer, sizeof seedValue));
    MLPERF_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(seed.pointer, &seedValue, sizeof seedValue, cudaMemcpyHostToDevice));
    IntPointer seedPointer{seed.pointer, true};
    MLPERF_RETURN_IF_ERROR(launchRandomUniform({a.pointer, fromPlanDType(spec.a)}, elements(g.y),
                                               seedPointer, 1, 1.0, streams[0]));
    MLPERF_RETURN_IF_ERROR(launchRandomUniform({b.pointer, fromPlanDType(spec.b)}, elements(g.x),
                                               seedPointer, 2, 1.0, streams[0]));
    MLPERF_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
    MLPERF_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
    float best = -1.0f;
    const float alpha = 1.0f, beta = 0.0f;
    for (const cublasLtMatmulHeuristicResult_t &candidate : candidates) {
      auto run = [&] {
        return cublasLtMatmul(lt, m.description, &alpha, b.pointer, m.x, a.pointer, m.y, &beta,
                              c.pointer, m.d, c.pointer, m.d, &candidate.algo, workspace,
                              workspaceBytes, streams[0]);
      };
      if (run() != CUBLAS_STATUS_SUCCESS) {
        continue;
      }
      cudaEventRecord(start, streams[0]);
      for (int i = 0; i < 5; ++i) {
        run();
      }
      cudaEventRecord(stop, streams[0]);
      float milliseconds = 0.0f;
      if (cudaEventSynchronize(stop) != cudaSuccess ||
          cudaEventElapsedTime(&milliseconds, start, stop) != cudaSuccess) {
        continue;
      }
      if (best < 0.0f || milliseconds < best) {
        best = milliseconds;
        m.algorithm = candidate.algo;
      }
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    MLPERF_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
  }

  /// cuBLASLt descriptors and algorithm for one GEMM: f32 compute and scale (no TF32), one
  /// rounding into the result type. The algorithm: with a cache, the cached one if cuBLASLt
  /// still accepts it, else the fastest of the heuristic's top eight (then cached); without,
  /// the heuristic's first.
  Status prepareGemm(const GemmSpec &spec, PreparedMatmul &out, GemmAlgorithmCache *cache,
                     const std::string &gpu) {
    out.layout = gemmLayoutFor(spec.shape);
    const GemmLayout &g = out.layout;
    MLPERF_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescCreate(&out.description, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t opX = g.transposeX ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opY = g.transposeY ? CUBLAS_OP_T : CUBLAS_OP_N;
    MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        out.description, CUBLASLT_MATMUL_DESC_TRANSA, &opX, sizeof(opX)));
    MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        out.description, CUBLASLT_MATMUL_DESC_TRANSB, &opY, sizeof(opY)));
    auto makeLayout = [&](cublasLtMatrixLayout_t &layout, const LtMatrix &matrix,
                          plan::DType type) -> Status {
      MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(
          &layout, cudaTypeOf(type), matrix.rows, matrix.columns, matrix.ld));
      if (g.batch > 1) {
        int32_t count = static_cast<int32_t>(g.batch);
        int64_t stride = matrix.batchStride;
        MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
            layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
        MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
            layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
      }
      return Status::ok();
    };
    MLPERF_RETURN_IF_ERROR(makeLayout(out.x, g.x, spec.b));
    MLPERF_RETURN_IF_ERROR(makeLayout(out.y, g.y, spec.a));
    MLPERF_RETURN_IF_ERROR(makeLayout(out.d, g.d, spec.c));
    std::string key;
    if (cache) {
      key = gemmCacheKey(gpu, g, plan::DType_Name(spec.a), plan::DType_Name(spec.b),
                         plan::DType_Name(spec.c));
      if (const AlgorithmWords *words = cache->find(key)) {
        std::copy(words->begin(), words->end(), out.algorithm.data);
        cublasLtMatmulHeuristicResult_t check{};
        if (cublasLtMatmulAlgoCheck(lt, out.description, out.x, out.y, out.d, out.d, &out.algorithm,
                                    &check) == CUBLAS_STATUS_SUCCESS &&
            check.workspaceSize <= static_cast<size_t>(workspaceBytes)) {
          return Status::ok();
        }
      }
    }
    std::vector<cublasLtMatmulHeuristicResult_t> candidates(cache ? 8 : 1);
    int found = 0;
    MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulAlgoGetHeuristic(
        lt, out.description, out.x, out.y, out.d, out.d, preference,
        static_cast<int>(candidates.size()), candidates.data(), &found));
    if (found == 0) {
      return Status(StatusCode::kInvalidArgument,
                    "cuBLASLt has no algorithm for a GEMM of m " + std::to_string(g.m) + ", n " +
                        std::to_string(g.n) + ", k " + std::to_string(g.k) + ", batch " +
                        std::to_string(g.batch));
    }
    out.algorithm = candidates[0].algo;
    if (cache) {
      candidates.resize(found);
      MLPERF_RETURN_IF_ERROR(timeCandidates(spec, out, candidates));
      AlgorithmWords words;
      std::copy(out.algorithm.data, out.algorithm.data + words.size(), words.begin());
      cache->put(key, words);
    }
    return Status::ok();
  }

  /// C = A · B (+ β C) with prepared GEMM `index`; A and B as the plan's matmul reads them.
  Status runGemm(int index, const void *a, const void *b, void *c, float beta,
                 cudaStream_t stream) {
    const PreparedMatmul &m = matmuls[index];
    const float alpha = 1.0f;
    MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(lt, m.description, &alpha, b, m.x, a, m.y, &beta,
                                                 c, m.d, c, m.d, &m.algorithm, workspace,
                                                 workspaceBytes, stream));
    return Status::ok();
  }

  Status invalidCommand(const plan::Program &program, int c, const std::string &message) const {
    return Status(StatusCode::kInvalidArgument, "program '" + program.name() + "', command " +
                                                    std::to_string(c) + " (" +
                                                    program.commands(c).op() + "): " + message);
  }

  void *address(const plan::Buffer &buffer) const {
    return static_cast<uint8_t *>(arenas[buffer.memory_class()]) + buffer.offset();
  }
  TypedPointer typed(uint32_t id) const {
    const plan::Buffer &buffer = plan->buffers(id);
    return {address(buffer), fromPlanDType(buffer.dtype())};
  }

  /// Orders both streams after everything issued on either (a `call`'s barrier).
  Status joinStreams() {
    MLPERF_CUDA_RETURN_IF_ERROR(cudaEventRecord(barrierEvents[0], streams[0]));
    MLPERF_CUDA_RETURN_IF_ERROR(cudaEventRecord(barrierEvents[1], streams[1]));
    MLPERF_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(streams[0], barrierEvents[1], 0));
    MLPERF_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(streams[1], barrierEvents[0], 0));
    return Status::ok();
  }

  /// Enqueues program `index`; a `call` runs its callee between two barriers. The loader allows
  /// calls of earlier programs only, so the recursion ends.
  Status run(int index) {
    const plan::Program &program = plan->programs(index);
    if (tracing && !epochRecorded) {
      MLPERF_RETURN_IF_ERROR(recordEpoch());
    }
    for (int c = 0; c < program.commands_size(); ++c) {
      const plan::Command &command = program.commands(c);
      if (command.op() == "call") {
        const plan::Attribute *callee = findAttribute(command, "program");
        auto it = callee ? programIndex.find(callee->s()) : programIndex.end();
        if (it == programIndex.end() || it->second >= index) {
          return invalidCommand(program, c, "calls no earlier program of the plan");
        }
        MLPERF_RETURN_IF_ERROR(joinStreams());
        MLPERF_RETURN_IF_ERROR(run(it->second));
        MLPERF_RETURN_IF_ERROR(joinStreams());
        continue;
      }
      const int streamIndex = command.stream() == 1 ? 1 : 0;
      cudaEvent_t start = nullptr, end = nullptr;
      if (tracing) {
        MLPERF_RETURN_IF_ERROR(timingEvents(start, end));
        MLPERF_CUDA_RETURN_IF_ERROR(cudaEventRecord(start, streams[streamIndex]));
      }
      Status status = enqueue(index, c, streams[streamIndex]);
      if (tracing && status.isOk()) {
        MLPERF_CUDA_RETURN_IF_ERROR(cudaEventRecord(end, streams[streamIndex]));
        timed.push_back({index, c, static_cast<uint32_t>(streamIndex), start, end});
      }
      if (!status.isOk()) {
        return Status(status.code(), "program '" + program.name() + "', command " +
                                         std::to_string(c) + " (" + command.op() +
                                         "): " + status.message());
      }
    }
    return Status::ok();
  }

  /// One command on `stream`.
  Status enqueue(int p, int c, cudaStream_t stream) {
    const plan::Command &command = plan->programs(p).commands(c);
    const PreparedCommand &entry = prepared[p][c];
    const std::string &op = command.op();
    auto operand = [&](int i) { return typed(command.operands(i)); };
    auto result = [&](int i) { return typed(command.results(i)); };
    auto buffer = [&](uint32_t id) -> const plan::Buffer & { return plan->buffers(id); };
    const plan::Buffer &out = buffer(command.results_size() ? command.results(0) : 0);
    const int64_t count = command.results_size() ? elementsOf(out) : 0;
    const OpAttributes &attributes = entry.attributes;
    auto integer = [&](const char *name) -> int64_t {
      const int64_t *value = attributes.getInt(name);
      return value ? *value : 0;
    };
    auto real = [&](const char *name) -> double {
      const double *value = attributes.getFloat(name);
      return value ? *value : 0.0;
    };
    auto need = [&](std::initializer_list<const char *> names) -> Status {
      for (const char *name : names) {
        if (!attributes.has(name)) {
          return Status(StatusCode::kInvalidArgument,
                        std::string("missing attribute '") + name + "'");
        }
      }
      return Status::ok();
    };
    if (op == "event_record") {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaEventRecord(events.at(command.event()), stream));
      return Status::ok();
    }
    if (op == "event_wait") {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, events.at(command.event()), 0));
      return Status::ok();
    }
    if (op == "matmul") {
      return runGemm(entry.gemms[0], address(buffer(command.operands(0))),
                     address(buffer(command.operands(1))), address(out), 0.0f, stream);
    }
    BadIdWords *word = entry.errorWord >= 0 ? errorWords + entry.errorWord : nullptr;
    if (entry.sdpa) {
      // Forward q, k, v, o, lse; backward q, k, v, o, lse, dO, dq, dk, dv: operands, then
      // results, in the plan's order.
      void *tensors[9];
      int n = 0;
      for (uint32_t id : command.operands()) {
        tensors[n++] = address(buffer(id));
      }
      for (uint32_t id : command.results()) {
        tensors[n++] = address(buffer(id));
      }
      return entry.sdpa->run(stream, tensors, scratch);
    }
    if (op == "attention" || op == "attention_grad") {
      return enqueueAttention(command, entry, word, stream);
    }
    if (op == "linear_cross_entropy" || op == "linear_cross_entropy_grad") {
      return enqueueLinearCrossEntropy(command, entry, word, stream);
    }
    auto integers = [&](int i) -> IntPointer {
      const plan::Buffer &b = buffer(command.operands(i));
      return {address(b), b.dtype() == plan::I64};
    };
    auto lastDim = [](const plan::Buffer &b) { return b.shape(b.shape_size() - 1); };
    if (op == "random_normal" || op == "random_uniform") {
      MLPERF_RETURN_IF_ERROR(need({"stream", op == "random_normal" ? "std" : "bound"}));
      auto streamId = static_cast<uint32_t>(integer("stream"));
      return op == "random_normal"
                 ? launchRandomNormal(result(0), count, integers(0), streamId, real("std"), stream)
                 : launchRandomUniform(result(0), count, integers(0), streamId, real("bound"),
                                       stream);
    }
    if (op == "lr_value") {
      MLPERF_RETURN_IF_ERROR(need({"base_lr", "end_lr", "warmup_steps", "max_steps"}));
      return launchLrValue(integers(0), result(0), real("base_lr"), real("end_lr"),
                           integer("warmup_steps"), integer("max_steps"), stream);
    }
    if (op == "clip_coefficient") {
      MLPERF_RETURN_IF_ERROR(need({"max_norm"}));
      return launchClipCoefficient(operand(0), result(0), real("max_norm"), stream);
    }
    if (op == "sqrt") {
      return launchScalarSqrt(operand(0), result(0), stream);
    }
    if (op == "mean_accumulate" || op == "mean_finish") {
      auto wide = [&](uint32_t id) { return static_cast<double *>(address(buffer(id))); };
      return op == "mean_accumulate"
                 ? launchMeanAccumulate(wide(command.operands(0)), operand(1),
                                        wide(command.results(0)), stream)
                 : launchMeanFinish(wide(command.operands(0)), wide(command.results(0)),
                                    wide(command.results(1)), stream);
    }
    if (op == "global_norm" || op == "sum_squares") {
      auto *partials = static_cast<double *>(scratch);
      int64_t total = 0;
      for (int i = 0; i < command.operands_size(); ++i) {
        int64_t elements = elementsOf(buffer(command.operands(i)));
        MLPERF_RETURN_IF_ERROR(
            launchSumSquaresPartials(operand(i), elements, partials + total, stream));
        total += sumSquaresPartials(elements);
      }
      return launchFinishSum(partials, total, op == "global_norm", result(0), stream);
    }
    if (op == "elementwise") {
      ElementwiseBuffers buffers;
      for (int i = 0; i < command.operands_size(); ++i) {
        plan::DType type = buffer(command.operands(i)).dtype();
        buffers.integer[i] = type == plan::I64 || type == plan::I32;
        if (buffers.integer[i]) {
          buffers.integers[i] = integers(i);
        } else {
          buffers.operands[i] = operand(i);
        }
        buffers.broadcast[i] = elementsOf(buffer(command.operands(i))) == 1;
      }
      for (int i = 0; i < command.results_size(); ++i) {
        buffers.results[i] = result(i);
      }
      return launchElementwiseProgram(*entry.elementwise, buffers, count, stream);
    }
    if (op == "embedding") {
      const plan::Buffer &table = buffer(command.operands(0));
      return launchEmbedding(operand(0), integers(1), result(0),
                             elementsOf(buffer(command.operands(1))), table.shape(0),
                             table.shape(1), word, stream);
    }
    if (op == "embedding_grad") {
      return launchEmbeddingGrad(integers(0), operand(1), result(0),
                                 elementsOf(buffer(command.operands(0))), out.shape(0),
                                 out.shape(1), scratch, scratchBytes, word, stream);
    }
    if (op == "cross_entropy") {
      int64_t tokens = elementsOf(buffer(command.operands(1)));
      int64_t vocab = lastDim(buffer(command.operands(0)));
      auto *losses = static_cast<double *>(scratch);
      auto *weights =
          reinterpret_cast<double *>(static_cast<uint8_t *>(scratch) + alignedBytes(tokens * 8));
      LossLabels labels = lossLabelsOf(*plan, command, arenas, 1, 2);
      MLPERF_RETURN_IF_ERROR(launchCrossEntropyRows(operand(0), labels, 0, tokens, vocab, losses,
                                                    weights, word, stream));
      return launchFinishCrossEntropy(losses, weights, tokens, result(0), stream);
    }
    if (op == "dropout") {
      MLPERF_RETURN_IF_ERROR(need({"rate", "name"}));
      const double rate = real("rate");
      return launchDropout(operand(0), integers(1), result(0), count,
                           parameterStreamId(*attributes.getString("name")), dropoutThreshold(rate),
                           static_cast<float>(1.0 / (1.0 - rate)), word, stream);
    }
    if (op == "dropout_key" || op == "eval_dropout_key") {
      IntPointer key{address(out), out.dtype() == plan::I64};
      if (op == "eval_dropout_key") {
        return launchDropoutKey({}, {}, key, 0, 0, 1, 0, word, stream);
      }
      MLPERF_RETURN_IF_ERROR(need({"micro_batches", "micro_batch", "data_parallel"}));
      return launchDropoutKey(integers(0), integers(1), key, integer("micro_batches"),
                              integer("micro_batch"), integer("data_parallel"), 0, word, stream);
    }
    if (op == "local_shard") {
      // This rank's 1/parts of a 1-D tensor: its index along the mesh axis, as on the CPU.
      const plan::Attribute *axisName = findAttribute(command, "axis");
      MeshAxis axis = MeshAxis::kDP;
      if (!axisName || !parseMeshAxis(axisName->s(), axis)) {
        return Status(StatusCode::kInvalidArgument, "missing or unknown attribute 'axis'");
      }
      const int64_t part = communicator->coordinates().along(axis);
      MLPERF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
          address(out),
          static_cast<uint8_t *>(address(buffer(command.operands(0)))) + part * out.size(),
          out.size(), cudaMemcpyDeviceToDevice, stream));
      return Status::ok();
    }
    if (op == "fp8_quantize") {
      return launchFp8Quantize(operand(0), operand(1), result(0), count, stream);
    }
    if (op == "amax") {
      auto *partials = static_cast<double *>(scratch);
      int64_t total = 0;
      for (int i = 0; i < command.operands_size(); ++i) {
        int64_t elements = elementsOf(buffer(command.operands(i)));
        MLPERF_RETURN_IF_ERROR(launchAmaxPartials(operand(i), elements, partials + total, stream));
        total += sumSquaresPartials(elements);
      }
      return launchFinishMax(partials, total, result(0), stream);
    }
    if (op == "fp8_current_scale") {
      MLPERF_RETURN_IF_ERROR(need({"fp8_max"}));
      return launchFp8CurrentScale(operand(0), result(0), real("fp8_max"), stream);
    }
    if (op == "fp8_scale_update") {
      MLPERF_RETURN_IF_ERROR(need({"fp8_max", "margin", "amax_compute_algo"}));
      const std::string &algo = *attributes.getString("amax_compute_algo");
      if (algo != "most_recent" && algo != "max") {
        return Status(StatusCode::kInvalidArgument,
                      "fp8_scale_update: amax_compute_algo must be \"most_recent\" or \"max\", "
                      "got \"" +
                          algo + "\"");
      }
      return launchFp8ScaleUpdate(static_cast<float *>(address(buffer(command.operands(0)))),
                                  elementsOf(buffer(command.operands(0))), operand(1), operand(2),
                                  real("fp8_max"), real("margin"), algo == "max",
                                  static_cast<float *>(address(out)), result(1), stream);
    }
    if (op == "fp8_matmul") {
      // In f32 until part 3: the operands' fp8 values (exact in f32), one f32 GEMM, the
      // scales' epilogue and one rounding, as the CPU computes it.
      const plan::Buffer &a = buffer(command.operands(0)), &b = buffer(command.operands(1));
      auto *base = static_cast<uint8_t *>(scratch);
      auto *a32 = reinterpret_cast<float *>(base);
      auto *b32 = reinterpret_cast<float *>(base + alignedBytes(elementsOf(a) * 4));
      auto *c32 = reinterpret_cast<float *>(base + alignedBytes(elementsOf(a) * 4) +
                                            alignedBytes(elementsOf(b) * 4));
      MLPERF_RETURN_IF_ERROR(launchElementwise(ElementOp::kConvert, operand(0), {},
                                               {a32, DType::kF32}, elementsOf(a), 0.0, stream));
      MLPERF_RETURN_IF_ERROR(launchElementwise(ElementOp::kConvert, operand(1), {},
                                               {b32, DType::kF32}, elementsOf(b), 0.0, stream));
      MLPERF_RETURN_IF_ERROR(runGemm(entry.gemms[0], a32, b32, c32, 0.0f, stream));
      return launchDequantizeProduct(c32, operand(2), operand(3), result(0), count, stream);
    }
    if (op == "cross_entropy_grad") {
      int64_t tokens = elementsOf(buffer(command.operands(1)));
      auto *normalizer = static_cast<double *>(scratch);
      auto *stats = reinterpret_cast<RowStats *>(static_cast<uint8_t *>(scratch) +
                                                 alignedBytes(sizeof(double)));
      LossLabels labels = lossLabelsOf(*plan, command, arenas, 1, 3);
      MLPERF_RETURN_IF_ERROR(launchLossNormalizer(labels, tokens, normalizer, stream));
      return launchCrossEntropyGradRows(operand(0), labels, 0, tokens, lastDim(out), operand(2),
                                        normalizer, result(0), stats, stream);
    }
    if (op == "copy" || op == "reshape" || op == "convert") {
      const plan::Buffer &from = buffer(command.operands(0));
      if (from.dtype() == out.dtype()) {
        if (address(from) != address(out)) {
          MLPERF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(address(out), address(from), out.size(),
                                                      cudaMemcpyDeviceToDevice, stream));
        }
        return Status::ok();
      }
      return launchElementwise(ElementOp::kConvert, operand(0), {}, result(0), count, 0.0, stream);
    }
    if (op == "add" || op == "mul" || op == "silu_grad") {
      ElementOp kind = op == "add"   ? ElementOp::kAdd
                       : op == "mul" ? ElementOp::kMul
                                     : ElementOp::kSiluGrad;
      return launchElementwise(kind, operand(0), operand(1), result(0), count, 0.0, stream);
    }
    if (op == "scale") {
      MLPERF_RETURN_IF_ERROR(need({"factor"}));
      return launchElementwise(ElementOp::kScale, operand(0), {}, result(0), count, real("factor"),
                               stream);
    }
    if (op == "silu") {
      return launchElementwise(ElementOp::kSilu, operand(0), {}, result(0), count, 0.0, stream);
    }
    if (op == "fill") {
      MLPERF_RETURN_IF_ERROR(need({"value"}));
      return launchFill(result(0), count, static_cast<float>(real("value")), stream);
    }
    if (op == "swiglu") {
      return launchSwiglu(operand(0), operand(1), result(0), count, stream);
    }
    if (op == "swiglu_grad") {
      return launchSwigluGrad(operand(0), operand(1), operand(2), result(0), result(1), count,
                              stream);
    }
    const std::vector<int64_t> inShape =
        shapeOf(buffer(command.operands_size() ? command.operands(0) : command.results(0)));
    const std::vector<int64_t> outShape = shapeOf(out);
    const int elementBytes = static_cast<int>(dtypeBytes(fromPlanDType(out.dtype())));
    if (op == "transpose") {
      const std::vector<int64_t> *perm = attributes.getInts("permutation");
      if (!perm) {
        return Status(StatusCode::kInvalidArgument, "missing attribute 'permutation'");
      }
      return launchTranspose(address(buffer(command.operands(0))), address(out), inShape, *perm,
                             elementBytes, stream);
    }
    if (op == "repeat" || op == "repeat_grad") {
      MLPERF_RETURN_IF_ERROR(need({"dim", "times"}));
      // The repeated dimension's size before repeating: the operand's for repeat, the result's
      // for its gradient.
      const std::vector<int64_t> &s = op == "repeat" ? inShape : outShape;
      size_t dim = integer("dim");
      int64_t outer = product(s, 0, dim), inner = product(s, dim + 1, s.size());
      if (op == "repeat") {
        return launchRepeat(address(buffer(command.operands(0))), address(out), outer, s[dim],
                            inner, integer("times"), elementBytes, stream);
      }
      return launchRepeatGrad(operand(0), result(0), outer, s[dim], inner, integer("times"),
                              stream);
    }
    if (op == "split" || op == "concat") {
      MLPERF_RETURN_IF_ERROR(need({"dim"}));
      // Each piece is `outer` rows of size·inner elements: one 2-D copy.
      const std::vector<int64_t> &whole = op == "split" ? inShape : outShape;
      size_t dim = integer("dim");
      int64_t outer = product(whole, 0, dim), inner = product(whole, dim + 1, whole.size());
      const size_t bytes = elementBytes;
      const size_t wholePitch = whole[dim] * inner * bytes;
      int64_t offset = 0;
      int pieces = op == "split" ? command.results_size() : command.operands_size();
      for (int i = 0; i < pieces; ++i) {
        const plan::Buffer &piece =
            buffer(op == "split" ? command.results(i) : command.operands(i));
        int64_t size = piece.shape(dim);
        const size_t piecePitch = size * inner * bytes;
        uint8_t *wholeBytes = static_cast<uint8_t *>(
            address(buffer(op == "split" ? command.operands(0) : command.results(0))));
        uint8_t *wholeAt = wholeBytes + offset * inner * bytes;
        void *pieceAt = address(piece);
        if (piecePitch > 0 && outer > 0) {
          if (op == "split") {
            MLPERF_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(pieceAt, piecePitch, wholeAt, wholePitch,
                                                          piecePitch, outer,
                                                          cudaMemcpyDeviceToDevice, stream));
          } else {
            MLPERF_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(wholeAt, wholePitch, pieceAt, piecePitch,
                                                          piecePitch, outer,
                                                          cudaMemcpyDeviceToDevice, stream));
          }
        }
        offset += size;
      }
      return Status::ok();
    }
    if (op == "rms_norm" || op == "rms_norm_grad" || op == "add_rms_norm") {
      MLPERF_RETURN_IF_ERROR(need({"epsilon"}));
      int64_t dim = outShape.back();
      int64_t rows = count / std::max<int64_t>(dim, 1);
      if (op == "rms_norm") {
        return launchRmsNorm(operand(0), operand(1), result(0), rows, dim, real("epsilon"), stream);
      }
      if (op == "add_rms_norm") {
        return launchAddRmsNorm(operand(0), operand(1), operand(2), result(0), result(1), rows, dim,
                                real("epsilon"), stream);
      }
      return launchRmsNormGrad(operand(0), operand(1), operand(2), result(0), result(1), rows, dim,
                               real("epsilon"), static_cast<double *>(scratch), stream);
    }
    if (op == "rope" || op == "rope_qk") {
      for (int i = 0; i < command.results_size(); ++i) {
        std::vector<int64_t> s = shapeOf(buffer(command.results(i)));
        MLPERF_RETURN_IF_ERROR(launchRope(operand(i), result(i), s[0], s[1], s[2], s[3],
                                          deviceConstants + entry.frequencies,
                                          integer("inverse") != 0, stream));
      }
      return Status::ok();
    }
    if (op == "causal_mask") {
      int64_t n = outShape.back();
      return launchCausalMask(operand(0), result(0), count / std::max<int64_t>(n * n, 1), n,
                              integer("gradient") != 0, stream);
    }
    if (op == "softmax" || op == "softmax_grad") {
      MLPERF_RETURN_IF_ERROR(need({"dim"}));
      size_t dim = integer("dim");
      int64_t outer = product(outShape, 0, dim),
              inner = product(outShape, dim + 1, outShape.size());
      if (op == "softmax") {
        return launchSoftmax(operand(0), result(0), outer, outShape[dim], inner, &word->position,
                             stream);
      }
      return launchSoftmaxGrad(operand(0), operand(1), result(0), outer, outShape[dim], inner,
                               stream);
    }
    return Status(StatusCode::kInternal, "no CUDA launch for op '" + op + "'"); // CudaOps admits it
  }

  /// tg.attention and its VJP as the CPU computes them (runtime/cpu/Attention.cpp), one
  /// (batch, KV head) at a time over its group of query heads (AttentionLayout).
  Status enqueueAttention(const plan::Command &command, const PreparedCommand &entry,
                          BadIdWords *word, cudaStream_t stream) {
    const AttentionLayout &l = *entry.attention;
    const bool backward = command.op() == "attention_grad";
    const plan::Attribute *causalAttribute = findAttribute(command, "causal");
    const plan::Attribute *scaleAttribute = findAttribute(command, "scale");
    if (!scaleAttribute) {
      return Status(StatusCode::kInvalidArgument, "missing attribute 'scale'");
    }
    const bool causal = causalAttribute && causalAttribute->i() != 0;
    const double scale = scaleAttribute->f();
    const plan::Buffer &q = plan->buffers(command.operands(0)),
                       &k = plan->buffers(command.operands(1)),
                       &v = plan->buffers(command.operands(2));
    const DType queryType = fromPlanDType(q.dtype()), valueType = fromPlanDType(v.dtype());
    const size_t qBytes = planDTypeBytes(q.dtype()), kBytes = planDTypeBytes(k.dtype()),
                 vBytes = planDTypeBytes(v.dtype());
    auto *base = static_cast<uint8_t *>(scratch);
    auto *scores = reinterpret_cast<float *>(base + l.scoresAt);
    TypedPointer scoresTyped{scores, DType::kF32};
    TypedPointer probabilities{base + l.probabilitiesAt, valueType};
    const int64_t headElements = l.keys * l.headDim;
    for (int64_t b = 0; b < l.batch; ++b) {
      for (int64_t kv = 0; kv < l.kvHeads; ++kv) {
        const int64_t firstHead = b * l.heads + kv * l.group;          // of the query heads
        const int64_t queryOffset = firstHead * l.queries * l.headDim; // elements
        const int64_t keyOffset = (b * l.kvHeads + kv) * headElements;
        const uint8_t *qg = static_cast<uint8_t *>(address(q)) + queryOffset * qBytes;
        const uint8_t *kh = static_cast<uint8_t *>(address(k)) + keyOffset * kBytes;
        const uint8_t *vh = static_cast<uint8_t *>(address(v)) + keyOffset * vBytes;
        // P = softmax(mask(scale · Q·Kᵀ)) in f32, as the unfused graph.
        MLPERF_RETURN_IF_ERROR(runGemm(entry.gemms[0], qg, kh, scores, 0.0f, stream));
        MLPERF_RETURN_IF_ERROR(launchElementwise(ElementOp::kScale, scoresTyped, {}, scoresTyped,
                                                 l.scores, scale, stream));
        if (causal) {
          MLPERF_RETURN_IF_ERROR(
              launchCausalMask(scoresTyped, scoresTyped, l.group, l.queries, false, stream));
        }
        TypedPointer lse{};
        if (!backward) {
          const plan::Buffer &lseBuffer = plan->buffers(command.results(1));
          lse = {static_cast<uint8_t *>(address(lseBuffer)) +
                     firstHead * l.queries * planDTypeBytes(lseBuffer.dtype()),
                 fromPlanDType(lseBuffer.dtype())};
        }
        MLPERF_RETURN_IF_ERROR(launchSoftmax(scoresTyped, scoresTyped, l.rows, l.keys, 1,
                                             &word->position, stream, lse, firstHead * l.queries));
        // The probabilities rounded to the value's type (tg.convert).
        MLPERF_RETURN_IF_ERROR(launchElementwise(ElementOp::kConvert, scoresTyped, {},
                                                 probabilities, l.scores, 0.0, stream));
        if (!backward) {
          const plan::Buffer &out = plan->buffers(command.results(0));
          uint8_t *og =
              static_cast<uint8_t *>(address(out)) + queryOffset * planDTypeBytes(out.dtype());
          MLPERF_RETURN_IF_ERROR(runGemm(entry.gemms[1], probabilities.data, vh, og, 0.0f, stream));
          continue;
        }
        const plan::Buffer &dout = plan->buffers(command.operands(5));
        const uint8_t *dg =
            static_cast<uint8_t *>(address(dout)) + queryOffset * planDTypeBytes(dout.dtype());
        auto *dp = reinterpret_cast<float *>(base + l.dpAt);
        TypedPointer dpTyped{dp, DType::kF32}, ds{base + l.dsAt, queryType};
        // dp = dout · Vᵀ of the probabilities' type; ds = softmax_grad, masked, scaled, of the
        // query's type.
        MLPERF_RETURN_IF_ERROR(runGemm(entry.gemms[1], dg, vh, dp, 0.0f, stream));
        MLPERF_RETURN_IF_ERROR(launchRoundTo(dp, l.scores, valueType, stream));
        MLPERF_RETURN_IF_ERROR(
            launchSoftmaxGrad(scoresTyped, dpTyped, dpTyped, l.rows, l.keys, 1, stream));
        if (causal) {
          MLPERF_RETURN_IF_ERROR(
              launchCausalMask(dpTyped, dpTyped, l.group, l.queries, true, stream));
        }
        MLPERF_RETURN_IF_ERROR(
            launchElementwise(ElementOp::kScale, dpTyped, {}, ds, l.scores, scale, stream));
        // dq = ds · K.
        const plan::Buffer &dq = plan->buffers(command.results(0));
        MLPERF_RETURN_IF_ERROR(
            runGemm(entry.gemms[2], ds.data, kh,
                    static_cast<uint8_t *>(address(dq)) + queryOffset * planDTypeBytes(dq.dtype()),
                    0.0f, stream));
        // Per query head dk = dsᵀ · Q and dv = pᵀ · dout, rounded to the key's and value's
        // types, then summed over the group into the KV head (tg.repeat_grad).
        auto *keyHeads = reinterpret_cast<float *>(base + l.keyHeadsAt);
        auto *valueHeads = reinterpret_cast<float *>(base + l.valueHeadsAt);
        MLPERF_RETURN_IF_ERROR(runGemm(entry.gemms[3], ds.data, qg, keyHeads, 0.0f, stream));
        MLPERF_RETURN_IF_ERROR(
            runGemm(entry.gemms[4], probabilities.data, dg, valueHeads, 0.0f, stream));
        MLPERF_RETURN_IF_ERROR(launchRoundTo(keyHeads, l.group * headElements, queryType, stream));
        MLPERF_RETURN_IF_ERROR(
            launchRoundTo(valueHeads, l.group * headElements, valueType, stream));
        const plan::Buffer &dk = plan->buffers(command.results(1)),
                           &dv = plan->buffers(command.results(2));
        TypedPointer dkHead{static_cast<uint8_t *>(address(dk)) +
                                keyOffset * planDTypeBytes(dk.dtype()),
                            fromPlanDType(dk.dtype())};
        TypedPointer dvHead{static_cast<uint8_t *>(address(dv)) +
                                keyOffset * planDTypeBytes(dv.dtype()),
                            fromPlanDType(dv.dtype())};
        MLPERF_RETURN_IF_ERROR(
            launchRepeatGrad({keyHeads, DType::kF32}, dkHead, 1, 1, headElements, l.group, stream));
        MLPERF_RETURN_IF_ERROR(launchRepeatGrad({valueHeads, DType::kF32}, dvHead, 1, 1,
                                                headElements, l.group, stream));
      }
    }
    return Status::ok();
  }

  /// tg.linear_cross_entropy and its VJP (runtime/cpu/LinearCrossEntropy.cpp) in token chunks
  /// (LinearCrossEntropyLayout).
  Status enqueueLinearCrossEntropy(const plan::Command &command, const PreparedCommand &entry,
                                   BadIdWords *word, cudaStream_t stream) {
    const LinearCrossEntropyLayout &l = *entry.linearCrossEntropy;
    const bool backward = command.op() == "linear_cross_entropy_grad";
    const plan::Buffer &hidden = plan->buffers(command.operands(0)),
                       &weight = plan->buffers(command.operands(1));
    LossLabels labels = lossLabelsOf(*plan, command, arenas, 2, backward ? 4 : 3);
    auto *base = static_cast<uint8_t *>(scratch);
    TypedPointer logits{base + l.logitsAt, fromPlanDType(l.logitsType)};
    auto *losses = reinterpret_cast<double *>(base + l.lossesAt);
    auto *weights = reinterpret_cast<double *>(base + l.weightsAt);
    const size_t hiddenBytes = planDTypeBytes(hidden.dtype());
    auto *normalizer = reinterpret_cast<double *>(base + l.normalizerAt);
    if (backward) {
      MLPERF_RETURN_IF_ERROR(launchLossNormalizer(labels, l.tokens, normalizer, stream));
    }
    const int64_t chunks = (l.tokens + l.chunk - 1) / l.chunk;
    for (int64_t index = 0; index < chunks; ++index) {
      const int64_t first = index * l.chunk, count = std::min(l.chunk, l.tokens - first);
      const int last = count == l.chunk ? 0 : 1; // which of the two GEMM shapes
      const uint8_t *rows =
          static_cast<uint8_t *>(address(hidden)) + first * l.hidden * hiddenBytes;
      MLPERF_RETURN_IF_ERROR(
          runGemm(entry.gemms[last], rows, address(weight), logits.data, 0.0f, stream));
      if (!backward) {
        MLPERF_RETURN_IF_ERROR(launchCrossEntropyRows(logits, labels, first, count, l.vocab, losses,
                                                      weights, word, stream));
        continue;
      }
      TypedPointer dlogits{base + l.dlogitsAt, fromPlanDType(l.logitsType)};
      MLPERF_RETURN_IF_ERROR(launchCrossEntropyGradRows(
          logits, labels, first, count, l.vocab, typed(command.operands(3)), normalizer, dlogits,
          reinterpret_cast<RowStats *>(base + l.statsAt), stream));
      const plan::Buffer &hiddenGrad = plan->buffers(command.results(0));
      MLPERF_RETURN_IF_ERROR(runGemm(entry.gemms[2 + last], dlogits.data, address(weight),
                                     static_cast<uint8_t *>(address(hiddenGrad)) +
                                         first * l.hidden * planDTypeBytes(hiddenGrad.dtype()),
                                     0.0f, stream));
      // The weight gradient, summed over chunks in f32 (β = 1 after the first).
      MLPERF_RETURN_IF_ERROR(runGemm(entry.gemms[4 + last], dlogits.data, rows,
                                     base + l.weightSumsAt, index == 0 ? 0.0f : 1.0f, stream));
    }
    if (!backward) {
      return launchFinishCrossEntropy(losses, weights, l.tokens, typed(command.results(0)), stream);
    }
    return launchElementwise(ElementOp::kConvert, {base + l.weightSumsAt, DType::kF32}, {},
                             typed(command.results(1)), l.vocab * l.hidden, 0.0, stream);
  }

  /// Errors the kernels recorded on the device (a softmax or attention row with no finite
  /// entry, a token id or label outside the vocabulary), reported as the CPU backend reports
  /// them, for the first command that recorded one.
  Status checkErrorWords() {
    if (errorWordCount == 0) {
      return Status::ok();
    }
    std::vector<BadIdWords> words(errorWordCount);
    MLPERF_CUDA_RETURN_IF_ERROR(cudaMemcpy(
        words.data(), errorWords, words.size() * sizeof(BadIdWords), cudaMemcpyDeviceToHost));
    for (int p = 0; p < plan->programs_size(); ++p) {
      const plan::Program &program = plan->programs(p);
      for (int c = 0; c < program.commands_size(); ++c) {
        int64_t index = prepared[p][c].errorWord;
        if (index < 0 || words[index].position == ULLONG_MAX) {
          continue;
        }
        const BadIdWords &word = words[index];
        const plan::Command &command = program.commands(c);
        const std::string &op = command.op();
        const std::string position = std::to_string(word.position);
        if (op == "softmax") {
          return invalidCommand(program, c,
                                "softmax row " + position +
                                    " has no finite entry (every score masked or "
                                    "infinite/NaN inputs)");
        }
        if (op == "attention" || op == "attention_grad") {
          return invalidCommand(program, c,
                                "attention row " + position +
                                    " has no finite score (infinite or NaN inputs)");
        }
        if (op == "dropout") {
          return invalidCommand(program, c,
                                "dropout micro-batch counter " + std::to_string(word.value) +
                                    " exceeds 2^32 - 1");
        }
        if (op == "dropout_key") {
          return invalidCommand(program, c,
                                "dropout_key of a negative step " + std::to_string(word.value));
        }
        int64_t vocab = 0;
        if (op == "embedding") {
          vocab = plan->buffers(command.operands(0)).shape(0);
        } else if (op == "embedding_grad") {
          vocab = plan->buffers(command.results(0)).shape(0);
        } else if (op == "cross_entropy") {
          const plan::Buffer &logits = plan->buffers(command.operands(0));
          vocab = logits.shape(logits.shape_size() - 1);
        } else {
          vocab = plan->buffers(command.operands(1)).shape(0);
        }
        const char *what = op == "embedding" || op == "embedding_grad" ? "token id " : "label ";
        return invalidCommand(program, c,
                              what + std::to_string(word.value) + " at position " + position +
                                  " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
      }
    }
    return Status::ok();
  }

  void release() {
    for (cudaEvent_t event : timingPool) {
      cudaEventDestroy(event);
    }
    if (epochEvent) {
      cudaEventDestroy(epochEvent);
    }
#ifdef MLPERFC_HAVE_CUDNN
    cudnn.reset(); // its graphs and handle, before the context's other objects
#endif
    for (PreparedMatmul &m : matmuls) {
      if (m.x) {
        cublasLtMatrixLayoutDestroy(m.x);
      }
      if (m.y) {
        cublasLtMatrixLayoutDestroy(m.y);
      }
      if (m.d) {
        cublasLtMatrixLayoutDestroy(m.d);
      }
      if (m.description) {
        cublasLtMatmulDescDestroy(m.description);
      }
    }
    if (lt) {
      cublasLtDestroy(lt);
    }
    for (auto &[id, event] : events) {
      if (event) {
        cudaEventDestroy(event);
      }
    }
    for (cudaEvent_t event : barrierEvents) {
      if (event) {
        cudaEventDestroy(event);
      }
    }
    for (cudaStream_t stream : streams) {
      if (stream) {
        cudaStreamDestroy(stream);
      }
    }
    if (preference) {
      cublasLtMatmulPreferenceDestroy(preference);
    }
    for (void *pointer :
         {arenas[0], arenas[1], arenas[2], workspace, static_cast<void *>(deviceConstants), scratch,
          static_cast<void *>(errorWords)}) {
      if (pointer) {
        cudaFree(pointer);
      }
    }
  }

  BackendOptions options;
  const plan::Plan *plan = nullptr;
  Communicator *communicator = nullptr;
  std::map<std::string, int> programIndex;
  std::vector<std::vector<PreparedCommand>> prepared; // [program][command]
  void *arenas[3] = {nullptr, nullptr, nullptr};      // by plan::MemoryClass
  cudaStream_t streams[2] = {nullptr, nullptr};
  cudaEvent_t barrierEvents[2] = {nullptr, nullptr};
  std::map<int64_t, cudaEvent_t> events; // the plan's, by id
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  std::vector<GemmSpec> gemmSpecs;     // every command's GEMMs, found at prepare
  std::vector<PreparedMatmul> matmuls; // their descriptors and algorithms, by the same index
  int64_t workspaceBytes = 0;
  void *workspace = nullptr;
  std::vector<float> constants; // rope frequency tables, uploaded at prepare
  float *deviceConstants = nullptr;
  size_t scratchBytes = 0; // the most any command needs; commands on stream 0 take turns
  void *scratch = nullptr;
  int64_t errorWordCount = 0;
  BadIdWords *errorWords = nullptr;
#ifdef MLPERFC_HAVE_CUDNN
  std::unique_ptr<Cudnn> cudnn; // opened at the first attention command cuDNN may take
  bool cudnnOpened = false;
  std::string cudnnUnavailable; // why it could not be opened
#endif
  int cudnnCommands = 0;     // attention commands through cuDNN
  size_t cudnnWorkspace = 0; // the largest workspace of their graphs
  bool sdpaWorkspaceWarned = false;
  // --trace (traceCommands): events around every command, read after each program.
  struct TimedCommand {
    int program, command;
    uint32_t stream;
    cudaEvent_t start, end;
  };
  bool tracing = false;
  bool epochRecorded = false;
  cudaEvent_t epochEvent = nullptr;
  std::vector<cudaEvent_t> timingPool;
  size_t usedTimingEvents = 0;
  std::vector<TimedCommand> timed;
  std::vector<CommandSpan> spans;
  StreamTimes times;
  struct FirstCommand {
    FirstCommand(std::string program, int command)
        : program(std::move(program)), command(command) {}
    std::string program;
    int command;
    int count = 0;
  };
  std::map<std::string, FirstCommand> ownAttention; // by why cuDNN does not run them
};

} // namespace

Status checkUsableDevice() {
  std::vector<DeviceInfo> devices;
  Status status = listDevices(devices);
  if (!status.isOk()) {
    if (status.message().find("cudaErrorInsufficientDriver") != std::string::npos) {
      return Status(StatusCode::kUnavailable,
                    "no NVIDIA driver, or one older than this build's CUDA " +
                        std::to_string(CUDART_VERSION / 1000) + "." +
                        std::to_string(CUDART_VERSION % 1000 / 10) + " runtime needs (" +
                        status.message() + ")");
    }
    if (status.message().find("cudaErrorNoDevice") != std::string::npos) {
      return Status(StatusCode::kUnavailable,
                    "no CUDA device is visible (" + status.message() + ")");
    }
    return status;
  }
  if (devices.empty()) {
    return Status(StatusCode::kUnavailable, "no CUDA device is visible");
  }
  const DeviceInfo &device = devices[0];
  if (!isSupportedArchitecture(device)) {
    return Status(StatusCode::kUnavailable,
                  "GPU 0 (" + device.name + ") is sm_" + std::to_string(device.computeMajor) +
                      std::to_string(device.computeMinor) +
                      "; this build's kernels run on sm_90 (H100, H200) and sm_100 (B200)");
  }
  return Status::ok();
}

std::unique_ptr<Backend> createCudaBackend(const BackendOptions &options) {
  return std::make_unique<CudaBackend>(options);
}

} // namespace mlperf::rt::cuda
