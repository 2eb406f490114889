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

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/CudaOps.h"
#include "runtime/cuda/CudaStatus.h"
#include "runtime/cuda/Device.h"
#include "runtime/cuda/GemmLayout.h"
#include "runtime/cuda/Kernels.h"
#include "runtime/cuda/Reserves.h"
#include "runtime/exec/BufferCodec.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/support/NumberFormat.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <map>
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

/// What prepare worked out for one command.
struct PreparedCommand {
  int matmul = -1;          // index into matmuls
  int64_t frequencies = -1; // rope: offset of its headDim/2 frequencies in the constants
  int64_t errorWord = -1;   // softmax: index of its bad-row word
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

class CudaBackend final : public Backend {
public:
  const char *name() const override { return "cuda"; }

  ~CudaBackend() override { release(); }

  Status prepare(const plan::Plan &plan, Communicator &communicator) override {
    this->plan = &plan;
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
    uint64_t reserveBytes = workspaceBytes + constants.size() * sizeof(float) +
                            inverseRmsRows * sizeof(double) +
                            errorWordCount * sizeof(unsigned long long);
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
    if (inverseRmsRows > 0) {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaMalloc(&inverseRms, inverseRmsRows * sizeof(double)));
    }
    if (errorWordCount > 0) {
      MLPERF_CUDA_RETURN_IF_ERROR(
          cudaMalloc(&errorWords, errorWordCount * sizeof(unsigned long long)));
    }
    return prepareMatmuls();
  }

  Status execute(int index) override {
    if (errorWordCount > 0) {
      MLPERF_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
          errorWords, 0xff, errorWordCount * sizeof(unsigned long long), streams[0]));
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
    return checkErrorWords();
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
  /// Sizes what the backend holds besides the arenas and indexes the commands that use it.
  Status planReserves() {
    prepared.assign(plan->programs_size(), {});
    for (int p = 0; p < plan->programs_size(); ++p) {
      const plan::Program &program = plan->programs(p);
      prepared[p].assign(program.commands_size(), PreparedCommand());
      for (int c = 0; c < program.commands_size(); ++c) {
        const plan::Command &command = program.commands(c);
        const std::string &op = command.op();
        PreparedCommand &entry = prepared[p][c];
        if (op == "event_record" || op == "event_wait") {
          events.emplace(command.event(), nullptr);
        } else if (op == "matmul") {
          workspaceBytes = kCublasLtWorkspaceBytes;
          entry.matmul = static_cast<int>(matmulCommands.size());
          matmulCommands.push_back({p, c});
        } else if (op == "rope" || op == "rope_qk") {
          OpAttributes attributes = commandAttributes(command);
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
        } else if (op == "rms_norm_grad") {
          const plan::Buffer &x = plan->buffers(command.operands(0));
          inverseRmsRows = std::max(inverseRmsRows, elementsOf(x) / x.shape(x.shape_size() - 1));
        } else if (op == "softmax") {
          entry.errorWord = errorWordCount++;
        }
      }
    }
    return Status::ok();
  }

  Status prepareMatmuls() {
    if (matmulCommands.empty()) {
      return Status::ok();
    }
    MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&lt));
    cublasLtMatmulPreference_t preference = nullptr;
    MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&preference));
    uint64_t limit = workspaceBytes;
    Status status = statusFromCublasStatus(
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &limit, sizeof(limit)),
        "cublasLtMatmulPreferenceSetAttribute", __FILE__, __LINE__);
    for (size_t i = 0; status.isOk() && i < matmulCommands.size(); ++i) {
      matmuls.emplace_back();
      status = prepareMatmul(matmulCommands[i].first, matmulCommands[i].second, preference,
                             matmuls.back());
    }
    cublasLtMatmulPreferenceDestroy(preference);
    return status;
  }

  /// cuBLASLt descriptors and the heuristic's first algorithm for one matmul command: f32
  /// compute and scale (no TF32), one rounding into the result type.
  Status prepareMatmul(int p, int c, cublasLtMatmulPreference_t preference, PreparedMatmul &out) {
    const plan::Command &command = plan->programs(p).commands(c);
    const plan::Buffer &a = plan->buffers(command.operands(0));
    const plan::Buffer &b = plan->buffers(command.operands(1));
    const plan::Buffer &result = plan->buffers(command.results(0));
    auto flag = [&](const char *name) {
      const plan::Attribute *attribute = findAttribute(command, name);
      return attribute && attribute->i() != 0;
    };
    out.layout = gemmLayoutFor(cpu::matmulShapeOf(shapeOf(a), shapeOf(b), shapeOf(result),
                                                  flag("transpose_lhs"), flag("transpose_rhs")));
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
    MLPERF_RETURN_IF_ERROR(makeLayout(out.x, g.x, b.dtype()));
    MLPERF_RETURN_IF_ERROR(makeLayout(out.y, g.y, a.dtype()));
    MLPERF_RETURN_IF_ERROR(makeLayout(out.d, g.d, result.dtype()));
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    MLPERF_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulAlgoGetHeuristic(
        lt, out.description, out.x, out.y, out.d, out.d, preference, 1, &heuristic, &found));
    if (found == 0) {
      return invalidCommand(plan->programs(p), c,
                            "cuBLASLt has no algorithm for this matmul (m " + std::to_string(g.m) +
                                ", n " + std::to_string(g.n) + ", k " + std::to_string(g.k) +
                                ", batch " + std::to_string(g.batch) + ")");
    }
    out.algorithm = heuristic.algo;
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
      Status status = enqueue(index, c, streams[command.stream() == 1 ? 1 : 0]);
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
    OpAttributes attributes = commandAttributes(command);
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
      const PreparedMatmul &m = matmuls[entry.matmul];
      const float alpha = 1.0f, beta = 0.0f;
      void *d = address(out);
      MLPERF_CUBLAS_RETURN_IF_ERROR(
          cublasLtMatmul(lt, m.description, &alpha, address(buffer(command.operands(1))), m.x,
                         address(buffer(command.operands(0))), m.y, &beta, d, m.d, d, m.d,
                         &m.algorithm, workspace, workspaceBytes, stream));
      return Status::ok();
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
                               real("epsilon"), inverseRms, stream);
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
        return launchSoftmax(operand(0), result(0), outer, outShape[dim], inner,
                             errorWords + entry.errorWord, stream);
      }
      return launchSoftmaxGrad(operand(0), operand(1), result(0), outer, outShape[dim], inner,
                               stream);
    }
    return Status(StatusCode::kInternal, "no CUDA launch for op '" + op + "'"); // CudaOps admits it
  }

  /// Errors the kernels recorded on the device (softmax rows with no finite entry), reported
  /// as the CPU backend reports them.
  Status checkErrorWords() {
    if (errorWordCount == 0) {
      return Status::ok();
    }
    std::vector<unsigned long long> words(errorWordCount);
    MLPERF_CUDA_RETURN_IF_ERROR(cudaMemcpy(words.data(), errorWords,
                                           words.size() * sizeof(unsigned long long),
                                           cudaMemcpyDeviceToHost));
    for (int p = 0; p < plan->programs_size(); ++p) {
      for (int c = 0; c < plan->programs(p).commands_size(); ++c) {
        int64_t word = prepared[p][c].errorWord;
        if (word >= 0 && words[word] != ULLONG_MAX) {
          return invalidCommand(plan->programs(p), c,
                                "softmax row " + std::to_string(words[word]) +
                                    " has no finite entry (every score masked or infinite/NaN "
                                    "inputs)");
        }
      }
    }
    return Status::ok();
  }

  void release() {
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
    for (void *pointer :
         {arenas[0], arenas[1], arenas[2], workspace, static_cast<void *>(deviceConstants),
          static_cast<void *>(inverseRms), static_cast<void *>(errorWords)}) {
      if (pointer) {
        cudaFree(pointer);
      }
    }
  }

  const plan::Plan *plan = nullptr;
  std::map<std::string, int> programIndex;
  std::vector<std::vector<PreparedCommand>> prepared; // [program][command]
  void *arenas[3] = {nullptr, nullptr, nullptr};      // by plan::MemoryClass
  cudaStream_t streams[2] = {nullptr, nullptr};
  cudaEvent_t barrierEvents[2] = {nullptr, nullptr};
  std::map<int64_t, cudaEvent_t> events; // the plan's, by id
  cublasLtHandle_t lt = nullptr;
  std::vector<std::pair<int, int>> matmulCommands; // (program, command)
  std::vector<PreparedMatmul> matmuls;
  int64_t workspaceBytes = 0;
  void *workspace = nullptr;
  std::vector<float> constants; // rope frequency tables, uploaded at prepare
  float *deviceConstants = nullptr;
  int64_t inverseRmsRows = 0;
  double *inverseRms = nullptr;
  int64_t errorWordCount = 0;
  unsigned long long *errorWords = nullptr;
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

std::unique_ptr<Backend> createCudaBackend() { return std::make_unique<CudaBackend>(); }

} // namespace mlperf::rt::cuda
