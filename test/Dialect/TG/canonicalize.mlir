// RUN: mlperf-opt %s --split-input-file --canonicalize | FileCheck %s

// Tests that an identity transpose folds away.
// CHECK-LABEL: func.func @identity_transpose
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CHECK-NOT: tg.transpose
// CHECK: return %[[X]]
func.func @identity_transpose(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %t = tg.transpose %x {permutation = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %t : tensor<2x3xf32>
}

// -----

// Tests that two transposes compose into one with the composed permutation
// (composed[i] = inner[outer[i]]; different permutations, so the order matters).
// CHECK-LABEL: func.func @compose_transposes
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x5x7xf32>)
// CHECK: %[[T:.+]] = tg.transpose %[[X]] {permutation = array<i64: 2, 0, 3, 1>} : tensor<2x3x5x7xf32> -> tensor<5x2x7x3xf32>
// CHECK-NOT: tg.transpose
// CHECK: return %[[T]]
func.func @compose_transposes(%x: tensor<2x3x5x7xf32>) -> tensor<5x2x7x3xf32> {
  %a = tg.transpose %x {permutation = array<i64: 1, 2, 0, 3>} : tensor<2x3x5x7xf32> -> tensor<3x5x2x7xf32>
  %b = tg.transpose %a {permutation = array<i64: 1, 2, 3, 0>} : tensor<3x5x2x7xf32> -> tensor<5x2x7x3xf32>
  return %b : tensor<5x2x7x3xf32>
}

// -----

// Tests that a transpose and its inverse cancel.
// CHECK-LABEL: func.func @inverse_transposes
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xbf16>)
// CHECK-NOT: tg.transpose
// CHECK: return %[[X]]
func.func @inverse_transposes(%x: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  %a = tg.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xbf16> -> tensor<3x2xbf16>
  %b = tg.transpose %a {permutation = array<i64: 1, 0>} : tensor<3x2xbf16> -> tensor<2x3xbf16>
  return %b : tensor<2x3xbf16>
}

// -----

// Tests that a matrix transpose of a matmul operand becomes the operand's flag, and that a
// flag already set is toggled off.
// CHECK-LABEL: func.func @absorb_into_matmul
// CHECK-SAME: (%[[A:.+]]: tensor<4x64x32xf32>, %[[B:.+]]: tensor<4x64x16xf32>)
// CHECK: %[[C:.+]] = tg.matmul %[[A]], %[[B]] {transpose_lhs} : tensor<4x64x32xf32>, tensor<4x64x16xf32> -> tensor<4x32x16xf32>
// CHECK: return %[[C]]
func.func @absorb_into_matmul(%a: tensor<4x64x32xf32>, %b: tensor<4x64x16xf32>) -> tensor<4x32x16xf32> {
  %at = tg.transpose %a {permutation = array<i64: 0, 2, 1>} : tensor<4x64x32xf32> -> tensor<4x32x64xf32>
  %bt = tg.transpose %b {permutation = array<i64: 0, 2, 1>} : tensor<4x64x16xf32> -> tensor<4x16x64xf32>
  %c = tg.matmul %at, %bt {transpose_rhs} : tensor<4x32x64xf32>, tensor<4x16x64xf32> -> tensor<4x32x16xf32>
  return %c : tensor<4x32x16xf32>
}

// -----

// Tests that a transpose that moves a batch dimension is not a matmul flag and stays.
// CHECK-LABEL: func.func @batch_transpose_stays
// CHECK: %[[T:.+]] = tg.transpose %{{.+}} {permutation = array<i64: 1, 0, 2>}
// CHECK: tg.matmul %[[T]], %{{.+}} :
func.func @batch_transpose_stays(%a: tensor<4x8x16xf32>, %b: tensor<16x2xf32>) -> tensor<8x4x2xf32> {
  %at = tg.transpose %a {permutation = array<i64: 1, 0, 2>} : tensor<4x8x16xf32> -> tensor<8x4x16xf32>
  %c = tg.matmul %at, %b : tensor<8x4x16xf32>, tensor<16x2xf32> -> tensor<8x4x2xf32>
  return %c : tensor<8x4x2xf32>
}

// -----

// Tests that scaling by exactly one folds away and other factors stay.
// CHECK-LABEL: func.func @scale_by_one
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK: %[[S:.+]] = tg.scale %[[X]] {factor = 5.000000e-01 : f64}
// CHECK: return %[[X]], %[[S]]
func.func @scale_by_one(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = tg.scale %x {factor = 1.0 : f64} : tensor<4xf32>
  %b = tg.scale %x {factor = 0.5 : f64} : tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests that repeating once (kv_heads == heads: plain multi-head attention) folds away.
// CHECK-LABEL: func.func @repeat_once
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>)
// CHECK-NOT: tg.repeat
// CHECK: return %[[X]]
func.func @repeat_once(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %r = tg.repeat %x {dim = 1 : i64, times = 1 : i64} : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// Tests that a reshape to the same shape folds away and that reshape chains collapse.
// CHECK-LABEL: func.func @reshapes
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x64xf32>)
// CHECK: %[[R:.+]] = tg.reshape %[[X]] : tensor<2x8x64xf32> -> tensor<16x64xf32>
// CHECK-NOT: tg.reshape
// CHECK: return %[[X]], %[[R]]
func.func @reshapes(%x: tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<16x64xf32>) {
  %same = tg.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  %a = tg.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %b = tg.reshape %a : tensor<2x8x4x16xf32> -> tensor<16x64xf32>
  return %same, %b : tensor<2x8x64xf32>, tensor<16x64xf32>
}

// -----

// Tests that an exact round trip through a wider type folds away and a lossy one stays:
// bf16 -> f32 -> bf16 is the identity, f32 -> bf16 -> f32 rounds.
// CHECK-LABEL: func.func @convert_round_trips
// CHECK-SAME: (%[[A:.+]]: tensor<4xbf16>, %[[B:.+]]: tensor<4xf32>)
// CHECK: %[[N:.+]] = tg.convert %[[B]] : tensor<4xf32> -> tensor<4xbf16>
// CHECK: %[[W:.+]] = tg.convert %[[N]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK: return %[[A]], %[[W]]
func.func @convert_round_trips(%a: tensor<4xbf16>, %b: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %a32 = tg.convert %a : tensor<4xbf16> -> tensor<4xf32>
  %a16 = tg.convert %a32 : tensor<4xf32> -> tensor<4xbf16>
  %b16 = tg.convert %b : tensor<4xf32> -> tensor<4xbf16>
  %b32 = tg.convert %b16 : tensor<4xbf16> -> tensor<4xf32>
  return %a16, %b32 : tensor<4xbf16>, tensor<4xf32>
}

// -----

// Tests that fp8 conversions are only folded when exact: E5M2 does not fit in E4M3FN.
// CHECK-LABEL: func.func @fp8_round_trip
// CHECK-COUNT-2: tg.convert
func.func @fp8_round_trip(%x: tensor<4xf8E5M2>) -> tensor<4xf8E5M2> {
  %a = tg.convert %x : tensor<4xf8E5M2> -> tensor<4xf8E4M3FN>
  %b = tg.convert %a : tensor<4xf8E4M3FN> -> tensor<4xf8E5M2>
  return %b : tensor<4xf8E5M2>
}

// -----

// Tests that an exact fp8 round trip folds: every f8E4M3FN value is a bf16 value.
// CHECK-LABEL: func.func @fp8_exact_round_trip
// CHECK-SAME: (%[[X:.+]]: tensor<4xf8E4M3FN>)
// CHECK-NOT: tg.convert
// CHECK: return %[[X]]
func.func @fp8_exact_round_trip(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  %a = tg.convert %x : tensor<4xf8E4M3FN> -> tensor<4xbf16>
  %b = tg.convert %a : tensor<4xbf16> -> tensor<4xf8E4M3FN>
  return %b : tensor<4xf8E4M3FN>
}
