// RUN: mlperf-opt %s --split-input-file --tg-fuse-add-rms-norm | FileCheck %s

// Tests the pass's own example: the sum stays a result for the residual stream.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[X:.+]]: tensor<1x32x64xbf16>, %[[A:.+]]: tensor<1x32x64xbf16>, %[[W:.+]]: tensor<64xbf16>)
// CHECK-NEXT: %[[H:.+]], %[[HN:.+]] = tg.add_rms_norm %[[X]], %[[A]], %[[W]] {epsilon = 1.000000e-05 : f64} : tensor<1x32x64xbf16>, tensor<64xbf16>
// CHECK-NEXT: %[[OUT:.+]] = tg.add %[[H]], %[[HN]]
// CHECK-NEXT: return %[[OUT]]
func.func @residual(%x: tensor<1x32x64xbf16>, %attn: tensor<1x32x64xbf16>, %w: tensor<64xbf16>) -> tensor<1x32x64xbf16> {
  %h = tg.add %x, %attn : tensor<1x32x64xbf16>
  %hn = tg.rms_norm %h, %w {epsilon = 1.0e-05 : f64} : tensor<1x32x64xbf16>, tensor<64xbf16>
  %out = tg.add %h, %hn : tensor<1x32x64xbf16>
  return %out : tensor<1x32x64xbf16>
}

// -----

// Tests that a norm of anything but a sum stays.
// CHECK-LABEL: func.func @plain_norm
// CHECK-NEXT: tg.rms_norm
func.func @plain_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = tg.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}
