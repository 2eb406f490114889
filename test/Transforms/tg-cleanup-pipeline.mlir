// RUN: mlperf-opt %s --tg-cleanup-pipeline | FileCheck %s

// Tests that simplification exposes identical matmuls that CSE then merges: the two
// projections read the same weight through different (now absorbed) transposes.
// CHECK-LABEL: func.func @merge_after_simplify
// CHECK-SAME: (%[[X:.+]]: tensor<32x64xf32>, %[[W:.+]]: tensor<160x64xf32>)
// CHECK: %[[Y:.+]] = tg.matmul %[[X]], %[[W]] {transpose_rhs}
// CHECK-NOT: tg.matmul
// CHECK: %[[S:.+]] = tg.add %[[Y]], %[[Y]]
// CHECK: return %[[S]]
func.func @merge_after_simplify(%x: tensor<32x64xf32>, %w: tensor<160x64xf32>) -> tensor<32x160xf32> {
  %t0 = tg.transpose %w {permutation = array<i64: 1, 0>} : tensor<160x64xf32> -> tensor<64x160xf32>
  %y0 = tg.matmul %x, %t0 : tensor<32x64xf32>, tensor<64x160xf32> -> tensor<32x160xf32>
  %y1 = tg.matmul %x, %w {transpose_rhs} : tensor<32x64xf32>, tensor<160x64xf32> -> tensor<32x160xf32>
  %s = tg.add %y0, %y1 : tensor<32x160xf32>
  return %s : tensor<32x160xf32>
}
