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

SplitRule split(int64_t dim, ArrayRef<int64_t> blocks = {}) {
  SplitRule rule;
  rule.resultDim = dim;
  rule.blocks.assign(blocks.begin(), blocks.end());
  return rule;
}

SplitRule partialSum() {
  SplitRule rule;
  rule.partialSum = true;
  return rule;
}

/// The split shared by every operand, or whole when they are all whole. Fails when operands
/// are split differently (or some are whole and some not): element-wise ops combine elements
/// at the same index, so every operand must hold the same slice.
FailureOr<SplitRule> elementwise(Operation *op, ArrayRef<TensorSplit> operands) {
  const TensorSplit &first = operands.front();
  for (auto [index, operand] : llvm::enumerate(operands)) {
    if (operand.dim != first.dim || operand.blocks != first.blocks) {
      return op->emitOpError() << "operands split differently (operand 0 along dim " << first.dim
                               << ", operand " << index << " along dim " << operand.dim
                               << "; -1: whole)";
    }
  }
  return split(first.dim, first.blocks);
}

/// An element-wise rule that may not split `forbidden` dims (the dim a softmax normalizes,
/// the positions a rotary embedding or causal mask reads from the index).
FailureOr<SplitRule> elementwiseExcept(Operation *op, ArrayRef<TensorSplit> operands,
                                       ArrayRef<int64_t> forbidden, StringRef why) {
  FailureOr<SplitRule> rule = elementwise(op, operands);
  if (succeeded(rule) && llvm::is_contained(forbidden, rule->resultDim)) {
    return op->emitOpError() << "cannot be split along dim " << rule->resultDim << ": " << why;
  }
  return rule;
}

/// Refuses an operand made of blocks where the op needs one contiguous split.
LogicalResult contiguous(Operation *op, const TensorSplit &operand, StringRef why) {
  if (operand.blocks.empty()) {
    return success();
  }
  return op->emitOpError() << "cannot take an operand split by blocks (a fused tensor) along "
                              "dim "
                           << operand.dim << ": " << why;
}

int64_t rankOf(Value value) { return cast<RankedTensorType>(value.getType()).getRank(); }

} // namespace

FailureOr<SplitRule> AddOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  return elementwise(*this, operands);
}
FailureOr<SplitRule> MulOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  return elementwise(*this, operands);
}
FailureOr<SplitRule> ScaleOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  return elementwise(*this, operands);
}
FailureOr<SplitRule> DropoutOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  if (failed(contiguous(*this, operands[0], "its mask numbers the full tensor's elements"))) {
    return failure();
  }
  return elementwise(*this, operands.take_front(1));
}
void DropoutOp::applySplit(StringAttr axis, ArrayRef<TensorSplit> operands, int64_t parts) {
  if (operands[0].dim >= 0) {
    // The mask of this rank's part is that of its elements in the full tensor.
    setPartDim(operands[0].dim);
    setParts(parts);
    setPartAxisAttr(axis);
  }
}
FailureOr<SplitRule> SiluOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  return elementwise(*this, operands);
}
FailureOr<SplitRule> SwigluOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  return elementwise(*this, operands);
}
FailureOr<SplitRule> ConvertOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  return elementwise(*this, operands);
}

FailureOr<SplitRule> RopeOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  // [batch, seq, heads, head_dim]: the angle depends on the position and rotates pairs of
  // head_dim entries, so only batch and heads split.
  return elementwiseExcept(*this, operands, {1, 3},
                           "a rotary embedding reads positions (dim 1) and pairs head_dim "
                           "entries (dim 3)");
}

FailureOr<SplitRule> RopeQKOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  // tg.rope's rule on both: batch or heads split alike.
  return elementwiseExcept(*this, operands, {1, 3},
                           "a rotary embedding reads positions (dim 1) and pairs head_dim "
                           "entries (dim 3)");
}

FailureOr<SplitRule> CausalMaskOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  int64_t rank = rankOf(getInput());
  return elementwiseExcept(*this, operands, {rank - 2, rank - 1},
                           "the mask compares query and key positions");
}

FailureOr<SplitRule> SoftmaxOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  return elementwiseExcept(*this, operands, {static_cast<int64_t>(getDim())},
                           "the softmax normalizes over it");
}

FailureOr<SplitRule> AttentionOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  // Batch entries and heads are independent (a rank holding heads [r·H/p, (r+1)·H/p) holds
  // their KV heads [r·KV/p, (r+1)·KV/p) when p divides KV); a row mixes every key position
  // and head_dim entry. The result and lse split along the same dim.
  return elementwiseExcept(*this, operands, {2, 3},
                           "attention combines every key position and head_dim entry");
}

FailureOr<SplitRule> LinearCrossEntropyOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  // Vocab-parallel: the weight's rows (the vocabulary) split, everything else whole; the hidden
  // states enter the region, so their gradient, a partial sum per rank, is all-reduced.
  for (auto [index, operand] : llvm::enumerate(operands)) {
    if (operand.dim >= 0 && (index != 1 || operand.dim != 0)) {
      return emitOpError() << "can only be split along the vocabulary (the rows of the weight), "
                              "got operand "
                           << index << " along dim " << operand.dim;
    }
  }
  if (operands[1].dim >= 0 &&
      failed(contiguous(*this, operands[1], "a rank's vocabulary is one range of ids"))) {
    return failure();
  }
  return SplitRule{}; // the whole loss on every rank
}

void LinearCrossEntropyOp::applySplit(StringAttr axis, ArrayRef<TensorSplit> operands, int64_t) {
  if (operands[1].dim >= 0) {
    setVocabShardAxisAttr(axis);
  }
}

FailureOr<SplitRule> AddRMSNormOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  // The add's rule on its operands, then the norm's: rows split, the weight whole.
  FailureOr<SplitRule> rule = elementwise(*this, operands.take_front(2));
  if (failed(rule)) {
    return failure();
  }
  if (operands[2].dim >= 0 || rule->resultDim == rankOf(getLhs()) - 1) {
    return emitOpError() << "normalizes over the last dim: only rows can be split, and the "
                            "weight is whole";
  }
  return rule;
}

FailureOr<SplitRule> RMSNormOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  // Normalizes over the last dim with a weight along it: rows split, the weight whole.
  const TensorSplit &input = operands[0], &weight = operands[1];
  if (weight.dim >= 0 || input.dim == rankOf(getInput()) - 1) {
    return emitOpError() << "normalizes over the last dim: only the rows of its input can be "
                            "split, and its weight is whole (input split along dim "
                         << input.dim << ", weight along dim " << weight.dim << ")";
  }
  return split(input.dim, input.blocks);
}

FailureOr<SplitRule> TransposeOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  const TensorSplit &input = operands[0];
  if (input.dim < 0) {
    return SplitRule{};
  }
  ArrayRef<int64_t> permutation = getPermutation();
  return split(llvm::find(permutation, input.dim) - permutation.begin(), input.blocks);
}

FailureOr<SplitRule> ReshapeOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t parts) {
  int64_t dim = operands[0].dim;
  if (dim < 0) {
    return SplitRule{};
  }
  if (failed(contiguous(*this, operands[0], "split the fused tensor into its parts first"))) {
    return failure();
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
    return split(dim);
  }
  // [.., H / parts, d] -> [.., H·d / parts]
  if (sameLeading && out.size() + 1 == in.size() && dim + 1 < input.getRank() &&
      out[dim] == whole * in[dim + 1]) {
    return split(dim);
  }
  return emitOpError() << "has no split rule for an input split " << parts << " ways along dim "
                       << dim << " (" << input << " -> " << result
                       << "): only splitting or merging the split dim with the dim after it";
}

FailureOr<SplitRule> RepeatOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  // Repeating along the split dim repeats each rank's slice: grouped-query attention's kv
  // heads stay with the query heads they serve when both split by the same count.
  const TensorSplit &input = operands[0];
  if (input.dim == static_cast<int64_t>(getDim()) &&
      failed(contiguous(*this, input, "repeating it would interleave the blocks"))) {
    return failure();
  }
  return split(input.dim, input.blocks);
}

FailureOr<SplitRule> SplitOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  const TensorSplit &input = operands[0];
  if (input.dim < 0 || input.dim != static_cast<int64_t>(getDim())) {
    return split(input.dim, input.blocks); // every piece split as the input
  }
  // Pieces of the split dim: each piece must be one of the blocks, which every rank holds a
  // slice of (q, k and v out of a fused projection); a contiguous split would give a rank
  // rows of one piece only.
  if (ArrayRef<int64_t>(input.blocks) != getSizes()) {
    return emitOpError() << "splits dim " << input.dim
                         << " into pieces while that dim is split over ranks: declare the "
                            "pieces as the parameter's shard_blocks so each rank holds a slice "
                            "of every piece";
  }
  return split(input.dim);
}

void SplitOp::applySplit(StringAttr, ArrayRef<TensorSplit> operands, int64_t parts) {
  if (operands[0].dim == static_cast<int64_t>(getDim())) {
    SmallVector<int64_t> local;
    for (int64_t size : getSizes()) {
      local.push_back(size / parts); // each piece is a block every rank holds a slice of
    }
    setSizes(local);
  }
}

FailureOr<SplitRule> ConcatOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t parts) {
  int64_t dim = static_cast<int64_t>(getDim());
  FailureOr<SplitRule> rule = elementwise(*this, operands);
  if (failed(rule) || rule->resultDim != dim) {
    return rule;
  }
  if (!rule->blocks.empty()) {
    return emitOpError() << "cannot concatenate tensors split by blocks along dim " << dim;
  }
  // Each operand's slice, in order: the result is made of the operands as blocks.
  SplitRule blocks = split(dim);
  for (Value input : getInputs()) {
    blocks.blocks.push_back(cast<RankedTensorType>(input.getType()).getDimSize(dim) * parts);
  }
  return blocks;
}

FailureOr<SplitRule> MatmulOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  const TensorSplit &lhsSplit = operands[0], &rhsSplit = operands[1];
  int64_t lhs = lhsSplit.dim, rhs = rhsSplit.dim;
  int64_t lhsRank = rankOf(getLhs()), rhsRank = rankOf(getRhs());
  int64_t rank = rankOf(getResult());
  // The contraction (K) dims and the free dims (M of lhs, N of rhs) of each operand.
  int64_t lhsK = getTransposeLhs() ? lhsRank - 2 : lhsRank - 1;
  int64_t lhsM = getTransposeLhs() ? lhsRank - 1 : lhsRank - 2;
  int64_t rhsK = getTransposeRhs() ? rhsRank - 1 : rhsRank - 2;
  int64_t rhsN = getTransposeRhs() ? rhsRank - 2 : rhsRank - 1;
  if (lhs < 0 && rhs == rhsN) {
    return split(rank - 1, rhsSplit.blocks); // column-parallel: output features split
  }
  if (lhs == lhsK && rhs == rhsK) {
    if (lhsSplit.blocks != rhsSplit.blocks) {
      return emitOpError() << "contracts operands whose split dims are made of different blocks";
    }
    return partialSum(); // row-parallel: each rank sums its slice of K
  }
  if (lhs == lhsM && rhs < 0) {
    return split(rank - 2, lhsSplit.blocks);
  }
  if (lhs >= 0 && lhs < lhsRank - 2 &&
      ((rhs == lhs && lhsSplit.blocks == rhsSplit.blocks) || (rhs < 0 && rhsRank == 2))) {
    return split(lhs, lhsSplit.blocks); // batch (attention heads) split on both
  }
  return emitOpError() << "has no split rule for lhs split along dim " << lhs
                       << " and rhs along dim " << rhs
                       << " (-1: whole): column-parallel splits rhs's output features, "
                          "row-parallel both contraction dims, batch-parallel the same batch "
                          "dim of both";
}

FailureOr<SplitRule> EmbeddingOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  const TensorSplit &table = operands[0], &ids = operands[1];
  if (ids.dim >= 0) {
    return emitOpError() << "looks up whole token ids: they cannot be split here";
  }
  if (table.dim == 0) {
    // Vocab-parallel: rows other ranks hold contribute zero; a rank's rows are one range.
    if (failed(contiguous(*this, table, "a rank's vocabulary is one range of ids"))) {
      return failure();
    }
    return partialSum();
  }
  return table.dim < 0 ? SplitRule{} : split(rankOf(getResult()) - 1, table.blocks);
}

void EmbeddingOp::applySplit(StringAttr axis, ArrayRef<TensorSplit> operands, int64_t) {
  if (operands[0].dim == 0) {
    setVocabShardAxisAttr(axis);
  }
}

FailureOr<SplitRule> CrossEntropyOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  int64_t logits = operands[0].dim, labels = operands[1].dim;
  if (labels >= 0 || (logits >= 0 && logits != rankOf(getLogits()) - 1)) {
    return emitOpError() << "can only be split along the vocabulary (the last dim of the "
                            "logits), got logits along dim "
                         << logits << " and labels along dim " << labels;
  }
  if (logits >= 0 &&
      failed(contiguous(*this, operands[0], "a rank's vocabulary is one range of ids"))) {
    return failure();
  }
  return SplitRule{}; // the vocab-parallel loss is the whole loss on every rank
}

void CrossEntropyOp::applySplit(StringAttr axis, ArrayRef<TensorSplit> operands, int64_t) {
  if (operands[0].dim >= 0) {
    setVocabShardAxisAttr(axis);
  }
}

//===----------------------------------------------------------------------===//
// Mixture of experts: tokens are routed on every rank of a tensor-parallel group alike (the
// router is whole); the experts' FFN splits as Megatron's expert tensor parallelism does
// (fc1 column-parallel, fc2 row-parallel), so only the feature dim of the routed rows is
// ever split. Token-split routing (sequence parallelism) needs the sort to run per rank,
// which is what expert parallelism's dispatch does.
//===----------------------------------------------------------------------===//

FailureOr<SplitRule> MoeRouteOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  if (operands[0].dim == 0) {
    return split(0); // tokens are routed independently
  }
  return emitOpError() << "routes over every expert's logit: the logits cannot be split along "
                          "the experts (dim 1)";
}

FailureOr<SplitRule> MoeSortOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  return emitOpError() << "sorts every routed token of the layer: a rank's slice of the "
                          "tokens gives its own order, not a slice of the whole one "
                          "(sequence parallelism with mixture-of-experts layers comes with "
                          "expert parallelism)";
}

namespace {

/// tg.moe_permute and tg.moe_unpermute move whole rows: the feature dim may be split, the
/// rows (and the order) may not.
FailureOr<SplitRule> rowMoveSplit(Operation *op, ArrayRef<TensorSplit> operands) {
  if (operands[1].dim >= 0 || operands[0].dim == 0) {
    return op->emitOpError() << "moves whole rows by the routing order: only the feature dim "
                                "(1) of its rows may be split";
  }
  return split(operands[0].dim, operands[0].blocks);
}

} // namespace

FailureOr<SplitRule> MoePermuteOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  return rowMoveSplit(*this, operands);
}

FailureOr<SplitRule> MoeUnpermuteOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  return rowMoveSplit(*this, operands);
}

FailureOr<SplitRule> GroupedMatmulOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  const TensorSplit &lhsSplit = operands[0], &rhsSplit = operands[1];
  int64_t lhs = lhsSplit.dim, rhs = rhsSplit.dim;
  int64_t rhsK = getTransposeRhs() ? 2 : 1, rhsN = getTransposeRhs() ? 1 : 2;
  if (operands[2].dim < 0) {
    if (lhs < 0 && rhs == rhsN) {
      return split(1, rhsSplit.blocks); // column-parallel: each expert's output features
    }
    if (lhs == 1 && rhs == rhsK) {
      if (lhsSplit.blocks != rhsSplit.blocks) {
        return emitOpError() << "contracts operands whose split dims are made of different blocks";
      }
      return partialSum(); // row-parallel: each rank sums its slice of K
    }
  }
  return emitOpError() << "has no split rule for rows split along dim " << lhs
                       << " and expert weights along dim " << rhs
                       << " (-1: whole): column-parallel splits the weights' output features, "
                          "row-parallel the contraction dim of both; the rows and the group "
                          "sizes stay whole";
}

FailureOr<SplitRule> ScaleRowsOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  int64_t last = rankOf(getInput()) - 1;
  if (operands[1].dim >= 0 || (operands[0].dim >= 0 && operands[0].dim != last)) {
    return emitOpError() << "scales whole rows: only their last dim may be split, the scales "
                            "stay whole";
  }
  return split(operands[0].dim, operands[0].blocks);
}

FailureOr<SplitRule> TokenMaskOp::inferSplit(ArrayRef<TensorSplit> operands, int64_t) {
  return split(operands[0].dim, operands[0].blocks); // position by position
}
