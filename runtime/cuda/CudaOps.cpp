//===- CudaOps.cpp - Which plan ops the CUDA backend runs -------*- C++ -*-===//

#include "runtime/cuda/CudaOps.h"

#include "runtime/plan/DTypes.h"
#include "runtime/plan/PlanLoader.h"

#include <iterator>
#include <set>

namespace mlperf::rt::cuda {
namespace {

constexpr std::string_view kPart3 = "the CUDA backend part 3 (issue 41: fp8 GEMMs, NCCL)";
constexpr std::string_view kMoe = "the GPT-OSS-20B benchmark (issue 39: mixture-of-experts "
                                  "routing and grouped GEMMs)";

// In runtime/plan/PlanOps's order; CudaOpsTest checks that both list the same ops.
constexpr CudaOpEntry kOps[] = {
    {"matmul", true, {}},
    {"add", true, {}},
    {"mul", true, {}},
    {"scale", true, {}},
    {"silu", true, {}},
    {"silu_grad", true, {}},
    {"swiglu", true, {}},
    {"swiglu_grad", true, {}},
    {"convert", true, {}},
    {"reshape", true, {}},
    {"transpose", true, {}},
    {"embedding", true, {}},
    {"embedding_grad", true, {}},
    {"rms_norm", true, {}},
    {"rms_norm_grad", true, {}},
    {"add_rms_norm", true, {}},
    {"rope", true, {}},
    {"rope_qk", true, {}},
    {"causal_mask", true, {}},
    {"softmax", true, {}},
    {"attention", true, {}},
    {"attention_grad", true, {}},
    {"softmax_grad", true, {}},
    {"repeat", true, {}},
    {"repeat_grad", true, {}},
    {"split", true, {}},
    {"concat", true, {}},
    {"cross_entropy", true, {}},
    {"cross_entropy_grad", true, {}},
    {"linear_cross_entropy", true, {}},
    {"linear_cross_entropy_grad", true, {}},
    // Only a plan whose vocabulary is split over GPUs has these.
    {"vocab_max", false, kPart3},
    {"linear_vocab_max", false, kPart3},
    {"vocab_stats", false, kPart3},
    {"linear_vocab_stats", false, kPart3},
    {"vocab_loss", false, kPart3},
    {"vocab_cross_entropy_grad", false, kPart3},
    {"linear_vocab_cross_entropy_grad", false, kPart3},
    {"moe_route", false, kMoe},
    {"moe_route_grad", false, kMoe},
    {"moe_sort", false, kMoe},
    {"moe_permute", false, kMoe},
    {"moe_unpermute", false, kMoe},
    {"grouped_matmul", false, kMoe},
    {"grouped_matmul_weight_grad", false, kMoe},
    {"scale_rows", false, kMoe},
    {"row_dot", false, kMoe},
    {"token_mask", false, kMoe},
    {"fill", true, {}},
    {"mean_accumulate", true, {}},
    {"mean_finish", true, {}},
    {"random_normal", true, {}},
    {"random_uniform", true, {}},
    {"dropout", true, {}},
    {"dropout_key", true, {}},
    {"eval_dropout_key", true, {}},
    {"local_shard", true, {}},
    {"copy", true, {}},
    {"lr_value", true, {}},
    {"global_norm", true, {}},
    {"clip_coefficient", true, {}},
    {"elementwise", true, {}},
    {"sum_squares", true, {}},
    {"sqrt", true, {}},
    {"fp8_quantize", true, {}},
    {"fp8_matmul", true, {}}, // in f32 until part 3 brings cuBLASLt fp8
    {"amax", true, {}},
    {"fp8_scale_update", true, {}},
    {"fp8_current_scale", true, {}},
    {"all_reduce", false, kPart3},
    {"reduce_scatter", false, kPart3},
    {"all_gather", false, kPart3},
    {"all_to_all", false, kPart3},
    {"send", false, kPart3},
    {"recv", false, kPart3},
    {"call", true, {}},
    {"event_record", true, {}},
    {"event_wait", true, {}},
};

/// Ops whose kernels compute each result element from the operand elements of the same index
/// (or, for the row ops, read a whole row before writing it): a result may be an operand's
/// very bytes (the memory planner's in-place reuse), but no other overlap.
const std::set<std::string_view> kInPlaceOps = {
    "add",         "mul",     "scale",    "silu",         "silu_grad", "swiglu",
    "swiglu_grad", "convert", "rms_norm", "add_rms_norm", "softmax",   "softmax_grad",
    "causal_mask", "rope",    "rope_qk",  "copy",         "reshape",   "elementwise"};

/// Ops that move elements without arithmetic: any storage type, as long as operands and
/// results share it.
const std::set<std::string_view> kLayoutOps = {"transpose", "repeat",  "split",      "concat",
                                               "copy",      "reshape", "local_shard"};

/// The float types the CUDA kernels store (f64 buffers hold a vocabulary-split loss's
/// statistics, which only multi-GPU plans have).
bool isStoredFloat(plan::DType type) {
  const DTypeInfo *info = dtypeWithPlanCode(type);
  return info && info->isFloat && info->type != DType::kF64;
}

/// Ops whose operands go to cuBLASLt as they are stored: f32 or bf16.
bool isGemmOp(std::string_view op) {
  return op == "matmul" || op == "attention" || op == "attention_grad" ||
         op == "linear_cross_entropy" || op == "linear_cross_entropy_grad";
}

/// The operands of an op that hold integers: seeds, token ids, labels, the step.
std::set<int> integerOperands(std::string_view op) {
  if (op == "random_normal" || op == "random_uniform" || op == "lr_value" ||
      op == "embedding_grad") {
    return {0};
  }
  if (op == "embedding" || op == "cross_entropy" || op == "cross_entropy_grad") {
    return {1};
  }
  if (op == "linear_cross_entropy" || op == "linear_cross_entropy_grad") {
    return {2};
  }
  if (op == "dropout") {
    return {1};
  }
  if (op == "dropout_key") {
    return {0, 1};
  }
  return {};
}

/// Ops whose results hold integers (dropout keys).
bool integerResults(std::string_view op) { return op == "dropout_key" || op == "eval_dropout_key"; }

std::string typeName(plan::DType type) { return plan::DType_Name(type); }

} // namespace

const CudaOpEntry *findCudaOp(std::string_view op) {
  for (const CudaOpEntry &entry : kOps) {
    if (entry.op == op) {
      return &entry;
    }
  }
  return nullptr;
}

std::vector<CudaOpEntry> cudaOpTable() { return {std::begin(kOps), std::end(kOps)}; }

std::string unsupportedReason(const plan::Plan &plan, const plan::Command &command) {
  const std::string &op = command.op();
  const CudaOpEntry *entry = findCudaOp(op);
  if (!entry) {
    return "op '" + op + "' is unknown to the CUDA backend";
  }
  if (!entry->hasKernel) {
    return "op '" + op + "' has no CUDA kernel yet (it comes with " +
           std::string(entry->comesWith) + ")";
  }
  if (findAttribute(command, "window")) {
    // Sliding-window attention (GPT-OSS-20B) has CPU kernels; cuDNN's SDPA takes the band
    // as a diagonal alignment, which the backend does not set yet.
    return "op '" + op + "' with a sliding window has no CUDA kernel yet (it comes with " +
           std::string(kMoe) + ")";
  }
  if (op == "mean_accumulate" && command.operands_size() == 3) {
    return "op 'mean_accumulate' weighted by a loss mask has no CUDA kernel yet (it comes with " +
           std::string(kMoe) + ")";
  }
  // Evaluation's running mean is f64 by its definition (the loader checked its buffers).
  if (op == "call" || op == "event_record" || op == "event_wait" || op == "mean_accumulate" ||
      op == "mean_finish") {
    return {};
  }
  auto buffer = [&](uint32_t id) -> const plan::Buffer & { return plan.buffers(id); };
  std::vector<uint32_t> ids(command.operands().begin(), command.operands().end());
  ids.insert(ids.end(), command.results().begin(), command.results().end());
  bool sameType = true;
  for (uint32_t id : ids) {
    sameType &= buffer(id).dtype() == buffer(ids[0]).dtype();
  }
  // Layout ops move elements of any type unchanged; a copy between types is a convert.
  const bool moves = kLayoutOps.count(op) && sameType;
  if (kLayoutOps.count(op) && !sameType && op != "copy" && op != "reshape") {
    return "op '" + op +
           "' moves elements between buffers of different types; its CUDA "
           "kernel moves them unchanged";
  }
  if (findAttribute(command, "vocab_shard_axis") ||
      (findAttribute(command, "parts") && findAttribute(command, "parts")->i() > 1)) {
    return "op '" + op + "' on a tensor split over ranks: its CUDA kernel comes with " +
           std::string(kPart3);
  }
  if (!moves) {
    const std::set<int> integers = integerOperands(op);
    for (int i = 0; i < static_cast<int>(ids.size()); ++i) {
      const plan::Buffer &b = buffer(ids[i]);
      bool integer = i < command.operands_size() ? integers.count(i) > 0 : integerResults(op);
      if (op == "elementwise" && i < command.operands_size()) {
        // f64 programs read integer operands (the loader allowed them only there).
        integer = b.dtype() == plan::I64 || b.dtype() == plan::I32;
      }
      if (integer && b.dtype() != plan::I64 && b.dtype() != plan::I32) {
        return "op '" + op + "': operand '" + b.name() + "' of type " + typeName(b.dtype()) +
               " must hold integers (I32 or I64)";
      }
      if (!integer && !isStoredFloat(b.dtype())) {
        return "op '" + op + "' on buffer '" + b.name() + "' of type " + typeName(b.dtype()) +
               ": its CUDA kernel handles floating-point buffers only";
      }
      if (!integer && isGemmOp(op) && b.dtype() != plan::F32 && b.dtype() != plan::BF16) {
        return "op '" + op + "' on buffer '" + b.name() + "' of type " + typeName(b.dtype()) +
               ": its cuBLASLt GEMMs take F32 and BF16 (fp8 GEMMs come with " +
               std::string(kPart3) + ")";
      }
      if (op == "fp8_scale_update" && i != 1 && i != 2 && i != 4 && b.dtype() != plan::F32) {
        return "op 'fp8_scale_update': amax history '" + b.name() + "' must be F32";
      }
    }
  }
  if (const plan::Attribute *dataParallel = findAttribute(command, "data_parallel");
      op == "dropout_key" && dataParallel && dataParallel->i() > 1) {
    return "op 'dropout_key' of a data-parallel rank: its CUDA kernel comes with " +
           std::string(kPart3);
  }
  if (op == "attention" || op == "attention_grad") {
    const plan::Buffer &q = buffer(command.operands(0)), &k = buffer(command.operands(1)),
                       &v = buffer(command.operands(2));
    if (q.dtype() != k.dtype() ||
        (op == "attention_grad" && buffer(command.operands(5)).dtype() != v.dtype())) {
      return "op '" + op +
             "': its CUDA kernel (cuBLASLt GEMMs) needs query and key, and the "
             "output gradient and value, in one type each";
    }
    const plan::Attribute *causal = findAttribute(command, "causal");
    if (causal && causal->i() != 0 && q.shape(2) != k.shape(2)) {
      return "op '" + op + "': causal attention with " + std::to_string(q.shape(2)) +
             " queries and " + std::to_string(k.shape(2)) + " keys";
    }
  }
  if (op == "matmul" &&
      buffer(command.operands(0)).dtype() != buffer(command.operands(1)).dtype()) {
    return "matmul of " + typeName(buffer(command.operands(0)).dtype()) + " by " +
           typeName(buffer(command.operands(1)).dtype()) +
           ": cuBLASLt takes both operands in one type";
  }
  auto overlaps = [](const plan::Buffer &a, const plan::Buffer &b) {
    return a.memory_class() == b.memory_class() && a.offset() < b.offset() + b.size() &&
           b.offset() < a.offset() + a.size();
  };
  for (int r = 0; r < command.results_size(); ++r) {
    const plan::Buffer &result = buffer(command.results(r));
    for (uint32_t id : command.operands()) {
      const plan::Buffer &operand = buffer(id);
      bool sameElements = operand.offset() == result.offset() &&
                          operand.dtype() == result.dtype() && operand.size() == result.size();
      if (overlaps(operand, result) && !(kInPlaceOps.count(op) && sameElements)) {
        return "op '" + op + "': result '" + result.name() + "' shares bytes with operand '" +
               operand.name() + "' in a way its CUDA kernel does not allow";
      }
    }
    for (int other = 0; other < r; ++other) {
      if (overlaps(result, buffer(command.results(other)))) {
        return "op '" + op + "': results '" + result.name() + "' and '" +
               buffer(command.results(other)).name() + "' share bytes";
      }
    }
  }
  return {};
}

} // namespace mlperf::rt::cuda
