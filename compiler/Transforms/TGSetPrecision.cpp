//===- TGSetPrecision.cpp - Choose the compute precision --------*- C++ -*-===//

#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "tg-set-precision"

namespace mlperf {
#define GEN_PASS_DEF_TGSETPRECISIONPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

/// `type` with bf16/fp8 elements widened to f32; other types unchanged.
Type widen(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor) {
    return type;
  }
  Type element = tensor.getElementType();
  if (!isa<BFloat16Type, Float8E4M3FNType, Float8E5M2Type>(element)) {
    return type;
  }
  return RankedTensorType::get(tensor.getShape(), Float32Type::get(type.getContext()));
}

struct TGSetPrecisionPass : impl::TGSetPrecisionPassBase<TGSetPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    if (precision != "fp32" && precision != "bf16") {
      getOperation()->emitError() << "tg-set-precision: precision must be fp32 or bf16, got '"
                                  << precision.getValue() << "'";
      return signalPassFailure();
    }
    if (precision == "bf16") {
      return; // the declarations state the bf16 reference precision
    }
    getOperation()->walk([](Operation *op) {
      if (auto param = dyn_cast<tg::ParamOp>(op)) {
        param.setType(cast<RankedTensorType>(widen(param.getType())));
      }
      if (auto func = dyn_cast<func::FuncOp>(op)) {
        FunctionType type = func.getFunctionType();
        auto inputs = llvm::map_to_vector(type.getInputs(), widen);
        auto results = llvm::map_to_vector(type.getResults(), widen);
        func.setType(FunctionType::get(func.getContext(), inputs, results));
      }
      for (Region &region : op->getRegions()) {
        for (Block &block : region) {
          for (BlockArgument arg : block.getArguments()) {
            arg.setType(widen(arg.getType()));
          }
        }
      }
      for (Value result : op->getResults()) {
        result.setType(widen(result.getType()));
      }
    });
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "tg-set-precision", kPrecision,
    "precision=fp32 widens every bf16/fp8 tensor to f32; bf16 keeps the declaration");
