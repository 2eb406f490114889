//===- TGOps.h - Training-graph dialect ------------------------*- C++ -*-===//
//
// The `tg` dialect and its ops. Include this header to use them; it pulls in only the MLIR
// headers the generated declarations need.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_DIALECTS_TG_IR_TGOPS_H
#define MLPERFC_DIALECTS_TG_IR_TGOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/TG/IR/TGOpsDialect.h.inc"

namespace mlperf::tg {
/// The split of an op's results over one mesh axis (ShardingRuleOpInterface): every result
/// split along `resultDim` (-1: replicated), or, with `partialSum`, each rank holding a
/// partial sum of the whole result that the axis must add up.
struct SplitRule {
  int64_t resultDim = -1;
  bool partialSum = false;
  /// Full sizes of the blocks the split dim is made of, each split on its own (a fused q|k|v
  /// projection's output); empty: one block.
  llvm::SmallVector<int64_t, 0> blocks;
};

/// How one operand is split over the mesh axis: along `dim` (-1: whole), of `blocks` as in
/// SplitRule.
struct TensorSplit {
  int64_t dim = -1;
  llvm::SmallVector<int64_t, 0> blocks;
};
} // namespace mlperf::tg

#include "dialects/TG/IR/TGInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/TG/IR/TGOps.h.inc"

#define GET_OP_CLASSES
#include "dialects/TG/IR/TGModelOps.h.inc"

#endif // MLPERFC_DIALECTS_TG_IR_TGOPS_H
