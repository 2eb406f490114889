//===- TGFuseAttention.cpp - softmax(QKᵀ)V into tg.attention --*- C++ -*-===//
//
// Matches the attention chain around each tg.softmax (Passes.td states it) and replaces it
// with one tg.attention. Every condition the fused op's semantics needs is checked here; a
// chain that fails one stays unfused with a remark saying which.
//
//===----------------------------------------------------------------------===//

#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"

namespace mlperf {
#define GEN_PASS_DEF_TGFUSEATTENTIONPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;
using namespace mlperf::tg;

namespace mlperf {
namespace {

/// The chain of one attention, from its score matmul to its context matmul.
struct AttentionChain {
  MatmulOp scores, context;
  ScaleOp scale;
  CausalMaskOp mask; // null: not causal
  SoftmaxOp softmax;
  ConvertOp convert; // null: the probabilities are used as they are
  Value query, key, value;
};

RankedTensorType tensorType(Value value) { return cast<RankedTensorType>(value.getType()); }

/// The KV tensor a query-head operand reads (through a tg.repeat over heads), and the
/// repeat factor (1 without a repeat).
std::pair<Value, int64_t> kvHeads(Value operand) {
  if (auto repeat = operand.getDefiningOp<RepeatOp>(); repeat && repeat.getDim() == 1) {
    return {repeat.getInput(), static_cast<int64_t>(repeat.getTimes())};
  }
  return {operand, 1};
}

/// The chain around `softmax`, or failure with the reason it is not one the fused op computes
/// exactly (an empty reason when `softmax` is no attention at all).
FailureOr<AttentionChain> matchChain(SoftmaxOp softmax, std::string &reason) {
  AttentionChain chain;
  chain.softmax = softmax;
  auto fail = [&](const Twine &why) {
    reason = why.str();
    return failure();
  };
  Value input = softmax.getInput();
  chain.mask = input.getDefiningOp<CausalMaskOp>();
  if (chain.mask) {
    if (chain.mask.getGradient()) {
      return failure();
    }
    input = chain.mask.getInput();
  }
  chain.scale = input.getDefiningOp<ScaleOp>();
  chain.scores = chain.scale ? chain.scale.getInput().getDefiningOp<MatmulOp>() : MatmulOp();
  if (!chain.scores || tensorType(softmax.getInput()).getRank() != 4) {
    return failure(); // not the softmax of scaled scores: no attention
  }
  if (softmax.getDim() != 3) {
    return fail("the softmax is not over keys (dim 3)");
  }
  if (chain.scores.getTransposeLhs() || !chain.scores.getTransposeRhs()) {
    return fail("the scores are not query · keyᵀ");
  }
  if (!tensorType(chain.scores.getResult()).getElementType().isF32()) {
    return fail("the scores are not f32");
  }
  Operation *user = softmax->hasOneUse() ? *softmax->getUsers().begin() : nullptr;
  chain.convert = dyn_cast_or_null<ConvertOp>(user);
  Value probabilities = chain.convert ? chain.convert.getResult() : softmax.getResult();
  if (chain.convert) {
    user = chain.convert->hasOneUse() ? *chain.convert->getUsers().begin() : nullptr;
  }
  chain.context = dyn_cast_or_null<MatmulOp>(user);
  if (!chain.context || chain.context.getLhs() != probabilities ||
      chain.context.getTransposeLhs() || chain.context.getTransposeRhs()) {
    return fail("the probabilities are not used once, as the lhs of probabilities · values");
  }
  for (Operation *op : {chain.scores.getOperation(), chain.scale.getOperation(),
                        chain.mask ? chain.mask.getOperation() : nullptr}) {
    if (op && !op->hasOneUse()) {
      return fail("'" + op->getName().getStringRef() +
                  "' has other users: its [seq, seq] value would stay");
    }
  }
  chain.query = chain.scores.getLhs();
  auto [key, keyGroup] = kvHeads(chain.scores.getRhs());
  auto [value, valueGroup] = kvHeads(chain.context.getRhs());
  chain.key = key;
  chain.value = value;
  auto q = tensorType(chain.query), k = tensorType(key), v = tensorType(value);
  if (q.getRank() != 4 || k != v || keyGroup != valueGroup) {
    return fail("keys and values are not [batch, kv_heads, seq, head_dim] of one type with "
                "one repeat over heads");
  }
  if (q.getElementType() != k.getElementType() ||
      tensorType(probabilities).getElementType() != v.getElementType()) {
    return fail("query, key and value differ in element type, or the probabilities are not "
                "of the value's");
  }
  if (tensorType(chain.context.getResult()) != q) {
    return fail("the context is not of the query's type");
  }
  if (q.getDimSize(1) != k.getDimSize(1) * keyGroup || q.getDimSize(0) != k.getDimSize(0) ||
      q.getDimSize(3) != k.getDimSize(3)) {
    return fail("query heads are not the KV heads times their repeat");
  }
  return chain;
}

struct TGFuseAttentionPass : impl::TGFuseAttentionPassBase<TGFuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp softmax) { softmaxes.push_back(softmax); });
    for (SoftmaxOp softmax : softmaxes) {
      std::string reason;
      FailureOr<AttentionChain> chain = matchChain(softmax, reason);
      if (failed(chain)) {
        if (!reason.empty()) {
          softmax.emitRemark() << "tg-fuse-attention: left unfused: " << reason;
        }
        continue;
      }
      OpBuilder builder(chain->context);
      auto query = tensorType(chain->query);
      auto lseType = RankedTensorType::get(query.getShape().take_front(3), builder.getF32Type());
      auto attention = AttentionOp::create(
          builder, chain->context.getLoc(), query, lseType, chain->query, chain->key, chain->value,
          chain->scale.getFactorAttr(), chain->mask ? builder.getUnitAttr() : UnitAttr(),
          chain->mask ? chain->mask.getWindowAttr() : IntegerAttr());
      chain->context.getResult().replaceAllUsesWith(attention.getResult());
      // The chain, from its end; a repeat stays while anything else reads it.
      SmallVector<Operation *> dead{chain->context, chain->convert, chain->softmax,
                                    chain->mask,    chain->scale,   chain->scores};
      Operation *keyRepeat = chain->scores.getRhs().getDefiningOp<RepeatOp>();
      Operation *valueRepeat = chain->context.getRhs().getDefiningOp<RepeatOp>();
      for (Operation *op : dead) {
        if (op) {
          op->erase();
        }
      }
      for (Operation *repeat : {keyRepeat, valueRepeat}) {
        if (repeat && repeat->use_empty()) {
          repeat->erase();
        }
      }
    }
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "tg-fuse-attention", kReassociation,
    "tg.attention computes softmax(QKᵀ·s)V, whose kernels may sum the softmax in another order");
