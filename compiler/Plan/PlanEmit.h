//===- PlanEmit.h - Train step to execution plan --------------*- C++ -*-===//
//
// plan-emit: turns a model lowered by the train-step pipeline (@forward, @forward_backward,
// @optimizer_step) into an execution plan (runtime/plan.proto): persistent buffers for
// parameters, gradients, optimizer state and batch inputs; activation buffers at the offsets
// planFunctionMemory assigns; one command per tg op, in program order.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_PLAN_PLANEMIT_H
#define MLPERFC_COMPILER_PLAN_PLANEMIT_H

#include "dialects/TG/IR/TGOps.h"
#include "runtime/plan.pb.h"

#include "llvm/ADT/StringRef.h"

namespace mlperf {

/// Fails with a diagnostic on an op or type the plan cannot express.
mlir::FailureOr<plan::Plan> emitPlan(tg::ModelOp model, llvm::StringRef precision,
                                     int64_t accumulationSteps);

} // namespace mlperf

#endif // MLPERFC_COMPILER_PLAN_PLANEMIT_H
