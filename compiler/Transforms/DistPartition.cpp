//===- DistPartition.cpp - One rank's program of a device mesh --*- C++ -*-===//
//
// Data parallelism and ZeRO-1 on @optimizer_step; see the pass description in Passes.td.
// The per-rank @forward_backward needs no change for data parallelism: the pipeline scales
// its loss by 1 / (micro-batches per rank × dp), so summing gradients over dp gives the
// global batch's mean-loss gradient.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "dist-partition"

namespace mlperf {
#define GEN_PASS_DEF_DISTPARTITIONPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

constexpr StringLiteral kMesh = "mesh";

struct DistPartitionPass : impl::DistPartitionPassBase<DistPartitionPass> {
  using DistPartitionPassBase::DistPartitionPassBase;

  void runOnOperation() override {
    for (auto model : getOperation().getOps<tg::ModelOp>()) {
      if (failed(runOnModel(model))) {
        return signalPassFailure();
      }
    }
  }

  LogicalResult runOnModel(tg::ModelOp model) {
    if (tp != 1 || pp != 1 || vp != 1 || sp) {
      return model.emitError()
             << "dist-partition: tensor (tp), sequence (sp) and pipeline (pp, vp) parallelism "
                "are not partitioned yet; this compiler partitions data parallelism (dp) and "
                "ZeRO-1 (zero=1) only";
    }
    if (dp < 1 || nodes * gpusPerNode != dp * tp * pp || (zero != 0 && zero != 1)) {
      return model.emitError() << "dist-partition: dp × tp × pp = " << dp * tp * pp
                               << " ranks does not match the cluster " << nodes << "x"
                               << gpusPerNode << ", or zero is not 0 or 1";
    }
    if (SymbolTable::lookupSymbolIn(model, kMesh)) {
      return model.emitError() << "dist-partition: the model is already partitioned (@mesh)";
    }
    auto step = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "optimizer_step"));
    if (!step) {
      return model.emitError() << "dist-partition needs @optimizer_step: run tg-optimizer first";
    }
    OpBuilder builder(model.getContext());
    builder.setInsertionPointToStart(&model.getBody().front());
    dist::MeshOp::create(builder, model.getLoc(), builder.getStringAttr(kMesh), builder.getStrArrayAttr({"dp", "tp", "pp"}),
                         builder.getDenseI64ArrayAttr({dp, tp, pp}),
                         builder.getI64IntegerAttr(nodes), builder.getI64IntegerAttr(gpusPerNode),
                         builder.getI64IntegerAttr(vp), builder.getBoolAttr(sp),
                         builder.getI64IntegerAttr(zero));
    if (dp == 1) {
      return success(); // one data-parallel rank: nothing to reduce or shard
    }
    return zero == 1 ? shardOptimizer(step) : allReduceGradients(step);
  }

  /// `value` sent through a collective start/done pair over dp.
  template <typename StartOp>
  Value collective(OpBuilder &builder, Location loc, Value value, RankedTensorType resultType) {
    auto future = StartOp::create(builder, loc, dist::FutureType::get(builder.getContext(), resultType), value,
                                  FlatSymbolRefAttr::get(builder.getContext(), kMesh),
                                  builder.getStrArrayAttr({"dp"}));
    return dist::DoneOp::create(builder, loc, resultType, future).getResult();
  }

  LogicalResult allReduceGradients(func::FuncOp step) {
    size_t count = parameterCount(step);
    Block &entry = step.getBody().front();
    OpBuilder builder = OpBuilder::atBlockBegin(&entry);
    for (size_t i = 0; i < count; ++i) {
      BlockArgument grad = entry.getArgument(1 + i);
      Value sum = collective<dist::AllReduceStartOp>(builder, grad.getLoc(), grad,
                                                     cast<RankedTensorType>(grad.getType()));
      grad.replaceAllUsesExcept(sum, sum.getDefiningOp<dist::DoneOp>()
                                         .getFuture()
                                         .getDefiningOp());
    }
    return success();
  }

  static size_t parameterCount(func::FuncOp step) {
    return (step.getNumArguments() - 1) / 4;
  }

  LogicalResult shardOptimizer(func::FuncOp step) {
    size_t count = parameterCount(step);
    Block &entry = step.getBody().front();
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    MLIRContext *context = step.getContext();
    auto sharding = dist::ShardingAttr::get(
        context, FlatSymbolRefAttr::get(context, kMesh),
        ArrayAttr::get(context, {ArrayAttr::get(context, {StringAttr::get(context, "dp")})}));

    // 1. Every gradient reduce-scattered into this rank's flat shard; state arguments shrink.
    OpBuilder builder = OpBuilder::atBlockBegin(&entry);
    SmallVector<Value> gradShards;
    SmallVector<RankedTensorType> paramTypes;
    for (size_t i = 0; i < count; ++i) {
      BlockArgument grad = entry.getArgument(1 + i);
      auto type = cast<RankedTensorType>(grad.getType());
      paramTypes.push_back(cast<RankedTensorType>(ret.getOperand(i).getType()));
      int64_t elements = type.getNumElements();
      if (elements % dp != 0) {
        ArrayAttr names = step->getAttrOfType<ArrayAttr>("tg.parameters");
        return step.emitError() << "dist-partition: zero=1 shards every parameter over dp="
                                << dp << ", but "
                                << (names ? names[i] : Attribute(builder.getIndexAttr(i)))
                                << " has " << elements << " elements";
      }
      auto flatType = RankedTensorType::get({elements}, type.getElementType());
      auto shardType = RankedTensorType::get({elements / dp}, type.getElementType());
      Value flat = tg::ReshapeOp::create(builder, grad.getLoc(), flatType, grad);
      gradShards.push_back(
          collective<dist::ReduceScatterStartOp>(builder, grad.getLoc(), flat, shardType));
      auto stateShard = RankedTensorType::get({elements / dp}, builder.getF32Type());
      for (size_t group = 1; group <= 3; ++group) {
        unsigned index = 1 + group * count + i;
        entry.getArgument(index).setType(stateShard);
        step.setArgAttr(index, "dist.sharding", sharding);
      }
    }

    // 2. The global norm: each rank's sum of squares over its shards, summed over dp.
    auto norms = llvm::to_vector(entry.getOps<tg::GlobalNormOp>());
    if (norms.size() != 1) {
      return step.emitError() << "dist-partition: expected one tg.global_norm in @optimizer_step";
    }
    tg::GlobalNormOp norm = norms.front();
    builder.setInsertionPoint(norm);
    auto scalar = RankedTensorType::get({}, builder.getF32Type());
    Value squares = tg::SumSquaresOp::create(builder, norm.getLoc(), scalar, gradShards);
    Value total = collective<dist::AllReduceStartOp>(builder, norm.getLoc(), squares, scalar);
    Value globalNorm = tg::SqrtOp::create(builder, norm.getLoc(), scalar, total);
    norm.getResult().replaceAllUsesWith(globalNorm);
    norm.erase();

    // 3. AdamW on the shards; the new parameter is the gather of the rounded shards.
    SmallVector<Value> returned(ret.getOperands());
    for (auto update : llvm::to_vector(entry.getOps<tg::AdamWOp>())) {
      auto gradArg = dyn_cast<BlockArgument>(update.getGrad());
      if (!gradArg || gradArg.getArgNumber() < 1 || gradArg.getArgNumber() > count) {
        return update.emitError() << "dist-partition: tg.adamw must read a gradient argument";
      }
      size_t i = gradArg.getArgNumber() - 1;
      builder.setInsertionPoint(update);
      Type stateShard = update.getMaster().getType();
      auto sharded = tg::AdamWOp::create(
          builder, update.getLoc(), stateShard, stateShard, stateShard, update.getMaster(),
          update.getM(), update.getV(), gradShards[i], update.getLr(), update.getClip(),
          update.getStep(), update.getBeta1Attr(), update.getBeta2Attr(),
          update.getEpsilonAttr(), update.getWeightDecayAttr());
      RankedTensorType paramType = paramTypes[i];
      Value shard = sharded.getNewMaster();
      auto shardType = cast<RankedTensorType>(shard.getType());
      if (paramType.getElementType() != shardType.getElementType()) {
        shard = tg::ConvertOp::create(
            builder, update.getLoc(),
            RankedTensorType::get(shardType.getShape(), paramType.getElementType()), shard);
      }
      auto flatType = RankedTensorType::get({paramType.getNumElements()}, paramType.getElementType());
      Value gathered =
          collective<dist::AllGatherStartOp>(builder, update.getLoc(), shard, flatType);
      returned[i] = tg::ReshapeOp::create(builder, update.getLoc(), paramType, gathered);
      returned[count + i] = sharded.getNewMaster();
      returned[2 * count + i] = sharded.getNewM();
      returned[3 * count + i] = sharded.getNewV();
      // The old update's users (returns and converts to the parameter type) go away below.
      update->dropAllUses();
      update->erase();
    }
    OpBuilder atReturn(ret);
    func::ReturnOp::create(atReturn, ret.getLoc(), returned);
    ret.erase();
    // Ops left without users (the replicated converts) are dead.
    bool erased = true;
    while (erased) {
      erased = false;
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
};

} // namespace
} // namespace mlperf
