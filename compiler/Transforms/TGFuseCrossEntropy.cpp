//===- TGFuseCrossEntropy.cpp - Output layer + loss, fused ----*- C++ -*-===//

#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlperf {
#define GEN_PASS_DEF_TGFUSECROSSENTROPYPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;
using namespace mlperf::tg;

namespace mlperf {
namespace {

struct TGFuseCrossEntropyPass : impl::TGFuseCrossEntropyPassBase<TGFuseCrossEntropyPass> {
  void runOnOperation() override {
    SmallVector<CrossEntropyOp> losses;
    getOperation().walk([&](CrossEntropyOp loss) { losses.push_back(loss); });
    for (CrossEntropyOp loss : losses) {
      auto head = loss.getLogits().getDefiningOp<MatmulOp>();
      if (!head || loss.getVocabShardAxisAttr()) {
        continue; // no output layer here, or already vocab-parallel
      }
      auto hidden = cast<RankedTensorType>(head.getLhs().getType());
      auto weight = cast<RankedTensorType>(head.getRhs().getType());
      auto logits = cast<RankedTensorType>(head.getType()).getElementType();
      auto why = [&]() -> std::string {
        if (head.getTransposeLhs() || !head.getTransposeRhs() || weight.getRank() != 2) {
          return "the logits are not hidden · weightᵀ with a [vocab, hidden] weight";
        }
        if (!head->hasOneUse()) {
          return "the logits are read elsewhere: they have to exist";
        }
        // The fused backward always computes the weight's gradient; a frozen head (a LoRA
        // fine-tune's) needs only the hidden states', which the unfused matmul gives alone.
        if (auto ref = head.getRhs().getDefiningOp<ParamRefOp>()) {
          auto param = dyn_cast_or_null<ParamOp>(
              SymbolTable::lookupNearestSymbolFrom(ref, ref.getNameAttr()));
          if (param && param.getFrozen()) {
            return "the output layer's weight is frozen: its gradient is not computed";
          }
        }
        if (!logits.isF32() && !logits.isBF16()) {
          return "the logits are neither f32 nor bf16";
        }
        if (hidden.getElementType() != weight.getElementType()) {
          return "hidden states and weight differ in element type";
        }
        return "";
      }();
      if (!why.empty()) {
        loss.emitRemark() << "tg-fuse-cross-entropy: left unfused: " << why;
        continue;
      }
      OpBuilder builder(loss);
      auto fused = LinearCrossEntropyOp::create(
          builder, loss.getLoc(), loss.getType(), head.getLhs(), head.getRhs(), loss.getLabels(),
          loss.getLossMask(), builder.getStringAttr(logits.isF32() ? "f32" : "bf16"), StringAttr(),
          loss.getIgnoreIndexAttr());
      loss.getResult().replaceAllUsesWith(fused.getResult());
      loss->erase();
      head->erase();
    }
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "tg-fuse-cross-entropy", kExact,
    "tg.linear_cross_entropy computes the same logits and loss, a chunk of tokens at a time");
