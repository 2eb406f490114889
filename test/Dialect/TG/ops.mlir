// RUN: mlperf-opt %s --split-input-file | mlperf-opt --split-input-file | FileCheck %s

// Tests that a linear layer (weight [out, in], y = x·Wᵀ) round-trips with its transpose flag.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.+]]: tensor<8x32x64xbf16>, %[[W:.+]]: tensor<160x64xbf16>)
// CHECK: %[[Y:.+]] = tg.matmul %[[X]], %[[W]] {transpose_rhs} : tensor<8x32x64xbf16>, tensor<160x64xbf16> -> tensor<8x32x160xbf16>
// CHECK: return %[[Y]]
func.func @linear(%x: tensor<8x32x64xbf16>, %w: tensor<160x64xbf16>) -> tensor<8x32x160xbf16> {
  %y = tg.matmul %x, %w {transpose_rhs} : tensor<8x32x64xbf16>, tensor<160x64xbf16> -> tensor<8x32x160xbf16>
  return %y : tensor<8x32x160xbf16>
}

// -----

// Tests a batched matmul with both operands batched and transposed (attention-score shape).
// CHECK-LABEL: func.func @batched
// CHECK: tg.matmul %{{.+}}, %{{.+}} {transpose_lhs, transpose_rhs} : tensor<2x4x16x32xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x32x8xf32>
func.func @batched(%a: tensor<2x4x16x32xf32>, %b: tensor<2x4x8x16xf32>) -> tensor<2x4x32x8xf32> {
  %c = tg.matmul %a, %b {transpose_lhs, transpose_rhs} : tensor<2x4x16x32xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x32x8xf32>
  return %c : tensor<2x4x32x8xf32>
}

// -----

// Tests fp8 operands (E4M3 forward, E5M2 gradients) are accepted by matmul.
// CHECK-LABEL: func.func @fp8
// CHECK: tg.matmul %{{.+}}, %{{.+}} : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN> -> tensor<16x8xf8E4M3FN>
// CHECK: tg.matmul %{{.+}}, %{{.+}} : tensor<16x32xf8E5M2>, tensor<32x8xf8E5M2> -> tensor<16x8xf8E5M2>
func.func @fp8(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
               %g: tensor<16x32xf8E5M2>, %h: tensor<32x8xf8E5M2>) -> (tensor<16x8xf8E4M3FN>, tensor<16x8xf8E5M2>) {
  %c = tg.matmul %a, %b : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN> -> tensor<16x8xf8E4M3FN>
  %d = tg.matmul %g, %h : tensor<16x32xf8E5M2>, tensor<32x8xf8E5M2> -> tensor<16x8xf8E5M2>
  return %c, %d : tensor<16x8xf8E4M3FN>, tensor<16x8xf8E5M2>
}

// -----

// Tests rms_norm with its epsilon, followed by a residual add.
// CHECK-LABEL: func.func @norm_residual
// CHECK-SAME: (%[[X:.+]]: tensor<8x32x64xbf16>, %[[W:.+]]: tensor<64xbf16>)
// CHECK: %[[N:.+]] = tg.rms_norm %[[X]], %[[W]] {epsilon = 1.000000e-05 : f64} : tensor<8x32x64xbf16>, tensor<64xbf16>
// CHECK: %[[R:.+]] = tg.add %[[X]], %[[N]] : tensor<8x32x64xbf16>
// CHECK: return %[[R]]
func.func @norm_residual(%x: tensor<8x32x64xbf16>, %w: tensor<64xbf16>) -> tensor<8x32x64xbf16> {
  %n = tg.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<8x32x64xbf16>, tensor<64xbf16>
  %r = tg.add %x, %n : tensor<8x32x64xbf16>
  return %r : tensor<8x32x64xbf16>
}

// -----

// Tests transpose result shapes follow the permutation.
// CHECK-LABEL: func.func @transpose
// CHECK: tg.transpose %{{.+}} {permutation = array<i64: 2, 0, 1>} : tensor<2x3x5xf32> -> tensor<5x2x3xf32>
func.func @transpose(%x: tensor<2x3x5xf32>) -> tensor<5x2x3xf32> {
  %t = tg.transpose %x {permutation = array<i64: 2, 0, 1>} : tensor<2x3x5xf32> -> tensor<5x2x3xf32>
  return %t : tensor<5x2x3xf32>
}

// -----

// Tests the generic form parses into the same ops (what --mlir-print-op-generic writes).
// CHECK-LABEL: func.func @generic
// CHECK: tg.add %{{.+}}, %{{.+}} : tensor<4xf32>
func.func @generic(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = "tg.add"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
