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
        gradient of each result (`resultGrads` has one non-null value per result, of the
        result's type). Appends one value per operand to `operandGrads`, of the operand's type,
        or null for operands that take no gradient (token ids, labels, loss masks). Fails with
        a diagnostic on the op for a form it cannot differentiate.
      }],
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // MLPERFC_DIALECTS_TG_IR_TGINTERFACES_TD
