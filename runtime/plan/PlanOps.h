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

namespace mlperf::rt {

/// Bumped on every incompatible change to runtime/plan.proto or the op table.
constexpr uint32_t kPlanFormatVersion = 3;

/// Operand and result counts of a command op; -1 for "any number".
struct PlanOpSignature {
  std::string_view name;
  int minOperands, maxOperands, minResults, maxResults;
};

/// The signature of `op`, or null for an op this runtime does not execute.
const PlanOpSignature *findPlanOp(std::string_view op);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_PLAN_PLANOPS_H
