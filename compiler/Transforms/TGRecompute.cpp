//===- TGRecompute.cpp - Recompute forward values in the backward -*- C++ -*-===//
//
// Activation recompute as a rewrite of the differentiated function: the backward reads clones
// of chosen forward ops, placed just before their first backward use, so the forward values
// die early. The policy decides per declared layer; `auto` measures every candidate with the
// same liveness and placement plan-memory uses.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/ForwardBackward.h"
#include "compiler/Analysis/MemoryPlan.h"
#include "compiler/Analysis/ModelSummary.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"

namespace mlperf {
#define GEN_PASS_DEF_TGRECOMPUTEPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

/// What a layer recomputes; each level includes the ones before it.
enum Level : int64_t { kKeep = 0, kSwiglu = 1, kSelective = 2, kFull = 3 };

/// The facts about a differentiated function the choice needs, computed once: candidates are
/// clones with the same op order, so ops are named by index.
struct ForwardLayout {
  int64_t end = -1;             // the last forward op
  std::vector<int64_t> layerOf; // per op index
  int64_t firstLayer = 0, numLayers = 0;
  /// Per op index: a result is read by a forward op of another layer or returned (a layer's
  /// output: what full recompute keeps).
  std::vector<bool> leavesLayer;
};

ForwardLayout analyze(func::FuncOp func) {
  ForwardLayout layout;
  layout.end = forwardEnd(func);
  layout.layerOf = layerOfOps(func);
  Block &body = func.getBody().front();
  llvm::DenseMap<Operation *, int64_t> indexOf;
  int64_t index = 0;
  for (Operation &op : body) {
    indexOf[&op] = index++;
  }
  layout.leavesLayer.assign(layout.layerOf.size(), false);
  int64_t lastLayer = -1;
  layout.firstLayer = -1;
  for (int64_t i = 0; i <= layout.end; ++i) {
    int64_t layer = layout.layerOf[i];
    if (layer >= 0) {
      layout.firstLayer = layout.firstLayer < 0 ? layer : std::min(layout.firstLayer, layer);
      lastLayer = std::max(lastLayer, layer);
    }
  }
  layout.numLayers = layout.firstLayer < 0 ? 0 : lastLayer - layout.firstLayer + 1;
  index = 0;
  for (Operation &op : body) {
    if (index > layout.end) {
      break;
    }
    for (Operation *user : op.getUsers()) {
      auto it = indexOf.find(user);
      if (it == indexOf.end()) {
        continue;
      }
      int64_t userIndex = it->second;
      bool returned = user->hasTrait<OpTrait::IsTerminator>();
      bool otherLayer =
          userIndex <= layout.end && layout.layerOf[userIndex] != layout.layerOf[index];
      if (returned || otherLayer) {
        layout.leavesLayer[index] = true;
      }
    }
    ++index;
  }
  return layout;
}

bool isLayoutOp(Operation *op) { return isa<tg::TransposeOp, tg::ReshapeOp>(op); }

/// The forward ops (by index) that `levels` (one per layer from layout.firstLayer) recompute.
std::vector<bool> chooseOps(func::FuncOp func, const ForwardLayout &layout,
                            llvm::ArrayRef<int64_t> levels) {
  std::vector<bool> chosen(layout.layerOf.size(), false);
  llvm::DenseMap<Operation *, int64_t> indexOf;
  int64_t index = 0;
  for (Operation &op : func.getBody().front()) {
    indexOf[&op] = index;
    if (index > layout.end) {
      break;
    }
    int64_t layer = layout.layerOf[index];
    int64_t level = layer >= 0 ? levels[layer - layout.firstLayer] : kKeep;
    // Parameters are persistent and constants cost nothing to keep: never recomputed.
    bool eligible = level > kKeep && !isa<tg::ParamRefOp>(op) && op.getNumOperands() > 0;
    if (eligible) {
      bool seed = (level >= kFull && !layout.leavesLayer[index]) ||
                  (level >= kSelective && isa<tg::AttentionOp>(op)) ||
                  (level >= kSwiglu && isa<tg::SwigluOp>(op));
      // A layout op of a recomputed value is recomputed with it (the backward often reads
      // the transposed copy, not the op's own result).
      bool follows = isLayoutOp(&op) && !layout.leavesLayer[index] && [&] {
        Operation *def = op.getOperand(0).getDefiningOp();
        auto it = def ? indexOf.find(def) : indexOf.end();
        return it != indexOf.end() && chosen[it->second];
      }();
      chosen[index] = seed || follows;
    }
    ++index;
  }
  return chosen;
}

/// Rewrites the backward half of `func` to read clones of the chosen forward ops; returns the
/// model FLOPs of the clones. The clones of a value's operands come first, a collective's
/// start with its done.
double rematerialize(func::FuncOp func, const ForwardLayout &layout,
                     const std::vector<bool> &chosen) {
  Block &body = func.getBody().front();
  std::vector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> indexOf;
  for (Operation &op : body) {
    indexOf[&op] = static_cast<int64_t>(ops.size());
    ops.push_back(&op);
  }
  auto isChosen = [&](Value value) {
    Operation *def = value.getDefiningOp();
    auto it = def ? indexOf.find(def) : indexOf.end();
    return it != indexOf.end() && it->second <= layout.end && chosen[it->second];
  };
  IRMapping clones;
  OpBuilder builder(func.getContext());
  double flops = 0;
  auto materialize = [&](auto &self, Value value, Operation *before) -> Value {
    if (Value clone = clones.lookupOrNull(value)) {
      return clone;
    }
    Operation *def = value.getDefiningOp();
    for (Value operand : def->getOperands()) {
      if (isChosen(operand)) {
        self(self, operand, before);
      }
    }
    builder.setInsertionPoint(before);
    Operation *clone = builder.clone(*def, clones);
    clone->setLoc(NameLoc::get(builder.getStringAttr("recomputed"), def->getLoc()));
    flops += modelFlops(def);
    return clones.lookup(value);
  };
  // What the function returns is read by its caller after the backward: the forward value.
  for (size_t i = layout.end + 1; i + 1 < ops.size(); ++i) {
    for (OpOperand &use : ops[i]->getOpOperands()) {
      if (isChosen(use.get())) {
        use.set(materialize(materialize, use.get(), ops[i]));
      }
    }
  }
  for (int64_t i = layout.end; i >= 0; --i) {
    if (chosen[i] && isOpTriviallyDead(ops[i])) {
      ops[i]->erase();
    }
  }
  return flops;
}

/// Levels with the first `steps` of the cost order applied: swiglu in every layer (from the
/// first), then selective, then full.
std::vector<int64_t> prefixLevels(int64_t layers, int64_t steps) {
  std::vector<int64_t> levels(layers, kKeep);
  for (int64_t layer = 0; layer < layers; ++layer) {
    for (int64_t level = kSwiglu; level <= kFull; ++level) {
      if (layer + (level - 1) * layers < steps) {
        levels[layer] = level;
      }
    }
  }
  return levels;
}

double forwardFlops(func::FuncOp func, int64_t end) {
  double flops = 0;
  int64_t index = 0;
  for (Operation &op : func.getBody().front()) {
    if (index++ > end) {
      break;
    }
    flops += modelFlops(&op);
  }
  return flops;
}

struct Candidate {
  int64_t arenaBytes = 0;
  double flops = 0;
};

/// Places a clone of `func` with `levels` applied: the cost model is the real liveness and
/// placement of the rewritten function, not an estimate.
Candidate evaluate(func::FuncOp func, const ForwardLayout &layout, llvm::ArrayRef<int64_t> levels) {
  auto clone = cast<func::FuncOp>(func->clone());
  Candidate candidate;
  candidate.flops = rematerialize(clone, layout, chooseOps(clone, layout, levels));
  candidate.arenaBytes = planFunctionMemory(clone).arenaBytes;
  clone->erase();
  return candidate;
}

struct TGRecomputePass : impl::TGRecomputePassBase<TGRecomputePass> {
  using Base::Base;

  void runOnOperation() override {
    if (policy != "none" && policy != "selective" && policy != "full" && policy != "auto") {
      getOperation().emitError() << "tg-recompute: policy must be none, selective, full or "
                                    "auto, got '"
                                 << policy << "'";
      return signalPassFailure();
    }
    auto models = llvm::to_vector(getOperation().getOps<tg::ModelOp>());
    if (policy == "auto" && budgets.size() != 1 && budgets.size() != models.size()) {
      getOperation().emitError() << "tg-recompute: policy=auto needs budgets: one, or one per "
                                    "tg.model ("
                                 << models.size() << "), got " << budgets.size();
      return signalPassFailure();
    }
    for (auto [index, model] : llvm::enumerate(models)) {
      int64_t budget = budgets.empty() ? 0 : budgets[budgets.size() == 1 ? 0 : index];
      for (auto func : llvm::to_vector(model.getBody().front().getOps<func::FuncOp>())) {
        if (isDifferentiated(func) && failed(runOnFunction(func, budget))) {
          return signalPassFailure();
        }
      }
    }
  }

  LogicalResult runOnFunction(func::FuncOp func, int64_t budget) {
    ForwardLayout layout = analyze(func);
    if (layout.end < 0) {
      return func.emitError() << "tg-recompute: cannot find where the forward half ends (the "
                                 "op computing the first result)";
    }
    int64_t before = planFunctionMemory(func).arenaBytes;
    int64_t layers = layout.numLayers;
    std::vector<int64_t> levels(layers, kKeep);
    if (policy == "selective") {
      levels.assign(layers, kSelective);
    } else if (policy == "full") {
      levels.assign(layers, kFull);
    } else if (policy == "auto") {
      levels = chooseAuto(func, layout, budget);
    }
    double flops = 0;
    if (llvm::any_of(levels, [](int64_t level) { return level != kKeep; })) {
      flops = rematerialize(func, layout, chooseOps(func, layout, levels));
    }
    Builder builder(func.getContext());
    llvm::SmallVector<NamedAttribute> report{
        builder.getNamedAttr("policy", builder.getStringAttr(policy)),
        builder.getNamedAttr("first_layer", builder.getI64IntegerAttr(layout.firstLayer)),
        builder.getNamedAttr("levels", builder.getDenseI64ArrayAttr(levels)),
        builder.getNamedAttr("recomputed_flops", builder.getF64FloatAttr(flops)),
        builder.getNamedAttr("model_flops",
                             builder.getF64FloatAttr(3.0 * forwardFlops(func, layout.end))),
        builder.getNamedAttr("arena_before", builder.getI64IntegerAttr(before)),
        builder.getNamedAttr("arena_after",
                             builder.getI64IntegerAttr(planFunctionMemory(func).arenaBytes)),
    };
    if (policy == "auto") {
      report.push_back(builder.getNamedAttr("budget", builder.getI64IntegerAttr(budget)));
    }
    func->setAttr("tg.recompute", builder.getDictionaryAttr(report));
    return success();
  }

  /// The shortest prefix of the cost order whose placed arena fits `budget` (all of it when
  /// none does). Arenas shrink as the prefix grows; the search only ever returns a prefix it
  /// placed and saw fit.
  std::vector<int64_t> chooseAuto(func::FuncOp func, const ForwardLayout &layout, int64_t budget) {
    int64_t layers = layout.numLayers;
    auto fits = [&](int64_t steps) {
      return evaluate(func, layout, prefixLevels(layers, steps)).arenaBytes <= budget;
    };
    if (fits(0)) {
      return prefixLevels(layers, 0);
    }
    int64_t most = 3 * layers;
    if (!fits(most)) {
      return prefixLevels(layers, most);
    }
    int64_t low = 0, high = most; // low does not fit, high fits
    while (high - low > 1) {
      int64_t middle = low + (high - low) / 2;
      (fits(middle) ? high : low) = middle;
    }
    return prefixLevels(layers, high);
  }
};

} // namespace
} // namespace mlperf
