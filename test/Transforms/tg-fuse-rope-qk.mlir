// RUN: mlperf-opt %s --split-input-file --tg-fuse-rope-qk | FileCheck %s

// Tests that an attention's query and key rotations with one set of attributes become one op.
// CHECK-LABEL: func.func @rotations
// CHECK-SAME: (%[[Q:.+]]: tensor<1x32x4x16xbf16>, %[[K:.+]]: tensor<1x32x2x16xbf16>, %[[V:.+]]: tensor<1x2x32x16xbf16>)
// CHECK-NEXT: %[[QR:.+]], %[[KR:.+]] = tg.rope_qk %[[Q]], %[[K]] {theta = 1.000000e+04 : f64} : tensor<1x32x4x16xbf16>, tensor<1x32x2x16xbf16>
// CHECK-NEXT: tg.transpose %[[QR]]
// CHECK-NEXT: tg.transpose %[[KR]]
// CHECK-NOT: tg.rope %
func.func @rotations(%q: tensor<1x32x4x16xbf16>, %k: tensor<1x32x2x16xbf16>, %v: tensor<1x2x32x16xbf16>) -> tensor<1x4x32x16xbf16> {
  %qr = tg.rope %q {theta = 1.0e+04 : f64} : tensor<1x32x4x16xbf16>
  %kr = tg.rope %k {theta = 1.0e+04 : f64} : tensor<1x32x2x16xbf16>
  %qh = tg.transpose %qr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x32x4x16xbf16> -> tensor<1x4x32x16xbf16>
  %kh = tg.transpose %kr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x32x2x16xbf16> -> tensor<1x2x32x16xbf16>
  %o, %lse = tg.attention %qh, %kh, %v {causal, scale = 0.25 : f64} : tensor<1x4x32x16xbf16>, tensor<1x2x32x16xbf16>, tensor<1x2x32x16xbf16> -> tensor<1x4x32x16xbf16>, tensor<1x4x32xf32>
  return %o : tensor<1x4x32x16xbf16>
}

// -----

// Tests that rotations with different attributes stay two.
// CHECK-LABEL: func.func @different_theta
// CHECK-COUNT-2: tg.rope %
func.func @different_theta(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %qr = tg.rope %q {theta = 1.0e+04 : f64} : tensor<1x8x2x4xf32>
  %kr = tg.rope %k {theta = 5.0e+05 : f64} : tensor<1x8x2x4xf32>
  %qh = tg.transpose %qr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %kh = tg.transpose %kr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %o, %lse = tg.attention %qh, %kh, %v {scale = 0.5 : f64} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}
