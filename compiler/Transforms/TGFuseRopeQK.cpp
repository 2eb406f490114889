//===- TGFuseRopeQK.cpp - the query and key rotations, fused --*- C++ -*-===//

#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"

namespace mlperf {
#define GEN_PASS_DEF_TGFUSEROPEQKPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;
using namespace mlperf::tg;

namespace mlperf {
namespace {

/// The tg.rope an attention operand is, through its [batch, heads, seq, dim] transpose.
RopeOp ropeOf(Value operand) {
  auto transpose = operand.getDefiningOp<TransposeOp>();
  auto rope = transpose ? transpose.getInput().getDefiningOp<RopeOp>() : RopeOp();
  return rope && rope->hasOneUse() ? rope : RopeOp();
}

struct TGFuseRopeQKPass : impl::TGFuseRopeQKPassBase<TGFuseRopeQKPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> attentions;
    getOperation().walk([&](AttentionOp attention) { attentions.push_back(attention); });
    for (AttentionOp attention : attentions) {
      RopeOp query = ropeOf(attention.getQuery()), key = ropeOf(attention.getKey());
      if (!query || !key || query == key || query->getBlock() != key->getBlock() ||
          query->getAttrDictionary() != key->getAttrDictionary()) {
        continue; // not one rotation of this attention's queries and keys
      }
      // At the later rotation: both inputs are defined before it.
      Operation *later = query->isBeforeInBlock(key) ? key.getOperation() : query.getOperation();
      OpBuilder builder(later);
      auto fused =
          RopeQKOp::create(builder, later->getLoc(), TypeRange{query.getType(), key.getType()},
                           ValueRange{query.getInput(), key.getInput()}, query->getAttrs());
      query.getResult().replaceAllUsesWith(fused.getQueryResult());
      key.getResult().replaceAllUsesWith(fused.getKeyResult());
      query->erase();
      key->erase();
    }
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS("tg-fuse-rope-qk", kExact,
                             "tg.rope_qk applies the same two rotations");
