//===- AttributeCodec.h - Plan attributes to kernel attributes -*- C++ -*-===//
//
// The plan's attribute encoding (plan::Attribute: int, float, string or int list; a unit
// attribute is the int 1) decoded into OpAttributes. compiler/Plan/PlanEmit.h writes the
// encoding from MLIR attributes; the backends decode commands with this, and the tg
// interpreter encodes an op's attributes and decodes them here, so its kernels see exactly
// what a plan's would.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_PLAN_ATTRIBUTECODEC_H
#define MLPERFC_RUNTIME_PLAN_ATTRIBUTECODEC_H

#include "runtime/plan.pb.h"
#include "runtime/plan/OpAttributes.h"

namespace mlperf::rt {

/// Appends `attribute` to `into`; false for one without a value (the loader refuses those).
bool decodeAttribute(const plan::Attribute &attribute, OpAttributes &into);

/// A command's attributes as the kernels take them.
OpAttributes commandAttributes(const plan::Command &command);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_PLAN_ATTRIBUTECODEC_H
