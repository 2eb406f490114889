//===- TGSimplify.cpp - Exact algebraic simplification of tg ops -*- C++ -*-===//

#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "tg-simplify"

namespace mlperf {
#define GEN_PASS_DEF_TGSIMPLIFYPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

struct TGSimplifyPass : impl::TGSimplifyPassBase<TGSimplifyPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    RewritePatternSet patterns(context);
    Dialect *tgDialect = context->getLoadedDialect<tg::TGDialect>();
    tgDialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : context->getRegisteredOperations()) {
      if (&op.getDialect() == tgDialect) {
        op.getCanonicalizationPatterns(patterns, context);
      }
    }
    frozenPatterns = FrozenRewritePatternSet(std::move(patterns));
    return success();
  }

  void runOnOperation() override {
    if (maxIterations < 1) {
      getOperation()->emitError() << "tg-simplify: max-iterations must be >= 1, got "
                                  << static_cast<int64_t>(maxIterations);
      return signalPassFailure();
    }
    GreedyRewriteConfig config;
    config.setMaxIterations(maxIterations);
    bool changed = false;
    if (failed(applyPatternsGreedily(getOperation(), frozenPatterns, config, &changed))) {
      getOperation()->emitError() << "tg-simplify did not reach a fixed point within "
                                  << static_cast<int64_t>(maxIterations) << " iterations";
      return signalPassFailure();
    }
    if (!changed) {
      markAllAnalysesPreserved();
    }
  }

  FrozenRewritePatternSet frozenPatterns;
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS("tg-simplify", kExact,
                             "tg canonicalization patterns and folders, each exact (identity "
                             "layout ops, scales by 1, exact round-trip converts)");
