//===- DistLowerVocabLoss.cpp - A vocabulary-split loss as pieces and collectives -===//
//
// A cross-entropy whose vocabulary is split over a mesh axis needs its peers' row maxima, sums
// of exponentials and label logits. Instead of a kernel that talks to them, the loss becomes
// local pieces around two all-reduces, so that plan-schedule can move them, the step-time
// model costs them and every backend runs plain kernels. See the pass description in
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/TG/IR/TGOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"

#define DEBUG_TYPE "dist-lower-vocab-loss"

namespace mlperf {
#define GEN_PASS_DEF_DISTLOWERVOCABLOSSPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

/// The combined maxima and statistics of one set of logits: what a loss and its gradient
/// over the same logits share.
struct Combined {
  Value maxima, stats;
};

/// What the statistics depend on: the logits (or the hidden states and weight) and labels.
using LogitsKey = std::tuple<Value, Value, Value>;

class VocabLossLowering {
public:
  VocabLossLowering(dist::MeshOp mesh) : mesh(mesh) {}

  /// Rewrites the split losses of `block` in order; a gradient reuses the statistics of a
  /// loss over the same logits earlier in the block.
  void lowerBlock(Block &block) {
    llvm::DenseMap<LogitsKey, Combined> combined;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto loss = dyn_cast<tg::CrossEntropyOp>(op); loss && loss.getVocabShardAxis()) {
        OpBuilder builder(loss);
        Combined pieces = combine(builder, loss.getLoc(), loss.getLogits(), {}, loss.getLabels(),
                                  {}, *loss.getVocabShardAxis(), loss.getIgnoreIndexAttr());
        combined[{loss.getLogits(), Value(), loss.getLabels()}] = pieces;
        replaceLoss(builder, loss, pieces, loss.getLabels(), loss.getLossMask(),
                    loss.getIgnoreIndexAttr());
      } else if (auto loss = dyn_cast<tg::LinearCrossEntropyOp>(op);
                 loss && loss.getVocabShardAxis()) {
        OpBuilder builder(loss);
        Combined pieces =
            combine(builder, loss.getLoc(), loss.getHidden(), loss.getWeight(), loss.getLabels(),
                    loss.getLogitsTypeAttr(), *loss.getVocabShardAxis(), loss.getIgnoreIndexAttr());
        combined[{loss.getHidden(), loss.getWeight(), loss.getLabels()}] = pieces;
        replaceLoss(builder, loss, pieces, loss.getLabels(), loss.getLossMask(),
                    loss.getIgnoreIndexAttr());
      } else if (auto grad = dyn_cast<tg::CrossEntropyGradOp>(op);
                 grad && grad.getVocabShardAxis()) {
        OpBuilder builder(grad);
        StringAttr axis = grad.getVocabShardAxisAttr();
        Combined pieces = find(combined, {grad.getLogits(), Value(), grad.getLabels()}, [&] {
          return combine(builder, grad.getLoc(), grad.getLogits(), {}, grad.getLabels(), {},
                         axis.getValue(), grad.getIgnoreIndexAttr());
        });
        Value result = tg::VocabCrossEntropyGradOp::create(
            builder, grad.getLoc(), grad.getType(), grad.getLogits(), grad.getLabels(),
            grad.getGrad(), pieces.maxima, pieces.stats, grad.getLossMask(), axis,
            grad.getIgnoreIndexAttr());
        grad.getResult().replaceAllUsesWith(result);
        grad.erase();
      } else if (auto grad = dyn_cast<tg::LinearCrossEntropyGradOp>(op);
                 grad && grad.getVocabShardAxis()) {
        OpBuilder builder(grad);
        StringAttr axis = grad.getVocabShardAxisAttr();
        Combined pieces =
            find(combined, {grad.getHidden(), grad.getWeight(), grad.getLabels()}, [&] {
              return combine(builder, grad.getLoc(), grad.getHidden(), grad.getWeight(),
                             grad.getLabels(), grad.getLogitsTypeAttr(), axis.getValue(),
                             grad.getIgnoreIndexAttr());
            });
        auto lowered = tg::LinearVocabCrossEntropyGradOp::create(
            builder, grad.getLoc(), grad.getHiddenGrad().getType(), grad.getWeightGrad().getType(),
            grad.getHidden(), grad.getWeight(), grad.getLabels(), grad.getGrad(), pieces.maxima,
            pieces.stats, grad.getLossMask(), grad.getLogitsTypeAttr(), axis,
            grad.getIgnoreIndexAttr());
        grad.getHiddenGrad().replaceAllUsesWith(lowered.getHiddenGrad());
        grad.getWeightGrad().replaceAllUsesWith(lowered.getWeightGrad());
        grad.erase();
      }
    }
  }

private:
  template <typename Build>
  static Combined find(llvm::DenseMap<LogitsKey, Combined> &combined, LogitsKey key, Build build) {
    auto it = combined.find(key);
    return it != combined.end() ? it->second : build();
  }

  /// The maxima (an f32 maximum over the axis) and statistics (an f64 sum over it) of the
  /// logits `input` (or `input · weightᵀ` rounded to `logitsType`, with `weight`).
  Combined combine(OpBuilder &builder, Location loc, Value input, Value weight, Value labels,
                   StringAttr logitsType, StringRef axis, IntegerAttr ignoreIndex) {
    ArrayRef<int64_t> tokens = cast<RankedTensorType>(labels.getType()).getShape();
    auto maxType = RankedTensorType::get(tokens, builder.getF32Type());
    SmallVector<int64_t> statsShape{2};
    statsShape.append(tokens.begin(), tokens.end());
    auto statsType = RankedTensorType::get(statsShape, builder.getF64Type());
    StringAttr axisAttr = builder.getStringAttr(axis);
    Value local =
        weight ? tg::LinearVocabMaxOp::create(builder, loc, maxType, input, weight, logitsType)
                     .getResult()
               : tg::VocabMaxOp::create(builder, loc, maxType, input).getResult();
    Value maxima = allReduce(builder, loc, local, axis, "max");
    Value stats =
        weight ? tg::LinearVocabStatsOp::create(builder, loc, statsType, input, weight, labels,
                                                maxima, logitsType, axisAttr, ignoreIndex)
                     .getResult()
               : tg::VocabStatsOp::create(builder, loc, statsType, input, labels, maxima, axisAttr,
                                          ignoreIndex)
                     .getResult();
    return {maxima, allReduce(builder, loc, stats, axis, "sum")};
  }

  Value allReduce(OpBuilder &builder, Location loc, Value input, StringRef axis,
                  StringRef reduction) {
    auto type = cast<RankedTensorType>(input.getType());
    auto future = dist::AllReduceStartOp::create(
        builder, loc, dist::FutureType::get(builder.getContext(), type), input,
        FlatSymbolRefAttr::get(mesh.getSymNameAttr()), builder.getStrArrayAttr({axis}),
        builder.getStringAttr(reduction));
    return dist::DoneOp::create(builder, loc, type, future).getResult();
  }

  static void replaceLoss(OpBuilder &builder, Operation *loss, const Combined &pieces, Value labels,
                          Value mask, IntegerAttr ignoreIndex) {
    Value result = tg::VocabLossOp::create(builder, loss->getLoc(), loss->getResult(0).getType(),
                                           pieces.maxima, pieces.stats, labels, mask, ignoreIndex);
    loss->getResult(0).replaceAllUsesWith(result);
    loss->erase();
  }

  dist::MeshOp mesh;
};

struct DistLowerVocabLossPass : impl::DistLowerVocabLossPassBase<DistLowerVocabLossPass> {
  using DistLowerVocabLossPassBase::DistLowerVocabLossPassBase;

  void runOnOperation() override {
    for (auto model : getOperation().getOps<tg::ModelOp>()) {
      bool split = false;
      model.walk([&](Operation *op) {
        split |= isa<tg::CrossEntropyOp, tg::CrossEntropyGradOp, tg::LinearCrossEntropyOp,
                     tg::LinearCrossEntropyGradOp>(op) &&
                 op->hasAttr("vocab_shard_axis");
      });
      if (!split) {
        continue;
      }
      auto mesh = dyn_cast_or_null<dist::MeshOp>(SymbolTable::lookupSymbolIn(model, "mesh"));
      if (!mesh) {
        model.emitError() << "dist-lower-vocab-loss: a loss over a split vocabulary needs the "
                             "model's dist.mesh @mesh (dist-tensor-parallel places it)";
        return signalPassFailure();
      }
      VocabLossLowering lowering(mesh);
      model.walk([&](func::FuncOp func) {
        for (Block &block : func.getBody()) {
          lowering.lowerBlock(block);
        }
      });
    }
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "dist-lower-vocab-loss", kExact,
    "the split loss's own combination as ops: the same maxima, f64 sums and order, the "
    "gradient reusing the loss's statistics of the same logits");
