//===- TGInterfaces.td - tg op interfaces ------------------*- tablegen -*-===//

#ifndef MLPERFC_DIALECTS_TG_IR_TGINTERFACES_TD
#define MLPERFC_DIALECTS_TG_IR_TGINTERFACES_TD

include "mlir/IR/OpBase.td"

def TG_VJPOpInterface : OpInterface<"VJPOpInterface"> {
  let cppNamespace = "::mlperf::tg";
  let description = [{
    Reverse-mode differentiation rule of an op: its vector-Jacobian product. tg-autodiff calls
    it once per op on the path to the loss, so each op's rule lives with the op (TGVJP.cpp)
    and a new op becomes differentiable by implementing this interface.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, at the builder's insertion point, the gradient of each operand given the
        gradient of each result (`resultGrads` has one non-null value per floating-point
        result, of the result's type; null for an integer result, such as routed expert
        indices, which takes no gradient). Appends one value per operand to `operandGrads`, of the operand's type,
        or null for operands that take no gradient (token ids, labels, loss masks). Fails with
        a diagnostic on the op for a form it cannot differentiate.
      }],
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

def TG_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlperf::tg";
  let description = [{
    How an op's result is split over one mesh axis when its operands are: the op's sharding
    rule (GSPMD's per-op propagation rule, upstream MLIR's `ShardingInterface` in the form our
    passes need). dist-tensor-parallel calls it once per op on tensor-parallel and
    sequence-parallel values, so no pass knows an op's semantics or a parameter's name: a new
    op becomes partitionable by implementing this interface (TGSharding.cpp).
  }];
  let methods = [
    InterfaceMethod<[{
        The split of the results given `operands`: per operand the dim split into `parts`
        equal slices (of each of its blocks), or -1 for a replicated operand. The operands already have their local
        (per-rank) types; the results still have their global ones. Fails with a diagnostic
        on the op when the operands cannot be split that way. A replicated floating-point
        operand of an op with split operands is taken to enter the split region: the pass
        makes its gradient the sum over the axis.
      }],
      "::mlir::FailureOr<::mlperf::tg::SplitRule>", "inferSplit",
      (ins "::llvm::ArrayRef<::mlperf::tg::TensorSplit>":$operands, "int64_t":$parts)>,
    InterfaceMethod<[{
        Records on the op that it runs split into `parts` over mesh axis `axis`: an op whose
        kernel then needs collectives of its own (the vocab-parallel embedding and
        cross-entropy), or whose attributes count elements of the split dim (tg.split's sizes).
      }],
      "void", "applySplit",
      (ins "::mlir::StringAttr":$axis, "::llvm::ArrayRef<::mlperf::tg::TensorSplit>":$operands,
           "int64_t":$parts),
      /*methodBody=*/[{}], /*defaultImplementation=*/[{ return; }]>,
  ];
}

#endif // MLPERFC_DIALECTS_TG_IR_TGINTERFACES_TD
