// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --tg-fuse-cross-entropy | FileCheck %s

// Tests the pass's own example: the output layer and its loss become one op.
// CHECK-LABEL: func.func @output_layer
// CHECK-SAME: (%[[H:.+]]: tensor<1x32x64xbf16>, %[[W:.+]]: tensor<256x64xbf16>, %[[L:.+]]: tensor<1x32xi32>)
// CHECK-NEXT: %[[LOSS:.+]] = tg.linear_cross_entropy %[[H]], %[[W]], %[[L]] {logits_type = "bf16"} : tensor<1x32x64xbf16>, tensor<256x64xbf16>, tensor<1x32xi32> -> tensor<f32>
// CHECK-NEXT: return %[[LOSS]]
func.func @output_layer(%hn: tensor<1x32x64xbf16>, %head: tensor<256x64xbf16>, %labels: tensor<1x32xi32>) -> tensor<f32> {
  %logits = tg.matmul %hn, %head {transpose_rhs} : tensor<1x32x64xbf16>, tensor<256x64xbf16> -> tensor<1x32x256xbf16>
  %loss = tg.cross_entropy %logits, %labels : tensor<1x32x256xbf16>, tensor<1x32xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that a loss mask is kept, in f32.
// CHECK-LABEL: func.func @masked
// CHECK-NEXT: tg.linear_cross_entropy %arg0, %arg1, %arg2, %arg3 {logits_type = "f32"} : tensor<4x8xf32>, tensor<16x8xf32>, tensor<4xi32>, tensor<4xf32> -> tensor<f32>
func.func @masked(%h: tensor<4x8xf32>, %w: tensor<16x8xf32>, %labels: tensor<4xi32>, %mask: tensor<4xf32>) -> tensor<f32> {
  %logits = tg.matmul %h, %w {transpose_rhs} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %loss = tg.cross_entropy %logits, %labels, %mask : tensor<4x16xf32>, tensor<4xi32>, tensor<4xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that logits read elsewhere stay, with a remark.
// CHECK-LABEL: func.func @logits_returned
// CHECK: tg.cross_entropy
func.func @logits_returned(%h: tensor<4x8xf32>, %w: tensor<16x8xf32>, %labels: tensor<4xi32>) -> (tensor<f32>, tensor<4x16xf32>) {
  %logits = tg.matmul %h, %w {transpose_rhs} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  // expected-remark @below {{tg-fuse-cross-entropy: left unfused: the logits are read elsewhere: they have to exist}}
  %loss = tg.cross_entropy %logits, %labels : tensor<4x16xf32>, tensor<4xi32> -> tensor<f32>
  return %loss, %logits : tensor<f32>, tensor<4x16xf32>
}
