// RUN: mlperf-opt %s --split-input-file --tg-fuse-swiglu | FileCheck %s

// Tests the pass's own example, and that the silu may be either operand of the mul.
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[G:.+]]: tensor<1x32x160xbf16>, %[[U:.+]]: tensor<1x32x160xbf16>)
// CHECK-NEXT: %[[A:.+]] = tg.swiglu %[[G]], %[[U]] : tensor<1x32x160xbf16>
// CHECK-NEXT: %[[B:.+]] = tg.swiglu %[[U]], %[[G]] : tensor<1x32x160xbf16>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @swiglu(%gate: tensor<1x32x160xbf16>, %up: tensor<1x32x160xbf16>) -> (tensor<1x32x160xbf16>, tensor<1x32x160xbf16>) {
  %a = tg.silu %gate : tensor<1x32x160xbf16>
  %g = tg.mul %a, %up : tensor<1x32x160xbf16>
  %b = tg.silu %up : tensor<1x32x160xbf16>
  %h = tg.mul %gate, %b : tensor<1x32x160xbf16>
  return %g, %h : tensor<1x32x160xbf16>, tensor<1x32x160xbf16>
}

// -----

// Tests that an activation read elsewhere, or squared, stays as it is.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: tg.swiglu
func.func @kept(%gate: tensor<4xf32>, %up: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = tg.silu %gate : tensor<4xf32>
  %g = tg.mul %a, %up : tensor<4xf32>
  %b = tg.silu %up : tensor<4xf32>
  %s = tg.mul %b, %b : tensor<4xf32>
  return %g, %a, %s : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
