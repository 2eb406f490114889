//===- Passes.td - mlperfc transformation passes ----------*- tablegen -*-===//
//
// Every pass states its rewrite class in its description (exact, reassociation, precision);
// `mlperfc audit` reads it. See docs/passes.md.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_TRANSFORMS_PASSES_TD
#define MLPERFC_COMPILER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TGSimplifyPass : Pass<"tg-simplify"> {
  let summary = "Applies the tg dialect's exact algebraic simplifications";
  let description = [{
    Rewrite class: exact.

    Runs the canonicalization patterns of the `tg` ops, and the folders of every op it visits
    (the greedy driver folds any foldable op; folds are exact), to a fixed point. Patterns of
    other dialects are left to the standard canonicalizer. Every rewrite computes the same
    real-valued function with the same products and sums; only layout and op count change:

    - `tg.transpose` with the identity permutation is removed;
    - `tg.transpose` of a `tg.transpose` becomes one transpose with the composed permutation;
    - a `tg.transpose` that swaps the last two dimensions of a `tg.matmul` operand becomes the
      matmul's `transpose_lhs` / `transpose_rhs` flag (GEMM libraries read transposed operands
      at no cost);
    - `tg.scale` by 1.0, `tg.repeat` once and a same-type `tg.reshape` are removed;
    - `tg.reshape` of a `tg.reshape` becomes one reshape;
    - `tg.convert` to the same type, and exact round trips (bf16 -> f32 -> bf16), are removed.

    Before:

    ```mlir
    %t = tg.transpose %w {permutation = array<i64: 1, 0>} : tensor<160x64xf32> -> tensor<64x160xf32>
    %y = tg.matmul %x, %t : tensor<32x64xf32>, tensor<64x160xf32> -> tensor<32x160xf32>
    ```

    After:

    ```mlir
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<32x64xf32>, tensor<160x64xf32> -> tensor<32x160xf32>
    ```

    The pass fails, naming the op it ran on, if the rewrites do not reach a fixed point within
    `max-iterations` sweeps: a pattern set that cycles is a compiler bug, not a result.
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "int64_t", /*default=*/"10",
           "Maximum number of sweeps over the IR before giving up">,
  ];
  let dependentDialects = ["::mlperf::tg::TGDialect"];
}

#endif // MLPERFC_COMPILER_TRANSFORMS_PASSES_TD
