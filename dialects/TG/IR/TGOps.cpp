//===- TGOps.cpp - Training-graph dialect ops -------------------*- C++ -*-===//
//
// Verifiers, type inference, folders and canonicalization patterns of the tg ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/TG/IR/TGOps.h"

#include "dialects/TG/IR/TGUtils.h"
#include "runtime/plan/ElementwiseProgram.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlperf::tg;

#include "dialects/TG/IR/TGOpsDialect.cpp.inc"

void TGDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/TG/IR/TGOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/TG/IR/TGModelOps.cpp.inc"
      >();
}

Operation *TGDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                          Location loc) {
  auto splat = dyn_cast<SplatElementsAttr>(value);
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!splat || !tensorType || !isa<FloatType>(tensorType.getElementType())) {
    return nullptr;
  }
  double scalar = splat.getSplatValue<APFloat>().convertToDouble();
  return FillOp::create(builder, loc, tensorType, builder.getF64FloatAttr(scalar));
}

/// Prints a shape as `AxBxC` for diagnostics (`[]` when there are no dimensions).
static std::string shapeString(ArrayRef<int64_t> shape) {
  if (shape.empty()) {
    return "[]";
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::interleave(shape, os, "x");
  return out;
}

/// Checks that `dim` names a dimension of a rank-`rank` tensor (no negative indexing: the IR
/// says which dimension it means).
static LogicalResult checkDimension(std::optional<Location> location, StringRef opName, int64_t dim,
                                    int64_t rank) {
  if (dim < 0 || dim >= rank) {
    return emitOptionalError(location, "'", opName, "' op dim ", dim,
                             " is out of range for a tensor of rank ", rank);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ScaleOp
//===----------------------------------------------------------------------===//

LogicalResult ScaleOp::verify() {
  if (!std::isfinite(getFactor().convertToDouble())) {
    return emitOpError() << "factor must be finite";
  }
  return success();
}

OpFoldResult ScaleOp::fold(FoldAdaptor adaptor) {
  if (getFactor().convertToDouble() == 1.0) {
    return getInput();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// ConvertOp
//===----------------------------------------------------------------------===//

OpFoldResult ConvertOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType()) {
    return getInput();
  }
  // convert(convert(x)) is x only when the inner conversion is exact, i.e. every value of the
  // original type is representable in the intermediate one (bf16 -> f32 -> bf16, not
  // f8E5M2 -> f8E4M3FN -> f8E5M2).
  if (auto producer = getInput().getDefiningOp<ConvertOp>()) {
    Value original = producer.getInput();
    auto originalElement = cast<FloatType>(getElementTypeOrSelf(original.getType()));
    auto middleElement = cast<FloatType>(getElementTypeOrSelf(producer.getType()));
    if (original.getType() == getType() &&
        llvm::APFloatBase::isRepresentableBy(originalElement.getFloatSemantics(),
                                             middleElement.getFloatSemantics())) {
      return original;
    }
  }
  return {};
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferredReturnTypes) {
  auto tableType = cast<RankedTensorType>(adaptor.getTable().getType());
  auto idsType = cast<RankedTensorType>(adaptor.getIds().getType());
  if (tableType.getRank() != 2) {
    return emitOptionalError(location, "'tg.embedding' op table must be [vocab, hidden], got rank ",
                             tableType.getRank());
  }
  SmallVector<int64_t> shape(idsType.getShape());
  shape.push_back(tableType.getDimSize(1));
  inferredReturnTypes.push_back(RankedTensorType::get(shape, tableType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  auto inputType = getInput().getType();
  auto resultType = cast<RankedTensorType>(getResult().getType());
  if (resultType.getShape() != inputType.getShape() ||
      (resultType.getElementType() != inputType.getElementType() &&
       !resultType.getElementType().isF32())) {
    return emitOpError() << "result must have the input's shape and its type or f32, got "
                         << resultType;
  }
  auto weightType = getWeight().getType();
  if (inputType.getRank() < 1) {
    return emitOpError() << "input must have rank >= 1, got a scalar";
  }
  if (weightType.getRank() != 1) {
    return emitOpError() << "weight must have rank 1, got rank " << weightType.getRank();
  }
  int64_t hidden = inputType.getShape().back();
  if (weightType.getDimSize(0) != hidden) {
    return emitOpError() << "weight size " << weightType.getDimSize(0)
                         << " does not match the normalized (last) dimension " << hidden
                         << " of the input";
  }
  if (weightType.getElementType() != inputType.getElementType()) {
    return emitOpError() << "weight element type " << weightType.getElementType()
                         << " differs from input element type " << inputType.getElementType();
  }
  double epsilon = getEpsilon().convertToDouble();
  if (!(epsilon > 0.0) || !std::isfinite(epsilon)) {
    return emitOpError() << "epsilon must be a finite positive number, got "
                         << formatNumber(epsilon);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  auto type = getInput().getType();
  if (type.getRank() != 4) {
    return emitOpError() << "input must be [batch, seq, heads, head_dim], got rank "
                         << type.getRank();
  }
  int64_t headDim = type.getDimSize(3);
  if (headDim % 2 != 0) {
    return emitOpError() << "head_dim must be even to rotate halves, got " << headDim;
  }
  if (!isFinitePositive(getTheta().convertToDouble())) {
    return emitOpError() << "theta must be a finite positive number, got "
                         << formatNumber(getTheta().convertToDouble());
  }
  bool hasFactor = getScalingFactor().has_value();
  bool hasLow = getLowFreqFactor().has_value();
  bool hasHigh = getHighFreqFactor().has_value();
  bool hasOriginal = getOriginalMaxPosition().has_value();
  if (!hasFactor && !hasLow && !hasHigh && !hasOriginal) {
    return success();
  }
  if (!hasFactor || !hasLow || !hasHigh || !hasOriginal) {
    return emitOpError() << "Llama 3.1 RoPE scaling needs all of scaling_factor, "
                            "low_freq_factor, high_freq_factor and original_max_position";
  }
  double factor = getScalingFactor()->convertToDouble();
  double low = getLowFreqFactor()->convertToDouble();
  double high = getHighFreqFactor()->convertToDouble();
  if (!isFinitePositive(factor) || !isFinitePositive(low) || !isFinitePositive(high)) {
    return emitOpError() << "RoPE scaling factors must be finite and positive";
  }
  if (!(high > low)) {
    return emitOpError() << "high_freq_factor (" << formatNumber(high)
                         << ") must exceed low_freq_factor (" << formatNumber(low)
                         << ") for the smooth interpolation between them";
  }
  if (getOriginalMaxPositionAttr().getInt() <= 0) {
    return emitOpError() << "original_max_position must be positive, got "
                         << getOriginalMaxPositionAttr().getInt();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CausalMaskOp, SoftmaxOp, RepeatOp
//===----------------------------------------------------------------------===//

LogicalResult CausalMaskOp::verify() {
  auto type = getInput().getType();
  if (type.getRank() < 2) {
    return emitOpError() << "input must be [..., queries, keys], got rank " << type.getRank();
  }
  int64_t queries = type.getDimSize(type.getRank() - 2);
  int64_t keys = type.getDimSize(type.getRank() - 1);
  if (queries != keys) {
    return emitOpError() << "causal masking needs as many queries as keys, got " << queries
                         << " queries and " << keys << " keys";
  }
  if (getWindowAttr() && getWindowAttr().getInt() < 0) {
    return emitOpError() << "window must be >= 0 (the keys a query sees before itself), got "
                         << getWindowAttr().getInt();
  }
  return success();
}

LogicalResult AttentionOp::verify() {
  auto query = getQuery().getType(), key = getKey().getType(), value = getValue().getType();
  if (query.getRank() != 4 || key.getRank() != 4 || value.getRank() != 4) {
    return emitOpError() << "query, key and value must be [batch, heads, seq, head_dim]";
  }
  if (key != value) {
    return emitOpError() << "key and value must have one type, got " << key << " and " << value;
  }
  if (query.getElementType() != key.getElementType()) {
    return emitOpError() << "query and key must have one element type, got "
                         << query.getElementType() << " and " << key.getElementType();
  }
  ArrayRef<int64_t> q = query.getShape(), k = key.getShape();
  if (q[0] != k[0] || q[3] != k[3]) {
    return emitOpError() << "query " << query << " and key " << key
                         << " must agree in batch and head_dim";
  }
  if (q[1] % k[1] != 0) {
    return emitOpError() << q[1] << " query heads are not a multiple of " << k[1]
                         << " key/value heads";
  }
  if (getCausal() && q[2] != k[2]) {
    return emitOpError() << "causal attention needs as many queries as keys, got " << q[2]
                         << " queries and " << k[2] << " keys";
  }
  if (getResult().getType() != query) {
    return emitOpError() << "result must have the query's type " << query << ", got "
                         << getResult().getType();
  }
  auto lse = cast<RankedTensorType>(getLse().getType());
  if (lse.getShape() != q.take_front(3) || !lse.getElementType().isF32()) {
    return emitOpError() << "lse must be f32 [batch, heads, seq] = tensor<" << q[0] << "x" << q[1]
                         << "x" << q[2] << "xf32>, got " << lse;
  }
  if (getWindowAttr() && (!getCausal() || getWindowAttr().getInt() < 0)) {
    return emitOpError() << "a window (sliding-window attention) needs causal and must be >= 0";
  }
  return success();
}

LogicalResult LinearCrossEntropyOp::verify() {
  auto hidden = getHidden().getType(), weight = getWeight().getType();
  auto labels = cast<RankedTensorType>(getLabels().getType());
  if (hidden.getRank() < 2 || weight.getRank() != 2 ||
      weight.getDimSize(1) != hidden.getShape().back()) {
    return emitOpError() << "needs hidden [..., d] and weight [vocab, d], got " << hidden << " and "
                         << weight;
  }
  if (labels.getShape() != hidden.getShape().drop_back()) {
    return emitOpError() << "labels must have the hidden states' shape without their last dim, got "
                         << labels;
  }
  if (getLossMask() &&
      cast<RankedTensorType>(getLossMask().getType()).getShape() != labels.getShape()) {
    return emitOpError() << "the loss mask must have the labels' shape";
  }
  StringRef logits = getLogitsType();
  if (logits != "f32" && logits != "bf16") {
    return emitOpError() << "logits_type must be \"f32\" or \"bf16\", got \"" << logits << "\"";
  }
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return checkDimension(getLoc(), getOperationName(), getDimAttr().getInt(),
                        getInput().getType().getRank());
}

LogicalResult RepeatOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferredReturnTypes) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t dim = adaptor.getDimAttr().getInt();
  int64_t times = adaptor.getTimesAttr().getInt();
  if (failed(checkDimension(location, "tg.repeat", dim, type.getRank()))) {
    return failure();
  }
  if (times < 1) {
    return emitOptionalError(location, "'tg.repeat' op times must be >= 1, got ", times);
  }
  SmallVector<int64_t> shape(type.getShape());
  std::optional<int64_t> repeated = llvm::checkedMul(shape[dim], times);
  if (!repeated) {
    return emitOptionalError(location, "'tg.repeat' op repeating dimension ", dim, " (size ",
                             shape[dim], ") ", times, " times overflows");
  }
  shape[dim] = *repeated;
  if (!checkedNumElements(shape)) {
    return emitOptionalError(location, "'tg.repeat' op result has more than 2^63 elements");
  }
  inferredReturnTypes.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

OpFoldResult RepeatOp::fold(FoldAdaptor adaptor) {
  if (getTimesAttr().getInt() == 1) {
    return getInput();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

OpFoldResult FillOp::fold(FoldAdaptor adaptor) {
  return DenseElementsAttr::get(
      cast<ShapedType>(getType()),
      FloatAttr::get(cast<ShapedType>(getType()).getElementType(), getValue().convertToDouble()));
}

LogicalResult SoftmaxGradOp::verify() {
  return checkDimension(getLoc(), getOperationName(), getDimAttr().getInt(),
                        getOutput().getType().getRank());
}

LogicalResult EmbeddingGradOp::verify() {
  auto ids = getIds().getType();
  auto grad = getGrad().getType();
  auto table = getResult().getType();
  SmallVector<int64_t> expectedGrad(ids.getShape());
  if (table.getRank() == 2) {
    expectedGrad.push_back(table.getDimSize(1));
  }
  if (table.getRank() != 2 || grad.getShape() != ArrayRef<int64_t>(expectedGrad) ||
      grad.getElementType() != table.getElementType()) {
    return emitOpError() << "gradient " << grad << " does not match ids " << ids << " and table "
                         << table;
  }
  return success();
}

LogicalResult RepeatGradOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferredReturnTypes) {
  auto type = cast<RankedTensorType>(adaptor.getGrad().getType());
  int64_t dim = adaptor.getDimAttr().getInt();
  int64_t times = adaptor.getTimesAttr().getInt();
  if (failed(checkDimension(location, "tg.repeat_grad", dim, type.getRank()))) {
    return failure();
  }
  if (times < 1 || type.getDimSize(dim) % times != 0) {
    return emitOptionalError(location, "'tg.repeat_grad' op dimension ", dim, " (size ",
                             type.getDimSize(dim), ") is not a multiple of times = ", times);
  }
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= times;
  inferredReturnTypes.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ElementwiseOp
//===----------------------------------------------------------------------===//

LogicalResult ElementwiseOp::verify() {
  if (getResults().empty()) {
    return emitOpError() << "needs at least one result";
  }
  rt::ElementwiseProgram compiled;
  std::string error = rt::compileElementwiseProgram(
      getProgram().str(), static_cast<int>(getInputs().size()),
      static_cast<int>(getResults().size()), getArithmetic().value_or("f32").str(), compiled);
  if (!error.empty()) {
    return emitOpError() << "program " << error;
  }
  auto shape = cast<RankedTensorType>(getResults().front().getType()).getShape();
  auto f32OrBf16 = [](Type type) {
    Type element = cast<RankedTensorType>(type).getElementType();
    return element.isF32() || element.isBF16();
  };
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (!f32OrBf16(type) && !(compiled.f64 && type.getElementType().isInteger())) {
      return emitOpError() << "operand " << index << " is " << type
                           << ", not f32 or bf16 (integers only in f64 arithmetic)";
    }
    if (type.getNumElements() != 1 && type.getShape() != shape) {
      return emitOpError() << "operand " << index << " is " << type
                           << ": neither one element nor the results' shape [" << shapeString(shape)
                           << "]";
    }
  }
  for (auto [index, result] : llvm::enumerate(getResults())) {
    auto type = cast<RankedTensorType>(result.getType());
    if (!f32OrBf16(type) || type.getShape() != shape) {
      return emitOpError() << "result " << index << " is " << type
                           << ": results are f32 or bf16 of one shape";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::verify() {
  auto logitsType = cast<RankedTensorType>(getLogits().getType());
  auto labelsType = cast<RankedTensorType>(getLabels().getType());
  if (logitsType.getRank() < 1) {
    return emitOpError() << "logits must be [..., vocab]";
  }
  ArrayRef<int64_t> tokenShape = logitsType.getShape().drop_back();
  if (labelsType.getShape() != tokenShape) {
    return emitOpError() << "labels shape " << shapeString(labelsType.getShape())
                         << " must equal the logits shape without vocab, "
                         << shapeString(tokenShape);
  }
  if (Value mask = getLossMask()) {
    auto maskType = cast<RankedTensorType>(mask.getType());
    if (maskType.getShape() != tokenShape || !maskType.getElementType().isF32()) {
      return emitOpError() << "loss_mask must be an f32 tensor of the labels' shape "
                           << shapeString(tokenShape) << ", got " << maskType;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Vocabulary-split loss pieces
//===----------------------------------------------------------------------===//

/// The pieces' common shapes: per-token `max` [tokens...], `stats` [2, tokens...], labels and
/// an optional f32 mask of the tokens' shape. Null values are not checked.
static LogicalResult verifyVocabTokens(Operation *op, ArrayRef<int64_t> tokens, Value labels,
                                       Value max, Value stats, Value mask) {
  auto shapeOf = [](Value value) { return cast<RankedTensorType>(value.getType()).getShape(); };
  if (labels && shapeOf(labels) != tokens) {
    return op->emitOpError() << "labels must have the tokens' shape " << shapeString(tokens)
                             << ", got " << shapeString(shapeOf(labels));
  }
  if (max && shapeOf(max) != tokens) {
    return op->emitOpError() << "the maxima must have the tokens' shape " << shapeString(tokens)
                             << ", got " << shapeString(shapeOf(max));
  }
  SmallVector<int64_t> statsShape{2};
  statsShape.append(tokens.begin(), tokens.end());
  if (stats && shapeOf(stats) != ArrayRef<int64_t>(statsShape)) {
    return op->emitOpError() << "the statistics must be " << shapeString(statsShape) << ", got "
                             << shapeString(shapeOf(stats));
  }
  if (mask && (shapeOf(mask) != tokens ||
               !cast<RankedTensorType>(mask.getType()).getElementType().isF32())) {
    return op->emitOpError() << "loss_mask must be an f32 tensor of the tokens' shape "
                             << shapeString(tokens);
  }
  return success();
}

/// `hidden` [..., d] and `weight` [vocab, d] with logits_type f32 or bf16; the tokens' shape.
static FailureOr<ArrayRef<int64_t>> linearVocabTokens(Operation *op, Value hidden, Value weight,
                                                      StringRef logitsType) {
  auto h = cast<RankedTensorType>(hidden.getType()), w = cast<RankedTensorType>(weight.getType());
  if (h.getRank() < 2 || w.getRank() != 2 || w.getDimSize(1) != h.getShape().back()) {
    return op->emitOpError() << "needs hidden [..., d] and weight [vocab, d], got " << h << " and "
                             << w;
  }
  if (logitsType != "f32" && logitsType != "bf16") {
    return op->emitOpError() << "logits_type must be \"f32\" or \"bf16\", got \"" << logitsType
                             << "\"";
  }
  return h.getShape().drop_back();
}

static FailureOr<ArrayRef<int64_t>> logitsTokens(Operation *op, Value logits) {
  auto type = cast<RankedTensorType>(logits.getType());
  if (type.getRank() < 1) {
    return op->emitOpError() << "logits must be [..., vocab]";
  }
  return type.getShape().drop_back();
}

LogicalResult VocabMaxOp::verify() {
  FailureOr<ArrayRef<int64_t>> tokens = logitsTokens(*this, getLogits());
  return failed(tokens) ? failure() : verifyVocabTokens(*this, *tokens, {}, getResult(), {}, {});
}

LogicalResult LinearVocabMaxOp::verify() {
  FailureOr<ArrayRef<int64_t>> tokens =
      linearVocabTokens(*this, getHidden(), getWeight(), getLogitsType());
  return failed(tokens) ? failure() : verifyVocabTokens(*this, *tokens, {}, getResult(), {}, {});
}

LogicalResult VocabStatsOp::verify() {
  FailureOr<ArrayRef<int64_t>> tokens = logitsTokens(*this, getLogits());
  return failed(tokens) ? failure()
                        : verifyVocabTokens(*this, *tokens, getLabels(), getMax(), getResult(), {});
}

LogicalResult LinearVocabStatsOp::verify() {
  FailureOr<ArrayRef<int64_t>> tokens =
      linearVocabTokens(*this, getHidden(), getWeight(), getLogitsType());
  return failed(tokens) ? failure()
                        : verifyVocabTokens(*this, *tokens, getLabels(), getMax(), getResult(), {});
}

LogicalResult VocabLossOp::verify() {
  return verifyVocabTokens(*this, cast<RankedTensorType>(getLabels().getType()).getShape(), {},
                           getMax(), getStats(), getLossMask());
}

LogicalResult VocabCrossEntropyGradOp::verify() {
  FailureOr<ArrayRef<int64_t>> tokens = logitsTokens(*this, getLogits());
  return failed(tokens)
             ? failure()
             : verifyVocabTokens(*this, *tokens, getLabels(), getMax(), getStats(), getLossMask());
}

LogicalResult LinearVocabCrossEntropyGradOp::verify() {
  FailureOr<ArrayRef<int64_t>> tokens =
      linearVocabTokens(*this, getHidden(), getWeight(), getLogitsType());
  return failed(tokens)
             ? failure()
             : verifyVocabTokens(*this, *tokens, getLabels(), getMax(), getStats(), getLossMask());
}

//===----------------------------------------------------------------------===//
// The evaluation mean
//===----------------------------------------------------------------------===//

/// A running mean is exactly [sum, count].
static LogicalResult verifyRunningMean(Operation *op, Value value, StringRef what) {
  if (cast<RankedTensorType>(value.getType()).getShape() != ArrayRef<int64_t>{2}) {
    return op->emitOpError() << what << " must be the running [sum, count], tensor<2xf64>, got "
                             << value.getType();
  }
  return success();
}

LogicalResult MeanAccumulateOp::verify() {
  return failure(failed(verifyRunningMean(*this, getRunning(), "running")) ||
                 failed(verifyRunningMean(*this, getResult(), "result")));
}

LogicalResult MeanFinishOp::verify() {
  return failure(failed(verifyRunningMean(*this, getRunning(), "running")) ||
                 failed(verifyRunningMean(*this, getRestart(), "restart")));
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

/// The result shape of `op(lhs) · op(rhs)` (tg.matmul's rules, shared with tg.fp8_matmul),
/// or an error message.
static FailureOr<SmallVector<int64_t>> matmulResultShape(RankedTensorType lhsType,
                                                         RankedTensorType rhsType,
                                                         bool transposeLhs, bool transposeRhs,
                                                         std::string &error) {
  llvm::raw_string_ostream os(error);
  if (lhsType.getRank() < 2 || rhsType.getRank() < 2) {
    os << "operands must have rank >= 2, got lhs rank " << lhsType.getRank() << " and rhs rank "
       << rhsType.getRank();
    return failure();
  }
  ArrayRef<int64_t> lhsShape = lhsType.getShape();
  ArrayRef<int64_t> rhsShape = rhsType.getShape();
  ArrayRef<int64_t> lhsBatch = lhsShape.drop_back(2);
  ArrayRef<int64_t> rhsBatch = rhsShape.drop_back(2);
  if (!rhsBatch.empty() && rhsBatch != lhsBatch) {
    os << "batch dimensions differ: lhs " << shapeString(lhsBatch) << ", rhs "
       << shapeString(rhsBatch)
       << " (rhs must have the same batch dimensions or be a rank-2 matrix)";
    return failure();
  }
  int64_t m = lhsShape[lhsShape.size() - (transposeLhs ? 1 : 2)];
  int64_t lhsK = lhsShape[lhsShape.size() - (transposeLhs ? 2 : 1)];
  int64_t rhsK = rhsShape[rhsShape.size() - (transposeRhs ? 1 : 2)];
  int64_t n = rhsShape[rhsShape.size() - (transposeRhs ? 2 : 1)];
  if (lhsK != rhsK) {
    os << "contraction dimensions differ: lhs " << shapeString(lhsShape)
       << (transposeLhs ? " (transposed)" : "") << " has K = " << lhsK << ", rhs "
       << shapeString(rhsShape) << (transposeRhs ? " (transposed)" : "") << " has K = " << rhsK;
    return failure();
  }
  SmallVector<int64_t> resultShape(lhsBatch);
  resultShape.push_back(m);
  resultShape.push_back(n);
  return resultShape;
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferredReturnTypes) {
  auto lhsType = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhsType = cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lhsType.getElementType() != rhsType.getElementType()) {
    return emitOptionalError(location, "'tg.matmul' op operand element types differ: lhs ",
                             lhsType.getElementType(), ", rhs ", rhsType.getElementType());
  }
  std::string error;
  FailureOr<SmallVector<int64_t>> shape = matmulResultShape(
      lhsType, rhsType, adaptor.getTransposeLhs(), adaptor.getTransposeRhs(), error);
  if (failed(shape)) {
    return emitOptionalError(location, "'tg.matmul' op ", error);
  }
  inferredReturnTypes.push_back(RankedTensorType::get(*shape, lhsType.getElementType()));
  return success();
}

namespace {
/// Returns the input of `value`'s defining tg.transpose when that transpose swaps exactly the
/// last two dimensions (a matrix transpose per batch), which a matmul flag expresses for free.
Value getMatrixTransposeInput(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  if (!transpose) {
    return {};
  }
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = static_cast<int64_t>(perm.size());
  if (rank < 2) {
    return {};
  }
  for (int64_t i = 0; i < rank - 2; ++i) {
    if (perm[i] != i) {
      return {};
    }
  }
  if (perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2) {
    return {};
  }
  return transpose.getInput();
}

/// matmul(transpose(a), b) -> matmul(a, b) {transpose_lhs} (and likewise for rhs). Exact: the
/// same products and sums, only the operand's memory layout differs, which GEMM libraries
/// take as a flag.
struct AbsorbTransposeIntoMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    Value lhsSource = getMatrixTransposeInput(op.getLhs());
    Value rhsSource = getMatrixTransposeInput(op.getRhs());
    if (!lhsSource && !rhsSource) {
      return rewriter.notifyMatchFailure(op, "no operand is a matrix transpose");
    }
    rewriter.modifyOpInPlace(op, [&] {
      if (lhsSource) {
        op.getLhsMutable().assign(lhsSource);
        op.setTransposeLhs(!op.getTransposeLhs());
      }
      if (rhsSource) {
        op.getRhsMutable().assign(rhsSource);
        op.setTransposeRhs(!op.getTransposeRhs());
      }
    });
    return success();
  }
};
} // namespace

bool MatmulOp::isCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {
  // The output may be the operands' type or f32 (a GEMM's fp32 output); never narrower:
  // narrowing to fp8 needs the explicit scaling of tg-fp8.
  if (inferred.size() != 1 || actual.size() != 1) {
    return false;
  }
  auto inferredType = cast<RankedTensorType>(inferred.front());
  auto actualType = dyn_cast<RankedTensorType>(actual.front());
  return actualType && actualType.getShape() == inferredType.getShape() &&
         (actualType.getElementType() == inferredType.getElementType() ||
          actualType.getElementType().isF32());
}

void MatmulOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<AbsorbTransposeIntoMatmul>(context);
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferredReturnTypes) {
  auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = inputType.getRank();
  if (static_cast<int64_t>(perm.size()) != rank) {
    return emitOptionalError(location, "'tg.transpose' op permutation has ", perm.size(),
                             " entries but the input has rank ", rank);
  }
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> resultShape;
  for (int64_t dim : perm) {
    if (dim < 0 || dim >= rank || seen[dim]) {
      return emitOptionalError(location, "'tg.transpose' op permutation [",
                               llvm::make_range(perm.begin(), perm.end()),
                               "] is not a permutation of 0..", rank - 1);
    }
    seen[dim] = true;
    resultShape.push_back(inputType.getDimSize(dim));
  }
  inferredReturnTypes.push_back(RankedTensorType::get(resultShape, inputType.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size()))) {
    return getInput();
  }
  // transpose(transpose(x, inner), outer) == transpose(x, inner ∘ outer).
  if (auto producer = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> inner = producer.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t dim : perm) {
      composed.push_back(inner[dim]);
    }
    getInputMutable().assign(producer.getInput());
    setPermutation(composed);
    return getResult();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// ReshapeOp, SplitOp, ConcatOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto inputType = getInput().getType();
  auto resultType = getResult().getType();
  if (inputType.getElementType() != resultType.getElementType()) {
    return emitOpError() << "cannot change the element type (" << inputType.getElementType()
                         << " to " << resultType.getElementType() << "); reshape only";
  }
  std::optional<int64_t> inputCount = checkedNumElements(inputType.getShape());
  std::optional<int64_t> resultCount = checkedNumElements(resultType.getShape());
  if (!inputCount || !resultCount) {
    return emitOpError() << "has a tensor with more than 2^63 elements";
  }
  if (*inputCount != *resultCount) {
    return emitOpError() << "element counts differ: " << shapeString(inputType.getShape())
                         << " has " << *inputCount << ", " << shapeString(resultType.getShape())
                         << " has " << *resultCount;
  }
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType()) {
    return getInput();
  }
  // reshape(reshape(x)) == reshape(x): row-major order is preserved by both.
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  return {};
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferredReturnTypes) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t dim = adaptor.getDimAttr().getInt();
  if (failed(checkDimension(location, "tg.split", dim, type.getRank()))) {
    return failure();
  }
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (sizes.empty()) {
    return emitOptionalError(location, "'tg.split' op needs at least one size");
  }
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size <= 0) {
      return emitOptionalError(location, "'tg.split' op sizes must be positive, got ", size);
    }
    std::optional<int64_t> sum = llvm::checkedAdd(total, size);
    if (!sum || *sum > type.getDimSize(dim)) {
      return emitOptionalError(location, "'tg.split' op sizes add up to more than dimension ", dim,
                               " (size ", type.getDimSize(dim), ")");
    }
    total = *sum;
  }
  if (total != type.getDimSize(dim)) {
    return emitOptionalError(location, "'tg.split' op sizes add up to ", total, " but dimension ",
                             dim, " has size ", type.getDimSize(dim));
  }
  for (int64_t size : sizes) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = size;
    inferredReturnTypes.push_back(RankedTensorType::get(shape, type.getElementType()));
  }
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferredReturnTypes) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty()) {
    return emitOptionalError(location, "'tg.concat' op needs at least one input");
  }
  auto firstType = cast<RankedTensorType>(inputs.front().getType());
  int64_t dim = adaptor.getDimAttr().getInt();
  if (failed(checkDimension(location, "tg.concat", dim, firstType.getRank()))) {
    return failure();
  }
  SmallVector<int64_t> shape(firstType.getShape());
  for (auto [index, input] : llvm::enumerate(inputs.drop_front())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getElementType() != firstType.getElementType() ||
        type.getRank() != firstType.getRank()) {
      return emitOptionalError(location, "'tg.concat' op input ", index + 1, " (", type,
                               ") does not match input 0 (", firstType,
                               ") in rank or element type");
    }
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (d != dim && type.getDimSize(d) != firstType.getDimSize(d)) {
        return emitOptionalError(location, "'tg.concat' op input ", index + 1,
                                 " differs from input 0 in dimension ", d, " (", type.getDimSize(d),
                                 " vs ", firstType.getDimSize(d), "); only dimension ", dim,
                                 " may differ");
      }
    }
    std::optional<int64_t> sum = llvm::checkedAdd(shape[dim], type.getDimSize(dim));
    if (!sum) {
      return emitOptionalError(location, "'tg.concat' op dimension ", dim, " overflows");
    }
    shape[dim] = *sum;
  }
  inferredReturnTypes.push_back(RankedTensorType::get(shape, firstType.getElementType()));
  return success();
}

/// `-> type` when an op's result type differs from its input's (a wider output), nothing
/// otherwise.
static ParseResult parseWiderResult(OpAsmParser &parser, Type inputType, Type &resultType) {
  resultType = inputType;
  if (succeeded(parser.parseOptionalArrow())) {
    return parser.parseType(resultType);
  }
  return success();
}

static void printWiderResult(OpAsmPrinter &printer, Operation *, Type inputType, Type resultType) {
  if (resultType != inputType) {
    printer << "-> " << resultType;
  }
}

#define GET_OP_CLASSES
#include "dialects/TG/IR/TGOps.cpp.inc"

/// The split and stream of a random initialization op (tg.random_normal, tg.random_uniform).
template <typename RandomOp> static LogicalResult verifyRandomInit(RandomOp op) {
  auto type = op.getResult().getType();
  int64_t parts = op.getPartsAttr().getInt(), dim = op.getPartDimAttr().getInt();
  if (parts < 1 || dim < 0 || dim >= std::max<int64_t>(type.getRank(), 1) ||
      (parts > 1 && (type.getRank() == 0 || !op.getPartAxis()))) {
    return op.emitOpError() << "splits along dim " << dim << " into " << parts
                            << " parts (over mesh axis "
                            << (op.getPartAxis() ? *op.getPartAxis() : "none") << "), which "
                            << type << " cannot be";
  }
  if (std::optional<ArrayRef<int64_t>> blocks = op.getPartBlocks()) {
    int64_t total = 0;
    for (int64_t block : *blocks) {
      if (block <= 0 || block % parts != 0) {
        return op.emitOpError() << "part_blocks must be positive multiples of the " << parts
                                << " parts, got " << block;
      }
      total += block;
    }
    if (parts < 2 || total != type.getDimSize(dim) * parts) {
      return op.emitOpError() << "part_blocks add up to " << total << ", but the full dim " << dim
                              << " of " << parts << " parts of " << type << " is "
                              << type.getDimSize(dim) * parts;
    }
  }
  int64_t stream = op.getStreamAttr().getInt();
  if (stream < 0 || stream > static_cast<int64_t>(UINT32_MAX)) {
    return op.emitOpError() << "stream " << stream << " is not a 32-bit stream id";
  }
  return success();
}

LogicalResult RandomNormalOp::verify() { return verifyRandomInit(*this); }

LogicalResult RandomUniformOp::verify() {
  if (!isFinitePositive(getBound().convertToDouble())) {
    return emitOpError() << "bound must be a finite positive number, got "
                         << getBound().convertToDouble();
  }
  return verifyRandomInit(*this);
}

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0)) {
    return emitOpError() << "rate must be in [0, 1), got " << rate;
  }
  if (getKey() && cast<RankedTensorType>(getKey().getType()).getDimSize(0) != 2) {
    return emitOpError() << "key must be tensor<2xi64> ([seed, micro-batch counter])";
  }
  auto type = cast<RankedTensorType>(getResult().getType());
  if (!isa<FloatType>(type.getElementType())) {
    return emitOpError() << "drops floating-point values, not " << type.getElementType();
  }
  int64_t parts = getPartsAttr().getInt(), dim = getPartDimAttr().getInt();
  if (parts < 1 || dim < 0 || dim >= std::max<int64_t>(type.getRank(), 1) ||
      (parts > 1 && (type.getRank() == 0 || !getPartAxis()))) {
    return emitOpError() << "splits along dim " << dim << " into " << parts
                         << " parts (over mesh axis " << (getPartAxis() ? *getPartAxis() : "none")
                         << "), which " << type << " cannot be";
  }
  if (getName().empty()) {
    return emitOpError() << "needs a name (it keys the mask)";
  }
  return success();
}

LogicalResult DropoutKeyOp::verify() {
  if (getResult().getType().getDimSize(0) != 2) {
    return emitOpError() << "result must be tensor<2xi64> ([seed, micro-batch counter])";
  }
  int64_t micro = getMicroBatch(), micros = getMicroBatches(), dp = getDataParallel();
  if (micros < 1 || dp < 1 || micro < 0 || micro >= micros) {
    return emitOpError() << "micro_batch " << micro << " of " << micros << " on " << dp
                         << " data-parallel ranks is not a micro-batch of the step";
  }
  if ((dp > 1) != static_cast<bool>(getDataParallelAxis())) {
    return emitOpError() << "data_parallel_axis names the mesh axis exactly when "
                            "data_parallel > 1";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// fp8 ops
//===----------------------------------------------------------------------===//

static bool isFp8(Type type) { return isa<Float8E4M3FNType, Float8E5M2Type>(type); }

LogicalResult Fp8QuantizeOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  auto resultType = cast<RankedTensorType>(getResult().getType());
  if (!isFp8(resultType.getElementType())) {
    return emitOpError() << "result must be f8E4M3FN or f8E5M2, got "
                         << resultType.getElementType();
  }
  if (isFp8(inputType.getElementType())) {
    return emitOpError() << "input must be f32 or bf16, got " << inputType.getElementType();
  }
  if (inputType.getShape() != resultType.getShape()) {
    return emitOpError() << "result shape " << shapeString(resultType.getShape())
                         << " differs from the input's " << shapeString(inputType.getShape());
  }
  return success();
}

LogicalResult Fp8MatmulOp::verify() {
  auto lhsType = cast<RankedTensorType>(getLhs().getType());
  auto rhsType = cast<RankedTensorType>(getRhs().getType());
  auto resultType = cast<RankedTensorType>(getResult().getType());
  if (!isFp8(lhsType.getElementType()) || !isFp8(rhsType.getElementType())) {
    return emitOpError() << "operands must be f8E4M3FN or f8E5M2, got " << lhsType.getElementType()
                         << " and " << rhsType.getElementType();
  }
  if (!resultType.getElementType().isF32() && !resultType.getElementType().isBF16()) {
    return emitOpError() << "result must be bf16 or f32, got " << resultType.getElementType();
  }
  std::string error;
  FailureOr<SmallVector<int64_t>> shape =
      matmulResultShape(lhsType, rhsType, getTransposeLhs(), getTransposeRhs(), error);
  if (failed(shape)) {
    return emitOpError() << error;
  }
  if (ArrayRef<int64_t>(*shape) != resultType.getShape()) {
    return emitOpError() << "result shape " << shapeString(resultType.getShape()) << " should be "
                         << shapeString(*shape);
  }
  return success();
}

LogicalResult AmaxOp::verify() {
  if (getInputs().empty()) {
    return emitOpError() << "needs at least one operand";
  }
  return success();
}

LogicalResult Fp8CurrentScaleOp::verify() {
  double fp8Max = getFp8Max().convertToDouble();
  if (!(fp8Max > 0.0) || !std::isfinite(fp8Max)) {
    return emitOpError() << "fp8_max must be finite and positive";
  }
  return success();
}

LogicalResult Fp8ScaleUpdateOp::verify() {
  auto historyType = cast<RankedTensorType>(getHistory().getType());
  if (historyType.getRank() != 1 || historyType.getDimSize(0) < 1 ||
      !historyType.getElementType().isF32() || getNewHistory().getType() != historyType) {
    return emitOpError() << "history must be a non-empty 1-D f32 tensor, and the new history "
                            "of its type";
  }
  StringRef algo = getAmaxComputeAlgo();
  if (algo != "most_recent" && algo != "max") {
    return emitOpError() << "amax_compute_algo must be \"most_recent\" or \"max\", got \"" << algo
                         << "\"";
  }
  double fp8Max = getFp8Max().convertToDouble(), margin = getMargin().convertToDouble();
  if (!(fp8Max > 0.0) || !std::isfinite(fp8Max) || !(margin >= 0.0) || !std::isfinite(margin)) {
    return emitOpError() << "fp8_max must be finite and positive and margin finite and "
                            "non-negative";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

namespace {

/// `shape` written as a tensor shape (`64x4`), for diagnostics.
std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text;
  for (auto [i, d] : llvm::enumerate(shape)) {
    text += (i ? "x" : "") + std::to_string(d);
  }
  return text;
}

/// The rows of a routed tensor ([N, d]) against `order` ([N]) and the token tensor ([S, d],
/// N a multiple of S): the check tg.moe_permute and tg.moe_unpermute share.
LogicalResult verifyRoutedRows(Operation *op, RankedTensorType tokens, RankedTensorType rows,
                               RankedTensorType order) {
  if (tokens.getRank() != 2 || rows.getRank() != 2 || order.getRank() != 1) {
    return op->emitOpError() << "needs token rows [S, d], routed rows [N, d] and order [N]";
  }
  int64_t s = tokens.getDimSize(0), n = rows.getDimSize(0);
  if (order.getDimSize(0) != n || tokens.getDimSize(1) != rows.getDimSize(1) ||
      tokens.getElementType() != rows.getElementType()) {
    return op->emitOpError() << "routed rows " << rows << " and order " << order
                             << " do not match token rows " << tokens;
  }
  if (s == 0 || n % s != 0) {
    return op->emitOpError() << "the " << n << " routed rows are not a multiple of the " << s
                             << " token rows";
  }
  return success();
}

} // namespace

LogicalResult MoeRouteOp::verify() {
  auto logits = getLogits().getType();
  int64_t k = getTopKAttr().getInt();
  if (logits.getRank() != 2) {
    return emitOpError() << "logits must be [tokens, experts], got " << logits;
  }
  if (k < 1 || k > logits.getDimSize(1)) {
    return emitOpError() << "top_k = " << k << " must be in [1, " << logits.getDimSize(1)
                         << "] (the number of experts)";
  }
  SmallVector<int64_t> expected{logits.getDimSize(0), k};
  if (getProbs().getType().getShape() != ArrayRef<int64_t>(expected) ||
      getExperts().getType().getShape() != ArrayRef<int64_t>(expected)) {
    return emitOpError() << "probs and experts must be [" << shapeText(expected) << "]";
  }
  return success();
}

LogicalResult MoeRouteGradOp::verify() {
  auto probs = getProbs().getType();
  auto result = getResult().getType();
  if (probs.getRank() != 2 ||
      getExperts().getType() != probs.clone(getExperts().getType().getElementType()) ||
      getGrad().getType() != probs || result.getRank() != 2 ||
      result.getDimSize(0) != probs.getDimSize(0) || result.getDimSize(1) < probs.getDimSize(1)) {
    return emitOpError() << "needs probs, experts and grad [tokens, k] and a result [tokens, "
                            "experts] with experts >= k";
  }
  return success();
}

LogicalResult MoeSortOp::verify() {
  auto experts = getExperts().getType();
  auto order = getOrder().getType();
  auto sizes = getGroupSizes().getType();
  if (experts.getRank() != 2 || order.getRank() != 1 ||
      order.getDimSize(0) != experts.getNumElements() || sizes.getRank() != 1 ||
      sizes.getDimSize(0) < experts.getDimSize(1)) {
    return emitOpError() << "needs experts [tokens, k], order [tokens·k] and group sizes "
                            "[experts] with experts >= k";
  }
  return success();
}

LogicalResult MoePermuteOp::verify() {
  return verifyRoutedRows(*this, getInput().getType(), getResult().getType(), getOrder().getType());
}

LogicalResult MoeUnpermuteOp::verify() {
  return verifyRoutedRows(*this, getResult().getType(), getInput().getType(), getOrder().getType());
}

namespace {

/// tg.grouped_matmul's shapes, forward ([N, K] · per-expert weights -> [N, M]) and weight
/// gradient ([N, K], [N, M] -> weights): `weights` is [E, K, M], or [E, M, K] transposed.
LogicalResult verifyGroupedShapes(Operation *op, RankedTensorType lhs, RankedTensorType weights,
                                  RankedTensorType rows, RankedTensorType sizes,
                                  bool transposeRhs) {
  if (lhs.getRank() != 2 || weights.getRank() != 3 || rows.getRank() != 2 || sizes.getRank() != 1) {
    return op->emitOpError() << "needs rows [N, K], weights [experts, K, M] ([experts, M, K] "
                                "with transpose_rhs), output rows [N, M] and group sizes [experts]";
  }
  int64_t k = weights.getDimSize(transposeRhs ? 2 : 1);
  int64_t m = weights.getDimSize(transposeRhs ? 1 : 2);
  if (lhs.getDimSize(1) != k || rows.getDimSize(0) != lhs.getDimSize(0) ||
      rows.getDimSize(1) != m || sizes.getDimSize(0) != weights.getDimSize(0)) {
    return op->emitOpError() << "shapes do not match: rows " << lhs << ", weights " << weights
                             << (transposeRhs ? " (transposed)" : "") << ", output rows " << rows
                             << ", group sizes " << sizes;
  }
  if (lhs.getElementType() != weights.getElementType() ||
      rows.getElementType() != lhs.getElementType()) {
    return op->emitOpError() << "rows, weights and output must share an element type";
  }
  return success();
}

} // namespace

LogicalResult GroupedMatmulOp::verify() {
  return verifyGroupedShapes(*this, getLhs().getType(), getRhs().getType(), getResult().getType(),
                             getGroupSizes().getType(), getTransposeRhs());
}

LogicalResult GroupedMatmulWeightGradOp::verify() {
  return verifyGroupedShapes(*this, getLhs().getType(), getResult().getType(), getGrad().getType(),
                             getGroupSizes().getType(), getTransposeRhs());
}

LogicalResult ScaleRowsOp::verify() {
  auto input = getInput().getType();
  auto scales = getScales().getType();
  if (input.getRank() < 1 || scales.getShape() != input.getShape().drop_back()) {
    return emitOpError() << "scales " << scales << " must have the shape of " << input
                         << " without its last dimension";
  }
  return success();
}

LogicalResult RowDotOp::verify() {
  auto lhs = getLhs().getType();
  if (lhs.getRank() < 1 || getResult().getType().getShape() != lhs.getShape().drop_back()) {
    return emitOpError() << "result must have the shape of " << lhs
                         << " without its last dimension";
  }
  return success();
}

LogicalResult TokenMaskOp::verify() {
  if (getResult().getType().getShape() != getTokens().getType().getShape()) {
    return emitOpError() << "the mask " << getResult().getType() << " must have the tokens' shape "
                         << getTokens().getType();
  }
  return success();
}
