// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --tg-simplify | FileCheck %s

// Tests the pass's own example: the weight transpose of a linear layer becomes a matmul flag.
// CHECK-LABEL: func.func @linear_weight_transpose
// CHECK-SAME: (%[[X:.+]]: tensor<32x64xf32>, %[[W:.+]]: tensor<160x64xf32>)
// CHECK-NEXT: %[[Y:.+]] = tg.matmul %[[X]], %[[W]] {transpose_rhs} : tensor<32x64xf32>, tensor<160x64xf32> -> tensor<32x160xf32>
// CHECK-NEXT: return %[[Y]]
func.func @linear_weight_transpose(%x: tensor<32x64xf32>, %w: tensor<160x64xf32>) -> tensor<32x160xf32> {
  %t = tg.transpose %w {permutation = array<i64: 1, 0>} : tensor<160x64xf32> -> tensor<64x160xf32>
  %y = tg.matmul %x, %t : tensor<32x64xf32>, tensor<64x160xf32> -> tensor<32x160xf32>
  return %y : tensor<32x160xf32>
}

// -----

// Tests that a chain of transposes reaching a matmul collapses to a flag (fold, then pattern).
// CHECK-LABEL: func.func @chain_into_flag
// CHECK-SAME: (%[[A:.+]]: tensor<2x8x4xf32>, %[[B:.+]]: tensor<2x8x3xf32>)
// CHECK-NOT: tg.transpose
// CHECK: tg.matmul %[[A]], %[[B]] {transpose_lhs} : tensor<2x8x4xf32>, tensor<2x8x3xf32> -> tensor<2x4x3xf32>
func.func @chain_into_flag(%a: tensor<2x8x4xf32>, %b: tensor<2x8x3xf32>) -> tensor<2x4x3xf32> {
  %t0 = tg.transpose %a {permutation = array<i64: 1, 0, 2>} : tensor<2x8x4xf32> -> tensor<8x2x4xf32>
  %t1 = tg.transpose %t0 {permutation = array<i64: 1, 2, 0>} : tensor<8x2x4xf32> -> tensor<2x4x8xf32>
  %c = tg.matmul %t1, %b : tensor<2x4x8xf32>, tensor<2x8x3xf32> -> tensor<2x4x3xf32>
  return %c : tensor<2x4x3xf32>
}

// -----

// Tests that tg ops without a rewrite stay, and that ops of other dialects are only folded
// (the greedy driver folds every op it visits; folds are exact), never pattern-rewritten.
// CHECK-LABEL: func.func @nothing_to_do
// CHECK: %[[C:.+]] = arith.constant 5 : i32
// CHECK: tg.rms_norm
// CHECK: tg.add
// CHECK: return %{{.+}}, %[[C]]
func.func @nothing_to_do(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, i32) {
  %two = arith.constant 2 : i32
  %three = arith.constant 3 : i32
  %five = arith.addi %two, %three : i32
  %n = tg.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  %r = tg.add %x, %n : tensor<4x8xf32>
  return %r, %five : tensor<4x8xf32>, i32
}
