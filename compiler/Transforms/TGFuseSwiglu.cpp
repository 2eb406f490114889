//===- TGFuseSwiglu.cpp - silu(gate) · up into tg.swiglu ------*- C++ -*-===//

#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"

namespace mlperf {
#define GEN_PASS_DEF_TGFUSESWIGLUPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;
using namespace mlperf::tg;

namespace mlperf {
namespace {

struct TGFuseSwigluPass : impl::TGFuseSwigluPassBase<TGFuseSwigluPass> {
  void runOnOperation() override {
    SmallVector<SiluOp> silus;
    getOperation().walk([&](SiluOp silu) { silus.push_back(silu); });
    for (SiluOp silu : silus) {
      if (!silu->hasOneUse()) {
        continue; // the activation itself is read elsewhere: it has to exist
      }
      auto mul = dyn_cast<MulOp>(*silu->getUsers().begin());
      if (!mul || mul.getLhs() == mul.getRhs()) {
        continue;
      }
      Value up = mul.getLhs() == silu.getResult() ? mul.getRhs() : mul.getLhs();
      OpBuilder builder(mul);
      auto swiglu = SwigluOp::create(builder, mul.getLoc(), mul.getType(), silu.getInput(), up);
      mul.getResult().replaceAllUsesWith(swiglu.getResult());
      mul->erase();
      silu->erase();
    }
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS("tg-fuse-swiglu", kExact,
                             "tg.swiglu computes silu(gate)·up with the same roundings; its "
                             "backward recomputes the activation");
