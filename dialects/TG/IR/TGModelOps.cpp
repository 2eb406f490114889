//===- TGModelOps.cpp - Model declaration ops -------------------*- C++ -*-===//
//
// Verifiers of the training contract. Each error names the field and, where the reference
// fixes the rule, says what the reference does.
//
//===----------------------------------------------------------------------===//

#include "dialects/TG/IR/TGOps.h"

#include "dialects/TG/IR/TGUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace mlperf::tg;

namespace {

/// The per-layer placeholder in parameter names.
constexpr llvm::StringLiteral kLayerPlaceholder = "{i}";

/// Emits "<field> must be <requirement>, got <value>" on `op`.
LogicalResult fieldError(Operation *op, StringRef field, StringRef requirement, int64_t value) {
  return op->emitOpError() << field << " must be " << requirement << ", got " << value;
}

LogicalResult fieldError(Operation *op, StringRef field, StringRef requirement, double value) {
  return op->emitOpError() << field << " must be " << requirement << ", got "
                           << formatNumber(value);
}

} // namespace

//===----------------------------------------------------------------------===//
// Metadata ops
//===----------------------------------------------------------------------===//

LogicalResult BenchmarkOp::verify() {
  if (getName().empty()) {
    return emitOpError() << "name must name the MLPerf benchmark (e.g. \"llama31_8b\")";
  }
  if (getEvalEverySamplesAttr().getInt() <= 0) {
    return fieldError(*this, "eval_every_samples", "positive", getEvalEverySamplesAttr().getInt());
  }
  if (getEvalSamplesAttr().getInt() <= 0) {
    return fieldError(*this, "eval_samples", "positive", getEvalSamplesAttr().getInt());
  }
  if (getTargetMetric() != "log_perplexity" && getTargetMetric() != "eval_loss") {
    return emitOpError() << "unknown target_metric '" << getTargetMetric()
                         << "' (supported: log_perplexity, eval_loss)";
  }
  if (!isFinitePositive(getTargetValue().convertToDouble())) {
    return fieldError(*this, "target_value", "a finite positive number",
                      getTargetValue().convertToDouble());
  }
  std::optional<ArrayRef<int64_t>> batches = getRcpBatchSizes(), samples = getRcpMeanSamples();
  if (batches.has_value() != samples.has_value() ||
      (batches && batches->size() != samples->size())) {
    return emitOpError() << "rcp_batch_sizes and rcp_mean_samples must come together, one mean "
                            "per batch size";
  }
  if (std::optional<int64_t> skip = getEvalSkip(); skip && *skip < 0) {
    return fieldError(*this, "eval_skip", "non-negative", *skip);
  }
  if (std::optional<DictionaryAttr> mllog = getMllog()) {
    // The keys mlperf-run logs itself (runtime/mllog/BenchmarkLog.cpp): a declaration that
    // restated one would log it twice, which the checker's EXACTLY_ONE rules reject.
    static constexpr llvm::StringLiteral kRuntimeKeys[] = {"submission_org",
                                                           "submission_platform",
                                                           "submission_division",
                                                           "submission_benchmark",
                                                           "global_batch_size",
                                                           "micro_batch_size",
                                                           "gradient_accumulation_steps",
                                                           "max_sequence_length",
                                                           "opt_name",
                                                           "opt_base_learning_rate",
                                                           "opt_end_learning_rate",
                                                           "opt_learning_rate_warmup_steps",
                                                           "opt_learning_rate_decay_steps",
                                                           "opt_learning_rate_training_steps",
                                                           "opt_learning_rate_decay_schedule",
                                                           "max_steps",
                                                           "train_samples",
                                                           "eval_samples",
                                                           "seed",
                                                           "lowest_numerical_precision_in_linear",
                                                           "lowest_numerical_precision_in_attn"};
    for (NamedAttribute entry : *mllog) {
      StringRef key = entry.getName().strref();
      bool snake = !key.empty() && llvm::isLower(key.front()) && llvm::all_of(key, [](char c) {
        return llvm::isLower(c) || llvm::isDigit(c) || c == '_';
      });
      if (!snake) {
        return emitOpError() << "mllog key '" << key
                             << "' is not a lower_snake_case MLPerf log key";
      }
      if (llvm::is_contained(kRuntimeKeys, key)) {
        return emitOpError() << "mllog key '" << key
                             << "' is logged by the runtime from the declaration itself; do not "
                                "restate it";
      }
      for (auto optimizer : getParentOp()->getRegion(0).front().getOps<OptimizerOp>()) {
        for (NamedAttribute optimizerKey : optimizer.getMLLogKeys()) {
          if (optimizerKey.getName() == key) {
            return emitOpError() << "mllog key '" << key << "' is logged from tg.optimizer "
                                 << "(its hyperparameters); do not restate it";
          }
        }
      }
      if (!isa<IntegerAttr, FloatAttr, StringAttr>(entry.getValue())) {
        return emitOpError() << "mllog value of '" << key
                             << "' must be an integer, a float or a string";
      }
    }
  }
  if (batches) {
    for (size_t i = 0; i < batches->size(); ++i) {
      if ((*batches)[i] <= 0 || (*samples)[i] <= 0 ||
          (i > 0 && (*batches)[i] <= (*batches)[i - 1])) {
        return emitOpError() << "rcp_batch_sizes must be positive and ascending and "
                                "rcp_mean_samples positive (entry "
                             << i << ")";
      }
    }
  }
  return success();
}

LogicalResult BatchOp::verify() {
  for (auto [field, value] :
       {std::pair<StringRef, int64_t>{"global_batch_size", getGlobalBatchSizeAttr().getInt()},
        {"micro_batch_size", getMicroBatchSizeAttr().getInt()},
        {"seq_len", getSeqLenAttr().getInt()}}) {
    if (value <= 0) {
      return fieldError(*this, field, "positive", value);
    }
  }
  if (getGlobalBatchSizeAttr().getInt() % getMicroBatchSizeAttr().getInt() != 0) {
    return emitOpError() << "global_batch_size " << getGlobalBatchSizeAttr().getInt()
                         << " is not a multiple of micro_batch_size "
                         << getMicroBatchSizeAttr().getInt()
                         << " (global batch = micro-batch x accumulation steps x data-parallel "
                            "ranks)";
  }
  return success();
}

LogicalResult OptimizerOp::verify() {
  bool adamw = getName() == "adamw";
  if (!adamw && getName() != "adagrad") {
    return emitOpError() << "unknown optimizer '" << getName() << "' (supported: adamw, adagrad)";
  }
  // Each optimizer's own fields: required by it, refused by the other.
  for (auto [field, present] : {std::pair<StringRef, bool>{"beta1", getBeta1().has_value()},
                                {"beta2", getBeta2().has_value()},
                                {"clip_grad_norm", getClipGradNorm().has_value()}}) {
    if (adamw && !present) {
      return emitOpError() << "adamw needs '" << field << "'";
    }
    if (!adamw && present && field != "clip_grad_norm") {
      return emitOpError() << "'" << field << "' is an adamw hyperparameter; adagrad has none";
    }
  }
  for (auto [field, present] :
       {std::pair<StringRef, bool>{"initial_accumulator_value",
                                   getInitialAccumulatorValue().has_value()},
        {"lr_decay", getLrDecay().has_value()}}) {
    if (adamw && present) {
      return emitOpError() << "'" << field << "' is an adagrad hyperparameter; adamw has none";
    }
  }
  if (adamw) {
    for (auto [field, value] :
         {std::pair<StringRef, double>{"beta1", getBeta1()->convertToDouble()},
          {"beta2", getBeta2()->convertToDouble()}}) {
      if (!(value >= 0.0 && value < 1.0)) {
        return fieldError(*this, field, "in [0, 1)", value);
      }
    }
  } else {
    double initial =
        getInitialAccumulatorValue() ? getInitialAccumulatorValue()->convertToDouble() : 0.0;
    if (!std::isfinite(initial) || initial < 0.0) {
      return fieldError(*this, "initial_accumulator_value", "finite and >= 0", initial);
    }
    if (getLrDecay() && getLrDecay()->convertToDouble() != 0.0) {
      return emitOpError() << "adagrad lr_decay " << formatNumber(getLrDecay()->convertToDouble())
                           << " is not supported: only 0, as the DLRMv2 rules fix it";
    }
  }
  if (!isFinitePositive(getEpsilon().convertToDouble())) {
    return fieldError(*this, "epsilon", "a finite positive number", getEpsilon().convertToDouble());
  }
  double weightDecay = getWeightDecay().convertToDouble();
  if (!std::isfinite(weightDecay) || weightDecay < 0.0) {
    return fieldError(*this, "weight_decay", "finite and >= 0", weightDecay);
  }
  if (getWeightDecayParams() != "all" && getWeightDecayParams() != "matrices") {
    return emitOpError() << "unknown weight_decay_params '" << getWeightDecayParams()
                         << "' (supported: all, matrices)";
  }
  if (getClipGradNorm() && !isFinitePositive(getClipGradNorm()->convertToDouble())) {
    return fieldError(*this, "clip_grad_norm", "a finite positive number",
                      getClipGradNorm()->convertToDouble());
  }
  return success();
}

SmallVector<NamedAttribute> OptimizerOp::getMLLogKeys() {
  Builder builder(getContext());
  SmallVector<NamedAttribute> keys;
  if (getName() == "adamw") {
    // closed_common.yaml / closed_llama31_*.yaml: AdamW's keys and the clipping norm.
    keys = {builder.getNamedAttr("opt_adamw_beta_1", getBeta1Attr()),
            builder.getNamedAttr("opt_adamw_beta_2", getBeta2Attr()),
            builder.getNamedAttr("opt_adamw_epsilon", getEpsilonAttr()),
            builder.getNamedAttr("opt_adamw_weight_decay", getWeightDecayAttr())};
  } else {
    // closed_dlrm_dcnv2.yaml: Adagrad's keys.
    keys = {
        builder.getNamedAttr("opt_adagrad_epsilon", getEpsilonAttr()),
        builder.getNamedAttr("opt_adagrad_learning_rate_decay",
                             getLrDecayAttr() ? getLrDecayAttr() : builder.getF64FloatAttr(0.0)),
        builder.getNamedAttr("opt_weight_decay", getWeightDecayAttr()),
        builder.getNamedAttr("opt_adagrad_initial_accumulator_value",
                             getInitialAccumulatorValueAttr() ? getInitialAccumulatorValueAttr()
                                                              : builder.getF64FloatAttr(0.0))};
  }
  if (getClipGradNormAttr()) {
    keys.push_back(builder.getNamedAttr("opt_gradient_clip_norm", getClipGradNormAttr()));
  }
  return keys;
}

LogicalResult LRScheduleOp::verify() {
  if (getKind() != "cosine_with_linear_warmup") {
    return emitOpError() << "unknown kind '" << getKind()
                         << "' (supported: cosine_with_linear_warmup)";
  }
  double baseLr = getBaseLr().convertToDouble();
  double endLr = getEndLr().convertToDouble();
  if (!isFinitePositive(baseLr)) {
    return fieldError(*this, "base_lr", "a finite positive number", baseLr);
  }
  if (!(endLr >= 0.0 && endLr <= baseLr)) {
    return emitOpError() << "end_lr must be in [0, base_lr = " << formatNumber(baseLr) << "], got "
                         << formatNumber(endLr);
  }
  if (getWarmupStepsAttr().getInt() < 0) {
    return fieldError(*this, "warmup_steps", ">= 0", getWarmupStepsAttr().getInt());
  }
  if (getMaxStepsAttr().getInt() <= getWarmupStepsAttr().getInt()) {
    return emitOpError() << "max_steps (" << getMaxStepsAttr().getInt()
                         << ") must exceed warmup_steps (" << getWarmupStepsAttr().getInt() << ")";
  }
  if (getDecayStepsAttr().getInt() != getMaxStepsAttr().getInt() - getWarmupStepsAttr().getInt()) {
    return emitOpError() << "decay_steps (" << getDecayStepsAttr().getInt()
                         << ") contradicts max_steps - warmup_steps ("
                         << getMaxStepsAttr().getInt() - getWarmupStepsAttr().getInt()
                         << "): the reference decays from the end of warmup to max_steps";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  StringRef init = getInit();
  bool isNormal = init == "normal" || init == "scaled_normal";
  if (!isNormal && init != "kaiming_uniform" && init != "ones" && init != "zeros" &&
      init != "checkpoint") {
    return emitOpError() << "unknown init '" << init
                         << "' (supported: normal, scaled_normal, kaiming_uniform, ones, zeros, "
                            "checkpoint)";
  }
  if (isNormal && !getStd()) {
    return emitOpError() << "init '" << init << "' needs std";
  }
  if (!isNormal && getStd()) {
    return emitOpError() << "std is meaningless for init '" << init << "'";
  }
  if (getStd() && !isFinitePositive(getStd()->convertToDouble())) {
    return fieldError(*this, "std", "a finite positive number", getStd()->convertToDouble());
  }
  bool perLayer = getSymName().contains(kLayerPlaceholder);
  if (perLayer && !getRepeat()) {
    return emitOpError() << "name contains '{i}' but no repeat count says how many layers";
  }
  if (!perLayer && getRepeat()) {
    return emitOpError() << "repeat needs a per-layer name containing '{i}'";
  }
  if (getRepeat() && getRepeatAttr().getInt() < 1) {
    return fieldError(*this, "repeat", ">= 1", getRepeatAttr().getInt());
  }
  if (std::optional<ArrayAttr> parts = getCheckpointParts()) {
    if (parts->size() < 2) {
      return emitOpError() << "checkpoint_parts must name at least two tensors";
    }
    if (std::optional<ArrayRef<int64_t>> blocks = getShardBlocks();
        blocks && blocks->size() != parts->size()) {
      return emitOpError() << "checkpoint_parts names " << parts->size()
                           << " tensors but shard_blocks has " << blocks->size()
                           << " blocks: the parts are the blocks";
    }
    for (Attribute part : *parts) {
      StringRef name = cast<StringAttr>(part).getValue();
      if (name.empty() || name.contains(kLayerPlaceholder) != perLayer) {
        return emitOpError() << "checkpoint part '" << name << "' must be a tensor name"
                             << (perLayer ? " containing '{i}', as the parameter's"
                                          : " without '{i}', as the parameter's");
      }
    }
  }
  // An empty dimension (ffn = 0, vocab = 0) has nothing to train and would reach passes and
  // kernels that divide by row sizes.
  if (llvm::is_contained(getTensorType().getShape(), 0)) {
    return emitOpError() << "declares a tensor with an empty dimension (" << getTensorType()
                         << "): every dimension of a parameter must be at least 1";
  }
  std::optional<int64_t> elements = checkedNumElements(getTensorType().getShape());
  if (!elements || !llvm::checkedMul(*elements, getCopies())) {
    return emitOpError() << "declares more than 2^63 elements";
  }
  if (init == "scaled_normal" && !getRepeat()) {
    return emitOpError() << "scaled_normal scales std by 1/sqrt(2 x layers) and needs a "
                            "per-layer parameter (repeat)";
  }
  if (getLayerAttr() && (getRepeat() || getLayerAttr().getInt() < 0)) {
    return emitOpError() << "layer is the index (>= 0) of one copy of a per-layer parameter: "
                            "it does not go with repeat";
  }
  if (ArrayAttr shard = getShardAttr()) {
    if (static_cast<int64_t>(shard.size()) != getUnshardedType().getRank()) {
      return emitOpError() << "shard lists " << shard.size() << " dims' mesh axes for a rank-"
                           << getUnshardedType().getRank() << " parameter";
    }
    int64_t splitDims = 0;
    for (Attribute dimAxes : shard) {
      auto axes = dyn_cast<ArrayAttr>(dimAxes);
      if (!axes || !llvm::all_of(axes, [](Attribute axis) { return isa<StringAttr>(axis); })) {
        return emitOpError() << "shard must hold one list of mesh axis names per dim, like "
                                "[[\"tp\"], []]";
      }
      for (Attribute axis : axes) {
        if (cast<StringAttr>(axis).getValue() != "tp") {
          return emitOpError() << "shard names mesh axis '" << cast<StringAttr>(axis).getValue()
                               << "': parameters split over 'tp' only";
        }
      }
      splitDims += axes.empty() ? 0 : 1;
      if (axes.size() > 1) {
        return emitOpError() << "shard splits a dim over 'tp' twice";
      }
    }
    if (splitDims > 1) {
      return emitOpError() << "shard splits " << splitDims
                           << " dims over 'tp': a parameter splits along one dim";
    }
    if (std::optional<ArrayRef<int64_t>> blocks = getShardBlocks()) {
      int64_t dim = getDeclaredSplitDim();
      int64_t total = 0;
      for (int64_t block : *blocks) {
        if (block <= 0) {
          return emitOpError() << "shard_blocks must be positive sizes, got " << block;
        }
        total += block;
      }
      if (dim < 0 || total != getUnshardedType().getDimSize(dim)) {
        return emitOpError() << "shard_blocks add up to " << total
                             << ", not to the size of the split dim of " << getUnshardedType();
      }
    }
  } else if (getShardBlocks()) {
    return emitOpError() << "shard_blocks needs shard to name the split dim";
  }
  return success();
}

RankedTensorType ParamOp::getUnshardedType() {
  if (auto unsharded = (*this)->getAttrOfType<TypeAttr>("dist.unsharded_type")) {
    if (auto type = dyn_cast<RankedTensorType>(unsharded.getValue())) {
      return type;
    }
  }
  return getTensorType();
}

int64_t ParamOp::getDeclaredSplitDim() {
  ArrayAttr shard = getShardAttr();
  for (auto [dim, axes] : llvm::enumerate(shard ? shard.getValue() : ArrayRef<Attribute>())) {
    if (!cast<ArrayAttr>(axes).empty()) {
      return static_cast<int64_t>(dim);
    }
  }
  return -1;
}

//===----------------------------------------------------------------------===//
// ParamRefOp, RepeatLayersOp
//===----------------------------------------------------------------------===//

/// The tg.param `name` refers to, or an error on `user`.
static FailureOr<ParamOp> lookupParam(Operation *user, SymbolTableCollection &symbolTable,
                                      FlatSymbolRefAttr name) {
  Operation *symbol = symbolTable.lookupNearestSymbolFrom(user, name.getAttr());
  if (!symbol) {
    return user->emitOpError() << "refers to undeclared parameter " << name;
  }
  auto param = dyn_cast<ParamOp>(symbol);
  if (!param) {
    return user->emitOpError() << "refers to " << name << ", which is a '" << symbol->getName()
                               << "', not a tg.param";
  }
  return param;
}

LogicalResult ParamRefOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ParamOp> param = lookupParam(*this, symbolTable, getNameAttr());
  if (failed(param)) {
    return failure();
  }
  if (param->getRepeat()) {
    return emitOpError() << "parameter " << getNameAttr()
                         << " is per-layer; pass it through tg.repeat_layers";
  }
  if (param->getType() != getType()) {
    return emitOpError() << "result type " << getType() << " differs from the declared type "
                         << param->getType() << " of " << getNameAttr();
  }
  return success();
}

SmallVector<StringRef> RepeatLayersOp::getParamNames() {
  return llvm::to_vector(llvm::map_range(
      getParams(), [](Attribute attr) { return cast<FlatSymbolRefAttr>(attr).getValue(); }));
}

SmallVector<StringRef> RepeatLayersOp::getCallees() {
  SmallVector<StringRef> callees{getCallee()};
  if (std::optional<ArrayAttr> alternating = getAlternating()) {
    for (Attribute attr : *alternating) {
      callees.push_back(cast<FlatSymbolRefAttr>(attr).getValue());
    }
  }
  return callees;
}

StringRef RepeatLayersOp::getLayerCallee(int64_t layer) {
  SmallVector<StringRef> callees = getCallees();
  return callees[layer % static_cast<int64_t>(callees.size())];
}

LogicalResult RepeatLayersOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  SmallVector<func::FuncOp> callees;
  for (StringRef name : getCallees()) {
    auto callee = symbolTable.lookupNearestSymbolFrom<func::FuncOp>(
        *this, FlatSymbolRefAttr::get(getContext(), name));
    if (!callee) {
      return emitOpError() << "layer function @" << name << " is not declared";
    }
    if (callee.isExternal()) {
      return emitOpError() << "layer function @" << name
                           << " has no body: a model declares every computation";
    }
    callees.push_back(callee);
  }
  if (getCountAttr().getInt() < 1) {
    return emitOpError() << "count must be >= 1, got " << getCountAttr().getInt();
  }
  SmallVector<Type> expectedInputs{getInput().getType()};
  for (Attribute attr : getParams()) {
    auto name = cast<FlatSymbolRefAttr>(attr);
    FailureOr<ParamOp> param = lookupParam(*this, symbolTable, name);
    if (failed(param)) {
      return failure();
    }
    if (!param->getRepeat()) {
      return emitOpError() << "parameter " << name
                           << " is not per-layer (no '{i}' in its name, no repeat); pass it "
                              "with tg.param_ref";
    }
    if (param->getCopies() != getCountAttr().getInt()) {
      return emitOpError() << "parameter " << name << " is declared for " << param->getCopies()
                           << " layer(s) but the stack has " << getCountAttr().getInt();
    }
    expectedInputs.push_back(param->getType());
  }
  FunctionType expected =
      FunctionType::get(getContext(), expectedInputs, TypeRange{getInput().getType()});
  for (func::FuncOp callee : callees) {
    if (callee.getFunctionType() != expected) {
      return emitOpError() << "layer function @" << callee.getSymName() << " has type "
                           << callee.getFunctionType() << " but the stack needs " << expected
                           << " (hidden state, then the listed parameters in order)";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ModelOp
//===----------------------------------------------------------------------===//

Operation *ModelOp::getForward() { return mlir::SymbolTable::lookupSymbolIn(*this, "forward"); }

LogicalResult ModelOp::verifyRegions() {
  BenchmarkOp benchmark;
  BatchOp batch;
  OptimizerOp optimizer;
  LRScheduleOp schedule;
  auto takeUnique = [&](auto &slot, auto op) -> LogicalResult {
    if (slot) {
      InFlightDiagnostic diag = op->emitOpError() << "is declared twice in model @" << getSymName();
      diag.attachNote(slot->getLoc()) << "first declared here";
      return diag;
    }
    slot = op;
    return success();
  };
  for (Operation &op : getBody().front()) {
    LogicalResult result = llvm::TypeSwitch<Operation *, LogicalResult>(&op)
                               .Case([&](BenchmarkOp o) { return takeUnique(benchmark, o); })
                               .Case([&](BatchOp o) { return takeUnique(batch, o); })
                               .Case([&](OptimizerOp o) { return takeUnique(optimizer, o); })
                               .Case([&](LRScheduleOp o) { return takeUnique(schedule, o); })
                               .Case<ParamOp, func::FuncOp>([](Operation *) { return success(); })
                               .Default([&](Operation *other) -> LogicalResult {
                                 // The device mesh dist-partition adds (by name: tg does not depend
                                 // on dist).
                                 if (other->getName().getStringRef() == "dist.mesh") {
                                   return success();
                                 }
                                 return other->emitOpError()
                                        << "is not allowed directly in a tg.model (metadata ops, "
                                           "tg.param, dist.mesh and "
                                           "func.func only)";
                               });
    if (failed(result)) {
      return failure();
    }
  }
  for (auto [op, what] : {std::pair<Operation *, StringRef>{benchmark, "tg.benchmark"},
                          {batch, "tg.batch"},
                          {optimizer, "tg.optimizer"},
                          {schedule, "tg.lr_schedule"}}) {
    if (!op) {
      return emitOpError() << "declares no " << what
                           << ": every model states its MLPerf metadata, batch, optimizer and "
                              "LR schedule";
    }
  }

  // Every value the model computes must be storable: no empty dimension (nothing to compute,
  // and passes and kernels divide by row sizes) and at most 2^63 bytes (sizes are int64
  // everywhere downstream; more would wrap silently).
  auto checkValue = [](Type type, Operation *at, const llvm::Twine &what) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor) {
      return success();
    }
    if (llvm::is_contained(tensor.getShape(), 0)) {
      return at->emitOpError() << what << " " << tensor
                               << " has an empty dimension: every dimension must be at least 1";
    }
    std::optional<int64_t> elements = checkedNumElements(tensor.getShape());
    int64_t bytesPerElement = (tensor.getElementTypeBitWidth() + 7) / 8;
    if (!elements || !llvm::checkedMul(*elements, bytesPerElement)) {
      return at->emitOpError() << what << " " << tensor << " holds more than 2^63 bytes";
    }
    return success();
  };
  WalkResult sizes = getBody().walk([&](Operation *op) {
    for (auto [index, result] : llvm::enumerate(op->getResults())) {
      if (failed(checkValue(result.getType(), op, "result " + llvm::Twine(index)))) {
        return WalkResult::interrupt();
      }
    }
    for (Region &region : op->getRegions()) {
      for (Block &block : region) {
        for (BlockArgument argument : block.getArguments()) {
          if (failed(checkValue(argument.getType(), op,
                                "argument " + llvm::Twine(argument.getArgNumber())))) {
            return WalkResult::interrupt();
          }
        }
      }
    }
    return WalkResult::advance();
  });
  if (sizes.wasInterrupted()) {
    return failure();
  }

  int64_t globalBatch = batch.getGlobalBatchSizeAttr().getInt();
  if (benchmark.getEvalEverySamplesAttr().getInt() % globalBatch != 0) {
    int64_t roundedUp = (benchmark.getEvalEverySamplesAttr().getInt() + globalBatch - 1) /
                        globalBatch * globalBatch;
    return benchmark.emitOpError()
           << "eval_every_samples " << benchmark.getEvalEverySamplesAttr().getInt()
           << " is not a multiple of global_batch_size " << globalBatch
           << ": MLPerf rounds the cadence up to the next step boundary, so evaluation would "
              "run every "
           << roundedUp << " samples instead; choose a global batch size that divides "
           << benchmark.getEvalEverySamplesAttr().getInt();
  }

  auto forward = dyn_cast_or_null<func::FuncOp>(getForward());
  if (!forward) {
    return emitOpError() << "has no func.func @forward (tokens, labels) -> loss";
  }
  FunctionType forwardType = forward.getFunctionType();
  // State arguments a compiler pass added after the declared ones (tg-fp8's scales) say what
  // they are with `tg.role`; the declared signature is what precedes them.
  unsigned declaredInputs = forwardType.getNumInputs();
  while (declaredInputs > 0 && forward.getArgAttr(declaredInputs - 1, "tg.role")) {
    --declaredInputs;
  }
  // Likewise results a pass appended (tg-train-step's loss mask for evaluation).
  unsigned declaredResults = forwardType.getNumResults();
  while (declaredResults > 1 && forward.getResultAttr(declaredResults - 1, "tg.role")) {
    --declaredResults;
  }
  forwardType = FunctionType::get(getContext(), forwardType.getInputs().take_front(declaredInputs),
                                  forwardType.getResults().take_front(declaredResults));
  auto tokenType = RankedTensorType::get(
      {batch.getMicroBatchSizeAttr().getInt(), batch.getSeqLenAttr().getInt()},
      IntegerType::get(getContext(), 32));
  auto lossType = RankedTensorType::get({}, Float32Type::get(getContext()));
  FunctionType expectedForward =
      FunctionType::get(getContext(), {tokenType, tokenType}, {lossType});
  // A pipeline stage (dist-pipeline) maps its input activation (or the tokens) to its output
  // activation (or the loss).
  if (!(*this)->hasAttr("dist.stage") && forwardType != expectedForward) {
    return forward.emitOpError() << "@forward has type " << forwardType
                                 << " but tg.batch (micro_batch_size "
                                 << batch.getMicroBatchSizeAttr().getInt() << ", seq_len "
                                 << batch.getSeqLenAttr().getInt() << ") needs " << expectedForward;
  }

  if (forward.isExternal() || forward.isPrivate()) {
    return forward.emitOpError() << "@forward must be a public function with a body";
  }

  // Walk the functions reachable from @forward (through calls and layer stacks): each must
  // have a body and none may recurse; the parameters they use are the trained ones.
  llvm::StringSet<> usedParams;
  llvm::DenseSet<Operation *> done;
  SmallVector<Operation *> inProgress;
  std::function<LogicalResult(func::FuncOp, Operation *)> visit =
      [&](func::FuncOp func, Operation *user) -> LogicalResult {
    if (llvm::is_contained(inProgress, func.getOperation())) {
      return user->emitOpError() << "makes @" << func.getSymName()
                                 << " call itself (directly or through other functions): "
                                    "layers are repeated with tg.repeat_layers, not recursion";
    }
    if (!done.insert(func).second) {
      return success();
    }
    if (func.isExternal()) {
      return user->emitOpError() << "calls @" << func.getSymName()
                                 << ", which has no body: a model declares every computation";
    }
    inProgress.push_back(func);
    WalkResult walked = func.walk([&](Operation *op) -> WalkResult {
      SmallVector<StringRef> calleeNames;
      if (auto ref = dyn_cast<ParamRefOp>(op)) {
        usedParams.insert(ref.getName());
      } else if (auto layers = dyn_cast<RepeatLayersOp>(op)) {
        for (StringRef name : layers.getParamNames()) {
          usedParams.insert(name);
        }
        calleeNames = layers.getCallees();
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        calleeNames = {call.getCallee()};
      }
      for (StringRef calleeName : calleeNames) {
        auto callee =
            dyn_cast_or_null<func::FuncOp>(mlir::SymbolTable::lookupSymbolIn(*this, calleeName));
        if (callee && failed(visit(callee, op))) {
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    inProgress.pop_back();
    return failure(walked.wasInterrupted());
  };
  if (failed(visit(forward, forward))) {
    return failure();
  }
  // A pipeline rank's further model chunks (interleaved schedule, `dist.chunks` of them):
  // @"forward.chunk1", ...
  auto chunks = (*this)->getAttrOfType<IntegerAttr>("dist.chunks");
  for (int64_t chunk = 1; chunk < (chunks ? chunks.getInt() : 1); ++chunk) {
    auto next = dyn_cast_or_null<func::FuncOp>(
        mlir::SymbolTable::lookupSymbolIn(*this, ("forward.chunk" + llvm::Twine(chunk)).str()));
    if (!next) {
      return emitOpError() << "has dist.chunks = " << chunks.getInt() << " but no @\"forward.chunk"
                           << chunk << "\"";
    }
    if (failed(visit(next, next))) {
      return failure();
    }
  }
  for (auto param : getBody().front().getOps<ParamOp>()) {
    if (!usedParams.contains(param.getSymName())) {
      return param.emitOpError()
             << "declares a parameter that no computation reachable from @forward uses; MLPerf "
                "closed division forbids extra trainable parameters";
    }
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/TG/IR/TGModelOps.cpp.inc"
