//===- DistTensorParallel.cpp - Megatron tensor parallelism ----*- C++ -*-===//
//
// Places the device mesh and splits @forward over its tp axis before autodiff, the way
// Megatron-LM's parallel layers do: autodiff then differentiates through the region ops
// (dist.copy_to_region / dist.reduce_from_region) exactly as PyTorch autograd runs Megatron's
// f and g functions. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

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
/// Activations are [micro_batch, seq, ...]: sequence parallelism splits dim 1.
constexpr int64_t kSequenceDim = 1;

/// How a parameter is split over tp (Megatron-LM's layer specification for Llama).
enum class WeightKind { kReplicated, kColumn, kRow, kVocab };

WeightKind classify(StringRef name) {
  for (StringRef suffix : {"q_proj.weight", "k_proj.weight", "v_proj.weight", "gate_proj.weight",
                           "up_proj.weight", "lm_head.weight"}) {
    if (name.ends_with(suffix)) {
      return WeightKind::kColumn; // output features split: [out / tp, in]
    }
  }
  if (name.ends_with("o_proj.weight") || name.ends_with("down_proj.weight")) {
    return WeightKind::kRow; // input features split: [out, in / tp]
  }
  if (name.ends_with("embed_tokens.weight")) {
    return WeightKind::kVocab; // vocabulary rows split: [vocab / tp, hidden]
  }
  return WeightKind::kReplicated;
}

RankedTensorType withDim(RankedTensorType type, int64_t dim, int64_t size) {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  return RankedTensorType::get(shape, type.getElementType());
}

struct DistTensorParallelPass : impl::DistTensorParallelPassBase<DistTensorParallelPass> {
  using DistTensorParallelPassBase::DistTensorParallelPassBase;

  void runOnOperation() override {
    for (auto model : getOperation().getOps<tg::ModelOp>()) {
      if (failed(runOnModel(model))) {
        return signalPassFailure();
      }
    }
  }

  LogicalResult runOnModel(tg::ModelOp model) {
    if (dp < 1 || tp < 1 || nodes * gpusPerNode != dp * tp * pp || (zero != 0 && zero != 1)) {
      return model.emitError() << "dist-tensor-parallel: dp × tp × pp = " << dp * tp * pp
                               << " ranks does not match the cluster " << nodes << "x"
                               << gpusPerNode << ", or zero is not 0 or 1";
    }
    if (SymbolTable::lookupSymbolIn(model, kMesh)) {
      return model.emitError() << "dist-tensor-parallel: the model already has a @mesh";
    }
    OpBuilder builder(model.getContext());
    builder.setInsertionPointToStart(&model.getBody().front());
    dist::MeshOp::create(
        builder, model.getLoc(), builder.getStringAttr(kMesh),
        builder.getStrArrayAttr({"dp", "tp", "pp"}), builder.getDenseI64ArrayAttr({dp, tp, pp}),
        builder.getI64IntegerAttr(nodes), builder.getI64IntegerAttr(gpusPerNode),
        builder.getI64IntegerAttr(vp), builder.getBoolAttr(sp), builder.getI64IntegerAttr(zero));
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
    if (failed(shardParameters(model))) {
      return failure();
    }
    return shardForward(forward);
  }

  LogicalResult shardParameters(tg::ModelOp model) {
    MLIRContext *context = model.getContext();
    auto axis = [&](bool split) {
      return split ? ArrayAttr::get(context, {StringAttr::get(context, "tp")})
                   : ArrayAttr::get(context, {});
    };
    for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
      if (param.getRepeat()) {
        return param.emitError() << "dist-tensor-parallel needs concrete parameters: run "
                                    "tg-inline-layers first";
      }
      WeightKind kind = classify(param.getSymName());
      if (kind == WeightKind::kReplicated) {
        continue;
      }
      RankedTensorType type = param.getTensorType();
      int64_t dim = kind == WeightKind::kRow ? 1 : 0;
      if (type.getRank() != 2 || type.getDimSize(dim) % tp != 0) {
        return param.emitError() << "dist-tensor-parallel: " << type << " cannot be split " << tp
                                 << " ways along dim " << dim;
      }
      param.setTypeAttr(TypeAttr::get(withDim(type, dim, type.getDimSize(dim) / tp)));
      param->setAttr(
          "dist.sharding",
          dist::ShardingAttr::get(context, FlatSymbolRefAttr::get(context, kMesh),
                                  ArrayAttr::get(context, {axis(dim == 0), axis(dim == 1)})));
      kinds[param.getSymName()] = kind;
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
      return it == shardDim.end() ? int64_t(-1) : it->second;
    };
    auto seqDimAttr = builder.getI64IntegerAttr(kSequenceDim);
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
                      withDim(type, kSequenceDim, type.getDimSize(kSequenceDim) * tp), value,
                      meshRef, tpAxes, seqDimAttr)
                      .getResult()
                : dist::CopyToRegionOp::create(builder, user->getLoc(), value, meshRef, tpAxes)
                      .getResult();
      }
      return entered;
    };
    // The sum of a partial result over tp replaces the result's uses; with sequence
    // parallelism each rank keeps its slice of the sequence.
    auto leave = [&](Value partial) {
      builder.setInsertionPointAfterValue(partial);
      auto type = cast<RankedTensorType>(partial.getType());
      Value reduced =
          sp ? dist::ReduceScatterRegionOp::create(
                   builder, partial.getLoc(),
                   withDim(type, kSequenceDim, type.getDimSize(kSequenceDim) / tp), partial,
                   meshRef, tpAxes, seqDimAttr)
                   .getResult()
             : dist::ReduceFromRegionOp::create(builder, partial.getLoc(), partial, meshRef, tpAxes)
                   .getResult();
      partial.replaceAllUsesExcept(reduced, reduced.getDefiningOp());
      if (sp) {
        sequenceSplit.insert(reduced);
      }
    };
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
        auto kind = kinds.find(ref.getName());
        if (param && kind != kinds.end()) {
          ref.getResult().setType(param.getTensorType());
          shardDim[ref.getResult()] = kind->second == WeightKind::kRow ? 1 : 0;
          weightKind[ref.getResult()] = kind->second;
        }
        continue;
      }
      if (auto matmul = dyn_cast<tg::MatmulOp>(op)) {
        if (failed(shardMatmul(matmul, shardOf, enter, leave))) {
          return failure();
        }
        continue;
      }
      if (auto embedding = dyn_cast<tg::EmbeddingOp>(op)) {
        if (shardOf(embedding.getTable()) == 0) {
          embedding.setVocabShardAxisAttr(builder.getStringAttr("tp"));
          leave(embedding.getResult()); // other ranks' rows are zero here
        }
        continue;
      }
      if (auto loss = dyn_cast<tg::CrossEntropyOp>(op)) {
        auto logits = cast<RankedTensorType>(loss.getLogits().getType());
        if (shardOf(loss.getLogits()) == logits.getRank() - 1) {
          loss.setVocabShardAxisAttr(builder.getStringAttr("tp"));
        } else if (shardOf(loss.getLogits()) >= 0) {
          return op.emitError() << "dist-tensor-parallel: logits split along a dim other than "
                                   "the vocabulary";
        }
        continue;
      }
      SmallVector<Value> sharded;
      for (Value operand : op.getOperands()) {
        if (shardOf(operand) >= 0) {
          sharded.push_back(operand);
        }
      }
      if (sharded.empty()) {
        continue;
      }
      int64_t dim = shardOf(sharded.front());
      auto input = cast<RankedTensorType>(sharded.front().getType());
      auto result = cast<RankedTensorType>(op.getResult(0).getType());
      if (op.getNumResults() != 1) {
        return op.emitError() << "dist-tensor-parallel: cannot split an op with several results";
      }
      if (auto transpose = dyn_cast<tg::TransposeOp>(op)) {
        ArrayRef<int64_t> permutation = transpose.getPermutation();
        int64_t moved = llvm::find(permutation, dim) - permutation.begin();
        op.getResult(0).setType(withDim(result, moved, input.getDimSize(dim)));
        shardDim[op.getResult(0)] = moved;
        continue;
      }
      if (auto reshape = dyn_cast<tg::ReshapeOp>(op)) {
        int64_t moved = -1;
        int64_t whole = input.getDimSize(dim) * tp;
        ArrayRef<int64_t> out = result.getShape(), in = input.getShape();
        if (out.size() == in.size() + 1 && out.take_front(dim) == in.take_front(dim) &&
            out[dim] * out[dim + 1] == whole && out[dim] % tp == 0) {
          moved = dim; // [.., H·d / tp] -> [.., H / tp, d]
        } else if (out.size() + 1 == in.size() && dim + 1 < static_cast<int64_t>(in.size()) &&
                   out.take_front(dim) == in.take_front(dim) && out[dim] == whole * in[dim + 1]) {
          moved = dim; // [.., H / tp, d] -> [.., H·d / tp]
        }
        if (moved < 0) {
          return op.emitError() << "dist-tensor-parallel: cannot split this reshape of a tensor "
                                   "split along dim "
                                << dim;
        }
        op.getResult(0).setType(withDim(result, moved, out[moved] / tp));
        shardDim[op.getResult(0)] = moved;
        continue;
      }
      if (auto repeat = dyn_cast<tg::RepeatOp>(op)) {
        int64_t times = static_cast<int64_t>(repeat.getDim()) == dim ? repeat.getTimes() : 1;
        op.getResult(0).setType(withDim(result, dim, input.getDimSize(dim) * times));
        shardDim[op.getResult(0)] = dim;
        continue;
      }
      // Element-wise and shape-preserving ops (add, mul, scale, silu, convert, rope,
      // causal_mask, softmax): every tensor operand split the same way.
      if (!isa<tg::AddOp, tg::MulOp, tg::ScaleOp, tg::SiluOp, tg::ConvertOp, tg::RopeOp,
               tg::CausalMaskOp, tg::SoftmaxOp>(op)) {
        return op.emitError() << "dist-tensor-parallel: no tensor-parallel rule for "
                              << op.getName() << " on a tensor split along dim " << dim;
      }
      for (Value operand : op.getOperands()) {
        if (shardOf(operand) != dim ||
            cast<RankedTensorType>(operand.getType()).getShape() != input.getShape()) {
          return op.emitError() << "dist-tensor-parallel: operands split differently";
        }
      }
      if (auto softmax = dyn_cast<tg::SoftmaxOp>(op);
          softmax && static_cast<int64_t>(softmax.getDim()) == dim) {
        return op.emitError() << "dist-tensor-parallel: softmax over the split dim";
      }
      op.getResult(0).setType(RankedTensorType::get(input.getShape(), result.getElementType()));
      shardDim[op.getResult(0)] = dim;
    }
    return success();
  }

  /// Sequence parallelism outside the tensor-parallel regions: norms, residual adds and other
  /// per-token ops run on this rank's slice of the sequence. A norm's weight then receives
  /// only this slice's gradient contribution (`dist.sequence_parallel`: dist-partition sums it
  /// over tp, as Megatron-LM does for sequence-parallel parameters).
  LogicalResult splitSequenceOp(Operation &op) {
    if (!llvm::any_of(op.getOperands(), [&](Value v) { return sequenceSplit.contains(v); }) ||
        isa<tg::MatmulOp>(op)) {
      return success(); // matmuls enter a region through `enter`
    }
    if (auto norm = dyn_cast<tg::RMSNormOp>(op)) {
      if (auto ref = norm.getWeight().getDefiningOp<tg::ParamRefOp>()) {
        if (Operation *param = SymbolTable::lookupNearestSymbolFrom(ref, ref.getNameAttr())) {
          param->setAttr("dist.sequence_parallel", UnitAttr::get(op.getContext()));
        }
      }
      norm.getResult().setType(norm.getInput().getType());
      sequenceSplit.insert(norm.getResult());
      return success();
    }
    if (!isa<tg::AddOp, tg::MulOp, tg::ScaleOp, tg::SiluOp, tg::ConvertOp>(op)) {
      return op.emitError() << "dist-tensor-parallel: no sequence-parallel rule for "
                            << op.getName();
    }
    auto input = cast<RankedTensorType>(op.getOperand(0).getType());
    for (Value operand : op.getOperands()) {
      if (!sequenceSplit.contains(operand) ||
          cast<RankedTensorType>(operand.getType()).getShape() != input.getShape()) {
        return op.emitError() << "dist-tensor-parallel: mixes sequence slices with whole "
                                 "sequences";
      }
    }
    auto result = cast<RankedTensorType>(op.getResult(0).getType());
    op.getResult(0).setType(RankedTensorType::get(input.getShape(), result.getElementType()));
    sequenceSplit.insert(op.getResult(0));
    return success();
  }

  template <typename ShardOf, typename Enter, typename Leave>
  LogicalResult shardMatmul(tg::MatmulOp matmul, ShardOf shardOf, Enter enter, Leave leave) {
    Value lhs = matmul.getLhs(), rhs = matmul.getRhs();
    int64_t ls = shardOf(lhs), rs = shardOf(rhs);
    if (ls < 0 && rs < 0) {
      return success();
    }
    auto result = cast<RankedTensorType>(matmul.getType());
    int64_t last = result.getRank() - 1;
    auto kind = weightKind.find(rhs);
    if (kind != weightKind.end()) {
      if (!matmul.getTransposeRhs() || matmul.getTransposeLhs()) {
        return matmul.emitError() << "dist-tensor-parallel: a linear layer is x · Wᵀ "
                                     "(transpose_rhs) with W [out, in]";
      }
      if (kind->second == WeightKind::kColumn || kind->second == WeightKind::kVocab) {
        if (ls >= 0) {
          return matmul.emitError() << "dist-tensor-parallel: a column-parallel linear needs a "
                                       "replicated input";
        }
        matmul->setOperand(0, enter(lhs, matmul));
        matmul.getResult().setType(withDim(result, last, result.getDimSize(last) / tp));
        shardDim[matmul.getResult()] = last;
        return success();
      }
      // Row-parallel: the input's features are split like the weight's; partial sums.
      if (ls != cast<RankedTensorType>(lhs.getType()).getRank() - 1) {
        return matmul.emitError() << "dist-tensor-parallel: a row-parallel linear needs its "
                                     "input split along the features";
      }
      leave(matmul.getResult());
      return success();
    }
    // Two activations (attention): split along the same batch (head) dim.
    if (ls != rs || ls >= last - 1) {
      return matmul.emitError() << "dist-tensor-parallel: a matmul of activations needs both "
                                   "operands split along the same batch dim";
    }
    matmul.getResult().setType(withDim(result, ls, result.getDimSize(ls) / tp));
    shardDim[matmul.getResult()] = ls;
    return success();
  }

  llvm::StringMap<WeightKind> kinds;
  llvm::DenseMap<Value, int64_t> shardDim;
  llvm::DenseMap<Value, WeightKind> weightKind;
  llvm::DenseMap<Value, Value> enteredValues;
  llvm::DenseSet<Value> sequenceSplit; // [batch, seq / tp, ...] slices (sp=on)
};

} // namespace
} // namespace mlperf
