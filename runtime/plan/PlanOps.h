//===- PlanOps.h - The commands a plan may contain --------------*- C++ -*-===//
//
// The op table of the plan format, without protobuf: the runtime's loader and the compiler's
// `plan` dialect verifier both check commands against it, so the two cannot disagree about
// which ops exist or their arities.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_PLAN_PLANOPS_H
#define MLPERFC_RUNTIME_PLAN_PLANOPS_H

#include <cstdint>
#include <string_view>
#include <vector>

namespace mlperf::rt {

/// Bumped on every incompatible change to runtime/plan.proto or the op table.
constexpr uint32_t kPlanFormatVersion = 10;

/// Whether a command talks to other ranks.
enum class OpCommunication : uint8_t {
  kNone,
  kAlways, // collectives, send and recv: no other command talks to other ranks
};

/// What a command's time is made of, for the step-time model (compiler/Analysis/CommandCost).
enum class OpCost : uint8_t {
  kMemory,             // memory-bound: the bytes of its distinct operands and results
  kAliasable,          // memory-bound, or nothing when its result is its operand's bytes
  kGemm,               // 2·m·n·k FLOPs
  kAttention,          // fused attention's products
  kLinearCrossEntropy, // the output layer's GEMM(s) inside the fused loss
  kCollective,         // over the group along its axis
  kTransfer,           // point-to-point to a pipeline neighbour
  kNone,               // ordering only (events, calls: a call costs its callee)
};

/// One op of the plan format: operand and result counts (-1 for "any number"), whether it
/// communicates, what its cost is made of, and the attribute naming the mesh axis along which
/// it reads this rank's index (given to its kernel as `part_index`; null for none).
struct PlanOpSignature {
  std::string_view name;
  int minOperands, maxOperands, minResults, maxResults;
  OpCommunication communication = OpCommunication::kNone;
  OpCost cost = OpCost::kMemory;
  const char *partAxis = nullptr;
};

/// The signature of `op`, or null for an op this runtime does not execute.
const PlanOpSignature *findPlanOp(std::string_view op);

/// Every op of the table, in its order (a backend's kernel table is checked against it).
std::vector<std::string_view> planOpNames();

/// Whether a command talks to other ranks: the collectives, send and recv (a loss over a
/// vocabulary split over ranks is local pieces around all-reduces: dist-lower-vocab-loss). In
/// a program with a communication stream these run on it alone, so that every rank issues its
/// communication in one order.
bool communicates(std::string_view op);

/// The attribute naming the mesh axis along which an op reads this rank's index (given to
/// its kernel as `part_index`): "part_axis" for initialization draws and dropout masks of a
/// split tensor, "axis" for ZeRO's local_shard, "data_parallel_axis" for a dropout key;
/// null for other ops.
const char *partAxisAttribute(std::string_view op);

/// The random stream of a parameter (the `stream` attribute of its initialization draws and
/// dropout keys, which the compiler writes and every backend reads): FNV-1a of its full
/// (per-layer resolved) Hugging Face name.
uint32_t parameterStreamId(std::string_view name);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_PLAN_PLANOPS_H
