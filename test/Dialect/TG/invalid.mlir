// RUN: mlperf-opt %s --split-input-file --verify-diagnostics

// Tests that matmul rejects operands of rank < 2.
func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+2 {{'tg.matmul' op operands must have rank >= 2, got lhs rank 1 and rhs rank 2}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %c = tg.matmul %a, %b : tensor<8xf32>, tensor<8x4xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that matmul rejects mixed element types.
func.func @matmul_element_types(%a: tensor<2x8xbf16>, %b: tensor<8x4xf32>) {
  // expected-error @+2 {{'tg.matmul' op operand element types differ: lhs 'bf16', rhs 'f32'}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %c = tg.matmul %a, %b : tensor<2x8xbf16>, tensor<8x4xf32> -> tensor<2x4xbf16>
  return
}

// -----

// Tests that matmul rejects mismatched batch dimensions.
func.func @matmul_batch(%a: tensor<3x2x8xf32>, %b: tensor<4x8x4xf32>) {
  // expected-error @+2 {{'tg.matmul' op batch dimensions differ: lhs 3, rhs 4 (rhs must have the same batch dimensions or be a rank-2 matrix)}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %c = tg.matmul %a, %b : tensor<3x2x8xf32>, tensor<4x8x4xf32> -> tensor<3x2x4xf32>
  return
}

// -----

// Tests that matmul names both contraction sizes when they differ.
func.func @matmul_contraction(%x: tensor<32x64xf32>, %w: tensor<64x160xf32>) {
  // expected-error @+2 {{'tg.matmul' op contraction dimensions differ: lhs 32x64 has K = 64, rhs 64x160 (transposed) has K = 160}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %y = tg.matmul %x, %w {transpose_rhs} : tensor<32x64xf32>, tensor<64x160xf32> -> tensor<32x64xf32>
  return
}

// -----

// Tests that a declared matmul result type must equal the inferred one.
func.func @matmul_result(%x: tensor<32x64xf32>, %w: tensor<64x160xf32>) {
  // expected-error @+2 {{'tg.matmul' op failed to infer returned types}}
  // expected-error @+1 {{'tg.matmul' op inferred type(s) 'tensor<32x160xf32>' are incompatible with return type(s) of operation 'tensor<32x128xf32>'}}
  %y = tg.matmul %x, %w : tensor<32x64xf32>, tensor<64x160xf32> -> tensor<32x128xf32>
  return
}

// -----

// Tests that element types outside the approved set are rejected (f16 is not used by tg).
func.func @element_type(%a: tensor<4xf16>) {
  // expected-error @+1 {{'tg.add' op operand #0 must be ranked tensor of f32, bf16, f8E4M3FN or f8E5M2 values, but got 'tensor<4xf16>'}}
  %b = tg.add %a, %a : tensor<4xf16>
  return
}

// -----

// Tests that add has no implicit broadcasting.
func.func @add_shapes(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'tg.add' op all non-scalar operands/results must have the same shape and base type}}
  %c = "tg.add"(%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that the rms_norm weight is a vector.
func.func @rms_norm_weight_rank(%x: tensor<4x8xf32>, %w: tensor<1x8xf32>) {
  // expected-error @+1 {{'tg.rms_norm' op weight must have rank 1, got rank 2}}
  %y = tg.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<1x8xf32>
  return
}

// -----

// Tests that the rms_norm weight covers the normalized dimension.
func.func @rms_norm_weight_size(%x: tensor<4x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'tg.rms_norm' op weight size 4 does not match the normalized (last) dimension 8 of the input}}
  %y = tg.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// Tests that the rms_norm weight has the input's element type.
func.func @rms_norm_weight_type(%x: tensor<4x8xbf16>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.rms_norm' op weight element type 'f32' differs from input element type 'bf16'}}
  %y = tg.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<4x8xbf16>, tensor<8xf32>
  return
}

// -----

// Tests that rms_norm needs a positive epsilon.
func.func @rms_norm_epsilon(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.rms_norm' op epsilon must be a finite positive number, got 0}}
  %y = tg.rms_norm %x, %w {epsilon = 0.0 : f64} : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

// Tests that rms_norm rejects a scalar input.
func.func @rms_norm_scalar(%x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error @+1 {{'tg.rms_norm' op input must have rank >= 1, got a scalar}}
  %y = "tg.rms_norm"(%x, %w) {epsilon = 1.0e-05 : f64} : (tensor<f32>, tensor<1xf32>) -> tensor<f32>
  return
}

// -----

// Tests that rms_norm requires its epsilon.
func.func @rms_norm_missing_epsilon(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.rms_norm' op requires attribute 'epsilon'}}
  %y = tg.rms_norm %x, %w : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

// Tests that the permutation length must equal the rank.
func.func @transpose_length(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'tg.transpose' op permutation has 3 entries but the input has rank 2}}
  // expected-error @+1 {{'tg.transpose' op failed to infer returned types}}
  %t = tg.transpose %x {permutation = array<i64: 0, 1, 2>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// Tests that a repeated index is not a permutation.
func.func @transpose_repeat(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'tg.transpose' op permutation [1, 1] is not a permutation of 0..1}}
  // expected-error @+1 {{'tg.transpose' op failed to infer returned types}}
  %t = tg.transpose %x {permutation = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<3x3xf32>
  return
}

// -----

// Tests that an out-of-range index is not a permutation.
func.func @transpose_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'tg.transpose' op permutation [0, 2] is not a permutation of 0..1}}
  // expected-error @+1 {{'tg.transpose' op failed to infer returned types}}
  %t = tg.transpose %x {permutation = array<i64: 0, 2>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// Tests that an unknown tg op is an error, not silently accepted.
func.func @unknown_op(%x: tensor<2xf32>) {
  // expected-error @+1 {{custom op 'tg.frobnicate' is unknown}}
  %y = tg.frobnicate %x : tensor<2xf32>
  return
}
