//===- DistDecomposeCollectives.cpp - Gradient buckets in the last backward -*- C++ -*-===//
//
// Moves each parameter's data-parallel gradient reduction out of @optimizer_step into a copy
// of the backward that runs last in @train_step, and packs the gradients into buckets in the
// order the backward completes them: one collective per bucket instead of one per parameter,
// issued while the rest of the backward still runs (plan-schedule then lets it overlap). The
// pass description in Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "compiler/Support/PerModelPass.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Support/StepRoles.h"
#include "compiler/Transforms/GatherBuckets.h"
#include "compiler/Transforms/Passes.h"
#include "runtime/plan/StepRoles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

#include <map>

#define DEBUG_TYPE "dist-decompose-collectives"

namespace mlperf {
#define GEN_PASS_DEF_DISTDECOMPOSECOLLECTIVESPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

constexpr StringLiteral kMesh = "mesh";
/// Megatron's default bucket: 40 M elements of the gradient type.
constexpr int64_t kDefaultBucketElements = 40'000'000;

/// One parameter's gradient reduction as tg-optimizer and dist-partition left it in
/// @optimizer_step: from the gradient argument, ops that each read the previous one's result
/// only (a tp all-reduce of a sequence-parallel weight, the flattening reshape), up to the
/// dp collective (over dp, or dp_shard with hybrid sharding) whose result the optimizer
/// reads, or, with hybrid sharding, the all-reduce of that shard over dp_replicate.
struct Reduction {
  unsigned argument = 0;           // the gradient argument of @optimizer_step
  SmallVector<Operation *> prefix; // the ops before the dp collective, in order
  Operation *start = nullptr;      // the dp collective's start
  dist::DoneOp done;
  bool scatter = false;              // reduce-scatter (ZeRO-1) rather than all-reduce
  Operation *replicaStart = nullptr; // hsdp: the shard's all-reduce over dp_replicate
  dist::DoneOp replicaDone;
  /// What @optimizer_step reads.
  Value reduced() { return replicaDone ? replicaDone.getResult() : done.getResult(); }
};

/// The single collective start/done pair over the single axis `axis` that reads `value`.
std::optional<std::pair<Operation *, dist::DoneOp>> collectiveReading(Value value, StringRef axis) {
  if (!value.hasOneUse()) {
    return std::nullopt;
  }
  Operation *user = *value.getUsers().begin();
  if (!isa<dist::AllReduceStartOp>(user) || !user->getResult(0).hasOneUse()) {
    return std::nullopt;
  }
  auto done = dyn_cast<dist::DoneOp>(*user->getResult(0).getUsers().begin());
  auto axes = user->getAttrOfType<ArrayAttr>("axes");
  if (!done || !done.getResult() || !axes || axes.size() != 1 ||
      cast<StringAttr>(axes[0]).getValue() != axis) {
    return std::nullopt;
  }
  return std::pair{user, done};
}

/// The reduction of `argument`, if it is a chain ending in a collective over `axis` (and,
/// with hybrid sharding, the all-reduce over dp_replicate after it).
std::optional<Reduction> findReduction(BlockArgument argument, StringRef axis, bool replicated) {
  Reduction reduction;
  reduction.argument = argument.getArgNumber();
  Value value = argument;
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (isa<tg::ReshapeOp>(user)) {
      reduction.prefix.push_back(user);
      value = user->getResult(0);
      continue;
    }
    if (!isa<dist::AllReduceStartOp, dist::ReduceScatterStartOp>(user) ||
        !user->getResult(0).hasOneUse()) {
      return std::nullopt;
    }
    auto done = dyn_cast<dist::DoneOp>(*user->getResult(0).getUsers().begin());
    auto axes = user->getAttrOfType<ArrayAttr>("axes");
    if (!done || !done.getResult() || !axes || axes.size() != 1) {
      return std::nullopt;
    }
    auto dim = user->getAttrOfType<IntegerAttr>("dim");
    if (dim && dim.getInt() != 0) {
      return std::nullopt; // a sequence split is not a gradient reduction
    }
    if (cast<StringAttr>(axes[0]).getValue() != axis) {
      reduction.prefix.append({user, done}); // the tp sum of a sequence-parallel weight
      value = done.getResult();
      continue;
    }
    reduction.start = user;
    reduction.done = done;
    reduction.scatter = isa<dist::ReduceScatterStartOp>(user);
    if (replicated) {
      auto replica = collectiveReading(done.getResult(), dist::kReplicaAxis);
      if (!replica) {
        return std::nullopt;
      }
      std::tie(reduction.replicaStart, reduction.replicaDone) = *replica;
    }
    return reduction;
  }
  return std::nullopt;
}

/// A gradient reduced in the last backward, viewed as [rows, columns] (rows = the group size for a
/// reduce-scatter: row r is what rank r keeps) and cut into one piece per bucket it falls in.
struct Item {
  Reduction *reduction = nullptr;
  unsigned result = 0; // the backward result it replaces
  Value input;         // the dp collective's input, in the backward
  int64_t rows = 1, columns = 0;
  SmallVector<int64_t> widths; // columns per piece, in bucket order
  SmallVector<Value> pieces;   // [rows, width] each
  SmallVector<Value> reduced;  // [width] each, after the bucket's collective
};

/// One collective: pieces of consecutive gradients, `columns` wide in all.
struct Bucket {
  SmallVector<std::pair<size_t, unsigned>> segments; // (item, piece)
  int64_t columns = 0;
  bool scatter = false;
  Type element;
  Value future;
};

int64_t elementBytes(Type element) {
  return std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
}

/// Elements of `element` per bucket: `bucketBytes` of them, or Megatron's 40 M (0).
int64_t bucketElements(int64_t bucketBytes, Type element) {
  return bucketBytes > 0 ? std::max<int64_t>(1, bucketBytes / elementBytes(element))
                         : kDefaultBucketElements;
}

/// Consecutive `items` of one element type packed into buckets of up to `bucketBytes`, none
/// cut (one larger than a bucket stays alone); `sized(item)` gives its element type and the
/// elements it adds to its bucket.
template <typename T, typename Sized>
SmallVector<SmallVector<T>> wholeItemBuckets(ArrayRef<T> items, int64_t bucketBytes, Sized sized) {
  SmallVector<SmallVector<T>> buckets;
  int64_t filled = 0;
  Type bucketElement;
  for (const T &item : items) {
    auto [element, elements] = sized(item);
    if (buckets.empty() || element != bucketElement ||
        filled + elements > bucketElements(bucketBytes, element)) {
      buckets.emplace_back();
      filled = 0;
      bucketElement = element;
    }
    buckets.back().push_back(item);
    filled += elements;
  }
  return buckets;
}

/// Fills buckets in the order of `items` (the backward's completion order), one open bucket per
/// kind of collective and element type, cutting a gradient where a bucket fills up.
std::vector<Bucket> planBuckets(std::vector<Item> &items, int64_t bucketBytes) {
  std::vector<Bucket> buckets;
  std::map<std::pair<bool, const void *>, size_t> open;
  for (auto [index, item] : llvm::enumerate(items)) {
    Type element = cast<RankedTensorType>(item.input.getType()).getElementType();
    int64_t capacity = std::max<int64_t>(1, bucketElements(bucketBytes, element) / item.rows);
    auto key = std::make_pair(item.reduction->scatter, element.getAsOpaquePointer());
    for (int64_t left = item.columns; left > 0;) {
      auto it = open.find(key);
      if (it == open.end()) {
        it = open.emplace(key, buckets.size()).first;
        buckets.push_back({{}, 0, item.reduction->scatter, element, Value()});
      }
      Bucket &bucket = buckets[it->second];
      int64_t width = std::min(left, capacity - bucket.columns);
      bucket.segments.push_back({index, static_cast<unsigned>(item.widths.size())});
      bucket.columns += width;
      item.widths.push_back(width);
      left -= width;
      if (bucket.columns == capacity) {
        open.erase(it);
      }
    }
  }
  return buckets;
}

struct DistDecomposeCollectivesPass
    : PerModelPass<DistDecomposeCollectivesPass, impl::DistDecomposeCollectivesPassBase> {
  using PerModelPass::PerModelPass;

  void runOnOperation() override {
    if (bucketBytes < 0) {
      getOperation().emitError() << "dist-decompose-collectives: bucket-bytes must be positive "
                                    "(0: Megatron's 40 M elements), not "
                                 << bucketBytes;
      return signalPassFailure();
    }
    PerModelPass::runOnOperation();
  }

  LogicalResult runOnModel(tg::ModelOp model) {
    auto mesh = dyn_cast_or_null<dist::MeshOp>(SymbolTable::lookupSymbolIn(model, kMesh));
    if (!mesh || mesh.getAxisSize("dp") == 1) {
      return success(); // no gradient is reduced over ranks
    }
    // ZeRO reduce-scatters over its sharding group (dp, or dp_shard with hybrid sharding,
    // whose shard is then all-reduced over dp_replicate); plain data parallelism all-reduces
    // over dp.
    reduceAxis = mesh.getZeroShardAxis();
    reduceMembers = mesh.getAxisSize(reduceAxis);
    replicated = mesh.getAxisSize(dist::kReplicaAxis) > 1;
    auto lookup = [&](StringRef name) {
      return dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, name));
    };
    func::FuncOp optimizer = lookup("optimizer_step"), trainStep = lookup("train_step");
    if (!optimizer || !trainStep) {
      return model.emitError() << "dist-decompose-collectives needs @optimizer_step and "
                                  "@train_step: run tg-train-step first";
    }
    SmallVector<func::CallOp> optimizerCalls;
    trainStep.walk([&](func::CallOp call) {
      if (call.getCallee() == optimizer.getSymName()) {
        optimizerCalls.push_back(call);
      }
    });
    if (optimizerCalls.size() != 1) {
      return trainStep.emitError() << "dist-decompose-collectives: @train_step should call "
                                      "@optimizer_step once, not "
                                   << optimizerCalls.size() << " times";
    }
    func::CallOp optimizerCall = optimizerCalls.front();

    // The reductions to move, by the call of the backward whose result they read: the
    // backward that completes each gradient sum.
    std::vector<Reduction> reductions;
    for (BlockArgument argument : optimizer.getArguments()) {
      std::optional<StepRole> role = argRole(optimizer, argument.getArgNumber());
      if (!role || role->role != rt::role::kGrad) {
        continue;
      }
      if (std::optional<Reduction> reduction = findReduction(argument, reduceAxis, replicated)) {
        reductions.push_back(std::move(*reduction));
      }
    }
    llvm::MapVector<Operation *, SmallVector<std::pair<Reduction *, unsigned>>> byCall;
    for (Reduction &reduction : reductions) {
      Value operand = optimizerCall.getOperand(reduction.argument);
      auto call = operand.getDefiningOp<func::CallOp>();
      if (!call || !operand.hasOneUse()) {
        continue; // summed elsewhere: reduced in @optimizer_step as before
      }
      // A sum the backward returns unchanged (a parameter the last micro-batch does not
      // reach) lives in the caller's buffer: reducing it there would read and write the same
      // bytes. An empty or non-numeric gradient has nothing to bucket.
      auto callee =
          dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, call.getCalleeAttr()));
      unsigned result = cast<OpResult>(operand).getResultNumber();
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!callee || callee.isExternal() || !type || type.getNumElements() == 0 ||
          !type.getElementType().isIntOrFloat() ||
          isa<BlockArgument>(callee.getBody().front().getTerminator()->getOperand(result))) {
        continue;
      }
      byCall[call].push_back({&reduction, result});
    }
    llvm::DenseSet<StringRef> callees;
    for (auto &[op, moved] : byCall) {
      if (!callees.insert(cast<func::CallOp>(op).getCallee()).second) {
        return trainStep.emitError()
               << "dist-decompose-collectives: two calls of @" << cast<func::CallOp>(op).getCallee()
               << " complete gradient sums";
      }
    }
    // ZeRO-2: a backward that adds its gradients to accumulator arguments reduce-scatters
    // them first, every micro-batch, into accumulators of the shard's size.
    // (With one micro-batch there is nothing to accumulate: the last backward reduces, as
    // for ZeRO-1.)
    llvm::DenseSet<Reduction *> everyMicroBatch;
    for (auto &[op, moved] : byCall) {
      auto call = cast<func::CallOp>(op);
      bool inPlace = mesh.getZero() >= 2 && accumulatesInPlace(model, call, moved);
      LogicalResult reduced = inPlace ? reduceEveryMicroBatch(model, trainStep, call, moved)
                                      : reduceInClone(model, call, moved);
      if (failed(reduced)) {
        return failure();
      }
      for (auto [reduction, result] : moved) {
        if (inPlace) {
          everyMicroBatch.insert(reduction);
        }
      }
    }
    // @optimizer_step now takes what the moved collectives produced (with hybrid sharding and
    // ZeRO-2, the group's shard, which it then all-reduces over the replicas once a step).
    for (auto &[op, moved] : byCall) {
      for (auto [reduction, result] : moved) {
        BlockArgument argument = optimizer.getArgument(reduction->argument);
        bool keepReplica = everyMicroBatch.contains(reduction) && reduction->replicaDone;
        Value reduced = keepReplica ? reduction->done.getResult() : reduction->reduced();
        argument.setType(reduced.getType());
        reduced.replaceAllUsesWith(argument);
        if (reduction->replicaDone && !keepReplica) {
          reduction->replicaDone->erase();
          reduction->replicaStart->erase();
        }
        reduction->done->erase();
        reduction->start->erase();
        for (Operation *prefix : llvm::reverse(reduction->prefix)) {
          prefix->erase();
        }
      }
    }
    optimizer.setFunctionType(FunctionType::get(optimizer.getContext(),
                                                optimizer.getBody().front().getArgumentTypes(),
                                                optimizer.getResultTypes()));
    bucketParameterGathers(optimizer);
    if (!everyMicroBatch.empty() && replicated) {
      bucketReplicaReductions(optimizer);
    }
    return success();
  }

  /// Hybrid sharding with ZeRO-2/3: @optimizer_step all-reduces each shard sum over
  /// dp_replicate. Consecutive ones of one element type are packed into buckets: the shards'
  /// concatenation is all-reduced once and split back. Exact: each element is still summed
  /// over the same ranks in the same order.
  void bucketReplicaReductions(func::FuncOp optimizer) {
    Block &body = optimizer.getBody().front();
    using Reduce = std::pair<dist::AllReduceStartOp, dist::DoneOp>;
    SmallVector<Reduce> reductions;
    for (auto start : body.getOps<dist::AllReduceStartOp>()) {
      auto input = dyn_cast<BlockArgument>(start.getInput());
      auto type = cast<RankedTensorType>(start.getInput().getType());
      auto axes = start.getAxes();
      if (!input || type.getRank() != 1 || axes.size() != 1 ||
          cast<StringAttr>(axes[0]).getValue() != dist::kReplicaAxis ||
          !start.getResult().hasOneUse() || start.getReduction() != "sum") {
        continue;
      }
      if (auto done = dyn_cast<dist::DoneOp>(*start.getResult().getUsers().begin())) {
        reductions.push_back({start, done});
      }
    }
    auto buckets = wholeItemBuckets(ArrayRef<Reduce>(reductions), bucketBytes, [](Reduce r) {
      auto type = cast<RankedTensorType>(r.first.getInput().getType());
      return std::pair{type.getElementType(), type.getNumElements()};
    });
    MLIRContext *context = optimizer.getContext();
    for (auto &bucket : buckets) {
      if (bucket.size() < 2) {
        continue;
      }
      // Every input is an argument: the packed collective goes where the first one was.
      OpBuilder builder(bucket.front().first);
      Location loc = bucket.front().first.getLoc();
      SmallVector<Value> inputs;
      SmallVector<int64_t> sizes;
      int64_t columns = 0;
      for (auto [start, done] : bucket) {
        inputs.push_back(start.getInput());
        sizes.push_back(cast<RankedTensorType>(start.getInput().getType()).getNumElements());
        columns += sizes.back();
      }
      Type element = cast<RankedTensorType>(inputs.front().getType()).getElementType();
      auto packedType = RankedTensorType::get({columns}, element);
      Value packed =
          tg::ConcatOp::create(builder, loc, packedType, inputs, builder.getI64IntegerAttr(0));
      auto future = dist::AllReduceStartOp::create(
          builder, loc, dist::FutureType::get(context, packedType), packed,
          bucket.front().first.getMeshAttr(), bucket.front().first.getAxesAttr());
      // The sums are read where the first member's were.
      Operation *firstDone = bucket.front().second;
      for (auto [start, done] : bucket) {
        if (done->isBeforeInBlock(firstDone)) {
          firstDone = done;
        }
      }
      builder.setInsertionPoint(firstDone);
      Value reduced = dist::DoneOp::create(builder, loc, packedType, future).getResult();
      SmallVector<Type> types;
      for (int64_t size : sizes) {
        types.push_back(RankedTensorType::get({size}, element));
      }
      auto split = tg::SplitOp::create(builder, loc, types, reduced, builder.getI64IntegerAttr(0),
                                       builder.getDenseI64ArrayAttr(sizes));
      for (auto [index, member] : llvm::enumerate(bucket)) {
        member.second.getResult().replaceAllUsesWith(split.getResult(index));
        member.second->erase();
        member.first->erase();
      }
    }
  }

  /// ZeRO-1's parameter all-gathers in @optimizer_step, one per updated shard, packed into
  /// buckets in update order: the shards' concatenation is gathered once (over the sharding
  /// group of G ranks), viewed as [G, columns] (row r is member r's concatenation) and split
  /// along dim 1 into [G, n/G] pieces,
  /// each of which, flattened, is a gathered parameter. Exact: data movement only.
  void bucketParameterGathers(func::FuncOp optimizer) {
    Block &body = optimizer.getBody().front();
    SmallVector<Gather> gathers;
    for (auto start : body.getOps<dist::AllGatherStartOp>()) {
      // An fp8 weight keeps its own gather.
      if (dist::DoneOp done = packableGather(start, reduceAxis)) {
        gathers.push_back({start, done});
      }
    }
    // Consecutive gathers of one element type up to the bucket size (counted gathered); a
    // larger shard alone.
    auto buckets = wholeItemBuckets(ArrayRef<Gather>(gathers), bucketBytes, [&](Gather g) {
      auto type = cast<RankedTensorType>(g.first.getInput().getType());
      return std::pair{type.getElementType(), type.getNumElements() * reduceMembers};
    });
    for (auto &bucket : buckets) {
      if (bucket.size() > 1) {
        packGathers(bucket, reduceMembers);
      }
    }
  }

  /// The accumulation tg-train-step builds with several micro-batches: the result `result`
  /// of `func` is `tg.add %sum, %gradient` of an argument with role grad (the sum so far).
  static tg::AddOp accumulation(func::FuncOp func, unsigned result) {
    auto add =
        func.getBody().front().getTerminator()->getOperand(result).getDefiningOp<tg::AddOp>();
    auto sum = add ? dyn_cast<BlockArgument>(add.getLhs()) : BlockArgument();
    if (!sum || sum.getOwner() != &func.getBody().front() || !add->hasOneUse()) {
      return {};
    }
    std::optional<StepRole> role = argRole(func, sum.getArgNumber());
    return role && role->role == rt::role::kGrad ? add : tg::AddOp();
  }

  /// Whether `call`'s callee accumulates every moved gradient in place (accumulation).
  static bool accumulatesInPlace(tg::ModelOp model, func::CallOp call,
                                 ArrayRef<std::pair<Reduction *, unsigned>> moved) {
    auto callee = cast<func::FuncOp>(SymbolTable::lookupSymbolIn(model, call.getCalleeAttr()));
    return llvm::all_of(moved, [&](auto &entry) {
      return entry.first->scatter && accumulation(callee, entry.second);
    });
  }

  /// A copy of `call`'s callee that returns the moved gradients reduced, bucketed; the call
  /// calls it instead.
  LogicalResult reduceInClone(tg::ModelOp model, func::CallOp call,
                              ArrayRef<std::pair<Reduction *, unsigned>> moved) {
    auto callee = cast<func::FuncOp>(SymbolTable::lookupSymbolIn(model, call.getCalleeAttr()));
    OpBuilder builder(callee);
    builder.setInsertionPointAfter(callee);
    func::FuncOp clone = cast<func::FuncOp>(builder.clone(*callee));
    clone.setSymName((callee.getSymName() + ".reduce").str());
    if (SymbolTable::lookupSymbolIn(model, clone.getSymName()) != clone) {
      return callee.emitError() << "dist-decompose-collectives: @" << clone.getSymName()
                                << " exists already";
    }
    if (failed(reduceInBuckets(clone, moved, /*intoShardSums=*/false))) {
      return failure();
    }
    // The train step calls the copy.
    builder.setInsertionPoint(call);
    auto reducing = func::CallOp::create(builder, call.getLoc(), clone, call.getOperands());
    reducing->setDiscardableAttrs(call->getDiscardableAttrDictionary());
    call.replaceAllUsesWith(reducing.getResults());
    call.erase();
    return success();
  }

  /// ZeRO-2: `call`'s callee itself reduce-scatters each micro-batch's moved gradients in
  /// buckets and adds this rank's shard to a shard-sized accumulator argument, so that no
  /// full gradient outlives its bucket; every call of it in `trainStep` passes and gets the
  /// shard sums, starting from shard-sized zeros.
  LogicalResult reduceEveryMicroBatch(tg::ModelOp model, func::FuncOp trainStep, func::CallOp call,
                                      ArrayRef<std::pair<Reduction *, unsigned>> moved) {
    auto callee = cast<func::FuncOp>(SymbolTable::lookupSymbolIn(model, call.getCalleeAttr()));
    if (failed(reduceInBuckets(callee, moved, /*intoShardSums=*/true))) {
      return failure();
    }
    SmallVector<func::CallOp> calls;
    trainStep.walk([&](func::CallOp each) {
      if (each.getCallee() == callee.getSymName()) {
        calls.push_back(each);
      }
    });
    for (func::CallOp each : calls) {
      OpBuilder builder(each);
      SmallVector<Value> operands(each.getOperands());
      for (auto [index, operand] : llvm::enumerate(operands)) {
        Type type = callee.getArgumentTypes()[index];
        if (operand.getType() == type) {
          continue;
        }
        auto zeros = operand.getDefiningOp<tg::FillOp>();
        if (!zeros) {
          return each.emitError() << "dist-decompose-collectives: ZeRO-2/3 needs the first "
                                     "accumulator of @"
                                  << callee.getSymName() << " to be a tg.fill";
        }
        operands[index] = tg::FillOp::create(builder, zeros.getLoc(), type, zeros.getValueAttr());
      }
      auto reducing = func::CallOp::create(builder, each.getLoc(), callee, operands);
      reducing->setDiscardableAttrs(each->getDiscardableAttrDictionary());
      // The sums flow from call to call (and to @optimizer_step) in the shard's type now.
      for (auto [old, now] : llvm::zip(each.getResults(), reducing.getResults())) {
        old.replaceAllUsesWith(now);
      }
      each.erase();
    }
    // The full-size zeros are dead.
    SmallVector<tg::FillOp> dead;
    trainStep.walk([&](tg::FillOp fill) {
      if (fill->use_empty()) {
        dead.push_back(fill);
      }
    });
    for (tg::FillOp fill : dead) {
      fill.erase();
    }
    return success();
  }

  /// Rewrites `target` to reduce the moved gradients it returns in buckets, as they complete.
  /// With `intoShardSums`, each returned result is `tg.add %sum, %gradient` (accumulation):
  /// %gradient is reduced and added to %sum, which becomes a shard-sized argument.
  LogicalResult reduceInBuckets(func::FuncOp target,
                                ArrayRef<std::pair<Reduction *, unsigned>> moved,
                                bool intoShardSums) {
    OpBuilder builder(target);
    Block &body = target.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    llvm::DenseMap<Operation *, int64_t> position;
    for (auto [index, op] : llvm::enumerate(body)) {
      position[&op] = static_cast<int64_t>(index);
    }
    auto completedAt = [&](Value value) -> int64_t {
      Operation *def = value.getDefiningOp();
      return def ? position.lookup(def) : -1;
    };

    // Each gradient's prefix (a tp sum, the flattening) right where the backward completes it.
    std::vector<Item> items;
    llvm::DenseMap<unsigned, tg::AddOp> sums; // result -> its accumulation (intoShardSums)
    for (auto [reduction, result] : moved) {
      Value gradient = ret.getOperand(result);
      if (intoShardSums) {
        sums[result] = accumulation(target, result);
        gradient = sums[result].getRhs();
      }
      builder.setInsertionPointAfterValue(gradient);
      IRMapping mapping;
      mapping.map(reduction->prefix.empty() ? reduction->start->getOperand(0)
                                            : reduction->prefix.front()->getOperand(0),
                  gradient);
      for (Operation *op : reduction->prefix) {
        builder.clone(*op, mapping);
      }
      Item item;
      item.reduction = reduction;
      item.result = result;
      item.input = mapping.lookupOrDefault(reduction->start->getOperand(0));
      int64_t elements = cast<RankedTensorType>(item.input.getType()).getNumElements();
      item.rows = reduction->scatter ? reduceMembers : 1;
      if (elements % item.rows != 0) {
        return target.emitError() << "dist-decompose-collectives: a gradient of " << elements
                                  << " elements does not split over " << reduceAxis << "="
                                  << reduceMembers;
      }
      item.columns = elements / item.rows;
      items.push_back(std::move(item));
    }
    // Completion order: where the backward computed the sum (before the prefix was added).
    llvm::DenseMap<unsigned, int64_t> order;
    for (auto [reduction, result] : moved) {
      order[result] = completedAt(ret.getOperand(result));
    }
    // A sum's accumulation waits for the reduced shard now.
    for (auto &[result, add] : sums) {
      add->moveBefore(ret);
    }
    llvm::stable_sort(items, [&](const Item &a, const Item &b) {
      return order.lookup(a.result) < order.lookup(b.result);
    });
    std::vector<Bucket> buckets = planBuckets(items, bucketBytes);
    SmallVector<SmallVector<size_t>> closedBy(items.size());
    for (auto [index, bucket] : llvm::enumerate(buckets)) {
      closedBy[bucket.segments.back().first].push_back(index);
    }

    // Pieces as soon as a gradient is complete; a bucket's collective starts once its last
    // piece exists.
    Location loc = target.getLoc();
    Operation *last = nullptr;
    for (auto [index, item] : llvm::enumerate(items)) {
      Operation *def = item.input.getDefiningOp();
      if (!last || (def && last->isBeforeInBlock(def))) {
        builder.setInsertionPointAfterValue(item.input);
      }
      auto element = cast<RankedTensorType>(item.input.getType()).getElementType();
      Value view = tg::ReshapeOp::create(
          builder, loc, RankedTensorType::get({item.rows, item.columns}, element), item.input);
      last = view.getDefiningOp();
      if (item.widths.size() == 1) {
        item.pieces.push_back(view);
      } else {
        SmallVector<Type> types;
        for (int64_t width : item.widths) {
          types.push_back(RankedTensorType::get({item.rows, width}, element));
        }
        auto split = tg::SplitOp::create(builder, loc, types, view, builder.getI64IntegerAttr(1),
                                         builder.getDenseI64ArrayAttr(item.widths));
        item.pieces.assign(split.getResults().begin(), split.getResults().end());
        last = split;
      }
      for (size_t b : closedBy[index]) {
        Bucket &bucket = buckets[b];
        int64_t rows = item.rows;
        SmallVector<Value> parts;
        for (auto [owner, piece] : bucket.segments) {
          parts.push_back(items[owner].pieces[piece]);
        }
        Value packed =
            parts.size() == 1
                ? parts[0]
                : tg::ConcatOp::create(builder, loc,
                                       RankedTensorType::get({rows, bucket.columns}, element),
                                       parts, builder.getI64IntegerAttr(1))
                      .getResult();
        Value flat = tg::ReshapeOp::create(
            builder, loc, RankedTensorType::get({rows * bucket.columns}, element), packed);
        auto reducedType = RankedTensorType::get({bucket.columns}, element);
        auto futureType = dist::FutureType::get(builder.getContext(), reducedType);
        auto meshRef = FlatSymbolRefAttr::get(builder.getContext(), kMesh);
        auto axes = builder.getStrArrayAttr({reduceAxis});
        Operation *start =
            bucket.scatter
                ? dist::ReduceScatterStartOp::create(builder, loc, futureType, flat, meshRef, axes)
                      .getOperation()
                : dist::AllReduceStartOp::create(builder, loc, futureType, flat, meshRef, axes)
                      .getOperation();
        bucket.future = start->getResult(0);
        last = start;
      }
    }

    // The dones at the end, where the optimizer would have waited: each gradient's reduced
    // value from its pieces.
    builder.setInsertionPoint(ret);
    for (Bucket &bucket : buckets) {
      auto reducedType = RankedTensorType::get({bucket.columns}, bucket.element);
      Value reduced = dist::DoneOp::create(builder, loc, reducedType, bucket.future).getResult();
      // Hybrid sharding: the group's shard summed over its replicas (with ZeRO-2 once a step,
      // in @optimizer_step).
      if (replicated && !intoShardSums) {
        auto future = dist::AllReduceStartOp::create(
            builder, loc, dist::FutureType::get(builder.getContext(), reducedType), reduced,
            FlatSymbolRefAttr::get(builder.getContext(), kMesh),
            builder.getStrArrayAttr({dist::kReplicaAxis}));
        reduced = dist::DoneOp::create(builder, loc, reducedType, future).getResult();
      }
      SmallVector<Value> parts{reduced};
      if (bucket.segments.size() > 1) {
        SmallVector<int64_t> sizes;
        SmallVector<Type> types;
        for (auto [owner, piece] : bucket.segments) {
          sizes.push_back(items[owner].widths[piece]);
          types.push_back(RankedTensorType::get({sizes.back()}, bucket.element));
        }
        auto split = tg::SplitOp::create(builder, loc, types, reduced, builder.getI64IntegerAttr(0),
                                         builder.getDenseI64ArrayAttr(sizes));
        parts.assign(split.getResults().begin(), split.getResults().end());
      }
      for (auto [segment, part] : llvm::zip(bucket.segments, parts)) {
        Item &owner = items[segment.first];
        owner.reduced.resize(owner.widths.size());
        owner.reduced[segment.second] = part;
      }
    }
    for (Item &item : items) {
      auto element = cast<RankedTensorType>(item.input.getType()).getElementType();
      Value value = item.reduced.front();
      if (item.reduced.size() > 1) {
        value = tg::ConcatOp::create(builder, loc, RankedTensorType::get({item.columns}, element),
                                     item.reduced, builder.getI64IntegerAttr(0));
      }
      Type reducedType = item.reduction->reduced().getType();
      if (value.getType() != reducedType) {
        value = tg::ReshapeOp::create(builder, loc, reducedType, value);
      }
      tg::AddOp add = sums.lookup(item.result);
      if (add) {
        // The shard added to the shard sum so far, rounded once in the gradient's type.
        auto sum = cast<BlockArgument>(add.getLhs());
        sum.setType(value.getType());
        value = tg::AddOp::create(builder, add.getLoc(), sum, value);
      }
      ret.setOperand(item.result, value);
      if (add) {
        add.erase();
      }
    }
    target.setFunctionType(
        FunctionType::get(target.getContext(), body.getArgumentTypes(), ret.getOperandTypes()));
    return success();
  }

  StringRef reduceAxis = "dp"; // the gradient reduction's axis: dp, or dp_shard (hsdp)
  int64_t reduceMembers = 1;   // its size
  bool replicated = false;     // hsdp: the shard is then all-reduced over dp_replicate
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "dist-decompose-collectives", kReassociation,
    "gradients reduced over dp in buckets of several parameters, in the last backward; each "
    "element is still summed over the ranks in group order, so the bits are unchanged on "
    "the CPU backend, but a collective library may sum a larger message in another order");
