//===- ElementTypes.h - MLIR element types in the plan ABI's dtype table -*- C++ -*-===//
//
// The plan ABI's one dtype table (runtime/plan/DTypes.h) names its types as MLIR prints them;
// the plan dialect's verifier, plan emission and the interpreter all map an MLIR element type
// through this one lookup.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_DIALECTS_PLAN_IR_ELEMENTTYPES_H
#define MLPERFC_DIALECTS_PLAN_IR_ELEMENTTYPES_H

#include "runtime/plan/DTypes.h"

#include "mlir/IR/Types.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlperf {

/// The dtype table's row for `type`, or nullptr for a type the plan cannot store.
inline const rt::DTypeInfo *planDTypeInfo(mlir::Type type) {
  std::string name;
  llvm::raw_string_ostream(name) << type;
  return rt::dtypeNamed(name);
}

} // namespace mlperf

#endif // MLPERFC_DIALECTS_PLAN_IR_ELEMENTTYPES_H
