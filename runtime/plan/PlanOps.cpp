//===- PlanOps.cpp - The commands a plan may contain ------------*- C++ -*-===//

#include "runtime/plan/PlanOps.h"

namespace mlperf::rt {
namespace {

constexpr PlanOpSignature kOps[] = {
    {"matmul", 2, 2, 1, 1},
    {"add", 2, 2, 1, 1},
    {"mul", 2, 2, 1, 1},
    {"scale", 1, 1, 1, 1},
    {"silu", 1, 1, 1, 1},
    {"silu_grad", 2, 2, 1, 1},
    {"swiglu", 2, 2, 1, 1},
    {"swiglu_grad", 3, 3, 2, 2},
    {"convert", 1, 1, 1, 1},
    {"reshape", 1, 1, 1, 1},
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
    {"attention", 3, 3, 2, 2},
    {"attention_grad", 6, 6, 3, 3},
    {"softmax_grad", 2, 2, 1, 1},
    {"repeat", 1, 1, 1, 1},
    {"repeat_grad", 1, 1, 1, 1},
    {"split", 1, 1, 1, -1},
    {"concat", 1, -1, 1, 1},
    {"cross_entropy", 2, 3, 1, 1},
    {"cross_entropy_grad", 3, 4, 1, 1},
    {"linear_cross_entropy", 3, 4, 1, 1},
    {"linear_cross_entropy_grad", 4, 5, 2, 2},
    {"fill", 0, 0, 1, 1},
    {"random_normal", 1, 1, 1, 1},
    {"random_uniform", 1, 1, 1, 1},
    // Dropout (input, key [seed, micro-batch counter]) and the keys (tg.dropout_key).
    {"dropout", 2, 2, 1, 1},
    {"dropout_key", 2, 2, 1, 1},
    {"eval_dropout_key", 0, 0, 1, 1},
    {"local_shard", 1, 1, 1, 1},
    {"copy", 1, 1, 1, 1},
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
    {"fp8_matmul", 4, 4, 1, 1},
    {"amax", 1, -1, 1, 1},
    {"fp8_scale_update", 3, 3, 2, 2},
    {"fp8_current_scale", 1, 1, 1, 1},
    // Collectives over one mesh axis (attribute "axis": dp, tp or pp); blocking.
    {"all_reduce", 1, 1, 1, 1},
    {"reduce_scatter", 1, 1, 1, 1},
    {"all_gather", 1, 1, 1, 1},
    // Point-to-point over one mesh axis (attributes "axis", "shift" != 0, "tag"): a send
    // copies its operand and completes in the background; a receive blocks until the message
    // of its sender and tag arrived.
    {"send", 1, 1, 0, 0},
    {"recv", 0, 0, 1, 1},
    // Runs another program of the plan (attribute "program"): its inputs were written before,
    // its outputs are read after.
    {"call", 0, 0, 0, 0},
    // Ordering between streams (Command.event): a wait on one stream holds it until the
    // event was recorded on another.
    {"event_record", 0, 0, 0, 0},
    {"event_wait", 0, 0, 0, 0},
};

} // namespace

const PlanOpSignature *findPlanOp(std::string_view op) {
  for (const PlanOpSignature &signature : kOps) {
    if (signature.name == op) {
      return &signature;
    }
  }
  return nullptr;
}

std::vector<std::string_view> planOpNames() {
  std::vector<std::string_view> names;
  for (const PlanOpSignature &signature : kOps) {
    names.push_back(signature.name);
  }
  return names;
}

bool communicates(std::string_view op, bool vocabSplit) {
  return op == "all_reduce" || op == "reduce_scatter" || op == "all_gather" || op == "send" ||
         op == "recv" || (vocabSplit && (op == "cross_entropy" || op == "cross_entropy_grad"));
}

const char *partAxisAttribute(std::string_view op) {
  if (op == "random_normal" || op == "random_uniform" || op == "dropout") {
    return "part_axis";
  }
  if (op == "local_shard") {
    return "axis";
  }
  if (op == "dropout_key") {
    return "data_parallel_axis";
  }
  return nullptr;
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
