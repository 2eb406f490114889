// RUN: mlperf-opt %s | mlperf-opt | FileCheck %s

// The mixture-of-experts ops round-trip: a routed FFN in the reference's order (route, sort,
// gather, fc1, SwiGLU, probabilities before fc2, fc2, combine).
// CHECK-LABEL: func.func @moe_ffn
func.func @moe_ffn(%x: tensor<16x32xbf16>, %logits: tensor<16x8xf32>, %fc1: tensor<8x48x32xbf16>,
                   %fc2: tensor<8x32x24xbf16>) -> tensor<16x32xbf16> {
  // CHECK: tg.moe_route %{{.*}} {top_k = 2 : i64} : tensor<16x8xf32> -> tensor<16x2xf32>, tensor<16x2xi32>
  %probs, %experts = tg.moe_route %logits {top_k = 2 : i64} : tensor<16x8xf32> -> tensor<16x2xf32>, tensor<16x2xi32>
  // CHECK: tg.moe_sort %{{.*}} : tensor<16x2xi32> -> tensor<32xi32>, tensor<8xi32>
  %order, %sizes = tg.moe_sort %experts : tensor<16x2xi32> -> tensor<32xi32>, tensor<8xi32>
  // CHECK: tg.moe_permute
  %rows = tg.moe_permute %x, %order : tensor<16x32xbf16>, tensor<32xi32> -> tensor<32x32xbf16>
  // CHECK: tg.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} {transpose_rhs}
  %h = tg.grouped_matmul %rows, %fc1, %sizes {transpose_rhs} : tensor<32x32xbf16>, tensor<8x48x32xbf16>, tensor<8xi32> -> tensor<32x48xbf16>
  %gate, %up = tg.split %h {dim = 1 : i64, sizes = array<i64: 24, 24>} : tensor<32x48xbf16> -> tensor<32x24xbf16>, tensor<32x24xbf16>
  %act = tg.swiglu %gate, %up : tensor<32x24xbf16>
  %pairs = tg.reshape %probs : tensor<16x2xf32> -> tensor<32x1xf32>
  %sorted = tg.moe_permute %pairs, %order : tensor<32x1xf32>, tensor<32xi32> -> tensor<32x1xf32>
  %p = tg.reshape %sorted : tensor<32x1xf32> -> tensor<32xf32>
  // CHECK: tg.scale_rows
  %weighted = tg.scale_rows %act, %p : tensor<32x24xbf16>, tensor<32xf32>
  %out = tg.grouped_matmul %weighted, %fc2, %sizes {transpose_rhs} : tensor<32x24xbf16>, tensor<8x32x24xbf16>, tensor<8xi32> -> tensor<32x32xbf16>
  // CHECK: tg.moe_unpermute
  %y = tg.moe_unpermute %out, %order : tensor<32x32xbf16>, tensor<32xi32> -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// Their gradients' ops.
// CHECK-LABEL: func.func @moe_grads
func.func @moe_grads(%probs: tensor<16x2xf32>, %experts: tensor<16x2xi32>, %g: tensor<16x2xf32>,
                     %rows: tensor<32x32xbf16>, %dy: tensor<32x48xbf16>, %sizes: tensor<8xi32>,
                     %a: tensor<32x24xbf16>) -> (tensor<16x8xf32>, tensor<8x48x32xbf16>, tensor<8x32x48xbf16>, tensor<32xf32>) {
  // CHECK: tg.moe_route_grad
  %dl = tg.moe_route_grad %probs, %experts, %g : tensor<16x2xf32>, tensor<16x2xi32> -> tensor<16x8xf32>
  // CHECK: tg.grouped_matmul_weight_grad {{.*}} {transpose_rhs}
  %dw = tg.grouped_matmul_weight_grad %rows, %dy, %sizes {transpose_rhs} : tensor<32x32xbf16>, tensor<32x48xbf16>, tensor<8xi32> -> tensor<8x48x32xbf16>
  %dwn = tg.grouped_matmul_weight_grad %rows, %dy, %sizes : tensor<32x32xbf16>, tensor<32x48xbf16>, tensor<8xi32> -> tensor<8x32x48xbf16>
  // CHECK: tg.row_dot
  %dp = tg.row_dot %a, %a : tensor<32x24xbf16> -> tensor<32xf32>
  return %dl, %dw, %dwn, %dp : tensor<16x8xf32>, tensor<8x48x32xbf16>, tensor<8x32x48xbf16>, tensor<32xf32>
}

// The end-of-document loss mask and the token-weighted evaluation mean.
// CHECK-LABEL: func.func @masked_eval
// CHECK: tg.token_mask %{{.*}} {masked_token = 255 : i64} : tensor<2x8xi32> -> tensor<2x8xf32>
// CHECK: tg.mean_accumulate %{{.*}}, %{{.*}} weights %{{.*}} : tensor<2xf64>, tensor<f32>, tensor<2x8xf32> -> tensor<2xf64>
func.func @masked_eval(%tokens: tensor<2x8xi32>, %running: tensor<2xf64>, %loss: tensor<f32>) -> tensor<2xf64> {
  %mask = tg.token_mask %tokens {masked_token = 255 : i64} : tensor<2x8xi32> -> tensor<2x8xf32>
  %next = tg.mean_accumulate %running, %loss weights %mask : tensor<2xf64>, tensor<f32>, tensor<2x8xf32> -> tensor<2xf64>
  return %next : tensor<2xf64>
}
