// RUN: mlperf-opt %s --split-input-file --verify-diagnostics

// Tests that top_k cannot exceed the number of experts.
func.func @route_k(%l: tensor<16x8xf32>) {
  // expected-error @+1 {{'tg.moe_route' op top_k = 9 must be in [1, 8] (the number of experts)}}
  %p, %e = tg.moe_route %l {top_k = 9 : i64} : tensor<16x8xf32> -> tensor<16x9xf32>, tensor<16x9xi32>
  return
}

// -----

// Tests that the routed results are [tokens, top_k].
func.func @route_shape(%l: tensor<16x8xf32>) {
  // expected-error @+1 {{'tg.moe_route' op probs and experts must be [16x2]}}
  %p, %e = tg.moe_route %l {top_k = 2 : i64} : tensor<16x8xf32> -> tensor<16x4xf32>, tensor<16x4xi32>
  return
}

// -----

// Tests that the router logits are f32 (Megatron's router GEMM precision).
func.func @route_bf16(%l: tensor<16x8xbf16>) {
  // expected-error @+1 {{'tg.moe_route' op operand #0 must be statically shaped tensor of 32-bit float values}}
  %p, %e = tg.moe_route %l {top_k = 2 : i64} : tensor<16x8xbf16> -> tensor<16x2xf32>, tensor<16x2xi32>
  return
}

// -----

// Tests that the sort's order holds every (token, slot) pair.
func.func @sort_order(%e: tensor<16x2xi32>) {
  // expected-error @+1 {{'tg.moe_sort' op needs experts [tokens, k], order [tokens·k] and group sizes [experts] with experts >= k}}
  %o, %s = tg.moe_sort %e : tensor<16x2xi32> -> tensor<16xi32>, tensor<8xi32>
  return
}

// -----

// Tests that the routed rows are a multiple of the token rows.
func.func @permute_rows(%x: tensor<16x32xf32>, %o: tensor<24xi32>) {
  // expected-error @+1 {{'tg.moe_permute' op the 24 routed rows are not a multiple of the 16 token rows}}
  %r = tg.moe_permute %x, %o : tensor<16x32xf32>, tensor<24xi32> -> tensor<24x32xf32>
  return
}

// -----

// Tests that the combine keeps the row width.
func.func @unpermute_width(%r: tensor<32x32xf32>, %o: tensor<32xi32>) {
  // expected-error @+1 {{'tg.moe_unpermute' op routed rows 'tensor<32x32xf32>' and order 'tensor<32xi32>' do not match token rows 'tensor<16x16xf32>'}}
  %x = tg.moe_unpermute %r, %o : tensor<32x32xf32>, tensor<32xi32> -> tensor<16x16xf32>
  return
}

// -----

// Tests that a grouped GEMM's weights match the rows (transposed layout: [experts, out, in]).
func.func @grouped_k(%x: tensor<32x32xf32>, %w: tensor<8x48x24xf32>, %s: tensor<8xi32>) {
  // expected-error @+1 {{'tg.grouped_matmul' op shapes do not match}}
  %y = tg.grouped_matmul %x, %w, %s {transpose_rhs} : tensor<32x32xf32>, tensor<8x48x24xf32>, tensor<8xi32> -> tensor<32x48xf32>
  return
}

// -----

// Tests that there is one group size per expert.
func.func @grouped_sizes(%x: tensor<32x32xf32>, %w: tensor<8x48x32xf32>, %s: tensor<4xi32>) {
  // expected-error @+1 {{'tg.grouped_matmul' op shapes do not match}}
  %y = tg.grouped_matmul %x, %w, %s {transpose_rhs} : tensor<32x32xf32>, tensor<8x48x32xf32>, tensor<4xi32> -> tensor<32x48xf32>
  return
}

// -----

// Tests that the weight gradient has the weights' layout.
func.func @weight_grad(%x: tensor<32x32xf32>, %dy: tensor<32x48xf32>, %s: tensor<8xi32>) {
  // expected-error @+1 {{'tg.grouped_matmul_weight_grad' op shapes do not match}}
  %dw = tg.grouped_matmul_weight_grad %x, %dy, %s : tensor<32x32xf32>, tensor<32x48xf32>, tensor<8xi32> -> tensor<8x48x32xf32>
  return
}

// -----

// Tests that row scales have one value per row.
func.func @scale_rows(%x: tensor<32x24xf32>, %p: tensor<24xf32>) {
  // expected-error @+1 {{'tg.scale_rows' op scales 'tensor<24xf32>' must have the shape of 'tensor<32x24xf32>' without its last dimension}}
  %y = tg.scale_rows %x, %p : tensor<32x24xf32>, tensor<24xf32>
  return
}
