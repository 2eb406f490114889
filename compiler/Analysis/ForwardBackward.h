//===- ForwardBackward.h - The two halves of a differentiated function -*- C++ -*-===//
//
// tg-autodiff builds @forward_backward as a copy of @forward followed by the backward sweep,
// and no later pass moves an op across that boundary (simplification and CSE only replace or
// remove ops). These helpers find the boundary and the layer each forward op belongs to; the
// saved-activation report and tg-recompute read the function through them.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_ANALYSIS_FORWARDBACKWARD_H
#define MLPERFC_COMPILER_ANALYSIS_FORWARDBACKWARD_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <vector>

namespace mlperf {

/// The position of every op of `block` in it.
llvm::DenseMap<mlir::Operation *, int64_t> opIndices(mlir::Block &block);

/// True for a function tg-autodiff built (it names its gradients in `tg.gradients`) with both
/// halves: not the backward half tg-recompute splits off a pipeline chunk (`tg.from_stash`).
bool isDifferentiated(mlir::func::FuncOp func);

/// The index, in the entry block, of the op that computes the function's first result: the
/// loss, or a pipeline stage's output activation. Ops up to it are the forward half, ops after
/// it the backward half. -1 when the first result is not computed by an op of the block.
int64_t forwardEnd(mlir::func::FuncOp func);

/// For each op of the entry block, in order: the declared layer it belongs to, that is the
/// `layer` (set by tg-inline-layers) of the last per-layer parameter read before it; -1
/// before the layer stack and, in the forward half, from the first read of a parameter
/// outside the stack after it (the final norm and the output layer).
std::vector<int64_t> layerOfOps(mlir::func::FuncOp func);

} // namespace mlperf

#endif // MLPERFC_COMPILER_ANALYSIS_FORWARDBACKWARD_H
