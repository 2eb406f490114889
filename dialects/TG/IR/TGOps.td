//===- TGOps.td - Training-graph dialect ops ---------------*- tablegen -*-===//

#ifndef MLPERFC_DIALECTS_TG_IR_TGOPS_TD
#define MLPERFC_DIALECTS_TG_IR_TGOPS_TD

include "dialects/TG/IR/TGBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def TG_AddOp : TG_Op<"add", [Pure, Elementwise, Commutative, SameOperandsAndResultType]> {
  let summary = "Elementwise addition (residual connections)";
  let description = [{
    `result[i] = lhs[i] + rhs[i]`. Both operands have the same shape and element type; there
    is no implicit broadcasting, so every broadcast in a model is visible in the IR.

    ```mlir
    %h = tg.add %x, %attn : tensor<8x32x64xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def TG_RMSNormOp : TG_Op<"rms_norm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Root-mean-square normalization over the last dimension";
  let description = [{
    For each row `x` along the last dimension of size `D`:
    `result = x / sqrt(mean(x * x) + epsilon) * weight`, with `weight` of shape `[D]`.
    The mean and the reciprocal square root are computed in f32 whatever the storage type
    (as the reference's fused RMSNorm kernels do).

    ```mlir
    %y = tg.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<8x32x64xbf16>, tensor<64xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, TG_Tensor:$weight, F64Attr:$epsilon);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` type($input) `,` type($weight)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and layout
//===----------------------------------------------------------------------===//

def TG_MatmulOp : TG_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "Batched matrix multiplication with optional operand transposes";
  let description = [{
    `result[..., m, n] = sum_k A[..., m, k] * B[..., k, n]` where `A` is `lhs` (or its
    transpose over the last two dimensions when `transpose_lhs` is set) and `B` is `rhs` (or
    its transpose when `transpose_rhs` is set). Leading dimensions of `lhs` are batch
    dimensions; `rhs` either has the same batch dimensions or is a rank-2 matrix shared by
    every batch (a weight). Accumulation is in f32 for every storage type.

    A linear layer with a weight stored `[out_features, in_features]` (the Hugging Face and
    Megatron layout) is `y = x · Wᵀ`:

    ```mlir
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<8x32x64xbf16>, tensor<160x64xbf16> -> tensor<8x32x160xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasCanonicalizer = 1;
}

def TG_TransposeOp : TG_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
  let summary = "Permutes the dimensions of a tensor";
  let description = [{
    `result` dimension `i` is `input` dimension `permutation[i]`.

    ```mlir
    %t = tg.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<8x32x64xf32> -> tensor<8x64x32xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

#endif // MLPERFC_DIALECTS_TG_IR_TGOPS_TD
