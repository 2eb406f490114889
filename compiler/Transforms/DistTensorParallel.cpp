//===- DistTensorParallel.cpp - Megatron tensor parallelism ----*- C++ -*-===//
//
// Places the device mesh and splits @forward over its tp axis before autodiff, the way
// Megatron-LM's parallel layers do: the parameters as their declaration says (`shard`), every
// other value by its op's sharding rule (tg::ShardingRuleOpInterface); no parameter name is
// read. Autodiff then differentiates through the region ops (dist.copy_to_region /
// dist.reduce_from_region) exactly as PyTorch autograd runs Megatron's f and g functions. See
// the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "compiler/Support/PerModelPass.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"

#define DEBUG_TYPE "dist-tensor-parallel"

namespace mlperf {
#define GEN_PASS_DEF_DISTTENSORPARALLELPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

constexpr StringLiteral kMesh = "mesh";
constexpr StringLiteral kTensorAxis = "tp";
/// Where the declaration says which dim of the activations is the sequence (sp splits it).
constexpr StringLiteral kSequenceDimAttr = "tg.sequence_dim";

bool isFloatTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<FloatType>(type.getElementType());
}

RankedTensorType withDim(RankedTensorType type, int64_t dim, int64_t size) {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  return RankedTensorType::get(shape, type.getElementType());
}

struct DistTensorParallelPass
    : PerModelPass<DistTensorParallelPass, impl::DistTensorParallelPassBase> {
  using PerModelPass::PerModelPass;

  LogicalResult runOnModel(tg::ModelOp model) {
    if (dp < 1 || tp < 1 || nodes * gpusPerNode != dp * tp * pp || zero < 0 || zero > 3) {
      return model.emitError() << "dist-tensor-parallel: dp × tp × pp = "
                               << static_cast<int64_t>(dp * tp * pp)
                               << " ranks does not match the cluster "
                               << static_cast<int64_t>(nodes) << "x"
                               << static_cast<int64_t>(gpusPerNode)
                               << ", or zero is not 0, 1, 2 or 3";
    }
    if (SymbolTable::lookupSymbolIn(model, kMesh)) {
      return model.emitError() << "dist-tensor-parallel: the model already has a @mesh";
    }
    OpBuilder builder(model.getContext());
    builder.setInsertionPointToStart(&model.getBody().front());
    dist::MeshOp::create(builder, model.getLoc(), builder.getStringAttr(kMesh),
                         builder.getStrArrayAttr({"dp", "tp", "pp"}),
                         builder.getDenseI64ArrayAttr({dp, tp, pp}),
                         builder.getI64IntegerAttr(nodes), builder.getI64IntegerAttr(gpusPerNode),
                         builder.getI64IntegerAttr(vp), builder.getBoolAttr(sp),
                         builder.getI64IntegerAttr(zero), builder.getI64IntegerAttr(hsdp));
    if (tp == 1) {
      return success();
    }
    if (SymbolTable::lookupSymbolIn(model, "forward_backward")) {
      return model.emitError() << "dist-tensor-parallel splits @forward before tg-autodiff";
    }
    auto forward = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward"));
    if (!forward) {
      return model.emitError() << "dist-tensor-parallel needs @forward";
    }
    if (sp) {
      auto seqDim = forward->getAttrOfType<IntegerAttr>(kSequenceDimAttr);
      if (!seqDim || seqDim.getInt() < 0) {
        return forward.emitError() << "dist-tensor-parallel: sp=on splits the activations' "
                                      "sequence dim, which @forward must declare ("
                                   << kSequenceDimAttr << " = <dim>)";
      }
      sequenceDim = seqDim.getInt();
    }
    if (failed(shardParameters(model))) {
      return failure();
    }
    return shardForward(forward);
  }

  /// Applies each parameter's declared tp split: its type becomes this rank's slice.
  LogicalResult shardParameters(tg::ModelOp model) {
    MLIRContext *context = model.getContext();
    for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
      if (param.getRepeat()) {
        return param.emitError() << "dist-tensor-parallel needs concrete parameters: run "
                                    "tg-inline-layers first";
      }
      int64_t dim = param.getDeclaredSplitDim();
      if (dim < 0) {
        continue;
      }
      RankedTensorType type = param.getTensorType();
      if (type.getDimSize(dim) % tp != 0) {
        return param.emitError() << "dist-tensor-parallel: tp=" << static_cast<int64_t>(tp)
                                 << " does not divide dim " << dim << " (" << type.getDimSize(dim)
                                 << ") of " << type << ", which the declaration splits over tp";
      }
      param.setTypeAttr(TypeAttr::get(withDim(type, dim, type.getDimSize(dim) / tp)));
      tg::TensorSplit split;
      split.dim = dim;
      if (std::optional<ArrayRef<int64_t>> blocks = param.getShardBlocks()) {
        for (int64_t block : *blocks) {
          if (block % tp != 0) {
            return param.emitError()
                   << "dist-tensor-parallel: tp=" << static_cast<int64_t>(tp)
                   << " does not divide the block of " << block << " in dim " << dim << " of "
                   << type << " (shard_blocks): every rank holds a slice of every block";
          }
        }
        split.blocks.assign(blocks->begin(), blocks->end());
      }
      param->setAttr("dist.sharding",
                     dist::ShardingAttr::get(context, FlatSymbolRefAttr::get(context, kMesh),
                                             param.getShardAttr(), param.getShardBlocksAttr()));
      // The declaration is applied: dist.sharding now says how the (local) type is split.
      param.removeShardAttr();
      param.removeShardBlocksAttr();
      splitOfParam[param.getSymName()] = split;
    }
    return success();
  }

  LogicalResult shardForward(func::FuncOp forward) {
    MLIRContext *context = forward.getContext();
    auto meshRef = FlatSymbolRefAttr::get(context, kMesh);
    auto tpAxes = ArrayAttr::get(context, {StringAttr::get(context, "tp")});
    OpBuilder builder(context);
    auto shardOf = [&](Value value) {
      auto it = shardDim.find(value);
      return it == shardDim.end() ? tg::TensorSplit() : it->second;
    };
    auto seqDimAttr = builder.getI64IntegerAttr(sequenceDim);
    // The region entry of a replicated value, shared by every column-parallel consumer: with
    // sequence parallelism the all-gather of the sequence slices, else the identity.
    auto enter = [&](Value value, Operation *user) {
      Value &entered = enteredValues[value];
      if (!entered) {
        builder.setInsertionPoint(user);
        auto type = cast<RankedTensorType>(value.getType());
        entered =
            sequenceSplit.contains(value)
                ? dist::AllGatherRegionOp::create(
                      builder, user->getLoc(),
                      withDim(type, sequenceDim, type.getDimSize(sequenceDim) * tp), value, meshRef,
                      tpAxes, seqDimAttr)
                      .getResult()
                : dist::CopyToRegionOp::create(builder, user->getLoc(), value, meshRef, tpAxes)
                      .getResult();
      }
      return entered;
    };
    // The sum of a partial result over tp replaces the result's uses; with sequence
    // parallelism each rank keeps its slice of the sequence.
    auto leave = [&](Value partial) -> LogicalResult {
      builder.setInsertionPointAfterValue(partial);
      auto type = cast<RankedTensorType>(partial.getType());
      if (sp && failed(checkSequenceSlices(partial))) {
        return failure();
      }
      Value reduced =
          sp ? dist::ReduceScatterRegionOp::create(
                   builder, partial.getLoc(),
                   withDim(type, sequenceDim, type.getDimSize(sequenceDim) / tp), partial, meshRef,
                   tpAxes, seqDimAttr)
                   .getResult()
             : dist::ReduceFromRegionOp::create(builder, partial.getLoc(), partial, meshRef, tpAxes)
                   .getResult();
      partial.replaceAllUsesExcept(reduced, reduced.getDefiningOp());
      if (sp) {
        sequenceSplit.insert(reduced);
      }
      return success();
    };
    auto tpAxis = builder.getStringAttr(kTensorAxis);
    for (Operation &op :
         llvm::make_early_inc_range(forward.getBody().front().without_terminator())) {
      if (isa<dist::CopyToRegionOp, dist::ReduceFromRegionOp, dist::AllGatherRegionOp,
              dist::ReduceScatterRegionOp>(op)) {
        continue;
      }
      if (failed(splitSequenceOp(op))) {
        return failure();
      }
      if (auto ref = dyn_cast<tg::ParamRefOp>(op)) {
        auto param = dyn_cast_or_null<tg::ParamOp>(
            SymbolTable::lookupNearestSymbolFrom(&op, ref.getNameAttr()));
        auto split = splitOfParam.find(ref.getName());
        if (param && split != splitOfParam.end()) {
          ref.getResult().setType(param.getTensorType());
          shardDim[ref.getResult()] = split->second;
        }
        continue;
      }
      SmallVector<tg::TensorSplit> operandSplits;
      for (Value operand : op.getOperands()) {
        operandSplits.push_back(shardOf(operand));
      }
      if (llvm::all_of(operandSplits, [](const tg::TensorSplit &split) { return split.dim < 0; })) {
        continue;
      }
      auto rule = dyn_cast<tg::ShardingRuleOpInterface>(op);
      if (!rule) {
        return op.emitError() << "dist-tensor-parallel: " << op.getName()
                              << " has no sharding rule (ShardingRuleOpInterface) for an "
                                 "operand split over tp";
      }
      FailureOr<tg::SplitRule> split = rule.inferSplit(operandSplits, tp);
      if (failed(split)) {
        return op.emitError() << "dist-tensor-parallel: cannot split this op over tp="
                              << static_cast<int64_t>(tp);
      }
      // A whole (replicated) activation used by a split op enters the tensor-parallel region:
      // Megatron's f, whose backward sums the partial gradients over tp.
      for (auto [index, operand] : llvm::enumerate(op.getOperands())) {
        if (operandSplits[index].dim < 0 && isFloatTensor(operand)) {
          op.setOperand(index, enter(operand, &op));
        }
      }
      rule.applySplit(tpAxis, operandSplits, tp);
      if (split->partialSum) {
        if (failed(leave(op.getResult(0)))) { // Megatron's g: the sum over tp of the partials
          return failure();
        }
        continue;
      }
      if (split->resultDim < 0) {
        continue;
      }
      for (Value result : op.getResults()) {
        auto type = cast<RankedTensorType>(result.getType());
        result.setType(withDim(type, split->resultDim, type.getDimSize(split->resultDim) / tp));
        shardDim[result] = tg::TensorSplit{split->resultDim, split->blocks};
      }
    }
    // A whole parameter read both on sequence slices (its gradient summed over tp by
    // dist-partition) and inside a region (already summed by copy_to_region's backward)
    // would have that part of its gradient counted tp times.
    for (auto [value, entered] : enteredValues) {
      auto ref = value.getDefiningOp<tg::ParamRefOp>();
      Operation *param =
          ref ? SymbolTable::lookupNearestSymbolFrom(ref, ref.getNameAttr()) : nullptr;
      if (param && param->hasAttr("dist.sequence_parallel")) {
        return ref.emitError() << "dist-tensor-parallel: @" << ref.getName()
                               << " is read on sequence slices and inside a tensor-parallel "
                                  "region; its gradient would be summed over tp twice";
      }
    }
    return success();
  }

  /// Sequence parallelism outside the tensor-parallel regions: norms, residual adds and other
  /// per-token ops run on this rank's slice of the sequence, by the same sharding rules. A
  /// whole parameter (a norm's weight) then receives only this slice's gradient contribution
  /// (`dist.sequence_parallel`: dist-partition sums it over tp, as Megatron-LM does for
  /// sequence-parallel parameters).
  LogicalResult splitSequenceOp(Operation &op) {
    if (!llvm::any_of(op.getOperands(), [&](Value v) { return sequenceSplit.contains(v); })) {
      return success();
    }
    // An op with a tensor-parallel operand (a column-parallel matmul) enters its region
    // through `enter`, which all-gathers the sequence.
    if (llvm::any_of(op.getOperands(), [&](Value v) { return shardDim.contains(v); })) {
      return success();
    }
    auto rule = dyn_cast<tg::ShardingRuleOpInterface>(op);
    if (!rule) {
      return op.emitError() << "dist-tensor-parallel: " << op.getName()
                            << " has no sharding rule for a sequence slice (sp=on)";
    }
    SmallVector<tg::TensorSplit> operandSplits;
    for (Value operand : op.getOperands()) {
      operandSplits.push_back(
          tg::TensorSplit{sequenceSplit.contains(operand) ? sequenceDim : int64_t(-1), {}});
    }
    FailureOr<tg::SplitRule> split = rule.inferSplit(operandSplits, tp);
    if (failed(split)) {
      return op.emitError() << "dist-tensor-parallel: cannot run this op on a sequence slice "
                               "(sp=on)";
    }
    if (split->partialSum || split->resultDim != sequenceDim || !split->blocks.empty()) {
      return op.emitError() << "dist-tensor-parallel: sequence parallelism keeps the "
                               "sequence split along dim "
                            << sequenceDim << "; this op would not";
    }
    rule.applySplit(StringAttr::get(op.getContext(), kTensorAxis), operandSplits, tp);
    for (auto [index, operand] : llvm::enumerate(op.getOperands())) {
      if (operandSplits[index].dim >= 0) {
        continue;
      }
      auto ref = operand.getDefiningOp<tg::ParamRefOp>();
      Operation *param =
          ref ? SymbolTable::lookupNearestSymbolFrom(ref, ref.getNameAttr()) : nullptr;
      if (!param) {
        return op.emitError() << "dist-tensor-parallel: mixes sequence slices with whole "
                                 "sequences";
      }
      param->setAttr("dist.sequence_parallel", UnitAttr::get(op.getContext()));
    }
    for (Value result : op.getResults()) {
      if (failed(checkSequenceSlices(result))) {
        return failure();
      }
      auto type = cast<RankedTensorType>(result.getType());
      result.setType(withDim(type, sequenceDim, type.getDimSize(sequenceDim) / tp));
      sequenceSplit.insert(result);
    }
    return success();
  }

  /// A value sequence parallelism splits must have the declared sequence dim, of a length tp
  /// divides.
  LogicalResult checkSequenceSlices(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    if (sequenceDim >= type.getRank() || type.getDimSize(sequenceDim) % tp != 0) {
      return value.getDefiningOp()->emitError()
             << "dist-tensor-parallel: sp=on splits dim " << sequenceDim << " (tg.sequence_dim) of "
             << type << " into " << static_cast<int64_t>(tp) << " slices, which it does not have";
    }
    return success();
  }

  llvm::StringMap<tg::TensorSplit> splitOfParam; // the declared tp split by parameter
  llvm::DenseMap<Value, tg::TensorSplit> shardDim;
  llvm::DenseMap<Value, Value> enteredValues;
  llvm::DenseSet<Value> sequenceSplit; // [batch, seq / tp, ...] slices (sp=on)
  int64_t sequenceDim = -1;
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "dist-tensor-parallel", kReassociation,
    "splits contractions and the loss over tp ranks: partial sums added over tp");
