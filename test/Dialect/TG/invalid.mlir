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
  // expected-error @+1 {{'tg.add' op operand #0 must be statically shaped tensor of f32, bf16, f8E4M3FN or f8E5M2 values, but got 'tensor<4xf16>'}}
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

// -----

// Tests that scale rejects a non-finite factor.
func.func @scale_inf(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.scale' op factor must be finite}}
  %y = tg.scale %x {factor = 0x7FF0000000000000 : f64} : tensor<4xf32>
  return
}

// -----

// Tests that the embedding table must be a matrix.
func.func @embedding_table(%t: tensor<4x8x2xf32>, %ids: tensor<3xi32>) {
  // expected-error @+2 {{'tg.embedding' op table must be [vocab, hidden], got rank 3}}
  // expected-error @+1 {{'tg.embedding' op failed to infer returned types}}
  %h = "tg.embedding"(%t, %ids) : (tensor<4x8x2xf32>, tensor<3xi32>) -> tensor<3x8xf32>
  return
}

// -----

// Tests that token ids are integers.
func.func @embedding_ids(%t: tensor<4x8xf32>, %ids: tensor<3xf32>) {
  // expected-error @+1 {{'tg.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xf32>'}}
  %h = "tg.embedding"(%t, %ids) : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<3x8xf32>
  return
}

// -----

// Tests that rope needs a [batch, seq, heads, head_dim] input.
func.func @rope_rank(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.rope' op input must be [batch, seq, heads, head_dim], got rank 2}}
  %y = tg.rope %x {theta = 1.0e+04 : f64} : tensor<8x16xf32>
  return
}

// -----

// Tests that rope rotates halves of an even head_dim.
func.func @rope_odd(%x: tensor<1x8x2x15xf32>) {
  // expected-error @+1 {{'tg.rope' op head_dim must be even to rotate halves, got 15}}
  %y = tg.rope %x {theta = 1.0e+04 : f64} : tensor<1x8x2x15xf32>
  return
}

// -----

// Tests that rope needs a positive theta.
func.func @rope_theta(%x: tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{'tg.rope' op theta must be a finite positive number, got -1}}
  %y = tg.rope %x {theta = -1.0 : f64} : tensor<1x8x2x16xf32>
  return
}

// -----

// Tests that Llama 3.1 scaling is all four attributes or none.
func.func @rope_partial(%x: tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{'tg.rope' op Llama 3.1 RoPE scaling needs all of scaling_factor, low_freq_factor, high_freq_factor and original_max_position}}
  %y = tg.rope %x {theta = 5.0e+05 : f64, scaling_factor = 8.0 : f64} : tensor<1x8x2x16xf32>
  return
}

// -----

// Tests that the high frequency factor exceeds the low one.
func.func @rope_factors(%x: tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{'tg.rope' op high_freq_factor (1) must exceed low_freq_factor (4) for the smooth interpolation between them}}
  %y = tg.rope %x {theta = 5.0e+05 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 4.0 : f64, high_freq_factor = 1.0 : f64, original_max_position = 8192 : i64} : tensor<1x8x2x16xf32>
  return
}

// -----

// Tests that RoPE scaling factors are positive.
func.func @rope_negative(%x: tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{'tg.rope' op RoPE scaling factors must be finite and positive}}
  %y = tg.rope %x {theta = 5.0e+05 : f64, scaling_factor = 0.0 : f64, low_freq_factor = 1.0 : f64, high_freq_factor = 4.0 : f64, original_max_position = 8192 : i64} : tensor<1x8x2x16xf32>
  return
}

// -----

// Tests that the original context length is positive.
func.func @rope_original(%x: tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{'tg.rope' op original_max_position must be positive, got 0}}
  %y = tg.rope %x {theta = 5.0e+05 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 1.0 : f64, high_freq_factor = 4.0 : f64, original_max_position = 0 : i64} : tensor<1x8x2x16xf32>
  return
}

// -----

// Tests that causal masking needs [..., queries, keys].
func.func @mask_rank(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tg.causal_mask' op input must be [..., queries, keys], got rank 1}}
  %y = tg.causal_mask %x : tensor<8xf32>
  return
}

// -----

// Tests that causal masking needs square scores.
func.func @mask_square(%x: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'tg.causal_mask' op causal masking needs as many queries as keys, got 8 queries and 4 keys}}
  %y = tg.causal_mask %x : tensor<2x8x4xf32>
  return
}

// -----

// Tests that softmax's dim is in range.
func.func @softmax_dim(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'tg.softmax' op dim 2 is out of range for a tensor of rank 2}}
  %y = tg.softmax %x {dim = 2 : i64} : tensor<2x8xf32>
  return
}

// -----

// Tests that repeat's dim is in range.
func.func @repeat_dim(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tg.repeat' op dim -1 is out of range for a tensor of rank 2}}
  // expected-error @+1 {{'tg.repeat' op failed to infer returned types}}
  %y = tg.repeat %x {dim = -1 : i64, times = 2 : i64} : tensor<2x8xf32> -> tensor<2x16xf32>
  return
}

// -----

// Tests that repeat's count is at least one.
func.func @repeat_times(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tg.repeat' op times must be >= 1, got 0}}
  // expected-error @+1 {{'tg.repeat' op failed to infer returned types}}
  %y = tg.repeat %x {dim = 1 : i64, times = 0 : i64} : tensor<2x8xf32> -> tensor<2x0xf32>
  return
}

// -----

// Tests that labels match the logits without the vocab dimension.
func.func @ce_labels(%l: tensor<2x8x16xf32>, %y: tensor<2x4xi32>) {
  // expected-error @+1 {{'tg.cross_entropy' op labels shape 2x4 must equal the logits shape without vocab, 2x8}}
  %c = tg.cross_entropy %l, %y : tensor<2x8x16xf32>, tensor<2x4xi32> -> tensor<f32>
  return
}

// -----

// Tests that the loss mask is f32 with the labels' shape.
func.func @ce_mask(%l: tensor<2x8x16xf32>, %y: tensor<2x8xi32>, %m: tensor<2x8xbf16>) {
  // expected-error @+1 {{'tg.cross_entropy' op loss_mask must be an f32 tensor of the labels' shape 2x8, got 'tensor<2x8xbf16>'}}
  %c = tg.cross_entropy %l, %y, %m : tensor<2x8x16xf32>, tensor<2x8xi32>, tensor<2x8xbf16> -> tensor<f32>
  return
}

// -----

// Tests that logits are not a scalar.
func.func @ce_scalar(%l: tensor<f32>, %y: tensor<i32>) {
  // expected-error @+1 {{'tg.cross_entropy' op logits must be [..., vocab]}}
  %c = tg.cross_entropy %l, %y : tensor<f32>, tensor<i32> -> tensor<f32>
  return
}

// -----

// Tests that the loss is an f32 scalar.
func.func @ce_result(%l: tensor<2x8x16xf32>, %y: tensor<2x8xi32>) {
  // expected-error @+1 {{'tg.cross_entropy' op result #0 must be 0D tensor of 32-bit float values, but got 'tensor<2x8xf32>'}}
  %c = "tg.cross_entropy"(%l, %y) : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that reshape keeps the element count.
func.func @reshape_count(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'tg.reshape' op element counts differ: 2x8 has 16, 4x5 has 20}}
  %y = tg.reshape %x : tensor<2x8xf32> -> tensor<4x5xf32>
  return
}

// -----

// Tests that reshape does not convert element types.
func.func @reshape_type(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'tg.reshape' op cannot change the element type ('f32' to 'bf16'); reshape only}}
  %y = tg.reshape %x : tensor<2x8xf32> -> tensor<16xbf16>
  return
}

// -----

// Tests that split's dim is in range.
func.func @split_dim(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tg.split' op dim 3 is out of range for a tensor of rank 2}}
  // expected-error @+1 {{'tg.split' op failed to infer returned types}}
  %a, %b = tg.split %x {dim = 3 : i64, sizes = array<i64: 4, 4>} : tensor<2x8xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
  return
}

// -----

// Tests that split's sizes add up to the dimension.
func.func @split_sum(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tg.split' op sizes add up to 7 but dimension 1 has size 8}}
  // expected-error @+1 {{'tg.split' op failed to infer returned types}}
  %a, %b = tg.split %x {dim = 1 : i64, sizes = array<i64: 4, 3>} : tensor<2x8xf32> -> tensor<2x4xf32>, tensor<2x3xf32>
  return
}

// -----

// Tests that split's sizes are positive.
func.func @split_zero(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tg.split' op sizes must be positive, got 0}}
  // expected-error @+1 {{'tg.split' op failed to infer returned types}}
  %a, %b = tg.split %x {dim = 1 : i64, sizes = array<i64: 8, 0>} : tensor<2x8xf32> -> tensor<2x8xf32>, tensor<2x0xf32>
  return
}

// -----

// Tests that split needs a size.
func.func @split_empty(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tg.split' op needs at least one size}}
  // expected-error @+1 {{'tg.split' op failed to infer returned types}}
  "tg.split"(%x) {dim = 1 : i64, sizes = array<i64>} : (tensor<2x8xf32>) -> ()
  return
}

// -----

// Tests that concat inputs agree outside the concatenated dimension.
func.func @concat_dims(%a: tensor<2x8xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{'tg.concat' op input 1 differs from input 0 in dimension 0 (3 vs 2); only dimension 1 may differ}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %c = tg.concat %a, %b {dim = 1 : i64} : tensor<2x8xf32>, tensor<3x4xf32> -> tensor<2x12xf32>
  return
}

// -----

// Tests that concat inputs share rank and element type.
func.func @concat_types(%a: tensor<2x8xf32>, %b: tensor<2x8xbf16>) {
  // expected-error @+2 {{'tg.concat' op input 1 ('tensor<2x8xbf16>') does not match input 0 ('tensor<2x8xf32>') in rank or element type}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %c = tg.concat %a, %b {dim = 1 : i64} : tensor<2x8xf32>, tensor<2x8xbf16> -> tensor<2x16xf32>
  return
}

// -----

// Tests that concat's dim is in range.
func.func @concat_dim(%a: tensor<2x8xf32>) {
  // expected-error @+2 {{'tg.concat' op dim 2 is out of range for a tensor of rank 2}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %c = tg.concat %a, %a {dim = 2 : i64} : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// Tests that concat needs an input.
func.func @concat_none() {
  // expected-error @+2 {{'tg.concat' op needs at least one input}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %c = "tg.concat"() {dim = 0 : i64} : () -> tensor<2xf32>
  return
}

// -----

// Tests that convert changes the element type only.
func.func @convert_shape(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'tg.convert' op all non-scalar operands/results must have the same shape and base type}}
  %y = tg.convert %x : tensor<2x8xf32> -> tensor<16xbf16>
  return
}

// -----

// Tests that shapes are static: a dynamic dimension is rejected, not miscounted.
func.func @dynamic(%x: tensor<?x4xf32>) {
// expected-error @below {{'tg.reshape' op operand #0 must be statically shaped tensor of f32, bf16, f8E4M3FN or f8E5M2 or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?x4xf32>'}}
  %y = tg.reshape %x : tensor<?x4xf32> -> tensor<4x?xf32>
  return
}

// -----

// Tests that a repeat whose size overflows int64 is an error, not a wrapped shape.
func.func @repeat_overflow(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'tg.repeat' op repeating dimension 0 (size 2) 4611686018427387904 times overflows}}
  // expected-error @+1 {{'tg.repeat' op failed to infer returned types}}
  %y = tg.repeat %x {dim = 0 : i64, times = 4611686018427387904 : i64} : tensor<2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// Tests that split sizes that overflow int64 are caught.
func.func @split_overflow(%x: tensor<4xf32>) {
  // expected-error @+2 {{'tg.split' op sizes add up to more than dimension 0 (size 4)}}
  // expected-error @+1 {{'tg.split' op failed to infer returned types}}
  %a, %b, %c = tg.split %x {dim = 0 : i64, sizes = array<i64: 9223372036854775807, 9223372036854775807, 6>} : tensor<4xf32> -> tensor<1xf32>, tensor<1xf32>, tensor<2xf32>
  return
}

// -----

// Tests that a matmul may not narrow its output to fp8 (that needs tg-fp8's scaling).
func.func @matmul_fp8_output(%a: tensor<2x8xbf16>, %b: tensor<8x4xbf16>) {
  // expected-error @+2 {{'tg.matmul' op failed to infer returned types}}
  // expected-error @+1 {{'tg.matmul' op inferred type(s) 'tensor<2x4xbf16>' are incompatible with return type(s) of operation 'tensor<2x4xf8E4M3FN>'}}
  %c = tg.matmul %a, %b : tensor<2x8xbf16>, tensor<8x4xbf16> -> tensor<2x4xf8E4M3FN>
  return
}

// -----

// Tests that a batch mismatch against a plain matrix names the missing batch dimensions.
func.func @matmul_batch_rank2_lhs(%a: tensor<2x8xf32>, %b: tensor<4x8x4xf32>) {
  // expected-error @+2 {{'tg.matmul' op batch dimensions differ: lhs [], rhs 4}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %c = tg.matmul %a, %b : tensor<2x8xf32>, tensor<4x8x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// Tests that a drawn part of a split parameter names the mesh axis that picks the part.
func.func @random_normal_parts(%seed: tensor<i64>) {
  // expected-error @below {{'tg.random_normal' op splits along dim 0 into 2 parts (over mesh axis none), which 'tensor<4x8xf32>' cannot be}}
  %w = tg.random_normal %seed {std = 0.02 : f64, stream = 7 : i64, parts = 2 : i64} : tensor<4x8xf32>
  return
}

// -----

// Tests that the stream is a 32-bit id (the FNV-1a of a parameter name).
func.func @random_normal_stream(%seed: tensor<i64>) {
  // expected-error @below {{'tg.random_normal' op stream -1 is not a 32-bit stream id}}
  %w = tg.random_normal %seed {std = 0.02 : f64, stream = -1 : i64} : tensor<4x8xf32>
  return
}

// -----

// Tests that attention's query heads are a multiple of its KV heads (grouped-query).
func.func @attention_groups(%q: tensor<1x3x8x4xf32>, %k: tensor<1x2x8x4xf32>) -> tensor<1x3x8x4xf32> {
  // expected-error @below {{3 query heads are not a multiple of 2 key/value heads}}
  %o, %lse = tg.attention %q, %k, %k {causal, scale = 0.5 : f64} : tensor<1x3x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x3x8x4xf32>, tensor<1x3x8xf32>
  return %o : tensor<1x3x8x4xf32>
}

// -----

// Tests that causal attention has as many queries as keys.
func.func @attention_causal(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x6x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @below {{causal attention needs as many queries as keys, got 8 queries and 6 keys}}
  %o, %lse = tg.attention %q, %k, %k {causal, scale = 0.5 : f64} : tensor<1x2x8x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Tests that lse is f32 per query row.
func.func @attention_lse(%q: tensor<1x2x8x4xbf16>, %k: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xbf16> {
  // expected-error @below {{lse must be f32 [batch, heads, seq] = tensor<1x2x8xf32>, got 'tensor<1x2x8xbf16>'}}
  %o, %lse = tg.attention %q, %k, %k {scale = 0.5 : f64} : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x4xbf16>, tensor<1x2x8xbf16>
  return %o : tensor<1x2x8x4xbf16>
}

// -----

// Tests that the fused output layer names the logits' type it rounds to.
func.func @linear_cross_entropy_type(%h: tensor<4x8xf32>, %w: tensor<16x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
  // expected-error @below {{logits_type must be "f32" or "bf16", got "f16"}}
  %loss = tg.linear_cross_entropy %h, %w, %labels {logits_type = "f16"} : tensor<4x8xf32>, tensor<16x8xf32>, tensor<4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that the weight is [vocab, hidden] for hidden states [..., hidden].
func.func @linear_cross_entropy_shape(%h: tensor<4x8xf32>, %w: tensor<16x6xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
  // expected-error @below {{needs hidden [..., d] and weight [vocab, d], got 'tensor<4x8xf32>' and 'tensor<16x6xf32>'}}
  %loss = tg.linear_cross_entropy %h, %w, %labels {logits_type = "f32"} : tensor<4x8xf32>, tensor<16x6xf32>, tensor<4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that a scaled cast produces an fp8 format.
func.func @fp8_quantize_to_bf16(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xbf16> {
  // expected-error @below {{result must be f8E4M3FN or f8E5M2, got 'bf16'}}
  %q = tg.fp8_quantize %x, %s : tensor<4xf32>, tensor<f32> -> tensor<4xbf16>
  return %q : tensor<4xbf16>
}

// -----

// Tests that a scaled GEMM takes fp8 operands.
func.func @fp8_matmul_bf16_operand(%a: tensor<4x8xbf16>, %b: tensor<8x2xf8E4M3FN>, %s: tensor<f32>) -> tensor<4x2xbf16> {
  // expected-error @below {{operands must be f8E4M3FN or f8E5M2, got 'bf16' and 'f8E4M3FN'}}
  %c = tg.fp8_matmul %a, %b, %s, %s : tensor<4x8xbf16>, tensor<8x2xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<4x2xbf16>
  return %c : tensor<4x2xbf16>
}

// -----

// Tests that a scaled GEMM's shapes follow tg.matmul's rules.
func.func @fp8_matmul_shape(%a: tensor<4x8xf8E4M3FN>, %b: tensor<6x2xf8E4M3FN>, %s: tensor<f32>) -> tensor<4x2xbf16> {
  // expected-error @below {{contraction dimensions differ}}
  %c = tg.fp8_matmul %a, %b, %s, %s : tensor<4x8xf8E4M3FN>, tensor<6x2xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<4x2xbf16>
  return %c : tensor<4x2xbf16>
}

// -----

// Tests that the amax algorithm is one Transformer Engine has.
func.func @fp8_scale_update_algo(%h: tensor<4xf32>, %a: tensor<f32>, %s: tensor<f32>) -> tensor<f32> {
  // expected-error @below {{amax_compute_algo must be "most_recent" or "max", got "mean"}}
  %h2, %s2 = tg.fp8_scale_update %h, %a, %s {fp8_max = 448.0, margin = 0.0, amax_compute_algo = "mean"} : tensor<4xf32>
  return %s2 : tensor<f32>
}

// -----

// Tests that a dropout rate is a probability below 1.
func.func @dropout_rate(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{rate must be in [0, 1), got 1}}
  %y = tg.dropout %x {rate = 1.0, name = "d"} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that a dropout key's micro-batch is one of the step's and that several data-parallel
// ranks name their mesh axis.
func.func @dropout_key_micro_batch(%s: tensor<i64>) -> tensor<2xi64> {
  // expected-error @below {{micro_batch 4 of 4 on 1 data-parallel ranks is not a micro-batch of the step}}
  %k = tg.dropout_key %s, %s {micro_batch = 4, micro_batches = 4, data_parallel = 1} : tensor<2xi64>
  return %k : tensor<2xi64>
}

// -----

func.func @dropout_key_axis(%s: tensor<i64>) -> tensor<2xi64> {
  // expected-error @below {{data_parallel_axis names the mesh axis exactly when data_parallel > 1}}
  %k = tg.dropout_key %s, %s {micro_batch = 0, micro_batches = 4, data_parallel = 2} : tensor<2xi64>
  return %k : tensor<2xi64>
}

// -----

// Tests that an element program is compiled and its errors name the statement.
func.func @elementwise_unassigned(%a: tensor<8xf32>) {
  // expected-error @+1 {{'tg.elementwise' op program statement 1 'r0 = a0 t +': 't' is used before it is assigned}}
  %r = tg.elementwise %a {program = "r0 = a0 t +"} : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// Tests that every result is assigned.
func.func @elementwise_result_missing(%a: tensor<8xf32>) {
  // expected-error @+1 {{'tg.elementwise' op program never assigns result r1}}
  %r:2 = tg.elementwise %a {program = "r0 = a0 a0 *"} : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that an expression leaves exactly one value.
func.func @elementwise_stack(%a: tensor<8xf32>) {
  // expected-error @+1 {{'tg.elementwise' op program statement 1 'r0 = a0 a0': leaves 2 values on the stack, not one}}
  %r = tg.elementwise %a {program = "r0 = a0 a0"} : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// Tests that an operand is the results' shape or one element.
func.func @elementwise_shape(%a: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'tg.elementwise' op operand 1 is 'tensor<4xf32>': neither one element nor the results' shape [8]}}
  %r = tg.elementwise %a, %b {program = "r0 = a0 a1 +"} : (tensor<8xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

// Tests that a program reads only operands the op has.
func.func @elementwise_operand(%a: tensor<8xf32>) {
  // expected-error @+1 {{'tg.elementwise' op program statement 1 'r0 = a0 a2 /': operand 'a2' does not exist (the command has 1)}}
  %r = tg.elementwise %a {program = "r0 = a0 a2 /"} : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// Tests that a running mean is exactly [sum, count].
func.func @running_mean_shape(%running: tensor<3xf64>, %loss: tensor<f32>) {
  // expected-error @+1 {{'tg.mean_accumulate' op running must be the running [sum, count], tensor<2xf64>, got 'tensor<3xf64>'}}
  %next = tg.mean_accumulate %running, %loss : tensor<3xf64>, tensor<f32> -> tensor<3xf64>
  return
}

// -----

// Tests that the running mean is f64 and the mean's result an f64 scalar.
func.func @running_mean_type(%running: tensor<2xf32>) {
  // expected-error @+1 {{'tg.mean_finish' op operand #0 must be 1D tensor of 64-bit float values}}
  %mean, %restart = tg.mean_finish %running : tensor<2xf32> -> tensor<f64>, tensor<2xf32>
  return
}

// -----

// Tests that a sliding window is not negative.
func.func @mask_window(%s: tensor<2x8x8xf32>) {
  // expected-error @+1 {{'tg.causal_mask' op window must be >= 0 (the keys a query sees before itself), got -1}}
  %m = tg.causal_mask %s {window = -1 : i64} : tensor<2x8x8xf32>
  return
}

// -----

// Tests that a fused attention's window comes with causal masking.
func.func @attention_window(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>) {
  // expected-error @+1 {{'tg.attention' op a window (sliding-window attention) needs causal and must be >= 0}}
  %o, %l = tg.attention %q, %k, %k {scale = 0.5 : f64, window = 3 : i64} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return
}
