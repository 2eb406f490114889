//===- PlanOps.cpp - The commands a plan may contain ------------*- C++ -*-===//

#include "runtime/plan/PlanOps.h"

#include <unordered_map>

namespace mlperf::rt {
namespace {

constexpr PlanOpSignature kOps[] = {
    {"matmul", 2, 2, 1, 1, OpCommunication::kNone, OpCost::kGemm},
    {"add", 2, 2, 1, 1},
    {"mul", 2, 2, 1, 1},
    {"scale", 1, 1, 1, 1},
    {"silu", 1, 1, 1, 1},
    {"silu_grad", 2, 2, 1, 1},
    {"swiglu", 2, 2, 1, 1},
    {"swiglu_grad", 3, 3, 2, 2},
    {"convert", 1, 1, 1, 1},
    {"reshape", 1, 1, 1, 1, OpCommunication::kNone, OpCost::kAliasable},
    {"transpose", 1, 1, 1, 1},
    {"embedding", 2, 2, 1, 1},
    {"embedding_grad", 2, 2, 1, 1},
    {"rms_norm", 2, 2, 1, 1},
    {"rms_norm_grad", 3, 3, 2, 2},
    {"add_rms_norm", 3, 3, 2, 2},
    {"rope", 1, 1, 1, 1},
    {"rope_qk", 2, 2, 2, 2},
    {"causal_mask", 1, 1, 1, 1},
    {"softmax", 1, 1, 1, 1},
    {"attention", 3, 3, 2, 2, OpCommunication::kNone, OpCost::kAttention},
    {"attention_grad", 6, 6, 3, 3, OpCommunication::kNone, OpCost::kAttention},
    {"softmax_grad", 2, 2, 1, 1},
    {"repeat", 1, 1, 1, 1},
    {"repeat_grad", 1, 1, 1, 1},
    {"split", 1, 1, 1, -1},
    {"concat", 1, -1, 1, 1},
    {"cross_entropy", 2, 3, 1, 1},
    {"cross_entropy_grad", 3, 4, 1, 1},
    {"linear_cross_entropy", 3, 4, 1, 1, OpCommunication::kNone, OpCost::kLinearCrossEntropy},
    {"linear_cross_entropy_grad", 4, 5, 2, 2, OpCommunication::kNone, OpCost::kLinearCrossEntropy},
    // The loss over a vocabulary split over ranks, in pieces around two all-reduces
    // (runtime/cpu/VocabLoss.h); the linear_ forms compute the logits chunk by chunk.
    {"vocab_max", 1, 1, 1, 1},
    {"linear_vocab_max", 2, 2, 1, 1, OpCommunication::kNone, OpCost::kLinearCrossEntropy},
    {"vocab_stats", 3, 3, 1, 1},
    {"linear_vocab_stats", 4, 4, 1, 1, OpCommunication::kNone, OpCost::kLinearCrossEntropy},
    {"vocab_loss", 3, 4, 1, 1},
    {"vocab_cross_entropy_grad", 5, 6, 1, 1},
    {"linear_vocab_cross_entropy_grad", 6, 7, 2, 2, OpCommunication::kNone,
     OpCost::kLinearCrossEntropy},
    // Mixture of experts (dropless routing; runtime/cpu/Moe.h): routing, the sort by expert,
    // gathers between token and expert order, and the per-expert GEMMs.
    {"moe_route", 1, 1, 2, 2},
    {"moe_route_grad", 3, 3, 1, 1},
    {"moe_sort", 1, 1, 2, 2},
    {"moe_permute", 2, 2, 1, 1},
    {"moe_unpermute", 2, 2, 1, 1},
    {"grouped_matmul", 3, 3, 1, 1, OpCommunication::kNone, OpCost::kGemm},
    {"grouped_matmul_weight_grad", 3, 3, 1, 1, OpCommunication::kNone, OpCost::kGemm},
    {"scale_rows", 2, 2, 1, 1},
    {"row_dot", 2, 2, 1, 1},
    {"token_mask", 1, 1, 1, 1},
    {"fill", 0, 0, 1, 1},
    // Evaluation's running mean [sum, count] (f64): add a loss (weighted by the sum of an
    // optional loss mask); divide and start again.
    {"mean_accumulate", 2, 3, 1, 1},
    {"mean_finish", 1, 1, 2, 2},
    {"random_normal", 1, 1, 1, 1, OpCommunication::kNone, OpCost::kMemory, "part_axis"},
    {"random_uniform", 1, 1, 1, 1, OpCommunication::kNone, OpCost::kMemory, "part_axis"},
    // Dropout (input, key [seed, micro-batch counter]) and the keys (tg.dropout_key).
    {"dropout", 2, 2, 1, 1, OpCommunication::kNone, OpCost::kMemory, "part_axis"},
    {"dropout_key", 2, 2, 1, 1, OpCommunication::kNone, OpCost::kMemory, "data_parallel_axis"},
    {"eval_dropout_key", 0, 0, 1, 1},
    {"local_shard", 1, 1, 1, 1, OpCommunication::kNone, OpCost::kMemory, "axis"},
    {"copy", 1, 1, 1, 1, OpCommunication::kNone, OpCost::kAliasable},
    {"lr_value", 1, 1, 1, 1},
    {"global_norm", 1, -1, 1, 1},
    {"clip_coefficient", 1, 1, 1, 1},
    // A program of element math over its operands (runtime/plan/ElementwiseProgram.h): the
    // optimizers' updates, written by the compiler.
    {"elementwise", 1, 8, 1, 4},
    {"sum_squares", 1, -1, 1, 1},
    {"sqrt", 1, 1, 1, 1},
    // fp8 (tg-fp8): scaled casts, scaled GEMMs and the delayed-scaling state update.
    {"fp8_quantize", 2, 2, 1, 1},
    {"fp8_matmul", 4, 4, 1, 1, OpCommunication::kNone, OpCost::kGemm},
    {"amax", 1, -1, 1, 1},
    {"fp8_scale_update", 3, 3, 2, 2},
    {"fp8_current_scale", 1, 1, 1, 1},
    // Collectives over one mesh axis (attribute "axis": dp, tp or pp); blocking.
    {"all_reduce", 1, 1, 1, 1, OpCommunication::kAlways, OpCost::kCollective},
    {"reduce_scatter", 1, 1, 1, 1, OpCommunication::kAlways, OpCost::kCollective},
    {"all_gather", 1, 1, 1, 1, OpCommunication::kAlways, OpCost::kCollective},
    // Rows [N, d] in per-member chunks (i32 rows per member) exchanged over the axis: each
    // member receives its chunk from every member, in group order, into a buffer of a static
    // number of rows, and the i32 rows it got from each (expert parallelism's dispatch and
    // combine).
    {"all_to_all", 2, 2, 2, 2, OpCommunication::kAlways, OpCost::kCollective},
    // Point-to-point over one mesh axis (attributes "axis", "shift" != 0, "tag"): a send
    // copies its operand and completes in the background; a receive blocks until the message
    // of its sender and tag arrived.
    {"send", 1, 1, 0, 0, OpCommunication::kAlways, OpCost::kTransfer},
    {"recv", 0, 0, 1, 1, OpCommunication::kAlways, OpCost::kTransfer},
    // Runs another program of the plan (attribute "program"): its inputs were written before,
    // its outputs are read after.
    {"call", 0, 0, 0, 0, OpCommunication::kNone, OpCost::kNone},
    // Ordering between streams (Command.event): a wait on one stream holds it until the
    // event was recorded on another.
    {"event_record", 0, 0, 0, 0, OpCommunication::kNone, OpCost::kNone},
    {"event_wait", 0, 0, 0, 0, OpCommunication::kNone, OpCost::kNone},
};

} // namespace

const PlanOpSignature *findPlanOp(std::string_view op) {
  // Looked up for every command the loader checks and the step-time model costs.
  static const std::unordered_map<std::string_view, const PlanOpSignature *> byName = [] {
    std::unordered_map<std::string_view, const PlanOpSignature *> table;
    for (const PlanOpSignature &signature : kOps) {
      table.emplace(signature.name, &signature);
    }
    return table;
  }();
  auto found = byName.find(op);
  return found == byName.end() ? nullptr : found->second;
}

std::vector<std::string_view> planOpNames() {
  std::vector<std::string_view> names;
  for (const PlanOpSignature &signature : kOps) {
    names.push_back(signature.name);
  }
  return names;
}

bool communicates(std::string_view op) {
  const PlanOpSignature *signature = findPlanOp(op);
  return signature && signature->communication == OpCommunication::kAlways;
}

const char *partAxisAttribute(std::string_view op) {
  const PlanOpSignature *signature = findPlanOp(op);
  return signature ? signature->partAxis : nullptr;
}

uint32_t parameterStreamId(std::string_view name) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 16777619u;
  }
  return hash;
}

} // namespace mlperf::rt
