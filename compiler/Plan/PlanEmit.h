//===- PlanEmit.h - plan dialect to plan.pb --------------------*- C++ -*-===//
//
// plan-emit: writes a placed `plan.plan` (after plan-from-tg and plan-memory) as the
// runtime's execution plan (runtime/plan.proto). A direct translation: buffers are numbered
// in plan order, symbols become ids, command attributes keep their names and values.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_PLAN_PLANEMIT_H
#define MLPERFC_COMPILER_PLAN_PLANEMIT_H

#include "dialects/Plan/IR/PlanOps.h"
#include "runtime/plan.pb.h"

namespace mlperf {

/// Fails with a diagnostic on an unplaced buffer or an attribute the format cannot hold; the
/// result is validated as the runtime will (a failure there is a compiler bug).
mlir::FailureOr<plan::Plan> emitPlan(plan_ir::PlanOp planOp);

/// `attr` in the plan's attribute encoding (commands' attributes, the model's mllog keys):
/// a float, an integer, a unit attribute (the integer 1), a string or an i64 array; anything
/// else fails with a diagnostic on `op`. runtime/plan/AttributeCodec.h decodes it.
mlir::LogicalResult encodeAttribute(mlir::Operation *op, mlir::NamedAttribute attr,
                                    plan::Attribute *out);

/// The plan.plan of a module (the first one), or null.
plan_ir::PlanOp getPlan(mlir::ModuleOp module);

} // namespace mlperf

#endif // MLPERFC_COMPILER_PLAN_PLANEMIT_H
