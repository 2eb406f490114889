//===- TGFuseAddRMSNorm.cpp - residual add + RMSNorm, fused ---*- C++ -*-===//

#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"

namespace mlperf {
#define GEN_PASS_DEF_TGFUSEADDRMSNORMPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;
using namespace mlperf::tg;

namespace mlperf {
namespace {

struct TGFuseAddRMSNormPass : impl::TGFuseAddRMSNormPassBase<TGFuseAddRMSNormPass> {
  void runOnOperation() override {
    SmallVector<RMSNormOp> norms;
    getOperation().walk([&](RMSNormOp norm) { norms.push_back(norm); });
    for (RMSNormOp norm : norms) {
      auto add = norm.getInput().getDefiningOp<AddOp>();
      if (!add) {
        continue;
      }
      // At the norm, where the add's operands and the weight are all defined.
      OpBuilder builder(norm);
      auto fused =
          AddRMSNormOp::create(builder, norm.getLoc(), add.getType(), norm.getType(), add.getLhs(),
                               add.getRhs(), norm.getWeight(), norm.getEpsilonAttr());
      add.getResult().replaceAllUsesWith(fused.getSum());
      norm.getResult().replaceAllUsesWith(fused.getNormed());
      norm->erase();
      add->erase();
    }
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "tg-fuse-add-rms-norm", kExact,
    "tg.add_rms_norm computes the sum and its normalization with the same roundings");
