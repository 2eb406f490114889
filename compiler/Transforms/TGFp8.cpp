//===- TGFp8.cpp - fp8 linears with explicit scaling state ------*- C++ -*-===//
//
// Rewrites the linears of the declared layer stack to fp8 GEMMs as Transformer Engine's
// DelayedScaling (or Float8CurrentScaling) recipe runs them under Megatron-Core, with the
// scaling state (amax histories, scales, the weights' cast scales) as explicit train-state
// values threaded through the step.
// The pass description in Passes.td has the contract; docs/numerics.md the recipe.
//
//===----------------------------------------------------------------------===//

#include "compiler/Support/RewriteClass.h"
#include "compiler/Support/StepRoles.h"
#include "compiler/Transforms/Passes.h"
#include "runtime/plan/StepRoles.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <functional>
#include <map>

#define DEBUG_TYPE "tg-fp8"

namespace mlperf {
#define GEN_PASS_DEF_TGFP8PASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;
namespace role = mlperf::rt::role;

namespace mlperf {
namespace {

constexpr double kE4M3Max = 448.0;
constexpr double kE5M2Max = 57344.0;

/// The linears reading one activation: one fp8 GEMM group, as the reference fuses q/k/v and
/// gate/up into one GEMM with one scale per role (input, weight, gradient).
struct Group {
  std::string name;                 // the first weight's parameter: the state's tg.param
  SmallVector<std::string> weights; // in op order
};

/// One forward linear `x · Wᵀ` of a group in one function, and its two backward GEMMs.
struct Linear {
  tg::MatmulOp forward;
  std::string weight;
  tg::MatmulOp dgrad; // dy · W (null in a function without backward)
  tg::MatmulOp wgrad; // flatten(dy)ᵀ · flatten(x)
};

struct FunctionGroup {
  Value input; // x
  SmallVector<Linear> linears;
  /// Copies of the forward linears tg-recompute made for the backward: each an input (the
  /// recomputed x) and its GEMMs in the order of `linears`. They cast with the same scales
  /// (the same bits) and have no backward GEMMs of their own.
  SmallVector<std::pair<Value, SmallVector<tg::MatmulOp>>> recomputed;
};

class Fp8Rewriter {
public:
  Fp8Rewriter(tg::ModelOp model, const TGFp8PassOptions &options)
      : model(model), builder(model.getContext()), options(options) {}

  LogicalResult run();

private:
  RankedTensorType scalarType() { return RankedTensorType::get({}, builder.getF32Type()); }
  /// Current scaling (Float8CurrentScaling): every cast's scale from its own tensor's amax,
  /// no histories; otherwise delayed scaling.
  bool current() const { return options.recipe == "current"; }
  /// The scaling state of a group, by role, in the order @train_step takes it.
  SmallVector<StringRef> stateRoles() const;
  /// Per group, the current value of each state role.
  using StateValues = llvm::StringMap<llvm::StringMap<Value>>;
  /// Extends every call of `step` to a function `rewritten` accepts with the state arguments
  /// it takes (from `state`, by role) and records the state it returns.
  LogicalResult passState(func::FuncOp step, StateValues &state,
                          llvm::function_ref<bool(func::FuncOp)> rewritten);
  Type stateType(StringRef roleName);
  /// Per group, an argument of `func` for each state role `wanted` keeps (all: none given).
  StateValues addStateArguments(func::FuncOp func,
                                llvm::function_ref<bool(StringRef)> wanted = nullptr);
  Value currentScale(Location loc, Value amax, double fp8Max) {
    return tg::Fp8CurrentScaleOp::create(builder, loc, scalarType(), amax,
                                         builder.getF64FloatAttr(fp8Max));
  }
  RankedTensorType historyType() {
    return RankedTensorType::get({options.amaxHistory}, builder.getF32Type());
  }
  Value fill(Location loc, Type type, double value) {
    return tg::FillOp::create(builder, loc, type, builder.getF64FloatAttr(value));
  }
  /// Appends an argument with a role; returns it.
  BlockArgument addArgument(func::FuncOp func, Type type, StringRef roleName, StringRef param);
  /// Replaces the function's return by one that also returns `values` with their roles.
  void addResults(func::FuncOp func, ArrayRef<Value> values, ArrayRef<StepRole> roles);

  LogicalResult collectWeights();
  LogicalResult collectLinears(func::FuncOp func, bool backward,
                               SmallVectorImpl<FunctionGroup> &groups);
  LogicalResult rewriteTraining(func::FuncOp func, MutableArrayRef<FunctionGroup> groups);
  LogicalResult rewriteEval(func::FuncOp func, MutableArrayRef<FunctionGroup> groups);
  LogicalResult rewriteOptimizer();
  LogicalResult rewriteTrainStep();
  LogicalResult rewriteEvalStep();
  LogicalResult rewriteInit();
  /// The scaled delayed-scaling update of one state, at the builder's insertion point.
  std::pair<Value, Value> update(Location loc, Value history, Value amax, Value scale,
                                 double fp8Max);
  FailureOr<std::string> groupOf(const FunctionGroup &group, Operation *where);
  /// The maxima over the data- and tensor-parallel ranks of non-negative f32 scalars (amaxes),
  /// with one all-gather per mesh axis of more than one rank for all of them; the scalars
  /// themselves on one rank.
  SmallVector<Value> maxOverRanks(Location loc, ArrayRef<Value> scalars,
                                  bool dataParallelOnly = false);

  tg::ModelOp model;
  OpBuilder builder;
  const TGFp8PassOptions &options;
  llvm::StringMap<tg::ParamOp> eligible; // weights that may become fp8
  llvm::MapVector<std::string, Group, std::map<std::string, unsigned>>
      groups; // in first-seen order
  llvm::StringMap<std::string> groupOfWeight;
  func::FuncOp trainStep, evalStep, optimizerStep, initParams, initOptimizer;
  SmallVector<func::FuncOp> trainingFunctions, evalFunctions;
  // The mesh axes (and their sizes) whose ranks hold different parts of a GEMM's operands.
  SmallVector<std::pair<StringRef, int64_t>> reductionAxes;
};

BlockArgument Fp8Rewriter::addArgument(func::FuncOp func, Type type, StringRef roleName,
                                       StringRef param) {
  Block &entry = func.getBody().front();
  BlockArgument argument = entry.addArgument(type, func.getLoc());
  func.setFunctionType(builder.getFunctionType(entry.getArgumentTypes(), func.getResultTypes()));
  SmallVector<DictionaryAttr> dicts;
  for (unsigned i = 0; i + 1 < func.getNumArguments(); ++i) {
    dicts.push_back(func.getArgAttrDict(i));
  }
  dicts.push_back(roleAttrs(func.getContext(), StepRole{roleName.str(), param.str()}));
  func.setAllArgAttrs(dicts);
  return argument;
}

void Fp8Rewriter::addResults(func::FuncOp func, ArrayRef<Value> values, ArrayRef<StepRole> roles) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Value> operands(ret.getOperands());
  operands.append(values.begin(), values.end());
  SmallVector<DictionaryAttr> dicts;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    dicts.push_back(func.getResultAttrDict(i));
  }
  for (const StepRole &r : roles) {
    dicts.push_back(roleAttrs(func.getContext(), r));
  }
  ret->setOperands(operands);
  func.setFunctionType(
      builder.getFunctionType(func.getArgumentTypes(), ValueRange(operands).getTypes()));
  func.setAllResultAttrs(dicts);
}

std::pair<Value, Value> Fp8Rewriter::update(Location loc, Value history, Value amax, Value scale,
                                            double fp8Max) {
  auto op = tg::Fp8ScaleUpdateOp::create(builder, loc, history.getType(), scalarType(), history,
                                         amax, scale, builder.getF64FloatAttr(fp8Max),
                                         builder.getF64FloatAttr(options.margin),
                                         builder.getStringAttr(options.amaxComputeAlgo));
  return {op.getNewHistory(), op.getNewScale()};
}

/// The parameter a value reads, if it is a tg.param_ref.
static std::optional<StringRef> paramOf(Value value) {
  if (auto ref = value.getDefiningOp<tg::ParamRefOp>()) {
    return ref.getName();
  }
  return std::nullopt;
}

/// Erases the ops whose results nothing reads any more (the bf16 operands' views the
/// replaced GEMMs read), so that they neither run nor keep their inputs alive.
static void eraseDeadOps(func::FuncOp func) {
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front().without_terminator()) {
    ops.push_back(&op);
  }
  for (Operation *op : llvm::reverse(ops)) {
    if (isOpTriviallyDead(op)) {
      op->erase();
    }
  }
}

/// A norm output read only by fp8 casts and amaxes becomes the norm's unrounded f32 output:
/// the reference's LayerNormLinear quantizes its norm's f32 result directly.
static void widenNormOutputs(ArrayRef<Value> inputs) {
  for (Value input : inputs) {
    if (!input.getDefiningOp<tg::RMSNormOp>()) {
      continue;
    }
    bool onlyCast = llvm::all_of(
        input.getUsers(), [](Operation *user) { return isa<tg::Fp8QuantizeOp, tg::AmaxOp>(user); });
    auto type = cast<RankedTensorType>(input.getType());
    if (onlyCast && !type.getElementType().isF32()) {
      input.setType(RankedTensorType::get(type.getShape(), Float32Type::get(type.getContext())));
    }
  }
}

/// The first of `ops` (of one block) in block order.
static Operation *earliest(ArrayRef<tg::MatmulOp> ops) {
  Operation *first = ops.front();
  for (tg::MatmulOp op : ops) {
    if (op->isBeforeInBlock(first)) {
      first = op;
    }
  }
  return first;
}

/// The value a chain of reshapes views (the value itself when it is no reshape).
static Value reshapeRoot(Value value) {
  while (auto reshape = value.getDefiningOp<tg::ReshapeOp>()) {
    value = reshape.getInput();
  }
  return value;
}

static bool isForwardLinear(tg::MatmulOp op) {
  return op.getTransposeRhs() && !op.getTransposeLhs() &&
         cast<RankedTensorType>(op.getRhs().getType()).getRank() == 2;
}

static bool isDataGradient(tg::MatmulOp op) {
  return !op.getTransposeRhs() && !op.getTransposeLhs() &&
         cast<RankedTensorType>(op.getRhs().getType()).getRank() == 2;
}

SmallVector<Value> Fp8Rewriter::maxOverRanks(Location loc, ArrayRef<Value> scalars,
                                             bool dataParallelOnly) {
  SmallVector<std::pair<StringRef, int64_t>> axes;
  for (auto [axis, size] : reductionAxes) {
    if (!dataParallelOnly || axis == "dp") {
      axes.push_back({axis, size});
    }
  }
  if (axes.empty() || scalars.empty()) {
    return SmallVector<Value>(scalars);
  }
  MLIRContext *context = builder.getContext();
  auto f32 = builder.getF32Type();
  int64_t n = static_cast<int64_t>(scalars.size());
  SmallVector<Value> pieces;
  for (Value scalar : scalars) {
    pieces.push_back(tg::ReshapeOp::create(builder, loc, RankedTensorType::get({1}, f32), scalar));
  }
  Value vector = n == 1 ? pieces.front()
                        : tg::ConcatOp::create(builder, loc, RankedTensorType::get({n}, f32),
                                               pieces, builder.getI64IntegerAttr(0))
                              .getResult();
  // Rank-major: after gathering over every axis, row r of [ranks, n] is rank r's amaxes.
  int64_t ranks = 1;
  for (auto [axis, size] : axes) {
    ranks *= size;
    auto gathered = RankedTensorType::get({ranks * n}, f32);
    auto future = dist::AllGatherStartOp::create(
        builder, loc, dist::FutureType::get(context, gathered), vector,
        FlatSymbolRefAttr::get(context, "mesh"), builder.getStrArrayAttr({axis}),
        builder.getI64IntegerAttr(0));
    vector = dist::DoneOp::create(builder, loc, gathered, future).getResult();
  }
  Value table = tg::ReshapeOp::create(builder, loc, RankedTensorType::get({ranks, n}, f32), vector);
  Value columns = tg::TransposeOp::create(builder, loc, RankedTensorType::get({n, ranks}, f32),
                                          table, builder.getDenseI64ArrayAttr({1, 0}));
  SmallVector<Value> rows;
  if (n == 1) {
    rows.push_back(columns);
  } else {
    auto split = tg::SplitOp::create(
        builder, loc, SmallVector<Type>(n, RankedTensorType::get({1, ranks}, f32)), columns,
        builder.getI64IntegerAttr(0), builder.getDenseI64ArrayAttr(SmallVector<int64_t>(n, 1)));
    rows.append(split.getResults().begin(), split.getResults().end());
  }
  SmallVector<Value> maxima;
  for (Value row : rows) {
    maxima.push_back(tg::AmaxOp::create(builder, loc, scalarType(), ValueRange{row}));
  }
  return maxima;
}

LogicalResult Fp8Rewriter::collectWeights() {
  // The recipe's linears: matrices of the declared layer stack (the parameters' `layer`),
  // read only as the weight of a linear or of its data gradient. The embedding and the LM
  // head are not in the stack and stay bf16, as in the reference.
  for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
    auto type = param.getTensorType();
    if (param.getFrozen()) {
      // fp8 weights are cast by the optimizer step, which a frozen weight is not part of.
      return param.emitError() << "tg-fp8: fp8 training of a model with frozen parameters (a "
                                  "LoRA base) is not supported yet; compile it in bf16";
    }
    if (param.getLayer() && type.getRank() == 2 && type.getElementType().isBF16()) {
      eligible[param.getSymName()] = param;
    }
  }
  model.walk([&](tg::ParamRefOp ref) {
    auto it = eligible.find(ref.getName());
    if (it == eligible.end()) {
      return;
    }
    for (OpOperand &use : ref->getUses()) {
      auto matmul = dyn_cast<tg::MatmulOp>(use.getOwner());
      if (!matmul || use.getOperandNumber() != 1 ||
          !(isForwardLinear(matmul) || isDataGradient(matmul))) {
        eligible.erase(it); // read otherwise (a tied weight): kept in bf16
        return;
      }
    }
  });
  if (eligible.empty()) {
    return model.emitError() << "tg-fp8: the model has no linear of its layer stack to run in "
                                "fp8 (bf16 matrices with a `layer`, read only by matmuls)";
  }
  return success();
}

LogicalResult Fp8Rewriter::collectLinears(func::FuncOp func, bool backward,
                                          SmallVectorImpl<FunctionGroup> &found) {
  // The data-gradient GEMMs of each weight (any read of it; CSE usually leaves one).
  llvm::StringMap<SmallVector<tg::MatmulOp>> dataGradients;
  SmallVector<tg::MatmulOp> weightGradients;
  func.walk([&](tg::MatmulOp op) {
    std::optional<StringRef> weight = paramOf(op.getRhs());
    if (weight && isDataGradient(op)) {
      dataGradients[*weight].push_back(op);
    }
    if (op.getTransposeLhs() && !op.getTransposeRhs() &&
        cast<RankedTensorType>(op.getType()).getRank() == 2) {
      weightGradients.push_back(op);
    }
  });
  // The forward linears by the input they read, in op order.
  llvm::MapVector<Value, SmallVector<std::pair<tg::MatmulOp, std::string>>> instances;
  func.walk([&](tg::MatmulOp op) {
    std::optional<StringRef> weight = paramOf(op.getRhs());
    if (isForwardLinear(op) && weight && eligible.count(*weight)) {
      instances[op.getLhs()].push_back({op, weight->str()});
    }
  });
  // Inputs whose linears have the same weights are one group: the first the forward's, the
  // others copies tg-recompute made for the backward.
  llvm::StringMap<unsigned> groupByWeights;
  for (auto &[input, linears] : instances) {
    // By the set of weights: a recomputed copy may compute them in another order.
    SmallVector<std::string> sorted;
    for (auto &[op, weight] : linears) {
      sorted.push_back(weight);
    }
    llvm::sort(sorted);
    std::string key = llvm::join(sorted, "\n");
    auto [it, inserted] = groupByWeights.try_emplace(key, found.size());
    if (inserted) {
      FunctionGroup group{input, {}, {}};
      for (auto &[op, weight] : linears) {
        group.linears.push_back({op, weight, {}, {}});
      }
      found.push_back(std::move(group));
      continue;
    }
    // The copy's GEMMs in the order of the group's linears.
    SmallVector<tg::MatmulOp> ops;
    for (const Linear &linear : found[it->second].linears) {
      for (auto &[op, weight] : linears) {
        if (weight == linear.weight) {
          ops.push_back(op);
        }
      }
    }
    if (ops.size() != linears.size()) {
      return func.emitError() << "tg-fp8: a recomputed copy of the linears of @" << sorted.front()
                              << " reads a weight twice";
    }
    found[it->second].recomputed.push_back({input, std::move(ops)});
  }
  llvm::SmallPtrSet<Operation *, 16> claimed; // weight gradients already matched
  for (FunctionGroup &group : found) {
    for (Linear &linear : group.linears) {
      if (!backward) {
        continue;
      }
      tg::MatmulOp op = linear.forward;
      StringRef weight = linear.weight;
      // The data gradient reads the same weight; the weight gradient the data gradient's
      // cotangent, flattened, against the (flattened) input.
      auto candidates = dataGradients.find(weight);
      size_t count = candidates == dataGradients.end() ? 0 : candidates->second.size();
      if (count != 1) {
        return op.emitError() << "tg-fp8: " << count << " data gradients read @" << weight
                              << " (a linear whose input needs no gradient is not supported)";
      }
      linear.dgrad = candidates->second.front();
      // The weight gradient: dyᵀ · x over the flattened rows, its lhs a view of the data
      // gradient's cotangent and its rhs a view of the input or of a recomputed copy of it
      // (reshape chains are collapsed, so compare their sources); exactly one, and no other
      // linear's.
      Value dyRoot = reshapeRoot(linear.dgrad.getLhs());
      SmallVector<Value> inputRoots{reshapeRoot(group.input)};
      for (auto &[copy, ops] : group.recomputed) {
        inputRoots.push_back(reshapeRoot(copy));
      }
      auto outType = cast<RankedTensorType>(op.getRhs().getType());
      // Autodiff builds it from this linear's output gradient; its rhs is a view of the input,
      // of a recomputed copy of the linear's input, or a recomputed copy of the op that
      // computed the input (tg-recompute's swiglu level), which the rewrite casts again.
      SmallVector<tg::MatmulOp> matches, ofInput;
      for (tg::MatmulOp g : weightGradients) {
        if (reshapeRoot(g.getLhs()) == dyRoot && g.getType().getShape() == outType.getShape() &&
            !claimed.contains(g)) {
          matches.push_back(g);
          if (llvm::is_contained(inputRoots, reshapeRoot(g.getRhs()))) {
            ofInput.push_back(g);
          }
        }
      }
      if (ofInput.size() == 1) {
        matches = ofInput;
      }
      if (matches.size() != 1) {
        return op.emitError() << "tg-fp8: " << matches.size() << " weight-gradient GEMMs of @"
                              << weight << " (dyᵀ · x of its output's gradient) found";
      }
      claimed.insert(matches.front());
      linear.wgrad = matches.front();
    }
  }
  for (FunctionGroup &group : found) {
    FailureOr<std::string> name = groupOf(group, func);
    if (failed(name)) {
      return failure();
    }
  }
  return success();
}

FailureOr<std::string> Fp8Rewriter::groupOf(const FunctionGroup &group, Operation *where) {
  SmallVector<std::string> weights;
  for (const Linear &linear : group.linears) {
    weights.push_back(linear.weight);
  }
  const std::string &name = weights.front();
  auto [it, inserted] = groups.try_emplace(name, Group{name, weights});
  if (!inserted && it->second.weights != weights) {
    return where->emitError() << "tg-fp8: the linears reading one input differ between "
                                 "functions (group of @"
                              << name << ")";
  }
  for (const std::string &weight : weights) {
    auto [owner, fresh] = groupOfWeight.try_emplace(weight, name);
    if (!fresh && owner->second != name) {
      return where->emitError() << "tg-fp8: @" << weight
                                << " is the weight of linears of two inputs";
    }
  }
  return name;
}

LogicalResult Fp8Rewriter::rewriteTraining(func::FuncOp func,
                                           MutableArrayRef<FunctionGroup> found) {
  auto e4m3 = builder.getType<Float8E4M3FNType>();
  auto e5m2 = builder.getType<Float8E5M2Type>();
  auto fp8 = [](Value value, Type element) {
    auto type = cast<RankedTensorType>(value.getType());
    return RankedTensorType::get(type.getShape(), element);
  };
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Value> castInputs; // every GEMM input the rewrite casts
  // Per group its state arguments and the micro-batch's input and gradient amaxes, updated
  // together at the end (after one reduction over the ranks for all of them).
  struct Pending {
    std::string name;
    Value inputHistory, inputScale, gradHistory, gradScale, inputAmax, gradAmax;
  };
  SmallVector<Pending> pending;
  for (FunctionGroup &group : found) {
    std::string name = group.linears.front().weight;
    Location loc = group.linears.front().forward.getLoc();
    Value inputHistory, inputScale, gradHistory, gradScale;
    if (!current()) {
      inputHistory = addArgument(func, historyType(), role::kFp8InputHistory, name);
      inputScale = addArgument(func, scalarType(), role::kFp8InputScale, name);
      gradHistory = addArgument(func, historyType(), role::kFp8GradHistory, name);
      gradScale = addArgument(func, scalarType(), role::kFp8GradScale, name);
    }
    Value weightScale = addArgument(func, scalarType(), role::kFp8WeightCastScale, name);

    // Forward: the input's amax and its E4M3 cast, once for the group's GEMMs. The input as
    // the GEMM reads it now (an earlier group may have replaced the op that defined it).
    Value x = group.linears.front().forward.getLhs();
    builder.setInsertionPoint(group.linears.front().forward);
    Value inputAmax = tg::AmaxOp::create(builder, loc, scalarType(), ValueRange{x});
    if (current()) {
      inputScale = currentScale(loc, inputAmax, kE4M3Max);
    }
    Value xq = tg::Fp8QuantizeOp::create(builder, loc, fp8(x, e4m3), x, inputScale);
    // Every copy of the input (the forward's, tg-recompute's) with its cast: the weight
    // gradient reads a view of one of them.
    SmallVector<std::pair<Value, Value>> casts{{x, xq}};
    castInputs.push_back(x);
    for (auto &entry : group.recomputed) {
      SmallVector<tg::MatmulOp> &ops = entry.second;
      Value copy = ops.front().getLhs();
      builder.setInsertionPoint(earliest(ops));
      Value copyQ = tg::Fp8QuantizeOp::create(builder, loc, fp8(copy, e4m3), copy, inputScale);
      casts.push_back({copy, copyQ});
      castInputs.push_back(copy);
      for (tg::MatmulOp op : ops) {
        builder.setInsertionPoint(op);
        Value y = tg::Fp8MatmulOp::create(builder, op.getLoc(), op.getType(), copyQ, op.getRhs(),
                                          inputScale, weightScale, false, true);
        op.replaceAllUsesWith(y);
        op.erase();
      }
    }
    SmallVector<Value> gradAmaxes;
    for (Linear &linear : group.linears) {
      tg::MatmulOp op = linear.forward;
      builder.setInsertionPoint(op);
      Value y = tg::Fp8MatmulOp::create(builder, op.getLoc(), op.getType(), xq, op.getRhs(),
                                        inputScale, weightScale, /*transpose_lhs=*/false,
                                        /*transpose_rhs=*/true);
      op.replaceAllUsesWith(y);
      op.erase();
      // Backward: the output gradient's amax right where it is complete.
      Value dy = linear.dgrad.getLhs();
      if (Operation *producer = dy.getDefiningOp()) {
        builder.setInsertionPointAfter(producer);
      } else {
        builder.setInsertionPointToStart(&func.getBody().front());
      }
      gradAmaxes.push_back(tg::AmaxOp::create(builder, loc, scalarType(), ValueRange{dy}));
    }
    // Current scaling casts the group's output gradients with the scale of their common amax
    // (the reference's fused GEMM has one gradient tensor), once all of them are complete.
    Operation *lastAmax = gradAmaxes.front().getDefiningOp();
    for (Value amax : gradAmaxes) {
      if (lastAmax->isBeforeInBlock(amax.getDefiningOp())) {
        lastAmax = amax.getDefiningOp();
      }
    }
    Value currentGradAmax;
    if (current()) {
      builder.setInsertionPointAfter(lastAmax);
      currentGradAmax =
          gradAmaxes.size() == 1
              ? gradAmaxes.front()
              : tg::AmaxOp::create(builder, loc, scalarType(), gradAmaxes).getResult();
      gradScale = currentScale(loc, currentGradAmax, kE5M2Max);
    }
    for (Linear &linear : group.linears) {
      Value dy = linear.dgrad.getLhs();
      // The E5M2 cast where both the gradient and its scale exist.
      Operation *producer = dy.getDefiningOp();
      if (current()) {
        builder.setInsertionPointAfter(gradScale.getDefiningOp());
      } else if (producer) {
        builder.setInsertionPointAfter(producer);
      } else {
        builder.setInsertionPointToStart(&func.getBody().front());
      }
      Value dyq = tg::Fp8QuantizeOp::create(builder, loc, fp8(dy, e5m2), dy, gradScale);
      tg::MatmulOp dgrad = linear.dgrad;
      builder.setInsertionPoint(dgrad);
      Value dx = tg::Fp8MatmulOp::create(builder, dgrad.getLoc(), dgrad.getType(), dyq,
                                         dgrad.getRhs(), gradScale, weightScale, false, false);
      dgrad.replaceAllUsesWith(dx);
      dgrad.erase();

      tg::MatmulOp wgrad = linear.wgrad;
      builder.setInsertionPoint(wgrad);
      Value rows = dyq;
      if (wgrad.getLhs() != dy) {
        rows = tg::ReshapeOp::create(builder, wgrad.getLoc(), fp8(wgrad.getLhs(), e5m2), dyq);
      }
      // The input as the weight gradient reads it: a view of the forward's cast, or (a value
      // tg-recompute recomputed) cast again with the same scale, which gives the same bits.
      Value inputRows = wgrad.getRhs();
      Value inputRowsQ;
      for (auto [copy, copyQ] : casts) {
        if (inputRows == copy) {
          inputRowsQ = copyQ;
        } else if (!inputRowsQ && reshapeRoot(inputRows) == reshapeRoot(copy)) {
          inputRowsQ = tg::ReshapeOp::create(builder, wgrad.getLoc(), fp8(inputRows, e4m3), copyQ);
        }
      }
      if (!inputRowsQ) {
        inputRowsQ = tg::Fp8QuantizeOp::create(builder, wgrad.getLoc(), fp8(inputRows, e4m3),
                                               inputRows, inputScale);
      }
      Value dw = tg::Fp8MatmulOp::create(builder, wgrad.getLoc(), wgrad.getType(), rows, inputRowsQ,
                                         gradScale, inputScale, true, false);
      wgrad.replaceAllUsesWith(dw);
      wgrad.erase();
    }
    if (current()) {
      continue; // nothing to carry to the next micro-batch
    }
    builder.setInsertionPoint(ret);
    Value gradAmax = gradAmaxes.size() == 1
                         ? gradAmaxes.front()
                         : tg::AmaxOp::create(builder, loc, scalarType(), gradAmaxes).getResult();
    pending.push_back(
        {name, inputHistory, inputScale, gradHistory, gradScale, inputAmax, gradAmax});
  }
  // The scale updates: forward roles at the forward's end and the gradient's at the
  // backward's are the same values here (one call runs both; nothing later in the call
  // reads the new scales), so both sit before the return, after the amaxes' reduction over
  // the data- and tensor-parallel ranks (one collective per mesh axis for all of them).
  builder.setInsertionPoint(ret);
  Location loc = ret.getLoc();
  SmallVector<Value> amaxes;
  for (const Pending &p : pending) {
    amaxes.append({p.inputAmax, p.gradAmax});
  }
  SmallVector<Value> reduced = maxOverRanks(loc, amaxes);
  SmallVector<Value> results;
  SmallVector<StepRole> roles;
  for (auto [index, p] : llvm::enumerate(pending)) {
    auto [newInputHistory, newInputScale] =
        update(loc, p.inputHistory, reduced[2 * index], p.inputScale, kE4M3Max);
    auto [newGradHistory, newGradScale] =
        update(loc, p.gradHistory, reduced[2 * index + 1], p.gradScale, kE5M2Max);
    results.append({newInputHistory, newInputScale, newGradHistory, newGradScale});
    for (StringRef r : {role::kFp8InputHistory, role::kFp8InputScale, role::kFp8GradHistory,
                        role::kFp8GradScale}) {
      roles.push_back({r.str(), p.name});
    }
  }
  addResults(func, results, roles);
  eraseDeadOps(func);
  widenNormOutputs(castInputs);
  // Current scaling's gradient casts wait for the group's last gradient; the GEMMs that read
  // them (and what reads those) move after it, in the order they had.
  if (current() && !sortTopologically(&func.getBody().front())) {
    return func.emitError() << "tg-fp8: the rewritten function has a cycle";
  }
  return success();
}

LogicalResult Fp8Rewriter::rewriteEval(func::FuncOp func, MutableArrayRef<FunctionGroup> found) {
  auto e4m3 = builder.getType<Float8E4M3FNType>();
  SmallVector<Value> castInputs;
  for (FunctionGroup &group : found) {
    std::string name = group.linears.front().weight;
    Value inputScale =
        current() ? Value() : addArgument(func, scalarType(), role::kFp8InputScale, name);
    Value weightScale = addArgument(func, scalarType(), role::kFp8WeightCastScale, name);
    Value x = group.linears.front().forward.getLhs();
    castInputs.push_back(x);
    builder.setInsertionPoint(group.linears.front().forward);
    if (current()) {
      Value amax = tg::AmaxOp::create(builder, x.getLoc(), scalarType(), ValueRange{x});
      inputScale = currentScale(x.getLoc(), amax, kE4M3Max);
    }
    auto type = cast<RankedTensorType>(x.getType());
    Value xq = tg::Fp8QuantizeOp::create(
        builder, x.getLoc(), RankedTensorType::get(type.getShape(), e4m3), x, inputScale);
    for (Linear &linear : group.linears) {
      tg::MatmulOp op = linear.forward;
      builder.setInsertionPoint(op);
      Value y = tg::Fp8MatmulOp::create(builder, op.getLoc(), op.getType(), xq, op.getRhs(),
                                        inputScale, weightScale, false, true);
      op.replaceAllUsesWith(y);
      op.erase();
    }
    for (auto &entry : group.recomputed) {
      SmallVector<tg::MatmulOp> &ops = entry.second;
      Value copy = ops.front().getLhs();
      castInputs.push_back(copy);
      builder.setInsertionPoint(earliest(ops));
      auto copyType = cast<RankedTensorType>(copy.getType());
      Value copyQ = tg::Fp8QuantizeOp::create(builder, copy.getLoc(),
                                              RankedTensorType::get(copyType.getShape(), e4m3),
                                              copy, inputScale);
      for (tg::MatmulOp op : ops) {
        builder.setInsertionPoint(op);
        Value y = tg::Fp8MatmulOp::create(builder, op.getLoc(), op.getType(), copyQ, op.getRhs(),
                                          inputScale, weightScale, false, true);
        op.replaceAllUsesWith(y);
        op.erase();
      }
    }
  }
  eraseDeadOps(func);
  widenNormOutputs(castInputs);
  return success();
}

/// The new parameter's chain in @optimizer_step: `convert(master)`, then with ZeRO-1 the
/// all-gather of the shards and the reshape to the parameter's shape. Returns the convert and
/// the ops after it, or failure.
static FailureOr<std::pair<tg::ConvertOp, SmallVector<Operation *>>> parameterChain(Value value) {
  SmallVector<Operation *> after;
  while (true) {
    Operation *op = value.getDefiningOp();
    if (auto convert = dyn_cast_or_null<tg::ConvertOp>(op)) {
      std::reverse(after.begin(), after.end());
      return std::pair{convert, after};
    }
    if (isa_and_nonnull<tg::ReshapeOp, dist::AllGatherStartOp>(op)) {
      after.push_back(op);
      value = op->getOperand(0);
    } else if (auto done = dyn_cast_or_null<dist::DoneOp>(op)) {
      after.push_back(op);
      value = done.getFuture();
    } else {
      return failure();
    }
  }
}

/// `type` with fp8 E4M3 elements (a tensor, or a future of one).
static Type withE4M3(Type type) {
  auto e4m3 = Float8E4M3FNType::get(type.getContext());
  if (auto future = dyn_cast<dist::FutureType>(type)) {
    return dist::FutureType::get(type.getContext(), withE4M3(future.getValueType()));
  }
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(), e4m3);
}

LogicalResult Fp8Rewriter::rewriteOptimizer() {
  // After the update each weight is cast from its new f32 master with the group's weight
  // scale (with ZeRO-1 each rank casts its shard, and the fp8 shards are gathered); the
  // masters' amax (over every rank's part) then updates that scale (the weights' scales
  // update once per step, after the optimizer's cast), and the cast scale goes with the fp8
  // weights.
  func::FuncOp func = optimizerStep;
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  Location loc = ret.getLoc();
  SmallVector<Value> histories, scales, amaxes;
  if (!current()) {
    for (auto &[name, group] : groups) {
      histories.push_back(addArgument(func, historyType(), role::kFp8WeightHistory, name));
      scales.push_back(addArgument(func, scalarType(), role::kFp8WeightScale, name));
    }
  }
  // Current scaling casts each group with the scale of its new masters' amax, known only once
  // every master of the group is: the casts are made then (below).
  SmallVector<std::tuple<size_t, tg::ConvertOp, SmallVector<Operation *>>> pendingCasts;
  for (auto [g, entry] : llvm::enumerate(groups)) {
    auto &[name, group] = entry;
    SmallVector<Value> parts;
    for (const std::string &weight : group.weights) {
      std::optional<unsigned> index = findResult(func, {std::string(role::kParam), weight});
      if (!index) {
        return func.emitError() << "tg-fp8: @optimizer_step does not return @" << weight;
      }
      auto chain = parameterChain(ret.getOperand(*index));
      Value master = succeeded(chain) ? chain->first.getInput() : Value();
      if (!master || !cast<RankedTensorType>(master.getType()).getElementType().isF32()) {
        return func.emitError() << "tg-fp8: the new @" << weight
                                << " is not the conversion of an f32 master weight (or its "
                                   "gathered shards)";
      }
      tg::ConvertOp convert = chain->first;
      builder.setInsertionPoint(convert);
      parts.push_back(tg::AmaxOp::create(builder, loc, scalarType(), ValueRange{master}));
      if (current()) {
        pendingCasts.push_back({g, convert, chain->second});
        continue;
      }
      Value cast = tg::Fp8QuantizeOp::create(builder, convert.getLoc(), withE4M3(convert.getType()),
                                             master, scales[g]);
      convert.replaceAllUsesWith(cast);
      convert.erase();
      // The gather and the reshape carry fp8 now (same elements, one byte each).
      for (Operation *op : chain->second) {
        op->getResult(0).setType(withE4M3(op->getResult(0).getType()));
      }
    }
    builder.setInsertionPoint(ret);
    amaxes.push_back(parts.size() == 1
                         ? parts.front()
                         : tg::AmaxOp::create(builder, loc, scalarType(), parts).getResult());
  }
  builder.setInsertionPoint(ret);
  SmallVector<Value> results;
  SmallVector<StepRole> roles;
  if (current()) {
    // ZeRO-1 shards of one weight must share a scale (they are gathered): the amax over the
    // data-parallel ranks; tensor-parallel slices keep their own.
    SmallVector<Value> reduced = maxOverRanks(loc, amaxes, /*dataParallelOnly=*/true);
    SmallVector<Value> castScales;
    for (auto [g, entry] : llvm::enumerate(groups)) {
      castScales.push_back(currentScale(loc, reduced[g], kE4M3Max));
      results.push_back(castScales.back());
      roles.push_back({std::string(role::kFp8WeightCastScale), entry.first});
    }
    for (auto &[g, convert, after] : pendingCasts) {
      Value master = convert.getInput();
      Value cast = tg::Fp8QuantizeOp::create(builder, convert.getLoc(), withE4M3(convert.getType()),
                                             master, castScales[g]);
      convert.replaceAllUsesWith(cast);
      convert.erase();
      for (Operation *op : after) {
        op->getResult(0).setType(withE4M3(op->getResult(0).getType()));
      }
    }
    addResults(func, results, roles);
    // The gathers and reshapes of the casts move after them.
    if (!sortTopologically(&func.getBody().front())) {
      return func.emitError() << "tg-fp8: the rewritten @optimizer_step has a cycle";
    }
    return success();
  }
  SmallVector<Value> reduced = maxOverRanks(loc, amaxes);
  for (auto [g, entry] : llvm::enumerate(groups)) {
    const std::string &name = entry.first;
    auto [newHistory, newScale] = update(loc, histories[g], reduced[g], scales[g], kE4M3Max);
    results.append({scales[g], newHistory, newScale});
    roles.push_back({std::string(role::kFp8WeightCastScale), name});
    roles.push_back({std::string(role::kFp8WeightHistory), name});
    roles.push_back({std::string(role::kFp8WeightScale), name});
  }
  addResults(func, results, roles);
  return success();
}

/// A call of `callee` with `extra` operands appended and the callee's new results; the old
/// call's results are replaced. Returns the new call.
static func::CallOp extendCall(OpBuilder &builder, func::CallOp call, func::FuncOp callee,
                               ArrayRef<Value> extra) {
  builder.setInsertionPoint(call);
  SmallVector<Value> operands(call.getOperands());
  operands.append(extra.begin(), extra.end());
  auto replacement = func::CallOp::create(builder, call.getLoc(), callee, operands);
  replacement->setDiscardableAttrs(call->getDiscardableAttrDictionary());
  for (unsigned i = 0; i < call.getNumResults(); ++i) {
    call.getResult(i).replaceAllUsesWith(replacement.getResult(i));
  }
  call.erase();
  return replacement;
}

SmallVector<StringRef> Fp8Rewriter::stateRoles() const {
  if (current()) {
    return {role::kFp8WeightCastScale};
  }
  return {role::kFp8InputHistory, role::kFp8InputScale,      role::kFp8GradHistory,
          role::kFp8GradScale,    role::kFp8WeightCastScale, role::kFp8WeightHistory,
          role::kFp8WeightScale};
}

Type Fp8Rewriter::stateType(StringRef roleName) {
  return roleName.ends_with("history") ? Type(historyType()) : Type(scalarType());
}

Fp8Rewriter::StateValues
Fp8Rewriter::addStateArguments(func::FuncOp func, llvm::function_ref<bool(StringRef)> wanted) {
  StateValues state;
  for (auto &[name, group] : groups) {
    for (StringRef r : stateRoles()) {
      if (!wanted || wanted(r)) {
        state[name][r] = addArgument(func, stateType(r), r, name);
      }
    }
  }
  return state;
}

LogicalResult Fp8Rewriter::passState(func::FuncOp step, StateValues &state,
                                     llvm::function_ref<bool(func::FuncOp)> rewritten) {
  // The callees' state arguments and results say by role which value they take and return.
  SmallVector<func::CallOp> calls(step.getBody().front().getOps<func::CallOp>());
  for (func::CallOp call : calls) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
    if (!callee || !rewritten(callee)) {
      continue;
    }
    SmallVector<Value> extra;
    for (unsigned i = call.getNumOperands(); i < callee.getNumArguments(); ++i) {
      std::optional<StepRole> r = argRole(callee, i);
      Value value = r ? state.lookup(r->param).lookup(r->role) : Value();
      if (!value) {
        return callee.emitError() << "tg-fp8: @" << callee.getSymName() << " argument " << i
                                  << " is no fp8 state @" << step.getSymName() << " has";
      }
      extra.push_back(value);
    }
    unsigned first = call.getNumResults();
    func::CallOp replacement = extendCall(builder, call, callee, extra);
    for (unsigned i = first; i < callee.getNumResults(); ++i) {
      std::optional<StepRole> r = resultRole(callee, i);
      state[r->param][r->role] = replacement.getResult(i);
    }
  }
  return success();
}

LogicalResult Fp8Rewriter::rewriteTrainStep() {
  func::FuncOp func = trainStep;
  // Per group, the current value of each state role.
  StateValues state = addStateArguments(func);
  // The calls in step order: each micro-batch casts with the scales the previous one left.
  if (failed(passState(func, state, [&](func::FuncOp callee) {
        return callee == optimizerStep || llvm::is_contained(trainingFunctions, callee);
      }))) {
    return failure();
  }
  SmallVector<Value> results;
  SmallVector<StepRole> roles;
  for (auto &[name, group] : groups) {
    for (StringRef r : stateRoles()) {
      results.push_back(state[name][r]);
      roles.push_back({r.str(), name});
    }
  }
  addResults(func, results, roles);
  return success();
}

LogicalResult Fp8Rewriter::rewriteEvalStep() {
  func::FuncOp func = evalStep;
  // What the forward casts with: the input scale (delayed scaling) and the weights' cast scale.
  StateValues state = addStateArguments(func, [](StringRef r) {
    return r == StringRef(role::kFp8InputScale) || r == StringRef(role::kFp8WeightCastScale);
  });
  return passState(func, state,
                   [&](func::FuncOp callee) { return llvm::is_contained(evalFunctions, callee); });
}

LogicalResult Fp8Rewriter::rewriteInit() {
  // The run starts as the reference's fp8_model_init: each weight drawn in bf16, its master
  // that value, the fp8 weight its cast with scale 1 (whose amax is the weight history's
  // first entry); every other scale 1 and every history empty.
  auto e4m3 = builder.getType<Float8E4M3FNType>();
  func::FuncOp func = initParams;
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  builder.setInsertionPoint(ret);
  Location loc = ret.getLoc();
  // How @init_optimizer starts a master from its parameter (with ZeRO-1: this rank's shard of
  // it), replayed here on the drawn value instead of the fp8 parameter.
  auto masterFromDraw = [&](const std::string &weight, Value drawn) -> FailureOr<Value> {
    std::optional<unsigned> result =
        findResult(initOptimizer, {std::string(optimizer_role::kMaster), weight});
    std::optional<unsigned> argument = findArg(initOptimizer, {std::string(role::kParam), weight});
    if (!result || !argument) {
      return initOptimizer.emitError()
             << "tg-fp8: @init_optimizer does not start the master of @" << weight << " from it";
    }
    IRMapping mapping;
    mapping.map(initOptimizer.getArgument(*argument), drawn);
    auto initRet = cast<func::ReturnOp>(initOptimizer.getBody().front().getTerminator());
    std::function<LogicalResult(Value)> cloneChain = [&](Value value) -> LogicalResult {
      if (mapping.contains(value)) {
        return success();
      }
      Operation *op = value.getDefiningOp();
      if (!op) {
        return failure(); // another argument: not a function of this parameter alone
      }
      for (Value operand : op->getOperands()) {
        if (failed(cloneChain(operand))) {
          return failure();
        }
      }
      builder.clone(*op, mapping);
      return success();
    };
    Value master = initRet.getOperand(*result);
    if (failed(cloneChain(master))) {
      return initOptimizer.emitError()
             << "tg-fp8: the master of @" << weight << " is not computed from its parameter alone";
    }
    return mapping.lookup(master);
  };
  SmallVector<Value> results, amaxes;
  SmallVector<StepRole> roles;
  // Current scaling casts the draw with its own scale, known once the group's amax is.
  SmallVector<std::pair<size_t, unsigned>> pendingCasts; // (group, result index)
  for (auto [g, entry] : llvm::enumerate(groups)) {
    auto &[name, group] = entry;
    SmallVector<Value> parts;
    for (const std::string &weight : group.weights) {
      std::optional<unsigned> index = findResult(func, {std::string(role::kParam), weight});
      if (!index) {
        return func.emitError() << "tg-fp8: @init_params does not draw @" << weight
                                << " (fp8 weights start from their drawn bf16 value)";
      }
      Value drawn = ret.getOperand(*index);
      auto type = cast<RankedTensorType>(drawn.getType());
      parts.push_back(tg::AmaxOp::create(builder, loc, scalarType(), ValueRange{drawn}));
      if (current()) {
        pendingCasts.push_back({g, *index});
      } else {
        Value one = fill(loc, scalarType(), 1.0);
        ret->setOperand(
            *index, tg::Fp8QuantizeOp::create(
                        builder, loc, RankedTensorType::get(type.getShape(), e4m3), drawn, one));
      }
      FailureOr<Value> master = masterFromDraw(weight, drawn);
      if (failed(master)) {
        return failure();
      }
      results.push_back(*master);
      roles.push_back({std::string(optimizer_role::kMaster), weight});
    }
    amaxes.push_back(parts.size() == 1
                         ? parts.front()
                         : tg::AmaxOp::create(builder, loc, scalarType(), parts).getResult());
  }
  if (current()) {
    SmallVector<Value> castScales;
    for (auto [g, entry] : llvm::enumerate(groups)) {
      castScales.push_back(currentScale(loc, amaxes[g], kE4M3Max));
      results.push_back(castScales.back());
      roles.push_back({std::string(role::kFp8WeightCastScale), entry.first});
    }
    for (auto [g, index] : pendingCasts) {
      Value drawn = ret.getOperand(index);
      auto type = cast<RankedTensorType>(drawn.getType());
      ret->setOperand(index, tg::Fp8QuantizeOp::create(builder, loc,
                                                       RankedTensorType::get(type.getShape(), e4m3),
                                                       drawn, castScales[g]));
    }
  }
  SmallVector<Value> reduced = current() ? SmallVector<Value>() : maxOverRanks(loc, amaxes);
  for (auto [g, entry] : llvm::enumerate(groups)) {
    if (current()) {
      break;
    }
    const std::string &name = entry.first;
    auto [weightHistory, weightScale] = update(loc, fill(loc, historyType(), 0.0), reduced[g],
                                               fill(loc, scalarType(), 1.0), kE4M3Max);
    results.append({fill(loc, historyType(), 0.0), fill(loc, scalarType(), 1.0),
                    fill(loc, historyType(), 0.0), fill(loc, scalarType(), 1.0),
                    fill(loc, scalarType(), 1.0), weightHistory, weightScale});
    for (StringRef r :
         {role::kFp8InputHistory, role::kFp8InputScale, role::kFp8GradHistory, role::kFp8GradScale,
          role::kFp8WeightCastScale, role::kFp8WeightHistory, role::kFp8WeightScale}) {
      roles.push_back({r.str(), name});
    }
  }
  addResults(func, results, roles);

  // @init_optimizer no longer starts those masters from the (now fp8) parameters.
  func = initOptimizer;
  ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Value> kept;
  SmallVector<DictionaryAttr> keptAttrs;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    std::optional<StepRole> r = resultRole(func, i);
    if (r && r->role == optimizer_role::kMaster && groupOfWeight.count(r->param)) {
      continue;
    }
    kept.push_back(ret.getOperand(i));
    keptAttrs.push_back(func.getResultAttrDict(i));
  }
  ret->setOperands(kept);
  func.setFunctionType(
      builder.getFunctionType(func.getArgumentTypes(), ValueRange(kept).getTypes()));
  func.setAllResultAttrs(keptAttrs);
  // Ops that computed the dropped masters are dead now.
  eraseDeadOps(func);
  // The fp8 weights are no longer its inputs; any other use of one is an error.
  llvm::BitVector unused(func.getNumArguments());
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    std::optional<StepRole> r = argRole(func, i);
    if (!r || r->role != role::kParam || !groupOfWeight.count(r->param)) {
      continue;
    }
    if (!func.getArgument(i).use_empty()) {
      return func.emitError() << "tg-fp8: @init_optimizer starts other state from @" << r->param
                              << ", which is now an fp8 weight";
    }
    unused.set(i);
  }
  if (failed(func.eraseArguments(unused))) {
    return func.emitError() << "tg-fp8: cannot drop @init_optimizer's unused arguments";
  }
  return success();
}

LogicalResult Fp8Rewriter::run() {
  auto lookup = [&](StringRef name) {
    return dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, name));
  };
  trainStep = lookup("train_step");
  evalStep = lookup("eval_step");
  optimizerStep = lookup("optimizer_step");
  initParams = lookup("init_params");
  initOptimizer = lookup("init_optimizer");
  if (!trainStep || !evalStep || !optimizerStep || !initParams || !initOptimizer) {
    return model.emitError() << "tg-fp8 needs @train_step, @eval_step, @optimizer_step, "
                                "@init_params and @init_optimizer: run tg-train-step first";
  }
  for (auto benchmark : model.getBody().front().getOps<tg::BenchmarkOp>()) {
    if (benchmark.getAllowFp8() && !*benchmark.getAllowFp8()) {
      return benchmark.emitError()
             << "tg-fp8: the declaration of benchmark '" << benchmark.getName()
             << "' does not allow fp8 (tg.benchmark allow_fp8 = false)";
    }
  }
  if (auto mesh = dyn_cast_or_null<dist::MeshOp>(SymbolTable::lookupSymbolIn(model, "mesh"))) {
    if (mesh.getAxisSize("pp") > 1) {
      return model.emitError() << "tg-fp8: fp8 with pipeline parallelism is not supported yet "
                                  "(the scaling state of a stage's forward and backward calls)";
    }
    if (mesh.getHsdp() > 0) {
      return model.emitError() << "tg-fp8: fp8 with hybrid sharding (hsdp) is not supported yet "
                                  "(the fp8 weight shards are gathered over all of dp); use "
                                  "zero=1 without hsdp";
    }
    if (mesh.getZero() == 3 && mesh.getAxisSize("dp") > 1) {
      return model.emitError() << "tg-fp8: fp8 with zero=3 is not supported yet (the weights' "
                                  "casts would have to be gathered as fp8 shards); use zero=1";
    }
    // The amaxes are reduced with MAX over the ranks that hold different parts of a GEMM's
    // operands: data-parallel ranks (other micro-batches, ZeRO-1 shards) and tensor-parallel
    // ranks (split weights, features).
    for (StringRef axis : {"dp", "tp"}) {
      if (mesh.getAxisSize(axis) > 1) {
        reductionAxes.push_back({axis, mesh.getAxisSize(axis)});
      }
    }
  }
  if (failed(collectWeights())) {
    return failure();
  }
  // The functions the step calls: one call runs a micro-batch's forward and backward.
  llvm::SetVector<func::FuncOp> trainCallees, evalCallees;
  for (auto [step, callees] : {std::pair{trainStep, &trainCallees}, {evalStep, &evalCallees}}) {
    // The steps call their functions at top level (the micro-batch loop is unrolled), and
    // only those calls get the scaling state.
    for (auto call : step.getBody().front().getOps<func::CallOp>()) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
      if (callee && callee != optimizerStep) {
        callees->insert(callee);
      }
    }
  }
  SmallVector<std::pair<func::FuncOp, SmallVector<FunctionGroup>>> training, eval;
  for (func::FuncOp callee : trainCallees) {
    if (evalCallees.contains(callee)) {
      return callee.emitError() << "tg-fp8: @" << callee.getSymName()
                                << " is called by both the train and the eval step";
    }
    SmallVector<FunctionGroup> found;
    if (failed(collectLinears(callee, /*backward=*/true, found))) {
      return failure();
    }
    training.push_back({callee, std::move(found)});
  }
  for (func::FuncOp callee : evalCallees) {
    SmallVector<FunctionGroup> found;
    if (failed(collectLinears(callee, /*backward=*/false, found))) {
      return failure();
    }
    eval.push_back({callee, std::move(found)});
  }
  if (groups.empty()) {
    return model.emitError() << "tg-fp8: no function the train step calls holds a linear of "
                                "the layer stack (nothing would run in fp8)";
  }
  // Every function holds every group (one forward_backward per rank without pipelining).
  for (auto &entry :
       llvm::concat<std::pair<func::FuncOp, SmallVector<FunctionGroup>>>(training, eval)) {
    if (entry.second.size() != groups.size()) {
      return entry.first.emitError()
             << "tg-fp8: @" << entry.first.getSymName() << " runs " << entry.second.size()
             << " of the " << groups.size() << " fp8 GEMM groups";
    }
  }
  for (auto &[func, found] : training) {
    trainingFunctions.push_back(func);
    if (failed(rewriteTraining(func, found))) {
      return failure();
    }
  }
  for (auto &[func, found] : eval) {
    evalFunctions.push_back(func);
    if (failed(rewriteEval(func, found))) {
      return failure();
    }
  }
  // The weights are stored in fp8 (fp8_params): the declaration and every read of them.
  auto e4m3 = builder.getType<Float8E4M3FNType>();
  for (auto &[name, group] : groups) {
    for (const std::string &weight : group.weights) {
      tg::ParamOp param = eligible.lookup(weight);
      param.setType(RankedTensorType::get(param.getTensorType().getShape(), e4m3));
      param->setAttr("tg.fp8_group", builder.getStringAttr(name));
    }
  }
  model.walk([&](tg::ParamRefOp ref) {
    if (groupOfWeight.count(ref.getName())) {
      ref.getResult().setType(eligible.lookup(ref.getName()).getType());
    }
  });
  if (failed(rewriteOptimizer()) || failed(rewriteTrainStep()) || failed(rewriteEvalStep()) ||
      failed(rewriteInit())) {
    return failure();
  }
  // Signatures whose results changed type (the fp8 parameters).
  for (func::FuncOp func : {optimizerStep, initParams}) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    func.setFunctionType(builder.getFunctionType(func.getArgumentTypes(), ret.getOperandTypes()));
  }
  // @train_step's call of @optimizer_step returns the fp8 parameters now, and so does it.
  for (auto call : trainStep.getBody().front().getOps<func::CallOp>()) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
    if (!callee) {
      continue;
    }
    for (auto [result, type] : llvm::zip(call.getResults(), callee.getResultTypes())) {
      result.setType(type);
    }
  }
  auto trainReturn = cast<func::ReturnOp>(trainStep.getBody().front().getTerminator());
  trainStep.setFunctionType(
      builder.getFunctionType(trainStep.getArgumentTypes(), trainReturn.getOperandTypes()));
  model->setAttr(
      "tg.fp8",
      builder.getDictionaryAttr(
          {builder.getNamedAttr("recipe", builder.getStringAttr(options.recipe)),
           builder.getNamedAttr("amax_history", builder.getI64IntegerAttr(options.amaxHistory)),
           builder.getNamedAttr("amax_compute_algo",
                                builder.getStringAttr(options.amaxComputeAlgo)),
           builder.getNamedAttr("margin", builder.getF64FloatAttr(options.margin))}));
  return success();
}

struct TGFp8Pass : impl::TGFp8PassBase<TGFp8Pass> {
  using TGFp8PassBase::TGFp8PassBase;

  void runOnOperation() override {
    if (recipe != "delayed" && recipe != "current") {
      getOperation().emitError()
          << "tg-fp8: recipe '" << recipe
          << "' is not supported (delayed and current are; mxfp8 is planned)";
      return signalPassFailure();
    }
    if (amaxHistory < 1) {
      getOperation().emitError() << "tg-fp8: amax-history must be at least 1";
      return signalPassFailure();
    }
    if (!std::isfinite(margin) || margin < 0) {
      getOperation().emitError() << "tg-fp8: margin must be a finite non-negative number";
      return signalPassFailure();
    }
    if (amaxComputeAlgo != "most_recent" && amaxComputeAlgo != "max") {
      getOperation().emitError() << "tg-fp8: amax-compute-algo must be most_recent or max";
      return signalPassFailure();
    }
    TGFp8PassOptions options{recipe, amaxHistory, amaxComputeAlgo, margin};
    for (auto model : llvm::to_vector(getOperation().getOps<tg::ModelOp>())) {
      if (failed(Fp8Rewriter(model, options).run())) {
        return signalPassFailure();
      }
    }
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "tg-fp8", kPrecision,
    "the layer stack's linears as fp8 GEMMs (E4M3 inputs and weights, E5M2 gradients) with "
    "Transformer Engine's delayed or current scaling as explicit state; fp8 weights cast from "
    "the masters");
