//===- PlanOps.h - Execution-plan dialect ----------------------*- C++ -*-===//

#ifndef MLPERFC_DIALECTS_PLAN_IR_PLANOPS_H
#define MLPERFC_DIALECTS_PLAN_IR_PLANOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "runtime/plan/StreamOrder.h"

#include "dialects/Plan/IR/PlanOpsDialect.h.inc"
#include "dialects/Plan/IR/PlanOpsEnums.h.inc"

#define GET_OP_CLASSES
#include "dialects/Plan/IR/PlanOps.h.inc"

namespace mlperf::plan_ir {

/// A program's commands in the form of the stream rules (runtime/plan/StreamOrder.h), before
/// placement: each buffer's bytes are a range of their own (a view's are its source's); the
/// range's `buffer` indexes `bufferNames`, which receives the buffers' symbol names.
std::vector<mlperf::rt::StreamCommand>
streamCommands(ProgramOp program, mlir::SymbolTableCollection &symbols,
               llvm::SmallVectorImpl<llvm::StringRef> &bufferNames);

} // namespace mlperf::plan_ir

#endif // MLPERFC_DIALECTS_PLAN_IR_PLANOPS_H
