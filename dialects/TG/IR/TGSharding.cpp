//===- TGSharding.cpp - Sharding rules of tg ops ---------------*- C++ -*-===//
//
// ShardingRuleOpInterface: how each op's result is split over a mesh axis when its operands
// are. Megatron-LM's column/row-parallel linears, vocab-parallel embedding and cross-entropy,
// and head-parallel attention all follow from these rules and the declared parameter splits.
//
//===----------------------------------------------------------------------===//

#include "dialects/TG/IR/TGOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlperf::tg;

namespace {

/// The single split dim shared by every operand, or -1 when they are all replicated. Fails
/// when operands are split differently (or some are replicated and some not): element-wise
/// ops combine elements at the same index, so every operand must hold the same slice.
FailureOr<int64_t> commonSplit(Operation *op, ArrayRef<int64_t> dims) {
  int64_t dim = dims.empty() ? -1 : dims.front();
  for (auto [index, operandDim] : llvm::enumerate(dims)) {
    if (operandDim != dim) {
      return op->emitOpError() << "operands split differently (operand 0 along dim " << dim
                               << ", operand " << index << " along dim " << operandDim
                               << "; -1: whole)";
    }
  }
  return dim;
}

FailureOr<SplitRule> elementwise(Operation *op, ArrayRef<int64_t> dims) {
  FailureOr<int64_t> dim = commonSplit(op, dims);
  if (failed(dim)) {
    return failure();
  }
  return SplitRule{*dim, false};
}

/// An element-wise rule that may not split `forbidden` dims (the dim a softmax normalizes,
/// the positions a rotary embedding or causal mask reads from the index).
FailureOr<SplitRule> elementwiseExcept(Operation *op, ArrayRef<int64_t> dims,
                                       ArrayRef<int64_t> forbidden, StringRef why) {
  FailureOr<SplitRule> rule = elementwise(op, dims);
  if (succeeded(rule) && llvm::is_contained(forbidden, rule->resultDim)) {
    return op->emitOpError() << "cannot be split along dim " << rule->resultDim << ": " << why;
  }
  return rule;
}

int64_t rankOf(Value value) { return cast<RankedTensorType>(value.getType()).getRank(); }

} // namespace

FailureOr<SplitRule> AddOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  return elementwise(*this, dims);
}
FailureOr<SplitRule> MulOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  return elementwise(*this, dims);
}
FailureOr<SplitRule> ScaleOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  return elementwise(*this, dims);
}
FailureOr<SplitRule> SiluOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  return elementwise(*this, dims);
}
FailureOr<SplitRule> ConvertOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  return elementwise(*this, dims);
}

FailureOr<SplitRule> RopeOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  // [batch, seq, heads, head_dim]: the angle depends on the position and rotates pairs of
  // head_dim entries, so only batch and heads split.
  return elementwiseExcept(*this, dims, {1, 3},
                           "a rotary embedding reads positions (dim 1) and pairs head_dim "
                           "entries (dim 3)");
}

FailureOr<SplitRule> CausalMaskOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  int64_t rank = rankOf(getInput());
  return elementwiseExcept(*this, dims, {rank - 2, rank - 1},
                           "the mask compares query and key positions");
}

FailureOr<SplitRule> SoftmaxOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  return elementwiseExcept(*this, dims, {static_cast<int64_t>(getDim())},
                           "the softmax normalizes over it");
}

FailureOr<SplitRule> RMSNormOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  // Normalizes over the last dim with a weight along it: rows split, the weight replicated.
  int64_t input = dims[0], weight = dims[1];
  if (weight >= 0 || input == rankOf(getInput()) - 1) {
    return emitOpError() << "normalizes over the last dim: only the rows of its input can be "
                            "split, and its weight is whole (input split along dim "
                         << input << ", weight along dim " << weight << ")";
  }
  return SplitRule{input, false};
}

FailureOr<SplitRule> TransposeOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  if (dims[0] < 0) {
    return SplitRule{};
  }
  ArrayRef<int64_t> permutation = getPermutation();
  return SplitRule{llvm::find(permutation, dims[0]) - permutation.begin(), false};
}

FailureOr<SplitRule> ReshapeOp::inferSplit(ArrayRef<int64_t> dims, int64_t parts) {
  int64_t dim = dims[0];
  if (dim < 0) {
    return SplitRule{};
  }
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getType());
  ArrayRef<int64_t> out = result.getShape(), in = input.getShape();
  int64_t whole = in[dim] * parts;
  bool sameLeading =
      out.size() > static_cast<size_t>(dim) && out.take_front(dim) == in.take_front(dim);
  // [.., H·d / parts] -> [.., H / parts, d]: a rank holds whole groups of H.
  if (sameLeading && out.size() == in.size() + 1 && out[dim] * out[dim + 1] == whole) {
    if (out[dim] % parts != 0) {
      return emitOpError() << parts << " ranks do not divide the " << out[dim] << " groups of dim "
                           << dim << " (" << result << "): each rank must hold whole groups";
    }
    return SplitRule{dim, false};
  }
  // [.., H / parts, d] -> [.., H·d / parts]
  if (sameLeading && out.size() + 1 == in.size() && dim + 1 < input.getRank() &&
      out[dim] == whole * in[dim + 1]) {
    return SplitRule{dim, false};
  }
  return emitOpError() << "has no split rule for an input split " << parts << " ways along dim "
                       << dim << " (" << input << " -> " << result
                       << "): only splitting or merging the split dim with the dim after it";
}

FailureOr<SplitRule> RepeatOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  // Repeating along the split dim repeats each rank's slice: grouped-query attention's kv
  // heads stay with the query heads they serve when both split by the same count.
  return SplitRule{dims[0], false};
}

FailureOr<SplitRule> SplitOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  if (dims[0] >= 0 && dims[0] == static_cast<int64_t>(getDim())) {
    return emitOpError() << "cannot split pieces out of dim " << dims[0]
                         << " while that dim is split over ranks";
  }
  return SplitRule{dims[0], false};
}

FailureOr<SplitRule> ConcatOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  FailureOr<SplitRule> rule = elementwise(*this, dims);
  if (succeeded(rule) && rule->resultDim == static_cast<int64_t>(getDim())) {
    return emitOpError() << "cannot concatenate along dim " << rule->resultDim
                         << " while that dim is split over ranks";
  }
  return rule;
}

FailureOr<SplitRule> MatmulOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  int64_t lhs = dims[0], rhs = dims[1];
  int64_t lhsRank = rankOf(getLhs()), rhsRank = rankOf(getRhs());
  int64_t rank = rankOf(getResult());
  // The contraction (K) dims and the free dims (M of lhs, N of rhs) of each operand.
  int64_t lhsK = getTransposeLhs() ? lhsRank - 2 : lhsRank - 1;
  int64_t lhsM = getTransposeLhs() ? lhsRank - 1 : lhsRank - 2;
  int64_t rhsK = getTransposeRhs() ? rhsRank - 1 : rhsRank - 2;
  int64_t rhsN = getTransposeRhs() ? rhsRank - 2 : rhsRank - 1;
  if (lhs < 0 && rhs == rhsN) {
    return SplitRule{rank - 1, false}; // column-parallel: output features split
  }
  if (lhs == lhsK && rhs == rhsK) {
    return SplitRule{-1, true}; // row-parallel: each rank sums its slice of K
  }
  if (lhs == lhsM && rhs < 0) {
    return SplitRule{rank - 2, false};
  }
  if (lhs >= 0 && lhs < lhsRank - 2 && (rhs == lhs || (rhs < 0 && rhsRank == 2))) {
    return SplitRule{lhs, false}; // batch (attention heads) split on both, or a shared weight
  }
  return emitOpError() << "has no split rule for lhs split along dim " << lhs
                       << " and rhs along dim " << rhs
                       << " (-1: whole): column-parallel splits rhs's output features, "
                          "row-parallel both contraction dims, batch-parallel the same batch "
                          "dim of both";
}

FailureOr<SplitRule> EmbeddingOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  int64_t table = dims[0], ids = dims[1];
  if (ids >= 0) {
    return emitOpError() << "looks up whole token ids: they cannot be split here";
  }
  if (table == 0) {
    return SplitRule{-1, true}; // vocab-parallel: rows other ranks hold contribute zero
  }
  return SplitRule{table < 0 ? -1 : rankOf(getResult()) - 1, false};
}

void EmbeddingOp::applySplit(StringAttr axis, ArrayRef<int64_t> dims) {
  if (dims[0] == 0) {
    setVocabShardAxisAttr(axis);
  }
}

FailureOr<SplitRule> CrossEntropyOp::inferSplit(ArrayRef<int64_t> dims, int64_t) {
  int64_t logits = dims[0];
  if (dims[1] >= 0 || (logits >= 0 && logits != rankOf(getLogits()) - 1)) {
    return emitOpError() << "can only be split along the vocabulary (the last dim of the "
                            "logits), got logits along dim "
                         << logits << " and labels along dim " << dims[1];
  }
  return SplitRule{}; // the vocab-parallel loss is the whole loss on every rank
}

void CrossEntropyOp::applySplit(StringAttr axis, ArrayRef<int64_t> dims) {
  if (dims[0] >= 0) {
    setVocabShardAxisAttr(axis);
  }
}
