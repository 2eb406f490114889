//===- TGTrainStep.cpp - The whole optimizer step as one function -*- C++ -*-===//
//
// Builds @train_step (and @eval_step, @eval_finish) from a model's per-micro-batch
// functions: the micro-batch loop unrolled in the pipeline schedule's order, the
// stage-to-stage transfers, gradient accumulation, the loss vector and the call of
// @optimizer_step. The pass description in Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/PipelineSchedule.h"
#include "compiler/Support/ChunkNames.h"
#include "compiler/Support/PerModelPass.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Support/StepRoles.h"
#include "compiler/Transforms/Passes.h"
#include "runtime/plan/PlanOps.h"
#include "runtime/plan/StepRoles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>

#define DEBUG_TYPE "tg-train-step"

namespace mlperf {
#define GEN_PASS_DEF_TGTRAINSTEPPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;
namespace role = mlperf::rt::role;

namespace mlperf {
namespace {

constexpr StringLiteral kMesh = "mesh";
// Message tags: the loss vector, then per receiving virtual stage and direction (as MPI
// matches a receive to the oldest message of its sender and tag).
constexpr int64_t kLossTag = 1;
constexpr int64_t kFirstPipelineTag = 16;

int64_t pipelineTag(int64_t receiverVirtualStage, bool forward) {
  return 2 * receiverVirtualStage + (forward ? 0 : 1) + kFirstPipelineTag;
}

/// One model chunk's functions (a rank holds one chunk without interleaving): @forward, and
/// either @forward_backward or, on a pipeline chunk tg-recompute split at its stash,
/// @forward_and_stash and @backward_from_stash.
struct Chunk {
  func::FuncOp forward, forwardBackward;
  func::FuncOp stashForward, stashBackward;
  SmallVector<std::string> gradients; // parameters whose gradients the backward returns
  unsigned forwardInputs = 0;         // @forward's own arguments (before a dropout key)
  /// The function that returns the gradients, and the index of the first.
  func::FuncOp backward() const { return stashBackward ? stashBackward : forwardBackward; }
  unsigned firstGradient() const { return stashBackward ? 0 : 1; }
};

class StepBuilder {
public:
  StepBuilder(tg::ModelOp model, int64_t accumulation)
      : model(model), builder(model.getContext()), accumulation(accumulation) {}

  LogicalResult build();

private:
  LogicalResult collectChunks();
  int64_t virtualStage(int64_t chunk) const { return chunk * pp + stage; }
  bool isFirst(int64_t chunk) const { return virtualStage(chunk) == 0; }
  bool isLast(int64_t chunk) const { return virtualStage(chunk) == pp * vp() - 1; }
  int64_t vp() const { return static_cast<int64_t>(chunks.size()); }
  /// The pp shift from this rank to the rank holding `otherVirtualStage`.
  int64_t shiftTo(int64_t otherVirtualStage) const { return otherVirtualStage % pp - stage; }

  /// The micro-batch the ops built next work on (tg.micro_batch), or none.
  std::optional<int64_t> microBatch;
  void tag(Operation *op) {
    if (microBatch) {
      op->setAttr(kMicroBatchAttr, builder.getI64IntegerAttr(*microBatch));
    }
  }
  Value receive(Location loc, Type type, int64_t shift, int64_t tag);
  void send(Location loc, Value value, int64_t shift, int64_t tag);
  /// Rows of micro-batch `index` of a [A, rows, seq] batch input.
  SmallVector<Value> microBatches(Location loc, Value batch, RankedTensorType microType);
  Value lossVector(Location loc, ArrayRef<Value> losses);
  /// The element-wise sum of `value` over mesh axis `axis`.
  Value allReduceSum(Location loc, Value value, StringRef axis);
  /// The running mean of evaluation: [sum, count] in f64 (tg.mean_accumulate).
  RankedTensorType runningMeanType() { return RankedTensorType::get({2}, builder.getF64Type()); }

  /// With several micro-batches, makes @forward_backward add its gradients to accumulator
  /// arguments (`tg.role = "grad"`) and return the sums, as Megatron's backward accumulates
  /// into its gradient buffers: one gradient buffer per parameter however many micro-batches.
  void accumulateInPlace(Chunk &chunk);
  LogicalResult buildTrainStep();
  LogicalResult buildEvalStep();
  LogicalResult buildEvalFinish();
  Value returnLossMask(func::FuncOp forward);
  LogicalResult buildInitParams();
  LogicalResult buildInitOptimizer();

  /// The dropout key of micro-batch `a` of this step (train) or of evaluation.
  Value dropoutKey(Location loc, Value seed, Value step, std::optional<int64_t> a);

  tg::ModelOp model;
  OpBuilder builder;
  int64_t accumulation;
  bool dropout = false; // some function the step calls takes a dropout key
  int64_t pp = 1, dp = 1, stage = 0;
  SmallVector<Chunk> chunks;
  func::FuncOp optimizerStep;
};

/// Gives `func` a dropout key argument (tg.role "dropout_key") at `index` that every
/// key-less tg.dropout in it reads. Returns whether it has dropout. Every function of a chunk
/// takes the key at the same index, right after @forward's own arguments, where plan-from-tg
/// expects @forward's inputs to end.
bool threadDropoutKey(func::FuncOp func, unsigned index) {
  SmallVector<tg::DropoutOp> dropouts;
  func.walk([&](tg::DropoutOp op) {
    if (!op.getKey()) {
      dropouts.push_back(op);
    }
  });
  if (dropouts.empty()) {
    return false;
  }
  MLIRContext *context = func.getContext();
  auto keyType = RankedTensorType::get({2}, IntegerType::get(context, 64));
  if (failed(func.insertArgument(index, keyType,
                                 roleAttrs(context, StepRole{std::string(role::kDropoutKey), ""}),
                                 func.getLoc()))) {
    return false;
  }
  Value key = func.getArgument(index);
  for (tg::DropoutOp op : dropouts) {
    op.getKeyMutable().assign(key);
  }
  return true;
}

/// Inserts `key` into the arguments of a call of `callee` where it takes its dropout key;
/// `args` holds the other arguments in order.
void insertDropoutKey(func::FuncOp callee, SmallVectorImpl<Value> &args,
                      llvm::function_ref<Value()> key) {
  if (!callee) {
    return;
  }
  std::optional<unsigned> index = findArg(callee, StepRole{std::string(role::kDropoutKey), ""});
  if (index && *index <= args.size()) {
    args.insert(args.begin() + *index, key());
  }
}

LogicalResult StepBuilder::collectChunks() {
  for (int64_t index = 0;; ++index) {
    std::string suffix = chunkSuffix(index);
    auto forward =
        dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward" + suffix));
    auto lookup = [&](StringRef name) {
      return dyn_cast_or_null<func::FuncOp>(
          SymbolTable::lookupSymbolIn(model, name.str() + suffix));
    };
    Chunk chunk{forward,
                lookup("forward_backward"),
                lookup("forward_and_stash"),
                lookup("backward_from_stash"),
                {}};
    if (!forward && index > 0) {
      return success();
    }
    if (!forward || (!chunk.forwardBackward && !(chunk.stashForward && chunk.stashBackward))) {
      return model.emitError() << "tg-train-step needs @forward" << suffix
                               << " and @forward_backward" << suffix
                               << " (or tg-recompute's @forward_and_stash" << suffix
                               << " and @backward_from_stash" << suffix
                               << "): run tg-autodiff first";
    }
    func::FuncOp backward = chunk.backward();
    auto names = backward->getAttrOfType<ArrayAttr>("tg.gradients");
    bool wellFormed = names && forward.getNumResults() == 1 &&
                      backward.getNumResults() >= chunk.firstGradient() + names.size() &&
                      backward.getNumArguments() >= forward.getNumArguments() &&
                      forward.getNumArguments() != 0;
    if (chunk.stashForward) {
      wellFormed &= chunk.stashForward.getNumArguments() == forward.getNumArguments() &&
                    chunk.stashForward.getNumResults() >= 1 &&
                    backward.getNumArguments() >=
                        forward.getNumArguments() + chunk.stashForward.getNumResults() - 1;
    }
    if (!wellFormed) {
      return backward.emitError() << "tg-train-step: @" << backward.getSymName()
                                  << " is not tg-autodiff's backward of @" << forward.getSymName();
    }
    for (Attribute name : names) {
      chunk.gradients.push_back(cast<FlatSymbolRefAttr>(name).getValue().str());
    }
    chunks.push_back(std::move(chunk));
  }
}

Value StepBuilder::dropoutKey(Location loc, Value seed, Value step, std::optional<int64_t> a) {
  auto keyType = RankedTensorType::get({2}, builder.getI64Type());
  if (!a) {
    return tg::EvalDropoutKeyOp::create(builder, loc, keyType);
  }
  auto key = tg::DropoutKeyOp::create(
      builder, loc, keyType, seed, step, builder.getI64IntegerAttr(*a),
      builder.getI64IntegerAttr(accumulation), builder.getI64IntegerAttr(dp),
      dp > 1 ? builder.getStringAttr("dp") : StringAttr());
  tag(key);
  return key;
}

Value StepBuilder::receive(Location loc, Type type, int64_t shift, int64_t tag) {
  MLIRContext *context = builder.getContext();
  auto future =
      dist::RecvStartOp::create(builder, loc, dist::FutureType::get(context, type),
                                FlatSymbolRefAttr::get(context, kMesh), builder.getStringAttr("pp"),
                                builder.getI64IntegerAttr(shift), builder.getI64IntegerAttr(tag));
  this->tag(future);
  return dist::DoneOp::create(builder, loc, type, future).getResult();
}

void StepBuilder::send(Location loc, Value value, int64_t shift, int64_t tag) {
  MLIRContext *context = builder.getContext();
  auto future = dist::SendStartOp::create(
      builder, loc, dist::FutureType::get(context, NoneType::get(context)), value,
      FlatSymbolRefAttr::get(context, kMesh), builder.getStringAttr("pp"),
      builder.getI64IntegerAttr(shift), builder.getI64IntegerAttr(tag));
  this->tag(future);
  dist::DoneOp::create(builder, loc, Type(), future);
}

SmallVector<Value> StepBuilder::microBatches(Location loc, Value batch,
                                             RankedTensorType microType) {
  SmallVector<int64_t> oneShape{1};
  oneShape.append(microType.getShape().begin(), microType.getShape().end());
  auto oneType = RankedTensorType::get(oneShape, microType.getElementType());
  SmallVector<Value> pieces;
  if (accumulation == 1) {
    pieces.push_back(batch);
  } else {
    auto split = tg::SplitOp::create(
        builder, loc, SmallVector<Type>(accumulation, oneType), batch, builder.getI64IntegerAttr(0),
        builder.getDenseI64ArrayAttr(SmallVector<int64_t>(accumulation, 1)));
    pieces.append(split.getResults().begin(), split.getResults().end());
  }
  SmallVector<Value> rows;
  for (Value piece : pieces) {
    rows.push_back(tg::ReshapeOp::create(builder, loc, microType, piece));
  }
  return rows;
}

Value StepBuilder::lossVector(Location loc, ArrayRef<Value> losses) {
  auto f32 = builder.getF32Type();
  SmallVector<Value> pieces;
  for (Value loss : losses) {
    pieces.push_back(tg::ReshapeOp::create(builder, loc, RankedTensorType::get({1}, f32), loss));
  }
  int64_t count = static_cast<int64_t>(losses.size());
  Value vector = pieces.size() == 1
                     ? pieces.front()
                     : tg::ConcatOp::create(builder, loc, RankedTensorType::get({count}, f32),
                                            pieces, builder.getI64IntegerAttr(0))
                           .getResult();
  if (dp > 1) {
    // Every data-parallel rank's micro-batches, in rank order.
    MLIRContext *context = builder.getContext();
    auto gathered = RankedTensorType::get({dp * count}, f32);
    auto future = dist::AllGatherStartOp::create(
        builder, loc, dist::FutureType::get(context, gathered), vector,
        FlatSymbolRefAttr::get(context, kMesh), builder.getStrArrayAttr({"dp"}),
        builder.getI64IntegerAttr(0));
    vector = dist::DoneOp::create(builder, loc, gathered, future).getResult();
  }
  return vector;
}

Value StepBuilder::allReduceSum(Location loc, Value value, StringRef axis) {
  MLIRContext *context = builder.getContext();
  auto future =
      dist::AllReduceStartOp::create(builder, loc, dist::FutureType::get(context, value.getType()),
                                     value, FlatSymbolRefAttr::get(context, kMesh),
                                     builder.getStrArrayAttr({axis}), builder.getStringAttr("sum"));
  return dist::DoneOp::create(builder, loc, value.getType(), future).getResult();
}

void StepBuilder::accumulateInPlace(Chunk &chunk) {
  func::FuncOp func = chunk.backward();
  Block &entry = func.getBody().front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(ret);
  SmallVector<Value> results(ret.getOperands());
  unsigned first = func.getNumArguments();
  for (auto [index, name] : llvm::enumerate(chunk.gradients)) {
    Value grad = results[chunk.firstGradient() + index];
    // insertArgument keeps the argument attributes (a dropout key's role) in step.
    if (failed(func.insertArgument(func.getNumArguments(), grad.getType(), {}, func.getLoc()))) {
      return;
    }
    BlockArgument sum = entry.getArguments().back();
    // The sum so far plus this micro-batch's gradient, rounded once in the gradient's type,
    // right where the gradient is complete: it lives no longer than one op.
    if (Operation *producer = grad.getDefiningOp()) {
      builder.setInsertionPointAfter(producer);
    } else {
      builder.setInsertionPoint(ret);
    }
    results[chunk.firstGradient() + index] = tg::AddOp::create(builder, func.getLoc(), sum, grad);
  }
  ret->setOperands(results);
  SmallVector<std::optional<StepRole>> roles(func.getNumArguments());
  for (auto [index, name] : llvm::enumerate(chunk.gradients)) {
    roles[first + index] = StepRole{std::string(role::kGrad), name};
  }
  setAllRoles(func, /*arguments=*/true, roles);
}

LogicalResult StepBuilder::buildTrainStep() {
  Location loc = optimizerStep.getLoc();
  Block &body = model.getBody().front();
  builder.setInsertionPointToEnd(&body);

  // Arguments: the batch inputs this stage reads (every micro-batch, [A, rows, seq]), the step
  // and the optimizer state @optimizer_step takes.
  auto batchType = [&](Type micro) {
    auto type = cast<RankedTensorType>(micro);
    SmallVector<int64_t> shape{accumulation};
    shape.append(type.getShape().begin(), type.getShape().end());
    return RankedTensorType::get(shape, type.getElementType());
  };
  SmallVector<Type> inputs;
  SmallVector<StepRole> inputRoles;
  RankedTensorType tokensType, labelsType;
  for (int64_t c = 0; c < vp(); ++c) {
    FunctionType type = chunks[c].forward.getFunctionType();
    if (isFirst(c)) {
      tokensType = cast<RankedTensorType>(type.getInput(0));
    }
    if (isLast(c)) {
      labelsType = cast<RankedTensorType>(type.getInput(chunks[c].forwardInputs - 1));
    }
  }
  if (tokensType) {
    inputs.push_back(batchType(tokensType));
    inputRoles.push_back({std::string(role::kTokens), ""});
  }
  if (labelsType) {
    inputs.push_back(batchType(labelsType));
    inputRoles.push_back({std::string(role::kLabels), ""});
  }
  std::optional<unsigned> stepArg = findArg(optimizerStep, {std::string(role::kStep), ""});
  if (!stepArg) {
    return optimizerStep.emitError()
           << "tg-train-step: @optimizer_step has no argument with tg.role \"step\"";
  }
  SmallVector<unsigned> stateArgs; // @optimizer_step arguments the train step passes through
  for (unsigned i = 0; i < optimizerStep.getNumArguments(); ++i) {
    std::optional<StepRole> r = argRole(optimizerStep, i);
    if (!r) {
      return optimizerStep.emitError()
             << "tg-train-step: @optimizer_step argument " << i << " has no tg.role";
    }
    if (i == *stepArg || r->role == role::kGrad) {
      continue;
    }
    stateArgs.push_back(i);
  }
  inputs.push_back(optimizerStep.getArgumentTypes()[*stepArg]);
  inputRoles.push_back({std::string(role::kStep), ""});
  auto scalarI64 = RankedTensorType::get({}, builder.getI64Type());
  if (dropout) { // the masks are drawn from the run's seed
    inputs.push_back(scalarI64);
    inputRoles.push_back({std::string(role::kSeed), ""});
  }
  for (unsigned i : stateArgs) {
    inputs.push_back(optimizerStep.getArgumentTypes()[i]);
    inputRoles.push_back(*argRole(optimizerStep, i));
  }

  auto func = func::FuncOp::create(builder, loc, "train_step", builder.getFunctionType(inputs, {}));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  auto argument = [&](std::string_view name) -> Value {
    for (auto [index, r] : llvm::enumerate(inputRoles)) {
      if (r.role == name) {
        return entry->getArgument(index);
      }
    }
    return {};
  };
  SmallVector<Value> tokens, labels;
  if (tokensType) {
    tokens = microBatches(loc, argument(role::kTokens), tokensType);
  }
  if (labelsType) {
    labels = microBatches(loc, argument(role::kLabels), labelsType);
  }

  // The schedule this rank runs: Megatron's 1F1B or interleaved order (one backward after
  // another without pipelining).
  std::vector<std::vector<PipelineOp>> schedule;
  rt::Status status = pipelineSchedule(pp, vp(), accumulation, schedule);
  if (!status.isOk()) {
    return model.emitError() << "tg-train-step: " << status.message();
  }
  int64_t virtualStages = pp * vp();
  llvm::DenseMap<std::pair<int64_t, int64_t>, Value> stash; // (chunk, micro-batch) -> input
  // What @forward_and_stash kept for the micro-batch's backward.
  std::map<std::pair<int64_t, int64_t>, SmallVector<Value>> kept;
  llvm::StringMap<Value> gradSums;
  SmallVector<Value> losses;
  bool accumulate = accumulation > 1;
  if (accumulate) {
    // Accumulators start at zero: 0 + g is g exactly, so the sums are those of adding the
    // micro-batch gradients in completion order.
    for (Chunk &chunk : chunks) {
      for (auto [index, name] : llvm::enumerate(chunk.gradients)) {
        auto type = cast<RankedTensorType>(
            chunk.backward().getResultTypes()[chunk.firstGradient() + index]);
        gradSums[name] = tg::FillOp::create(builder, loc, type, builder.getF64FloatAttr(0.0));
      }
    }
  }
  for (const PipelineOp &op : schedule[stage]) {
    Chunk &chunk = chunks[op.chunk];
    int64_t v = virtualStage(op.chunk), a = op.microBatch;
    microBatch = a;
    bool first = v == 0, last = v == virtualStages - 1;
    if (op.forward) {
      if (!first) {
        stash[{op.chunk, a}] =
            receive(loc, chunk.forward.getArgumentTypes()[0], shiftTo(v - 1), pipelineTag(v, true));
      }
      if (last) {
        continue; // its backward computes the forward it needs
      }
      Value input = first ? tokens[a] : stash.lookup({op.chunk, a});
      func::FuncOp callee = chunk.stashForward ? chunk.stashForward : chunk.forward;
      SmallVector<Value> forwardArgs{input};
      insertDropoutKey(callee, forwardArgs, [&] {
        return dropoutKey(loc, argument(role::kSeed), argument(role::kStep), a);
      });
      auto call = func::CallOp::create(builder, loc, callee, forwardArgs);
      tag(call);
      if (chunk.stashForward) {
        kept[{op.chunk, a}] = SmallVector<Value>(call.getResults().drop_front());
      }
      send(loc, call.getResult(0), shiftTo(v + 1), pipelineTag(v + 1, true));
      continue;
    }
    // A backward reads what the forward kept or, unsplit, recomputes the chunk's forward from
    // its stashed input.
    SmallVector<Value> args{first ? tokens[a] : stash.lookup({op.chunk, a})};
    if (chunk.stashForward) {
      SmallVector<Value> &values = kept[{op.chunk, a}];
      args.append(values.begin(), values.end());
    }
    if (last) {
      args.push_back(labels[a]);
    } else {
      // The output's gradient follows the forward's inputs (the accumulators come after it).
      // (After the dropout key when the backward takes one before it.)
      std::optional<unsigned> key =
          findArg(chunk.backward(), StepRole{std::string(role::kDropoutKey), ""});
      Type cotangent =
          chunk.backward().getArgumentTypes()[args.size() + (key && *key <= args.size() ? 1 : 0)];
      args.push_back(receive(loc, cotangent, shiftTo(v + 1), pipelineTag(v, false)));
    }
    insertDropoutKey(chunk.backward(), args, [&] {
      return dropoutKey(loc, argument(role::kSeed), argument(role::kStep), a);
    });
    if (accumulate) {
      for (const std::string &name : chunk.gradients) {
        args.push_back(gradSums.lookup(name));
      }
    }
    func::FuncOp backward = chunk.backward();
    if (args.size() != backward.getNumArguments()) {
      return backward.emitError() << "tg-train-step: @" << backward.getSymName() << " takes "
                                  << backward.getNumArguments() << " arguments, a pipeline stage "
                                  << args.size();
    }
    auto call = func::CallOp::create(builder, loc, backward, args);
    tag(call);
    if (last) {
      losses.push_back(call.getResult(0));
    }
    // Accumulated in the gradients' own type (bf16 in the reference: grad_reduce_in_fp32
    // off), in the order the backwards complete.
    for (auto [index, name] : llvm::enumerate(chunk.gradients)) {
      gradSums[name] = call.getResult(chunk.firstGradient() + index);
    }
    if (!first) {
      send(loc, call.getResults().back(), shiftTo(v - 1), pipelineTag(v - 1, false));
    }
  }

  microBatch.reset();
  SmallVector<Value> stepArgs;
  for (unsigned i = 0; i < optimizerStep.getNumArguments(); ++i) {
    StepRole r = *argRole(optimizerStep, i);
    if (i == *stepArg) {
      stepArgs.push_back(argument(role::kStep));
      continue;
    }
    if (r.role == role::kGrad) {
      Value sum = gradSums.lookup(r.param);
      if (!sum) {
        return optimizerStep.emitError() << "tg-train-step: no backward of this stage returns "
                                            "the gradient of @"
                                         << r.param;
      }
      stepArgs.push_back(sum);
      continue;
    }
    stepArgs.push_back(
        entry->getArgument((tokensType ? 1 : 0) + (labelsType ? 1 : 0) + 1 + (dropout ? 1 : 0) +
                           (std::find(stateArgs.begin(), stateArgs.end(), i) - stateArgs.begin())));
  }
  auto update = func::CallOp::create(builder, loc, optimizerStep, stepArgs);
  SmallVector<Value> results(update.getResults().begin(), update.getResults().end());
  SmallVector<StepRole> resultRoles;
  for (unsigned i = 0; i < optimizerStep.getNumResults(); ++i) {
    std::optional<StepRole> r = resultRole(optimizerStep, i);
    if (!r) {
      return optimizerStep.emitError()
             << "tg-train-step: @optimizer_step result " << i << " has no tg.role";
    }
    resultRoles.push_back(*r);
  }
  // Every micro-batch loss of the global batch, on the last stage and (for the log) the first.
  if (!losses.empty()) {
    Value vector = lossVector(loc, losses);
    if (pp > 1) {
      send(loc, vector, -(pp - 1), kLossTag);
    }
    results.push_back(vector);
    resultRoles.push_back({std::string(role::kLosses), ""});
  } else if (stage == 0) {
    auto type = RankedTensorType::get({dp * accumulation}, builder.getF32Type());
    results.push_back(receive(loc, type, pp - 1, kLossTag));
    resultRoles.push_back({std::string(role::kLosses), ""});
  }
  func::ReturnOp::create(builder, loc, results);
  func.setFunctionType(builder.getFunctionType(inputs, ValueRange(results).getTypes()));
  setAllRoles(func, /*arguments=*/true,
              SmallVector<std::optional<StepRole>>(inputRoles.begin(), inputRoles.end()));
  setAllRoles(func, /*arguments=*/false,
              SmallVector<std::optional<StepRole>>(resultRoles.begin(), resultRoles.end()));
  // Megatron's pretraining sampler: micro-batch a of data-parallel rank d is micro-batch
  // a * dp + d of the global batch (so each rank's share interleaves over the batch).
  SmallVector<int64_t> layout(accumulation * dp);
  for (int64_t a = 0; a < accumulation; ++a) {
    for (int64_t d = 0; d < dp; ++d) {
      layout[a * dp + d] = a * dp + d;
    }
  }
  func->setAttr(kBatchLayoutAttr, builder.getDenseI64ArrayAttr(layout));
  return success();
}

LogicalResult StepBuilder::buildEvalStep() {
  Location loc = chunks.front().forward.getLoc();
  Block &body = model.getBody().front();
  builder.setInsertionPointToEnd(&body);
  // One micro-batch through every chunk of this rank, virtual stage after virtual stage.
  SmallVector<Type> inputs;
  SmallVector<StepRole> inputRoles;
  for (int64_t c = 0; c < vp(); ++c) {
    FunctionType type = chunks[c].forward.getFunctionType();
    if (isFirst(c)) {
      inputs.push_back(type.getInput(0));
      inputRoles.push_back({std::string(role::kTokens), ""});
    }
    if (isLast(c)) {
      inputs.push_back(type.getInput(chunks[c].forwardInputs - 1));
      inputRoles.push_back({std::string(role::kLabels), ""});
    }
  }
  // The last stage adds the micro-batch's loss to the running mean in persistent memory
  // (@eval_finish reduces and divides it).
  const bool computesLoss = isLast(vp() - 1);
  if (computesLoss) {
    inputs.push_back(runningMeanType());
    inputRoles.push_back({std::string(role::kEvalSum), ""});
  }
  auto func = func::FuncOp::create(builder, loc, "eval_step", builder.getFunctionType(inputs, {}));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  int64_t virtualStages = pp * vp();
  SmallVector<Value> results;
  for (int64_t c = 0; c < vp(); ++c) {
    int64_t v = virtualStage(c);
    bool first = v == 0, last = v == virtualStages - 1;
    SmallVector<Value> args;
    args.push_back(first ? entry->getArgument(0)
                         : receive(loc, chunks[c].forward.getArgumentTypes()[0], shiftTo(v - 1),
                                   pipelineTag(v, true)));
    if (last) {
      args.push_back(entry->getArgument(entry->getNumArguments() - 2)); // the labels
    }
    // Evaluation runs without dropout: under the evaluation key every tg.dropout is the
    // identity.
    insertDropoutKey(chunks[c].forward, args,
                     [&] { return dropoutKey(loc, Value(), Value(), std::nullopt); });
    Value lossMask = last ? returnLossMask(chunks[c].forward) : Value();
    auto call = func::CallOp::create(builder, loc, chunks[c].forward, args);
    if (last) {
      // A masked loss is a mean over its counted tokens: evaluation weights each
      // micro-batch's mean by them, so that the result is the mean over every counted token
      // of the evaluation set (the reference's token-weighted evaluation loss).
      results.push_back(tg::MeanAccumulateOp::create(
          builder, loc, runningMeanType(), entry->getArguments().back(), call.getResult(0),
          lossMask ? call.getResult(1) : Value()));
    } else {
      send(loc, call.getResult(0), shiftTo(v + 1), pipelineTag(v + 1, true));
    }
  }
  func::ReturnOp::create(builder, loc, results);
  func.setFunctionType(builder.getFunctionType(inputs, ValueRange(results).getTypes()));
  setAllRoles(func, /*arguments=*/true,
              SmallVector<std::optional<StepRole>>(inputRoles.begin(), inputRoles.end()));
  if (computesLoss) {
    setAllRoles(func, /*arguments=*/false, {StepRole{std::string(role::kEvalSum), ""}});
  }
  return success();
}

/// The loss mask of the loss `forward` returns (tg.cross_entropy's or a fused or
/// vocabulary-split loss's), appended to `forward`'s results so that evaluation can weight
/// the loss by its counted tokens; null when the loss has no mask (every token counts, so
/// the micro-batches weigh the same).
Value StepBuilder::returnLossMask(func::FuncOp forward) {
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  Operation *loss = ret.getOperand(0).getDefiningOp();
  Value mask;
  if (auto ce = dyn_cast_or_null<tg::CrossEntropyOp>(loss)) {
    mask = ce.getLossMask();
  } else if (auto fused = dyn_cast_or_null<tg::LinearCrossEntropyOp>(loss)) {
    mask = fused.getLossMask();
  } else if (auto pieces = dyn_cast_or_null<tg::VocabLossOp>(loss)) {
    mask = pieces.getLossMask();
  }
  if (!mask) {
    return {};
  }
  ret->insertOperands(1, mask);
  forward.setFunctionType(
      FunctionType::get(forward.getContext(), forward.getArgumentTypes(), ret.getOperandTypes()));
  forward.setResultAttr(1, kRoleAttr, StringAttr::get(forward.getContext(), rt::role::kLossMask));
  return mask;
}

LogicalResult StepBuilder::buildEvalFinish() {
  Location loc = chunks.front().forward.getLoc();
  Block &body = model.getBody().front();
  builder.setInsertionPointToEnd(&body);
  // Every rank takes part: the running means of the last stage's data-parallel ranks summed
  // in rank order (the other stages add zeros, exactly), so every rank holds the same mean of
  // every evaluation micro-batch, and the running mean starts again.
  Type running = runningMeanType();
  auto func =
      func::FuncOp::create(builder, loc, "eval_finish", builder.getFunctionType({running}, {}));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  Value sum = entry->getArgument(0);
  if (pp > 1) {
    sum = allReduceSum(loc, sum, "pp");
  }
  if (dp > 1) {
    sum = allReduceSum(loc, sum, "dp");
  }
  auto finish = tg::MeanFinishOp::create(
      builder, loc, RankedTensorType::get({}, builder.getF64Type()), running, sum);
  func::ReturnOp::create(builder, loc, finish->getResults());
  func.setFunctionType(builder.getFunctionType({running}, finish->getResultTypes()));
  setAllRoles(func, /*arguments=*/true, {StepRole{std::string(role::kEvalSum), ""}});
  setAllRoles(func, /*arguments=*/false,
              {StepRole{std::string(role::kLoss), ""}, StepRole{std::string(role::kEvalSum), ""}});
  return success();
}

LogicalResult StepBuilder::buildInitParams() {
  Location loc = model.getLoc();
  Block &body = model.getBody().front();
  builder.setInsertionPointToEnd(&body);
  auto seedType = RankedTensorType::get({}, builder.getI64Type());
  auto func =
      func::FuncOp::create(builder, loc, "init_params", builder.getFunctionType({seedType}, {}));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  SmallVector<Value> values;
  SmallVector<StepRole> roles;
  for (auto param : body.getOps<tg::ParamOp>()) {
    StringRef init = param.getInit(), name = param.getSymName();
    if (init == "checkpoint") {
      continue; // loaded from a file (--init-from), never drawn
    }
    // A ZeRO-3 shard draws the whole (local) parameter and keeps its part, so that every
    // strategy starts from the same values.
    RankedTensorType type = param.getUnshardedType();
    Value value;
    if (init == "normal") {
      // A tensor-parallel slice draws its elements as those of the full parameter.
      FailureOr<dist::ParameterSplit> split = dist::parameterSplit(param, "tg-train-step");
      if (failed(split)) {
        return failure();
      }
      value = tg::RandomNormalOp::create(
          builder, param.getLoc(), type, entry->getArgument(0),
          builder.getF64FloatAttr(param.getStd() ? param.getStd()->convertToDouble() : 0.0),
          builder.getI64IntegerAttr(rt::parameterStreamId(name.str())),
          builder.getI64IntegerAttr(split->dim), builder.getI64IntegerAttr(split->count),
          split->axis, split->count > 1 ? split->blocks : DenseI64ArrayAttr());
    } else if (init == "kaiming_uniform") {
      // PyTorch's nn.Linear default (PEFT's LoRA A): U(-b, b), b = 1 / sqrt(fan_in), fan_in
      // the full tensor's last dim.
      FailureOr<dist::ParameterSplit> split = dist::parameterSplit(param, "tg-train-step");
      if (failed(split)) {
        return failure();
      }
      int64_t last = type.getRank() - 1;
      int64_t fanIn = type.getDimSize(last) * (split->dim == last ? split->count : 1);
      value = tg::RandomUniformOp::create(
          builder, param.getLoc(), type, entry->getArgument(0),
          builder.getF64FloatAttr(1.0 / std::sqrt(static_cast<double>(fanIn))),
          builder.getI64IntegerAttr(rt::parameterStreamId(name.str())),
          builder.getI64IntegerAttr(split->dim), builder.getI64IntegerAttr(split->count),
          split->axis, split->count > 1 ? split->blocks : DenseI64ArrayAttr());
    } else if (init == "ones" || init == "zeros") {
      value = tg::FillOp::create(builder, param.getLoc(), type,
                                 builder.getF64FloatAttr(init == "ones" ? 1.0 : 0.0));
    } else {
      return param.emitError() << "tg-train-step: parameter init '" << init
                               << "' has no initialization (normal, kaiming_uniform, ones, zeros, "
                                  "checkpoint)";
    }
    if (auto axis = param->getAttrOfType<StringAttr>(dist::kZeroShardAttr)) {
      auto flat = RankedTensorType::get({type.getNumElements()}, type.getElementType());
      if (flat != type) {
        value = tg::ReshapeOp::create(builder, param.getLoc(), flat, value);
      }
      value = dist::LocalShardOp::create(builder, param.getLoc(), param.getTensorType(), value,
                                         FlatSymbolRefAttr::get(builder.getContext(), kMesh), axis);
    }
    values.push_back(value);
    roles.push_back({std::string(role::kParam), name.str()});
  }
  func::ReturnOp::create(builder, loc, values);
  func.setFunctionType(builder.getFunctionType({seedType}, ValueRange(values).getTypes()));
  setAllRoles(func, /*arguments=*/true, {StepRole{std::string(role::kSeed), ""}});
  setAllRoles(func, /*arguments=*/false,
              SmallVector<std::optional<StepRole>>(roles.begin(), roles.end()));
  return success();
}

LogicalResult StepBuilder::buildInitOptimizer() {
  Location loc = optimizerStep.getLoc();
  Block &body = model.getBody().front();
  builder.setInsertionPointToEnd(&body);
  // The optimizer's state from the parameters, each argument as tg-optimizer says it starts.
  // Parameters by name, looked up once (a symbol lookup per argument scans the whole model:
  // quadratic in the layers).
  llvm::StringMap<tg::ParamOp> paramByName;
  for (auto param : body.getOps<tg::ParamOp>()) {
    paramByName[param.getSymName()] = param;
  }
  SmallVector<tg::ParamOp> params;
  llvm::StringMap<unsigned> inputOfParam; // @init_optimizer's argument index by parameter
  SmallVector<unsigned> stateArgs;
  for (unsigned i = 0; i < optimizerStep.getNumArguments(); ++i) {
    std::optional<StepRole> r = argRole(optimizerStep, i);
    if (!r || r->role == role::kStep || r->role == role::kGrad) {
      continue;
    }
    stateArgs.push_back(i);
    Attribute start = optimizerStep.getArgAttr(i, kInitAttr);
    auto init = dyn_cast_or_null<StringAttr>(start);
    if (!isa_and_nonnull<FloatAttr>(start) &&
        (!init || (init.getValue() != kInitFromParam && init.getValue() != kInitZeros))) {
      return optimizerStep.emitError()
             << "tg-train-step: @optimizer_step argument " << i << " (" << r->role << " of @"
             << r->param
             << ") does not say how it starts (tg.init = \"param\", \"zeros\" or a float)";
    }
    if (init && init.getValue() == kInitFromParam) {
      tg::ParamOp param = paramByName.lookup(r->param);
      if (!param) {
        return optimizerStep.emitError() << "tg-train-step: @" << r->param << " is not a parameter";
      }
      if (inputOfParam.try_emplace(r->param, params.size()).second) {
        params.push_back(param);
      }
    }
  }
  SmallVector<Type> inputs;
  for (tg::ParamOp param : params) {
    inputs.push_back(param.getType());
  }
  auto func =
      func::FuncOp::create(builder, loc, "init_optimizer", builder.getFunctionType(inputs, {}));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  SmallVector<Value> values;
  SmallVector<StepRole> roles;
  for (unsigned i : stateArgs) {
    StepRole r = *argRole(optimizerStep, i);
    auto type = cast<RankedTensorType>(optimizerStep.getArgumentTypes()[i]);
    Attribute start = optimizerStep.getArgAttr(i, kInitAttr);
    Value value;
    if (auto constant = dyn_cast<FloatAttr>(start)) {
      value = tg::FillOp::create(builder, loc, type,
                                 builder.getF64FloatAttr(constant.getValueAsDouble()));
    } else if (cast<StringAttr>(start).getValue() == kInitZeros) {
      value = tg::FillOp::create(builder, loc, type, builder.getF64FloatAttr(0.0));
    } else {
      value = entry->getArgument(inputOfParam.lookup(r.param));
      auto paramType = cast<RankedTensorType>(value.getType());
      auto wide = RankedTensorType::get(paramType.getShape(), type.getElementType());
      if (wide != paramType) {
        value = tg::ConvertOp::create(builder, loc, wide, value); // exact: bf16 fits f32
      }
      if (wide != type) {
        // A ZeRO-1 shard: this rank's slice of the flattened parameter.
        auto sharding = optimizerStep.getArgAttrOfType<dist::ShardingAttr>(i, "dist.sharding");
        auto axes = sharding && !sharding.getDims().empty()
                        ? dyn_cast<ArrayAttr>(sharding.getDims()[0])
                        : ArrayAttr();
        if (!axes || axes.size() != 1 || type.getRank() != 1) {
          return optimizerStep.emitError()
                 << "tg-train-step: the " << r.role << " state of @" << r.param << " is " << type
                 << ", neither the parameter's shape nor a 1-D shard of it over one mesh axis";
        }
        auto flat = RankedTensorType::get({wide.getNumElements()}, type.getElementType());
        if (flat != wide) {
          value = tg::ReshapeOp::create(builder, loc, flat, value);
        }
        value = dist::LocalShardOp::create(builder, loc, type, value, sharding.getMesh(),
                                           cast<StringAttr>(axes[0]));
      }
    }
    values.push_back(value);
    roles.push_back(r);
  }
  func::ReturnOp::create(builder, loc, values);
  func.setFunctionType(builder.getFunctionType(inputs, ValueRange(values).getTypes()));
  SmallVector<std::optional<StepRole>> paramRoles;
  for (tg::ParamOp param : params) {
    paramRoles.push_back(StepRole{std::string(role::kParam), param.getSymName().str()});
  }
  setAllRoles(func, /*arguments=*/true, paramRoles);
  setAllRoles(func, /*arguments=*/false,
              SmallVector<std::optional<StepRole>>(roles.begin(), roles.end()));
  return success();
}

LogicalResult StepBuilder::build() {
  for (StringRef name :
       {"train_step", "eval_step", "eval_finish", "init_params", "init_optimizer"}) {
    if (SymbolTable::lookupSymbolIn(model, name)) {
      return model.emitError() << "tg-train-step: the model already has @" << name;
    }
  }
  optimizerStep =
      dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "optimizer_step"));
  if (!optimizerStep) {
    return model.emitError() << "tg-train-step needs @optimizer_step: run tg-optimizer first";
  }
  if (failed(collectChunks())) {
    return failure();
  }
  if (auto mesh = dyn_cast_or_null<dist::MeshOp>(SymbolTable::lookupSymbolIn(model, kMesh))) {
    pp = mesh.getAxisSize("pp");
    dp = mesh.getAxisSize("dp");
  }
  if (auto attr = model->getAttrOfType<IntegerAttr>("dist.stage")) {
    stage = attr.getInt();
  }
  if (accumulation < 1 || stage < 0 || stage >= pp) {
    return model.emitError() << "tg-train-step: " << accumulation
                             << " micro-batches per step on pipeline stage " << stage << " of "
                             << pp;
  }
  if (vp() > 1 && pp == 1) {
    return model.emitError() << "tg-train-step: model chunks need pipeline parallelism";
  }
  // Dropout: every function called per micro-batch reads its micro-batch's key (appended
  // before accumulateInPlace's gradient sums).
  for (Chunk &chunk : chunks) {
    unsigned keyIndex = chunk.forwardInputs = chunk.forward.getNumArguments();
    for (func::FuncOp func :
         {chunk.forward, chunk.forwardBackward, chunk.stashForward, chunk.stashBackward}) {
      if (func) {
        dropout |= threadDropoutKey(func, keyIndex);
      }
    }
  }
  if (accumulation > 1) {
    for (Chunk &chunk : chunks) {
      accumulateInPlace(chunk);
    }
  }
  return failure(failed(buildTrainStep()) || failed(buildEvalStep()) || failed(buildEvalFinish()) ||
                 failed(buildInitParams()) || failed(buildInitOptimizer()));
}

struct TGTrainStepPass : PerModelPass<TGTrainStepPass, impl::TGTrainStepPassBase> {
  using PerModelPass::PerModelPass;

  LogicalResult runOnModel(tg::ModelOp model) {
    return StepBuilder(model, accumulationSteps).build();
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS("tg-train-step", kExact,
                             "adds @train_step and @eval_step: the micro-batch loop, accumulation "
                             "in completion order and the optimizer call");
