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
#include "compiler/Analysis/PipelineSchedule.h"
#include "compiler/Support/ChunkNames.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

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
  llvm::DenseMap<Operation *, int64_t> indexOf = opIndices(body);
  int64_t index = 0;
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

/// Parameter reads and constants: never kept, and read again where needed.
bool isFree(Operation *op) { return isa<tg::ParamRefOp>(op) || op->getNumOperands() == 0; }

/// What a pipeline stage keeps of one micro-batch between its forward and its backward: the
/// forward values the backward reads. Parameter reads, constants and views (tg.reshape) of
/// kept values are not kept but rebuilt in the backward; the forward's arguments (the stage
/// input) are kept by the step anyway and counted.
struct Stash {
  SmallVector<Value> values;        // forward values, in definition order
  SmallVector<Operation *> rebuilt; // forward ops the backward half clones, in order
  int64_t bytes = 0;                // of the values and the forward's arguments
};

/// The stash of a differentiated function whose forward half ends at op `end`, with
/// `forwardArgs` arguments (a stage's input and, on the last, its labels).
Stash stashOf(func::FuncOp func, int64_t end, unsigned forwardArgs) {
  Stash stash;
  Block &body = func.getBody().front();
  llvm::DenseMap<Operation *, int64_t> indexOf = opIndices(body);
  auto forwardOp = [&](Value value) -> Operation * {
    Operation *def = value.getDefiningOp();
    auto it = def ? indexOf.find(def) : indexOf.end();
    return it != indexOf.end() && it->second <= end ? def : nullptr;
  };
  // The forward values the backward half reads (and, through views, their sources).
  llvm::DenseSet<Operation *> keep, rebuild;
  SmallVector<Value> worklist;
  for (Operation &op : body) {
    if (indexOf.lookup(&op) <= end) {
      continue;
    }
    auto operands =
        op.hasTrait<OpTrait::IsTerminator>() ? op.getOperands().drop_front() : op.getOperands();
    worklist.append(operands.begin(), operands.end());
  }
  llvm::DenseSet<Value> needed;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    Operation *def = forwardOp(value);
    if (!def || !needed.insert(value).second) {
      continue;
    }
    if (isFree(def)) {
      rebuild.insert(def);
    } else if (isa<tg::ReshapeOp>(def)) {
      rebuild.insert(def); // a view: rebuilt from its source, which is kept instead
      worklist.push_back(def->getOperand(0));
    } else {
      keep.insert(def);
    }
  }
  for (Operation &op : body) {
    if (indexOf.lookup(&op) > end) {
      break;
    }
    if (rebuild.contains(&op)) {
      stash.rebuilt.push_back(&op);
    }
    if (keep.contains(&op)) {
      for (Value result : op.getResults()) {
        if (needed.contains(result)) {
          stash.values.push_back(result);
          stash.bytes +=
              isa<RankedTensorType>(result.getType()) ? storageBytes(result.getType()) : 0;
        }
      }
    }
  }
  for (unsigned i = 0; i < forwardArgs; ++i) {
    stash.bytes += storageBytes(body.getArgument(i).getType());
  }
  return stash;
}

/// "" or ".chunkN" of tg-autodiff's `@forward_backward` or `@"forward_backward.chunkN"`.
std::string differentiatedSuffix(StringRef differentiated) {
  return chunkSuffix(std::max<int64_t>(0, chunkOfName(differentiated, "forward_backward")));
}

struct Halves {
  func::FuncOp forward, backward;
};

/// The two functions splitAtStash replaces `fb` with (its last argument the output's
/// gradient), built at `builder`'s insertion point (detached when it has none: a candidate to
/// measure).
Halves buildHalves(func::FuncOp fb, int64_t end, const Stash &stash, OpBuilder &builder) {
  Block &body = fb.getBody().front();
  unsigned forwardArgs = fb.getNumArguments() - 1;
  std::vector<Operation *> ops;
  for (Operation &op : body) {
    ops.push_back(&op);
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  std::string suffix = differentiatedSuffix(fb.getSymName());

  // The forward half: the forward ops, returning the output and the stash.
  SmallVector<Type> forwardInputs(fb.getArgumentTypes().take_front(forwardArgs));
  SmallVector<Type> forwardResults{ret.getOperand(0).getType()};
  for (Value value : stash.values) {
    forwardResults.push_back(value.getType());
  }
  auto forward = func::FuncOp::create(builder, fb.getLoc(), "forward_and_stash" + suffix,
                                      builder.getFunctionType(forwardInputs, forwardResults));
  {
    IRMapping map;
    Block *entry = forward.addEntryBlock();
    for (unsigned i = 0; i < forwardArgs; ++i) {
      map.map(body.getArgument(i), entry->getArgument(i));
    }
    OpBuilder inner = OpBuilder::atBlockEnd(entry);
    for (int64_t i = 0; i <= end; ++i) {
      inner.clone(*ops[i], map);
    }
    SmallVector<Value> results{map.lookup(ret.getOperand(0))};
    for (Value value : stash.values) {
      results.push_back(map.lookup(value));
    }
    func::ReturnOp::create(inner, fb.getLoc(), results);
  }

  // The backward half: the forward arguments, the stash, then the output's gradient.
  SmallVector<Type> backwardInputs(forwardInputs);
  for (Value value : stash.values) {
    backwardInputs.push_back(value.getType());
  }
  backwardInputs.push_back(fb.getArgumentTypes().back());
  SmallVector<Type> backwardResults(fb.getResultTypes().drop_front());
  auto backward = func::FuncOp::create(builder, fb.getLoc(), "backward_from_stash" + suffix,
                                       builder.getFunctionType(backwardInputs, backwardResults));
  {
    IRMapping map;
    Block *entry = backward.addEntryBlock();
    for (unsigned i = 0; i < forwardArgs; ++i) {
      map.map(body.getArgument(i), entry->getArgument(i));
    }
    for (auto [k, value] : llvm::enumerate(stash.values)) {
      map.map(value, entry->getArgument(forwardArgs + k));
    }
    map.map(body.getArguments().back(), entry->getArguments().back());
    OpBuilder inner = OpBuilder::atBlockEnd(entry);
    for (Operation *op : stash.rebuilt) {
      inner.clone(*op, map);
    }
    for (size_t i = end + 1; i + 1 < ops.size(); ++i) {
      inner.clone(*ops[i], map);
    }
    SmallVector<Value> results;
    for (Value value : ret.getOperands().drop_front()) {
      results.push_back(map.lookup(value)); // stashOf covers everything returned
    }
    func::ReturnOp::create(inner, fb.getLoc(), results);
  }
  return {forward, backward};
}

struct Candidate {
  int64_t arenaBytes = 0; // the function's activation arena (on a stage, its larger half's)
  int64_t stashBytes = 0; // on a pipeline stage: what one micro-batch keeps
  double flops = 0;       // model FLOPs recomputed
};

/// Places a clone of `func` with `levels` applied: the cost model is the real liveness and
/// placement of the rewritten function (with `split`, of the larger of its two halves), not an
/// estimate.
Candidate evaluate(func::FuncOp func, const ForwardLayout &layout, llvm::ArrayRef<int64_t> levels,
                   bool split) {
  if (!split && llvm::all_of(levels, [](int64_t level) { return level == kKeep; })) {
    return {planFunctionMemory(func).arenaBytes, 0, 0.0}; // nothing to rewrite: no clone
  }
  auto clone = cast<func::FuncOp>(func->clone());
  Candidate candidate;
  candidate.flops = rematerialize(clone, layout, chooseOps(clone, layout, levels));
  if (split) {
    // The rewrite may have erased forward ops no longer read: find the boundary again.
    int64_t end = forwardEnd(clone);
    Stash stash = stashOf(clone, end, clone.getNumArguments() - 1);
    candidate.stashBytes = stash.bytes;
    OpBuilder detached(func.getContext());
    Halves halves = buildHalves(clone, end, stash, detached);
    candidate.arenaBytes = std::max(planFunctionMemory(halves.forward).arenaBytes,
                                    planFunctionMemory(halves.backward).arenaBytes);
    halves.forward->erase();
    halves.backward->erase();
  } else {
    candidate.arenaBytes = planFunctionMemory(clone).arenaBytes;
  }
  clone->erase();
  return candidate;
}

/// Splits the differentiated function of a pipeline chunk that is not the last virtual stage
/// into @forward_and_stash (its forward arguments to its output and the stash) and
/// @backward_from_stash (the forward arguments, the stash and the output's gradient to the
/// gradients and the input's gradient), and erases it: tg-train-step calls the first at the
/// micro-batch's forward and the second at its backward, so the stage keeps the stash, and
/// recomputes nothing it did not choose to.
LogicalResult splitAtStash(tg::ModelOp model, func::FuncOp fb) {
  int64_t end = forwardEnd(fb);
  std::string suffix = differentiatedSuffix(fb.getSymName());
  auto forwardOnly =
      dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward" + suffix));
  if (end < 0 || !forwardOnly || fb.getNumArguments() != forwardOnly.getNumArguments() + 1) {
    return fb.emitError() << "tg-recompute: @" << fb.getSymName()
                          << " is not tg-autodiff's backward of a pipeline stage's @forward"
                          << suffix << " (its arguments and then the output's gradient)";
  }
  for (StringRef name : {"forward_and_stash", "backward_from_stash"}) {
    if (SymbolTable::lookupSymbolIn(model, name.str() + suffix)) {
      return fb.emitError() << "tg-recompute: the model already has a @" << name << suffix;
    }
  }
  if (!SymbolTable::symbolKnownUseEmpty(fb, model)) {
    return fb.emitError() << "tg-recompute: @" << fb.getSymName()
                          << " is already called (run tg-recompute before tg-train-step)";
  }
  Block &body = fb.getBody().front();
  llvm::DenseMap<Operation *, int64_t> indexOf = opIndices(body);
  for (Operation *user : body.getArguments().back().getUsers()) {
    if (indexOf.lookup(user) <= end) {
      return user->emitError("tg-recompute: a forward op reads the output's gradient");
    }
  }
  Stash stash = stashOf(fb, end, fb.getNumArguments() - 1);
  for (Value value : stash.values) {
    if (!isa<RankedTensorType>(value.getType())) {
      return value.getDefiningOp()->emitError(
          "tg-recompute: the backward reads a forward value that is not a tensor (a collective "
          "in flight across the forward-backward boundary)");
    }
  }
  OpBuilder builder(fb);
  auto [forward, backward] = buildHalves(fb, end, stash, builder);
  MLIRContext *context = fb.getContext();
  for (NamedAttribute attribute : fb->getDiscardableAttrs()) {
    backward->setAttr(attribute.getName(), attribute.getValue());
    if (attribute.getName() != "tg.gradients" && attribute.getName() != "tg.recompute") {
      forward->setAttr(attribute.getName(), attribute.getValue());
    }
  }
  backward->setAttr("tg.from_stash", UnitAttr::get(context));
  forward->setAttr("tg.to_stash", UnitAttr::get(context));
  fb.erase();
  return success();
}

/// The pipeline facts of a stage model: how many micro-batches of each chunk it keeps.
struct StageWindow {
  bool split = false;            // a pipeline stage: its non-last chunks are split at the stash
  std::vector<int64_t> inFlight; // per chunk
};

FailureOr<StageWindow> stageWindow(tg::ModelOp model, int64_t accumulation) {
  StageWindow window;
  auto stage = model->getAttrOfType<IntegerAttr>("dist.stage");
  auto stages = model->getAttrOfType<IntegerAttr>("dist.stages");
  if (!stage || !stages || stages.getInt() < 2) {
    return window;
  }
  auto chunks = model->getAttrOfType<IntegerAttr>("dist.chunks");
  int64_t vp = chunks ? chunks.getInt() : 1;
  std::vector<std::vector<PipelineOp>> schedule;
  rt::Status status = pipelineSchedule(stages.getInt(), vp, accumulation, schedule);
  if (!status.isOk() || stage.getInt() < 0 || stage.getInt() >= stages.getInt()) {
    return model.emitError() << "tg-recompute: no pipeline schedule for stage " << stage.getInt()
                             << " of " << stages.getInt() << " with vp=" << vp << " and "
                             << accumulation << " micro-batches"
                             << (status.isOk() ? "" : ": " + status.message());
  }
  window.split = true;
  for (int64_t chunk = 0; chunk < vp; ++chunk) {
    window.inFlight.push_back(maxInFlight(schedule[stage.getInt()], chunk));
  }
  return window;
}

/// One differentiated function of a model: a chunk's backward.
struct Target {
  func::FuncOp func;
  ForwardLayout layout;
  int64_t stashCopies = 0; // on a split chunk: micro-batches in flight + 1 (its buffers)
  int64_t inFlight = 0;
  std::vector<int64_t> levels;
  Candidate none, chosen;
};

/// What a model's choice costs a rank: the largest arena of its backward functions (programs
/// share the arena) plus every split chunk's stash, per micro-batch in flight and once in its
/// halves' buffers (a rank holds the stashes of all its chunks at once).
int64_t modelCost(const std::vector<Target> &targets, llvm::ArrayRef<Candidate> candidates) {
  int64_t arena = 0, stash = 0;
  for (auto [target, candidate] : llvm::zip(targets, candidates)) {
    arena = std::max(arena, candidate.arenaBytes);
    stash += target.stashCopies * candidate.stashBytes;
  }
  return arena + stash;
}

} // namespace

bool isRecomputePolicy(StringRef policy) {
  return policy == "none" || policy == "selective" || policy == "full" || policy == "auto";
}

namespace {

struct TGRecomputePass : impl::TGRecomputePassBase<TGRecomputePass> {
  using Base::Base;

  void runOnOperation() override {
    if (!isRecomputePolicy(policy)) {
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
      if (failed(runOnModel(model, budget))) {
        return signalPassFailure();
      }
    }
  }

  LogicalResult runOnModel(tg::ModelOp model, int64_t budget) {
    FailureOr<StageWindow> window = stageWindow(model, accumulationSteps);
    if (failed(window)) {
      return failure();
    }
    std::vector<Target> targets;
    for (auto func : model.getBody().front().getOps<func::FuncOp>()) {
      if (!isDifferentiated(func)) {
        continue;
      }
      Target target;
      target.func = func;
      target.layout = analyze(func);
      if (target.layout.end < 0) {
        if (policy == "none" && !window->split) {
          continue; // nothing to rewrite
        }
        return func.emitError() << "tg-recompute: cannot find where the forward half ends (the "
                                   "op computing the first result)";
      }
      // A chunk that is not the pipeline's last keeps its stash across the window; the last
      // runs each micro-batch's backward right after its forward.
      auto output = cast<RankedTensorType>(func.getResultTypes().front());
      int64_t chunk = chunkOfName(func.getSymName(), "forward_backward");
      if (window->split && output.getRank() > 0 && chunk >= 0 &&
          chunk < static_cast<int64_t>(window->inFlight.size())) {
        target.inFlight = window->inFlight[chunk];
        target.stashCopies = target.inFlight + 1;
      }
      targets.push_back(std::move(target));
    }
    if (targets.empty()) {
      return success();
    }
    auto candidatesFor = [&](auto &&levelsOf) {
      std::vector<Candidate> candidates;
      for (Target &target : targets) {
        candidates.push_back(
            evaluate(target.func, target.layout, levelsOf(target), target.stashCopies > 0));
      }
      return candidates;
    };
    // With nothing to choose or split the pass only records the policy: placing the
    // functions to report arenas nobody asked for would cost a tenth of a small compile.
    bool measure = policy != "none" ||
                   llvm::any_of(targets, [](const Target &t) { return t.stashCopies > 0; });
    std::vector<Candidate> none = measure ? candidatesFor([](const Target &t) {
      return std::vector<int64_t>(t.layout.numLayers, kKeep);
    })
                                          : std::vector<Candidate>(targets.size());
    int64_t level = policy == "selective" ? kSelective : policy == "full" ? kFull : kKeep;
    std::vector<Candidate> chosen = none;
    int64_t steps = -1;
    if (policy == "auto") {
      // The shortest prefix of the cost order, the same number of steps in every chunk
      // function, whose placed cost fits the budget (all of it when none does), by binary
      // search. The cost shrinks as the prefix grows except where a step's clones outweigh
      // what it saves, so the result is a prefix the search placed and saw fit, not always the
      // shortest one.
      int64_t most = 0;
      for (const Target &target : targets) {
        most = std::max(most, 3 * target.layout.numLayers);
      }
      auto prefix = [&](int64_t n) {
        return candidatesFor([&](const Target &t) { return prefixLevels(t.layout.numLayers, n); });
      };
      steps = 0;
      if (modelCost(targets, none) > budget) {
        chosen = prefix(most);
        steps = most;
        int64_t low = 0; // does not fit
        while (modelCost(targets, chosen) <= budget && steps - low > 1) {
          int64_t middle = low + (steps - low) / 2;
          std::vector<Candidate> candidate = prefix(middle);
          if (modelCost(targets, candidate) <= budget) {
            steps = middle;
            chosen = std::move(candidate);
          } else {
            low = middle;
          }
        }
      }
    } else if (level != kKeep) {
      chosen = candidatesFor(
          [&](const Target &t) { return std::vector<int64_t>(t.layout.numLayers, level); });
    }
    for (auto [index, target] : llvm::enumerate(targets)) {
      target.levels = steps >= 0 ? prefixLevels(target.layout.numLayers, steps)
                                 : std::vector<int64_t>(target.layout.numLayers, level);
      target.none = none[index];
      target.chosen = chosen[index];
    }
    Builder builder(model.getContext());
    for (Target &target : targets) {
      func::FuncOp func = target.func;
      double modelFlops = 3.0 * forwardFlops(func, target.layout.end);
      double flops = 0;
      if (llvm::any_of(target.levels, [](int64_t l) { return l != kKeep; })) {
        flops = rematerialize(func, target.layout, chooseOps(func, target.layout, target.levels));
      }
      llvm::SmallVector<NamedAttribute> report{
          builder.getNamedAttr("policy", builder.getStringAttr(policy)),
          builder.getNamedAttr("first_layer", builder.getI64IntegerAttr(target.layout.firstLayer)),
          builder.getNamedAttr("levels", builder.getDenseI64ArrayAttr(target.levels)),
          builder.getNamedAttr("recomputed_flops", builder.getF64FloatAttr(flops)),
          builder.getNamedAttr("model_flops", builder.getF64FloatAttr(modelFlops)),
      };
      if (measure) {
        report.push_back(builder.getNamedAttr("arena_before",
                                              builder.getI64IntegerAttr(target.none.arenaBytes)));
        report.push_back(builder.getNamedAttr("arena_after",
                                              builder.getI64IntegerAttr(target.chosen.arenaBytes)));
      }
      if (target.stashCopies > 0) {
        report.push_back(builder.getNamedAttr("stash_before",
                                              builder.getI64IntegerAttr(target.none.stashBytes)));
        report.push_back(builder.getNamedAttr("stash_after",
                                              builder.getI64IntegerAttr(target.chosen.stashBytes)));
        report.push_back(builder.getNamedAttr("micro_batches_in_flight",
                                              builder.getI64IntegerAttr(target.inFlight)));
      }
      func->setAttr("tg.recompute", builder.getDictionaryAttr(report));
    }
    // The model's cost in the budget's terms, before and after: what compileForDevice reads.
    llvm::SmallVector<NamedAttribute> cost{
        builder.getNamedAttr("everything_recomputed",
                             builder.getBoolAttr(llvm::all_of(targets,
                                                              [](const Target &t) {
                                                                return llvm::all_of(
                                                                    t.levels, [](int64_t l) {
                                                                      return l == kFull;
                                                                    });
                                                              }))),
    };
    if (measure) {
      cost.push_back(
          builder.getNamedAttr("cost_before", builder.getI64IntegerAttr(modelCost(targets, none))));
      cost.push_back(builder.getNamedAttr("cost_after",
                                          builder.getI64IntegerAttr(modelCost(targets, chosen))));
    }
    if (policy == "auto") {
      cost.push_back(builder.getNamedAttr("budget", builder.getI64IntegerAttr(budget)));
    }
    model->setAttr("tg.recompute", builder.getDictionaryAttr(cost));
    for (Target &target : targets) {
      if (target.stashCopies > 0 && failed(splitAtStash(model, target.func))) {
        return failure();
      }
    }
    return success();
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "tg-recompute", kExact,
    "the backward reads clones of forward ops (the same ops on the same inputs)");
