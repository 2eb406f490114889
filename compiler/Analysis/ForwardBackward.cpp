//===- ForwardBackward.cpp - The two halves of a differentiated function -*- C++ -*-===//

#include "compiler/Analysis/ForwardBackward.h"

#include "dialects/TG/IR/TGOps.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace mlperf {

llvm::DenseMap<Operation *, int64_t> opIndices(Block &block) {
  llvm::DenseMap<Operation *, int64_t> indices;
  int64_t index = 0;
  for (Operation &op : block) {
    indices[&op] = index++;
  }
  return indices;
}

bool isDifferentiated(func::FuncOp func) {
  return func->hasAttr("tg.gradients") && !func->hasAttr("tg.from_stash");
}

int64_t forwardEnd(func::FuncOp func) {
  Block &body = func.getBody().front();
  Operation *terminator = body.getTerminator();
  if (terminator->getNumOperands() == 0) {
    return -1;
  }
  Operation *def = terminator->getOperand(0).getDefiningOp();
  if (!def || def->getBlock() != &body) {
    return -1;
  }
  int64_t index = 0;
  for (Operation &op : body) {
    if (&op == def) {
      return index;
    }
    ++index;
  }
  return -1;
}

std::vector<int64_t> layerOfOps(func::FuncOp func) {
  // Per-layer parameters by name, read once: a symbol lookup per parameter read would scan
  // the model's ~10^4 parameters each time.
  llvm::DenseMap<Attribute, int64_t> layerOf;
  if (auto model = func->getParentOfType<tg::ModelOp>()) {
    for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
      if (IntegerAttr layerAttr = param.getLayerAttr()) {
        layerOf[param.getSymNameAttr()] = layerAttr.getInt();
      }
    }
  }
  int64_t end = forwardEnd(func);
  std::vector<int64_t> layers;
  int64_t layer = -1; // of the last per-layer parameter read
  int64_t index = 0;
  for (Operation &op : func.getBody().front()) {
    if (auto ref = dyn_cast<tg::ParamRefOp>(op)) {
      if (auto it = layerOf.find(ref.getNameAttr().getAttr()); it != layerOf.end()) {
        layer = it->second;
      } else if (index <= end && layer >= 0) {
        layer = -1; // past the stack: the final norm and the head
      }
    }
    layers.push_back(layer);
    ++index;
  }
  return layers;
}

} // namespace mlperf
