//===- DistPartition.cpp - One rank's program of a device mesh --*- C++ -*-===//
//
// Lowers tensor-parallel regions to collectives and partitions @optimizer_step over the
// mesh's data-parallel axis (all-reduce, or ZeRO-1 sharding); see the pass description in
// Passes.td. The per-rank @forward_backward needs no change for data parallelism: the
// pipeline scales its loss by 1 / (micro-batches per rank × dp).
//
//===----------------------------------------------------------------------===//

#include "compiler/Support/PerModelPass.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Support/StepRoles.h"
#include "compiler/Transforms/Passes.h"
#include "runtime/plan/StepRoles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "dist-partition"

namespace mlperf {
#define GEN_PASS_DEF_DISTPARTITIONPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

constexpr StringLiteral kMesh = "mesh";

struct DistPartitionPass : PerModelPass<DistPartitionPass, impl::DistPartitionPassBase> {
  using PerModelPass::PerModelPass;

  LogicalResult runOnModel(tg::ModelOp model) {
    mesh = dyn_cast_or_null<dist::MeshOp>(SymbolTable::lookupSymbolIn(model, kMesh));
    if (!mesh) {
      return model.emitError() << "dist-partition needs the model's @mesh: run "
                                  "dist-tensor-parallel first";
    }
    dp = mesh.getAxisSize("dp");
    tp = mesh.getAxisSize("tp");
    pp = mesh.getAxisSize("pp");
    zero = mesh.getZero() >= 1;
    shardParameters = mesh.getZero() == 3;
    shardAxis = mesh.getZeroShardAxis();
    shards = mesh.getAxisSize(shardAxis);
    replicas = mesh.getAxisSize(dist::kReplicaAxis);
    auto step =
        dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "optimizer_step"));
    if (!step) {
      return model.emitError() << "dist-partition needs @optimizer_step: run tg-optimizer first";
    }
    lowerRegions(model);
    return partitionOptimizer(model, step);
  }

  /// Megatron's f is the identity in the forward direction; g is an all-reduce; with
  /// sequence parallelism they are an all-gather and a reduce-scatter of sequence slices.
  void lowerRegions(tg::ModelOp model) {
    auto lower = [&](auto region, auto tag) {
      using StartOp = typename decltype(tag)::type;
      OpBuilder builder(region);
      auto type = cast<RankedTensorType>(region.getType());
      auto future = StartOp::create(
          builder, region.getLoc(), dist::FutureType::get(builder.getContext(), type),
          region.getInput(), region.getMeshAttr(), region.getAxesAttr(), region.getDimAttr());
      region.getResult().replaceAllUsesWith(
          dist::DoneOp::create(builder, region.getLoc(), type, future).getResult());
      region.erase();
    };
    model.walk([&](dist::ReduceScatterRegionOp region) {
      lower(region, llvm::type_identity<dist::ReduceScatterStartOp>());
    });
    model.walk([&](dist::AllGatherRegionOp region) {
      lower(region, llvm::type_identity<dist::AllGatherStartOp>());
    });
    model.walk([&](dist::CopyToRegionOp copy) {
      copy.getResult().replaceAllUsesWith(copy.getInput());
      copy.erase();
    });
    model.walk([&](dist::ReduceFromRegionOp reduce) {
      OpBuilder builder(reduce);
      auto type = cast<RankedTensorType>(reduce.getType());
      auto future = dist::AllReduceStartOp::create(
          builder, reduce.getLoc(), dist::FutureType::get(builder.getContext(), type),
          reduce.getInput(), reduce.getMeshAttr(), reduce.getAxesAttr());
      reduce.getResult().replaceAllUsesWith(
          dist::DoneOp::create(builder, reduce.getLoc(), type, future).getResult());
      reduce.erase();
    });
  }

  /// `value` sent through a collective start/done pair over `axis`.
  template <typename StartOp>
  Value collective(OpBuilder &builder, Location loc, Value value, RankedTensorType resultType,
                   StringRef axis) {
    auto future = StartOp::create(
        builder, loc, dist::FutureType::get(builder.getContext(), resultType), value,
        FlatSymbolRefAttr::get(builder.getContext(), kMesh), builder.getStrArrayAttr({axis}));
    return dist::DoneOp::create(builder, loc, resultType, future).getResult();
  }

  LogicalResult partitionOptimizer(tg::ModelOp model, func::FuncOp step) {
    Block &entry = step.getBody().front();
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    // The arguments and results by role (tg-optimizer's): per trained parameter, in gradient
    // order, its gradient, its optimizer state and its new value.
    SmallVector<unsigned> gradArgs;
    SmallVector<StringRef> names;
    llvm::StringMap<SmallVector<unsigned>> stateArgs;
    llvm::StringMap<unsigned> paramResult;
    for (unsigned i = 0; i < step.getNumArguments(); ++i) {
      std::optional<StepRole> r = argRole(step, i);
      if (!r) {
        return step.emitError() << "dist-partition: @optimizer_step argument " << i
                                << " has no tg.role: run tg-optimizer";
      }
      if (r->role == rt::role::kGrad) {
        gradArgs.push_back(i);
      } else if (r->role != rt::role::kStep && !rt::role::isFp8State(r->role)) {
        stateArgs[r->param].push_back(i);
      }
    }
    for (unsigned i = 0; i < step.getNumResults(); ++i) {
      if (std::optional<StepRole> r = resultRole(step, i); r && r->role == rt::role::kParam) {
        paramResult[r->param] = i;
      }
    }
    for (unsigned i : gradArgs) {
      auto param = cast<FlatSymbolRefAttr>(step.getArgAttrDict(i).get(kRoleParamAttr));
      if (!paramResult.count(param.getValue())) {
        return step.emitError() << "dist-partition: @optimizer_step returns no new value of "
                                << param;
      }
      names.push_back(param.getValue());
    }
    size_t count = gradArgs.size();
    MLIRContext *context = step.getContext();
    OpBuilder builder = OpBuilder::atBlockBegin(&entry);

    // 1. Gradients summed over dp: whole (all-reduce) or this rank's flat shard (ZeRO-1);
    // with hybrid sharding, reduce-scattered in the sharding group and the shard all-reduced
    // over the replicas.
    SmallVector<Value> grads;
    SmallVector<RankedTensorType> paramTypes;
    auto sharding = dist::ShardingAttr::get(
        context, FlatSymbolRefAttr::get(context, kMesh),
        ArrayAttr::get(context, {ArrayAttr::get(context, {StringAttr::get(context, shardAxis)})}),
        DenseI64ArrayAttr());
    llvm::DenseMap<Value, size_t> gradIndex; // the gradient value an update reads -> parameter
    for (size_t i = 0; i < count; ++i) {
      Value grad = entry.getArgument(gradArgs[i]);
      auto type = cast<RankedTensorType>(grad.getType());
      paramTypes.push_back(
          cast<RankedTensorType>(ret.getOperand(paramResult.lookup(names[i])).getType()));
      // A sequence-parallel norm weight has one gradient share per sequence slice.
      auto param = SymbolTable::lookupSymbolIn(model, names[i]);
      if (tp > 1 && param && param->hasAttr("dist.sequence_parallel")) {
        Value sum = collective<dist::AllReduceStartOp>(builder, grad.getLoc(), grad, type, "tp");
        grad.replaceAllUsesExcept(sum,
                                  sum.getDefiningOp<dist::DoneOp>().getFuture().getDefiningOp());
        grad = sum;
      }
      gradIndex[grad] = i;
      if (dp == 1) {
        grads.push_back(grad);
        continue;
      }
      if (!zero) {
        Value sum = collective<dist::AllReduceStartOp>(builder, grad.getLoc(), grad, type, "dp");
        grad.replaceAllUsesExcept(sum,
                                  sum.getDefiningOp<dist::DoneOp>().getFuture().getDefiningOp());
        grads.push_back(sum);
        continue;
      }
      int64_t elements = type.getNumElements();
      if (elements % shards != 0) {
        return step.emitError() << "dist-partition: zero=" << mesh.getZero()
                                << " shards every parameter over " << shardAxis << "=" << shards
                                << ", but @" << names[i] << " has " << elements
                                << " elements on each rank";
      }
      auto flatType = RankedTensorType::get({elements}, type.getElementType());
      auto shardType = RankedTensorType::get({elements / shards}, type.getElementType());
      Value flat = tg::ReshapeOp::create(builder, grad.getLoc(), flatType, grad);
      Value shard = collective<dist::ReduceScatterStartOp>(builder, grad.getLoc(), flat, shardType,
                                                           shardAxis);
      if (replicas > 1) {
        shard = collective<dist::AllReduceStartOp>(builder, grad.getLoc(), shard, shardType,
                                                   dist::kReplicaAxis);
      }
      grads.push_back(shard);
      // Its optimizer state, whatever the optimizer keeps, as this rank's flat shard.
      for (unsigned index : stateArgs.lookup(names[i])) {
        BlockArgument state = entry.getArgument(index);
        auto stateType = cast<RankedTensorType>(state.getType());
        if (stateType.getNumElements() != elements) {
          return step.emitError() << "dist-partition: the " << argRole(step, index)->role
                                  << " state of @" << names[i] << " is " << stateType
                                  << ", not one element per parameter element";
        }
        state.setType(RankedTensorType::get({elements / shards}, stateType.getElementType()));
        step.setArgAttr(index, "dist.sharding", sharding);
      }
    }

    // 2. The global norm with every element counted once.
    if (tp > 1 || pp > 1 || (zero && dp > 1)) {
      auto norms = llvm::to_vector(entry.getOps<tg::GlobalNormOp>());
      if (norms.size() != 1) {
        return step.emitError() << "dist-partition: expected one tg.global_norm";
      }
      tg::GlobalNormOp norm = norms.front();
      builder.setInsertionPoint(norm);
      SmallVector<Value> split, replicated;
      for (size_t i = 0; i < count; ++i) {
        auto param = SymbolTable::lookupSymbolIn(model, names[i]);
        (param && param->hasAttr("dist.sharding") ? split : replicated).push_back(grads[i]);
      }
      Location loc = norm.getLoc();
      auto scalar = RankedTensorType::get({}, builder.getF32Type());
      Value total;
      if (!split.empty()) {
        total = tg::SumSquaresOp::create(builder, loc, scalar, split);
        if (tp > 1) {
          total = collective<dist::AllReduceStartOp>(builder, loc, total, scalar, "tp");
        }
      }
      if (!replicated.empty()) {
        Value once = tg::SumSquaresOp::create(builder, loc, scalar, replicated);
        total = total ? tg::AddOp::create(builder, loc, total, once).getResult() : once;
      }
      if (pp > 1) { // every stage holds its own parameters
        total = collective<dist::AllReduceStartOp>(builder, loc, total, scalar, "pp");
      }
      if (zero && dp > 1) { // the replicas of a shard hold the same elements
        total = collective<dist::AllReduceStartOp>(builder, loc, total, scalar, shardAxis);
      }
      Value globalNorm = tg::SqrtOp::create(builder, loc, scalar, total);
      norm.getResult().replaceAllUsesWith(globalNorm);
      norm.erase();
    }
    if (!zero || dp == 1) {
      return success();
    }

    // 3. ZeRO-1: each update (elementwise over a parameter's state and gradient) on the
    // shards; the new parameter is the gather of the rounded shard of the new master (the
    // update result it was converted from).
    // What it returned before (an erased update drops its uses, the return's operands too).
    const SmallVector<Value> original(ret.getOperands());
    SmallVector<Value> returned(original);
    for (Operation *update : updateOps(entry, stateArgs)) {
      size_t i = count;
      for (Value operand : update->getOperands()) {
        if (auto found = gradIndex.find(operand); found != gradIndex.end()) {
          i = found->second;
        }
      }
      if (i >= count) {
        return update->emitError()
               << "dist-partition: " << update->getName() << " must read a gradient argument";
      }
      builder.setInsertionPoint(update);
      IRMapping mapping;
      for (Value operand : update->getOperands()) {
        if (auto found = gradIndex.find(operand); found != gradIndex.end() && found->second == i) {
          mapping.map(operand, grads[i]);
        }
      }
      Operation *sharded = builder.clone(*update, mapping);
      for (auto [result, old] : llvm::zip(sharded->getResults(), update->getResults())) {
        auto oldType = cast<RankedTensorType>(old.getType());
        result.setType(
            RankedTensorType::get({oldType.getNumElements() / shards}, oldType.getElementType()));
      }
      unsigned valueIndex = paramResult.lookup(names[i]);
      Value newValue = original[valueIndex];
      if (auto convert = newValue.getDefiningOp<tg::ConvertOp>()) {
        newValue = convert.getInput();
      }
      auto master = dyn_cast<OpResult>(newValue);
      if (!master || master.getOwner() != update) {
        return update->emitError() << "dist-partition: the new value of @" << names[i]
                                   << " is not a result of its update";
      }
      RankedTensorType paramType = paramTypes[i];
      Value shard = sharded->getResult(master.getResultNumber());
      auto shardType = cast<RankedTensorType>(shard.getType());
      if (paramType.getElementType() != shardType.getElementType()) {
        shard = tg::ConvertOp::create(
            builder, update->getLoc(),
            RankedTensorType::get(shardType.getShape(), paramType.getElementType()), shard);
      }
      if (shardParameters) {
        // ZeRO-3: the parameter stays a shard (dist-shard-parameters gathers it where read).
        returned[valueIndex] = shard;
      } else {
        auto flatType =
            RankedTensorType::get({paramType.getNumElements()}, paramType.getElementType());
        Value gathered = collective<dist::AllGatherStartOp>(builder, update->getLoc(), shard,
                                                            flatType, shardAxis);
        returned[valueIndex] =
            tg::ReshapeOp::create(builder, update->getLoc(), paramType, gathered);
      }
      // The new state: the sharded update's results where the old ones were returned.
      for (auto [j, operand] : llvm::enumerate(original)) {
        auto result = dyn_cast<OpResult>(operand);
        if (result && result.getOwner() == update && j != valueIndex) {
          returned[j] = sharded->getResult(result.getResultNumber());
        }
      }
      // The old update's users (the return, converts to the parameter type) go away below.
      update->dropAllUses();
      update->erase();
    }
    OpBuilder atReturn(ret);
    func::ReturnOp::create(atReturn, ret.getLoc(), returned);
    ret.erase();
    // Ops left without users (the replicated converts) are dead.
    for (bool erased = true; erased;) {
      SmallVector<Operation *> dead;
      for (Operation &op : entry.without_terminator()) {
        if (op.use_empty() && isa<tg::ConvertOp, tg::ReshapeOp>(op)) {
          dead.push_back(&op);
        }
      }
      for (Operation *op : dead) {
        op->erase();
      }
      erased = !dead.empty();
    }
    step.setFunctionType(FunctionType::get(context, entry.getArgumentTypes(),
                                           entry.getTerminator()->getOperandTypes()));
    return success();
  }

  /// The optimizer's per-parameter updates of @optimizer_step (tg-optimizer's): the element
  /// programs that read a parameter's optimizer state (not AdamW's step-wide bias
  /// corrections).
  static SmallVector<Operation *>
  updateOps(Block &entry, const llvm::StringMap<SmallVector<unsigned>> &stateArgs) {
    llvm::DenseSet<Value> state;
    for (const auto &param : stateArgs) {
      for (unsigned index : param.second) {
        state.insert(entry.getArgument(index));
      }
    }
    SmallVector<Operation *> updates;
    for (Operation &op : entry) {
      if (isa<tg::ElementwiseOp>(op) &&
          llvm::any_of(op.getOperands(), [&](Value operand) { return state.contains(operand); })) {
        updates.push_back(&op);
      }
    }
    return updates;
  }

  dist::MeshOp mesh;
  int64_t dp = 1, tp = 1, pp = 1;
  bool zero = false;            // optimizer state sharded over dp (zero=1 and zero=3)
  bool shardParameters = false; // zero=3: the new parameters are returned as shards
  StringRef shardAxis = "dp";   // what ZeRO shards over: dp, or dp_shard (hsdp)
  int64_t shards = 1;           // its size
  int64_t replicas = 1;         // hsdp: the ranks holding each shard (dp_replicate's size)
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "dist-partition", kReassociation,
    "gradients summed over dp ranks, the global norm from per-shard partial sums");
