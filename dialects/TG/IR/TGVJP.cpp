//===- TGVJP.cpp - Vector-Jacobian products of the tg ops -------*- C++ -*-===//
//
// One rule per op (tg::VJPOpInterface). Gradients have the type of their primal value, as the
// reference keeps bf16 gradients for bf16 activations; where an op's result type is wider
// than its operands (a matmul with f32 output), the gradient is converted to the operand type
// before the operand's gradient GEMM, as fused attention backward does.
//
//===----------------------------------------------------------------------===//

#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace mlperf::tg {

#include "dialects/TG/IR/TGInterfaces.cpp.inc"

namespace {

/// `value` converted to `type`'s element type if it differs.
Value convertTo(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type) {
    return value;
  }
  return ConvertOp::create(b, loc, type, value);
}

Value matmul(OpBuilder &b, Location loc, Value lhs, Value rhs, bool transposeLhs,
             bool transposeRhs) {
  return MatmulOp::create(b, loc, lhs, rhs, transposeLhs, transposeRhs);
}

/// [d0, ..., dn-2, dn-1] -> [d0·...·dn-2, dn-1].
Value flattenRows(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rows = type.getNumElements() / type.getShape().back();
  return ReshapeOp::create(
      b, loc, RankedTensorType::get({rows, type.getShape().back()}, type.getElementType()), value);
}

} // namespace

LogicalResult AddOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &operandGrads) {
  operandGrads.append({grads[0], grads[0]});
  return success();
}

LogicalResult MulOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(MulOp::create(b, getLoc(), grads[0], getRhs()));
  operandGrads.push_back(MulOp::create(b, getLoc(), grads[0], getLhs()));
  return success();
}

LogicalResult ScaleOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ScaleOp::create(b, getLoc(), grads[0], getFactor()));
  return success();
}

LogicalResult DropoutOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &operandGrads) {
  // The same mask (same key, stream and element numbering) and scale applied to the gradient.
  Operation *copy = b.clone(*getOperation());
  copy->setOperand(0, grads[0]);
  operandGrads.push_back(copy->getResult(0));
  if (getKey()) {
    operandGrads.push_back(nullptr); // the key is data
  }
  return success();
}

LogicalResult SiluOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SiluGradOp::create(b, getLoc(), getInput(), grads[0]));
  return success();
}

LogicalResult SwigluOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &operandGrads) {
  auto grad = SwigluGradOp::create(b, getLoc(), getType(), getType(), getGate(), getUp(), grads[0]);
  operandGrads.append({grad.getGateGrad(), grad.getUpGrad()});
  return success();
}

LogicalResult ConvertOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(convertTo(b, getLoc(), grads[0], getInput().getType()));
  return success();
}

LogicalResult EmbeddingOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(EmbeddingGradOp::create(b, getLoc(), getTable().getType(), getIds(),
                                                 grads[0], getVocabShardAxisAttr()));
  operandGrads.push_back(nullptr); // token ids
  return success();
}

LogicalResult RMSNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &operandGrads) {
  auto grad = RMSNormGradOp::create(b, getLoc(), getInput().getType(), getWeight().getType(),
                                    getInput(), getWeight(), grads[0], getEpsilon());
  operandGrads.append({grad.getInputGrad(), grad.getWeightGrad()});
  return success();
}

LogicalResult AddRMSNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &operandGrads) {
  // As for the pair: the norm's input gradient added to what the sum's other readers sent
  // (nothing to add when it has none: the pair's gradient is the norm's alone).
  auto norm = RMSNormGradOp::create(b, getLoc(), getSum().getType(), getWeight().getType(),
                                    getSum(), getWeight(), grads[1], getEpsilon());
  Value sumGrad = norm.getInputGrad();
  if (!getSum().use_empty()) {
    sumGrad = AddOp::create(b, getLoc(), grads[0], sumGrad);
  }
  operandGrads.append({sumGrad, sumGrad, norm.getWeightGrad()});
  return success();
}

LogicalResult RopeOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &operandGrads) {
  // A rotation's VJP is the inverse rotation.
  auto inverse = cast<RopeOp>(b.clone(*getOperation()));
  inverse->setOperand(0, grads[0]);
  inverse.setInverse(!getInverse());
  operandGrads.push_back(inverse.getResult());
  return success();
}

LogicalResult RopeQKOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &operandGrads) {
  // Both rotations' VJPs, the inverse rotations, in one op.
  auto inverse = cast<RopeQKOp>(b.clone(*getOperation()));
  inverse->setOperands({grads[0], grads[1]});
  inverse.setInverse(!getInverse());
  operandGrads.append({inverse.getQueryResult(), inverse.getKeyResult()});
  return success();
}

LogicalResult CausalMaskOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(CausalMaskOp::create(b, getLoc(), grads[0].getType(), grads[0],
                                              /*gradient=*/true, getWindowAttr()));
  return success();
}

LogicalResult SoftmaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      SoftmaxGradOp::create(b, getLoc(), getType(), getResult(), grads[0], getDimAttr()));
  return success();
}

LogicalResult AttentionOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // grads[1] is the cotangent of lse, which only a fused backward reads: tg-autodiff gives
  // it zeros when nothing uses lse, and any use of it on the loss path has no rule here.
  if (!getLse().use_empty()) {
    return emitOpError() << "tg-autodiff cannot differentiate through lse: it is an output for "
                            "the fused backward, not a value of the model";
  }
  // A fused backward reads the forward's output. The output projection reads its
  // [batch, seq, heads, head_dim] transpose and keeps that for its weight gradient: hand that
  // over instead, so that the backward keeps nothing more alive than the unfused graph did.
  Value output = getResult();
  UnitAttr tokensMajor;
  for (Operation *user : getResult().getUsers()) {
    auto transpose = dyn_cast<TransposeOp>(user);
    if (transpose && transpose.getPermutation() == ArrayRef<int64_t>{0, 2, 1, 3}) {
      output = transpose.getResult();
      tokensMajor = b.getUnitAttr();
      break;
    }
  }
  auto grad = AttentionGradOp::create(b, getLoc(), getQuery().getType(), getKey().getType(),
                                      getValue().getType(), getQuery(), getKey(), getValue(),
                                      output, getLse(), grads[0], getScaleAttr(), getCausalAttr(),
                                      tokensMajor, getWindowAttr());
  operandGrads.append({grad.getQueryGrad(), grad.getKeyGrad(), grad.getValueGrad()});
  return success();
}

LogicalResult RepeatOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(RepeatGradOp::create(b, getLoc(), grads[0], getDimAttr(), getTimesAttr()));
  return success();
}

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(CrossEntropyGradOp::create(b, getLoc(), getLogits().getType(), getLogits(),
                                                    getLabels(), grads[0], getLossMask(),
                                                    getVocabShardAxisAttr(), getIgnoreIndexAttr()));
  operandGrads.push_back(nullptr); // labels
  if (getLossMask()) {
    operandGrads.push_back(nullptr); // the mask is data, not a parameter
  }
  return success();
}

LogicalResult LinearCrossEntropyOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                             SmallVectorImpl<Value> &operandGrads) {
  auto grad = LinearCrossEntropyGradOp::create(
      b, getLoc(), getHidden().getType(), getWeight().getType(), getHidden(), getWeight(),
      getLabels(), grads[0], getLossMask(), getLogitsTypeAttr(), getVocabShardAxisAttr(),
      getIgnoreIndexAttr());
  operandGrads.append({grad.getHiddenGrad(), grad.getWeightGrad(), nullptr});
  if (getLossMask()) {
    operandGrads.push_back(nullptr); // the mask is data, not a parameter
  }
  return success();
}

LogicalResult TransposeOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &operandGrads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [index, dim] : llvm::enumerate(perm)) {
    inverse[dim] = static_cast<int64_t>(index);
  }
  operandGrads.push_back(TransposeOp::create(b, getLoc(), grads[0], inverse));
  return success();
}

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ReshapeOp::create(b, getLoc(), getInput().getType(), grads[0]));
  return success();
}

LogicalResult SplitOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ConcatOp::create(b, getLoc(), grads, getDimAttr()));
  return success();
}

LogicalResult ConcatOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &operandGrads) {
  int64_t dim = getDimAttr().getInt();
  SmallVector<int64_t> sizes;
  for (Value input : getInputs()) {
    sizes.push_back(cast<RankedTensorType>(input.getType()).getDimSize(dim));
  }
  auto split = SplitOp::create(b, getLoc(), grads[0], getDimAttr(), b.getDenseI64ArrayAttr(sizes));
  operandGrads.append(split.getResults().begin(), split.getResults().end());
  return success();
}

LogicalResult MatmulOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value lhs = getLhs(), rhs = getRhs();
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  // A wider (f32) output's gradient enters the operand-precision GEMMs converted.
  bool tA = getTransposeLhs(), tB = getTransposeRhs();
  bool broadcastRhs = rhsType.getRank() == 2 && lhsType.getRank() > 2;
  if (broadcastRhs && tA) {
    return emitOpError() << "tg-autodiff cannot differentiate a transposed batched lhs "
                            "against a shared rank-2 rhs";
  }
  if (isa<Float8E4M3FNType, Float8E5M2Type>(lhsType.getElementType())) {
    // fp8 GEMM gradients need the per-tensor scales tg-fp8 introduces; an unscaled cast of
    // the gradient to E4M3 would silently lose most of it.
    return emitOpError() << "tg-autodiff cannot differentiate an fp8 matmul: fp8 comes from "
                            "tg-fp8, after autodiff";
  }
  Value grad = grads[0];
  auto gradType = cast<RankedTensorType>(grad.getType());
  if (gradType.getElementType() != lhsType.getElementType()) {
    grad = convertTo(b, loc, grad,
                     RankedTensorType::get(gradType.getShape(), lhsType.getElementType()));
  }

  // C = op(A)·op(B). Per layout:      dA                      dB
  //   A·B                          dC·Bᵀ                    Aᵀ·dC
  //   A·Bᵀ                         dC·B                     dCᵀ·A
  //   Aᵀ·B                         B·dCᵀ                    A·dC
  //   Aᵀ·Bᵀ                        Bᵀ·dCᵀ                   dCᵀ·Aᵀ
  Value dA = !tA ? matmul(b, loc, grad, rhs, false, !tB) : matmul(b, loc, rhs, grad, tB, true);
  Value dB;
  if (broadcastRhs) {
    // A weight shared by every batch entry collects the gradient of all rows.
    Value rows = flattenRows(b, loc, lhs), gradRows = flattenRows(b, loc, grad);
    dB = !tB ? matmul(b, loc, rows, gradRows, true, false)
             : matmul(b, loc, gradRows, rows, true, false);
  } else {
    dB = !tB ? (!tA ? matmul(b, loc, lhs, grad, true, false)
                    : matmul(b, loc, lhs, grad, false, false))
             : (!tA ? matmul(b, loc, grad, lhs, true, false)
                    : matmul(b, loc, grad, lhs, true, true));
  }
  operandGrads.append({dA, dB});
  return success();
}

LogicalResult MoeRouteOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                   SmallVectorImpl<Value> &operandGrads) {
  // grads[1] is null: the expert indices are integers and take no gradient.
  operandGrads.push_back(MoeRouteGradOp::create(b, getLoc(), getLogits().getType(), getProbs(),
                                                getExperts(), grads[0]));
  return success();
}

LogicalResult MoePermuteOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &operandGrads) {
  // A gather's VJP is the scatter-add: each token row collects its copies' gradients.
  operandGrads.push_back(
      MoeUnpermuteOp::create(b, getLoc(), getInput().getType(), grads[0], getOrder()));
  operandGrads.push_back(nullptr); // the order is data
  return success();
}

LogicalResult MoeUnpermuteOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      MoePermuteOp::create(b, getLoc(), getInput().getType(), grads[0], getOrder()));
  operandGrads.push_back(nullptr);
  return success();
}

LogicalResult GroupedMatmulOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                        SmallVectorImpl<Value> &operandGrads) {
  // Per expert e, Y_e = X_e · op(W_e): dX_e = dY_e · op(W_e)ᵀ, one grouped GEMM with the
  // transpose flipped, and dW_e = X_eᵀ · dY_e (or its transpose for the stored layout).
  bool transposed = getTransposeRhs();
  operandGrads.push_back(GroupedMatmulOp::create(b, getLoc(), getLhs().getType(), grads[0],
                                                 getRhs(), getGroupSizes(), !transposed));
  operandGrads.push_back(GroupedMatmulWeightGradOp::create(
      b, getLoc(), getRhs().getType(), getLhs(), grads[0], getGroupSizes(), transposed));
  operandGrads.push_back(nullptr); // the group sizes are data
  return success();
}

LogicalResult ScaleRowsOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ScaleRowsOp::create(b, getLoc(), getInput().getType(), grads[0], getScales()));
  operandGrads.push_back(
      RowDotOp::create(b, getLoc(), getScales().getType(), grads[0], getInput()));
  return success();
}

} // namespace mlperf::tg
