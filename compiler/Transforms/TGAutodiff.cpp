//===- TGAutodiff.cpp - Reverse-mode differentiation of @forward -*- C++ -*-===//

#include "compiler/Support/ChunkNames.h"
#include "compiler/Support/PerModelPass.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "tg-autodiff"

namespace mlperf {
#define GEN_PASS_DEF_TGAUTODIFFPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

/// Gradient bookkeeping of one reverse sweep.
class GradientMap {
public:
  explicit GradientMap(OpBuilder &builder) : builder(builder) {}

  /// Adds `grad` to the gradient of `value` (first contribution: sets it).
  void accumulate(Value value, Value grad, Location loc) {
    Value &slot = grads[value];
    slot = slot ? tg::AddOp::create(builder, loc, slot, grad).getResult() : grad;
  }
  Value lookup(Value value) const { return grads.lookup(value); }

private:
  OpBuilder &builder;
  llvm::DenseMap<Value, Value> grads;
};

struct TGAutodiffPass : PerModelPass<TGAutodiffPass, impl::TGAutodiffPassBase> {
  using PerModelPass::PerModelPass;

  LogicalResult runOnModel(tg::ModelOp model) {
    auto forward = dyn_cast_or_null<func::FuncOp>(model.getForward());
    if (!forward) {
      return model.emitError() << "tg-autodiff: model has no @forward";
    }
    // A pipeline rank with several model chunks (interleaved schedule) differentiates each
    // chunk's function; each backward returns the gradients of its own chunk's parameters.
    bool chunked = model->hasAttr("dist.chunks");
    if (failed(differentiate(model, forward, "forward_backward", chunked))) {
      return failure();
    }
    for (int chunk = 1;; ++chunk) {
      std::string suffix = chunkSuffix(chunk);
      auto next =
          dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward" + suffix));
      if (!next) {
        return success();
      }
      if (failed(differentiate(model, next, "forward_backward" + suffix, true))) {
        return failure();
      }
    }
  }

  LogicalResult differentiate(tg::ModelOp model, func::FuncOp forward, StringRef name,
                              bool ownParametersOnly) {
    if (SymbolTable::lookupSymbolIn(model, name)) {
      return model.emitError() << "tg-autodiff: model already has a @" << name;
    }
    for (Operation &op : forward.getBody().front()) {
      if (isa<tg::RepeatLayersOp, func::CallOp>(op)) {
        return op.emitError() << "tg-autodiff needs straight-line code: run tg-inline-layers "
                                 "first";
      }
    }

    // @forward_backward starts as a copy of @forward.
    OpBuilder builder(model.getContext());
    builder.setInsertionPointAfter(forward);
    auto fb = cast<func::FuncOp>(builder.clone(*forward));
    fb.setSymName(name);
    llvm::StringSet<> referenced; // the parameters this function reads
    forward.walk([&](tg::ParamRefOp ref) { referenced.insert(ref.getName()); });
    Block &body = fb.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value loss = ret.getOperand(0);
    Location loc = ret.getLoc();
    // A pipeline stage before the last returns an activation, not the loss: its backward
    // takes the activation's gradient (from the next stage, already scaled) as a last
    // argument. A stage after the first also returns the gradient of its input activation.
    auto lossType = cast<RankedTensorType>(loss.getType());
    bool cotangentSeed = lossType.getRank() != 0;
    Value inputActivation;
    if (body.getNumArguments() > 0 &&
        isa<FloatType>(cast<RankedTensorType>(body.getArgument(0).getType()).getElementType())) {
      inputActivation = body.getArgument(0);
    }

    SmallVector<Operation *> forwardOps;
    for (Operation &op : body.without_terminator()) {
      forwardOps.push_back(&op);
    }
    builder.setInsertionPoint(ret);
    GradientMap grads(builder);
    grads.accumulate(loss,
                     cotangentSeed ? Value(body.addArgument(lossType, loc))
                                   : tg::FillOp::create(builder, loc, loss.getType(),
                                                        builder.getF64FloatAttr(lossScale))
                                         .getResult(),
                     loc);
    llvm::StringMap<Value> paramGrads;

    for (Operation *op : llvm::reverse(forwardOps)) {
      SmallVector<Value> resultGrads;
      bool reachesLoss = false;
      for (Value result : op->getResults()) {
        Value grad = grads.lookup(result);
        reachesLoss |= static_cast<bool>(grad);
        resultGrads.push_back(grad);
      }
      if (!reachesLoss) {
        continue; // off the path to the loss: contributes no gradient
      }
      if (auto ref = dyn_cast<tg::ParamRefOp>(op)) {
        Value &slot = paramGrads[ref.getName()];
        slot = slot ? tg::AddOp::create(builder, ref.getLoc(), slot, resultGrads[0]).getResult()
                    : resultGrads[0];
        continue;
      }
      if (op->getNumOperands() == 0) {
        continue; // a constant: nothing to differentiate
      }
      auto vjp = dyn_cast<tg::VJPOpInterface>(op);
      if (!vjp) {
        return op->emitError() << "tg-autodiff: no vector-Jacobian product for '" << op->getName()
                               << "'";
      }
      for (unsigned index = 0; index < resultGrads.size(); ++index) {
        auto resultType = cast<RankedTensorType>(op->getResult(index).getType());
        if (!resultGrads[index] && isa<FloatType>(resultType.getElementType())) {
          // A result off the loss path (one piece of a split) contributes zero.
          resultGrads[index] = tg::FillOp::create(
              builder, op->getLoc(), op->getResult(index).getType(), builder.getF64FloatAttr(0.0));
        }
      }
      SmallVector<Value> operandGrads;
      if (failed(vjp.buildVJP(builder, resultGrads, operandGrads))) {
        return failure();
      }
      for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
        if (grad) {
          grads.accumulate(operand, grad, op->getLoc());
        }
      }
    }

    // Results: the loss, then one gradient per parameter in declaration order.
    SmallVector<Value> results{loss};
    SmallVector<Attribute> names;
    for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
      if (param.getRepeat()) {
        return param.emitError() << "tg-autodiff needs concrete parameters: run "
                                    "tg-inline-layers first";
      }
      if (param.getFrozen() || (ownParametersOnly && !referenced.contains(param.getSymName()))) {
        // A frozen parameter's gradient is never returned: its weight-gradient ops are dead
        // and the clean-up after this pass removes them.
        continue;
      }
      Value grad = paramGrads.lookup(param.getSymName());
      if (!grad) {
        grad = tg::FillOp::create(builder, loc, param.getType(), builder.getF64FloatAttr(0.0));
      }
      results.push_back(grad);
      names.push_back(FlatSymbolRefAttr::get(param.getSymNameAttr()));
    }
    if (inputActivation) {
      Value grad = grads.lookup(inputActivation);
      results.push_back(grad ? grad
                             : tg::FillOp::create(builder, loc, inputActivation.getType(),
                                                  builder.getF64FloatAttr(0.0))
                                   .getResult());
    }
    func::ReturnOp::create(builder, loc, results);
    ret.erase();
    fb.setType(builder.getFunctionType(body.getArgumentTypes(), ValueRange(results).getTypes()));
    fb->setAttr("tg.gradients", builder.getArrayAttr(names));
    return success();
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "tg-autodiff", kExact,
    "adds @forward_backward, the reverse-mode derivative of @forward; @forward is unchanged");
