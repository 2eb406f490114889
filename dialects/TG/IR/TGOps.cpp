//===- TGOps.cpp - Training-graph dialect ops -------------------*- C++ -*-===//
//
// Verifiers, type inference, folders and canonicalization patterns of the tg ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
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
}

/// Prints a shape as `AxBxC` for diagnostics (`scalar` for rank 0).
static std::string shapeString(ArrayRef<int64_t> shape) {
  if (shape.empty()) {
    return "scalar";
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::interleave(shape, os, "x");
  return out;
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  auto inputType = getInput().getType();
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
    return emitOpError() << "epsilon must be a finite positive number, got " << epsilon;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferredReturnTypes) {
  auto lhsType = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhsType = cast<RankedTensorType>(adaptor.getRhs().getType());
  auto fail = [&](auto &&...args) {
    return emitOptionalError(location, "'tg.matmul' op ", std::forward<decltype(args)>(args)...);
  };

  if (lhsType.getRank() < 2 || rhsType.getRank() < 2) {
    return fail("operands must have rank >= 2, got lhs rank ", lhsType.getRank(),
                " and rhs rank ", rhsType.getRank());
  }
  if (lhsType.getElementType() != rhsType.getElementType()) {
    return fail("operand element types differ: lhs ", lhsType.getElementType(), ", rhs ",
                rhsType.getElementType());
  }
  ArrayRef<int64_t> lhsShape = lhsType.getShape();
  ArrayRef<int64_t> rhsShape = rhsType.getShape();
  ArrayRef<int64_t> lhsBatch = lhsShape.drop_back(2);
  ArrayRef<int64_t> rhsBatch = rhsShape.drop_back(2);
  if (!rhsBatch.empty() && rhsBatch != lhsBatch) {
    return fail("batch dimensions differ: lhs ", shapeString(lhsBatch), ", rhs ",
                shapeString(rhsBatch),
                " (rhs must have the same batch dimensions or be a rank-2 matrix)");
  }
  bool transposeLhs = adaptor.getTransposeLhs();
  bool transposeRhs = adaptor.getTransposeRhs();
  int64_t m = lhsShape[lhsShape.size() - (transposeLhs ? 1 : 2)];
  int64_t lhsK = lhsShape[lhsShape.size() - (transposeLhs ? 2 : 1)];
  int64_t rhsK = rhsShape[rhsShape.size() - (transposeRhs ? 1 : 2)];
  int64_t n = rhsShape[rhsShape.size() - (transposeRhs ? 2 : 1)];
  if (lhsK != rhsK) {
    return fail("contraction dimensions differ: lhs ", shapeString(lhsShape),
                transposeLhs ? " (transposed)" : "", " has K = ", lhsK, ", rhs ",
                shapeString(rhsShape), transposeRhs ? " (transposed)" : "", " has K = ", rhsK);
  }
  SmallVector<int64_t> resultShape(lhsBatch);
  resultShape.push_back(m);
  resultShape.push_back(n);
  inferredReturnTypes.push_back(RankedTensorType::get(resultShape, lhsType.getElementType()));
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

void MatmulOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<AbsorbTransposeIntoMatmul>(context);
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> location, Adaptor adaptor,
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

#define GET_OP_CLASSES
#include "dialects/TG/IR/TGOps.cpp.inc"
