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

// -----

// Tests grouped-query attention in primitive ops (4 query heads, 2 KV heads, head_dim 16): the
// pattern tg-fuse-attention will look for. RoPE uses the Llama 3.1 scaling attributes.
// CHECK-LABEL: func.func @gqa_attention
// CHECK: %[[Q:.+]] = tg.reshape %{{.+}} : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
// CHECK: %[[QR:.+]] = tg.rope %[[Q]] {high_freq_factor = 4.000000e+00 : f64, low_freq_factor = 1.000000e+00 : f64, original_max_position = 8192 : i64, scaling_factor = 8.000000e+00 : f64, theta = 5.000000e+05 : f64} : tensor<2x8x4x16xf32>
// CHECK: %[[KR:.+]] = tg.rope %{{.+}} {theta = 5.000000e+05 : f64} : tensor<2x8x2x16xf32>
// CHECK: tg.repeat %{{.+}} {dim = 1 : i64, times = 2 : i64} : tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
// CHECK: %[[S:.+]] = tg.matmul %{{.+}}, %{{.+}} {transpose_rhs} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x8xf32>
// CHECK: %[[SS:.+]] = tg.scale %[[S]] {factor = 2.500000e-01 : f64} : tensor<2x4x8x8xf32>
// CHECK: %[[M:.+]] = tg.causal_mask %[[SS]] : tensor<2x4x8x8xf32>
// CHECK: %[[P:.+]] = tg.softmax %[[M]] {dim = 3 : i64} : tensor<2x4x8x8xf32>
// CHECK: tg.matmul %[[P]], %{{.+}} : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
func.func @gqa_attention(%xq: tensor<2x8x64xf32>, %xk: tensor<2x8x32xf32>, %xv: tensor<2x8x32xf32>) -> tensor<2x4x8x16xf32> {
  %q0 = tg.reshape %xq : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %k0 = tg.reshape %xk : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %v0 = tg.reshape %xv : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %q1 = tg.rope %q0 {theta = 500000.0 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 1.0 : f64,
                     high_freq_factor = 4.0 : f64, original_max_position = 8192 : i64} : tensor<2x8x4x16xf32>
  %k1 = tg.rope %k0 {theta = 500000.0 : f64} : tensor<2x8x2x16xf32>
  %q = tg.transpose %q1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %k2 = tg.transpose %k1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %v2 = tg.transpose %v0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %k = tg.repeat %k2 {dim = 1 : i64, times = 2 : i64} : tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  %v = tg.repeat %v2 {dim = 1 : i64, times = 2 : i64} : tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  %s = tg.matmul %q, %k {transpose_rhs} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x8xf32>
  %ss = tg.scale %s {factor = 0.25 : f64} : tensor<2x4x8x8xf32>
  %m = tg.causal_mask %ss : tensor<2x4x8x8xf32>
  %p = tg.softmax %m {dim = 3 : i64} : tensor<2x4x8x8xf32>
  %o = tg.matmul %p, %v : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Tests the SwiGLU MLP parts, the embedding lookup and the loss with and without a mask.
// CHECK-LABEL: func.func @embedding_mlp_loss
// CHECK: %[[H:.+]] = tg.embedding %{{.+}}, %{{.+}} : tensor<256x64xbf16>, tensor<2x8xi32> -> tensor<2x8x64xbf16>
// CHECK: %[[G:.+]] = tg.silu %{{.+}} : tensor<2x8x160xbf16>
// CHECK: tg.mul %[[G]], %{{.+}} : tensor<2x8x160xbf16>
// CHECK: tg.cross_entropy %{{.+}}, %{{.+}} : tensor<2x8x256xbf16>, tensor<2x8xi32> -> tensor<f32>
// CHECK: tg.cross_entropy %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x8x256xbf16>, tensor<2x8xi32>, tensor<2x8xf32> -> tensor<f32>
func.func @embedding_mlp_loss(%table: tensor<256x64xbf16>, %ids: tensor<2x8xi32>, %wg: tensor<160x64xbf16>,
                              %wu: tensor<160x64xbf16>, %wd: tensor<64x160xbf16>, %head: tensor<256x64xbf16>,
                              %labels: tensor<2x8xi32>, %mask: tensor<2x8xf32>) -> (tensor<f32>, tensor<f32>) {
  %h = tg.embedding %table, %ids : tensor<256x64xbf16>, tensor<2x8xi32> -> tensor<2x8x64xbf16>
  %gate = tg.matmul %h, %wg {transpose_rhs} : tensor<2x8x64xbf16>, tensor<160x64xbf16> -> tensor<2x8x160xbf16>
  %up = tg.matmul %h, %wu {transpose_rhs} : tensor<2x8x64xbf16>, tensor<160x64xbf16> -> tensor<2x8x160xbf16>
  %g = tg.silu %gate : tensor<2x8x160xbf16>
  %gu = tg.mul %g, %up : tensor<2x8x160xbf16>
  %down = tg.matmul %gu, %wd {transpose_rhs} : tensor<2x8x160xbf16>, tensor<64x160xbf16> -> tensor<2x8x64xbf16>
  %logits = tg.matmul %down, %head {transpose_rhs} : tensor<2x8x64xbf16>, tensor<256x64xbf16> -> tensor<2x8x256xbf16>
  %loss = tg.cross_entropy %logits, %labels : tensor<2x8x256xbf16>, tensor<2x8xi32> -> tensor<f32>
  %masked = tg.cross_entropy %logits, %labels, %mask : tensor<2x8x256xbf16>, tensor<2x8xi32>, tensor<2x8xf32> -> tensor<f32>
  return %loss, %masked : tensor<f32>, tensor<f32>
}

// -----

// Tests split and concat (a fused QKV projection and its inverse).
// CHECK-LABEL: func.func @split_concat
// CHECK: %[[P:.+]]:3 = tg.split %{{.+}} {dim = 2 : i64, sizes = array<i64: 64, 32, 32>} : tensor<2x8x128xbf16> -> tensor<2x8x64xbf16>, tensor<2x8x32xbf16>, tensor<2x8x32xbf16>
// CHECK: tg.concat %[[P]]#0, %[[P]]#1, %[[P]]#2 {dim = 2 : i64} : tensor<2x8x64xbf16>, tensor<2x8x32xbf16>, tensor<2x8x32xbf16> -> tensor<2x8x128xbf16>
func.func @split_concat(%qkv: tensor<2x8x128xbf16>) -> tensor<2x8x128xbf16> {
  %q, %k, %v = tg.split %qkv {dim = 2 : i64, sizes = array<i64: 64, 32, 32>}
      : tensor<2x8x128xbf16> -> tensor<2x8x64xbf16>, tensor<2x8x32xbf16>, tensor<2x8x32xbf16>
  %r = tg.concat %q, %k, %v {dim = 2 : i64}
      : tensor<2x8x64xbf16>, tensor<2x8x32xbf16>, tensor<2x8x32xbf16> -> tensor<2x8x128xbf16>
  return %r : tensor<2x8x128xbf16>
}

// -----

// Tests that a matmul states its output precision (bf16 operands, f32 scores) and that
// convert changes element types.
// CHECK-LABEL: func.func @precision
// CHECK: %[[S:.+]] = tg.matmul %{{.+}}, %{{.+}} {transpose_rhs} : tensor<2x8x16xbf16>, tensor<2x8x16xbf16> -> tensor<2x8x8xf32>
// CHECK: tg.convert %[[S]] : tensor<2x8x8xf32> -> tensor<2x8x8xbf16>
func.func @precision(%q: tensor<2x8x16xbf16>, %k: tensor<2x8x16xbf16>) -> tensor<2x8x8xbf16> {
  %s = tg.matmul %q, %k {transpose_rhs} : tensor<2x8x16xbf16>, tensor<2x8x16xbf16> -> tensor<2x8x8xf32>
  %c = tg.convert %s : tensor<2x8x8xf32> -> tensor<2x8x8xbf16>
  return %c : tensor<2x8x8xbf16>
}

// -----

// Tests the fp8 ops of tg-fp8: a scaled cast of the input, the scaled GEMM with mixed formats
// (E5M2 gradient times E4M3 weight), the amax over several tensors and the delayed-scaling
// update.
// CHECK-LABEL: func.func @fp8_scaling
// CHECK: tg.fp8_quantize %{{.+}}, %{{.+}} : tensor<16x32xbf16>, tensor<f32> -> tensor<16x32xf8E4M3FN>
// CHECK: tg.fp8_matmul %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {transpose_rhs} : tensor<16x32xf8E4M3FN>, tensor<8x32xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<16x8xbf16>
// CHECK: tg.fp8_matmul %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x8xf8E5M2>, tensor<8x32xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<16x32xf32>
// CHECK: tg.amax %{{.+}}, %{{.+}} : tensor<16x32xbf16>, tensor<16x8xf8E5M2>
// CHECK: tg.fp8_scale_update %{{.+}}, %{{.+}}, %{{.+}} {amax_compute_algo = "most_recent", fp8_max = 4.480000e+02 : f64, margin = 0.000000e+00 : f64} : tensor<4xf32>
func.func @fp8_scaling(%x: tensor<16x32xbf16>, %s: tensor<f32>, %w: tensor<8x32xf8E4M3FN>,
                       %g: tensor<16x8xf8E5M2>, %h: tensor<4xf32>)
    -> (tensor<16x8xbf16>, tensor<16x32xf32>, tensor<4xf32>, tensor<f32>) {
  %xq = tg.fp8_quantize %x, %s : tensor<16x32xbf16>, tensor<f32> -> tensor<16x32xf8E4M3FN>
  %y = tg.fp8_matmul %xq, %w, %s, %s {transpose_rhs} : tensor<16x32xf8E4M3FN>, tensor<8x32xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<16x8xbf16>
  %dx = tg.fp8_matmul %g, %w, %s, %s : tensor<16x8xf8E5M2>, tensor<8x32xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<16x32xf32>
  %a = tg.amax %x, %g : tensor<16x32xbf16>, tensor<16x8xf8E5M2>
  %h2, %s2 = tg.fp8_scale_update %h, %a, %s {fp8_max = 448.0, margin = 0.0, amax_compute_algo = "most_recent"} : tensor<4xf32>
  return %y, %dx, %h2, %s2 : tensor<16x8xbf16>, tensor<16x32xf32>, tensor<4xf32>, tensor<f32>
}

// -----

// Tests current scaling's scale op.
// CHECK-LABEL: func.func @fp8_current
// CHECK: tg.fp8_current_scale %{{.+}} {fp8_max = 5.734400e+04 : f64}
func.func @fp8_current(%a: tensor<f32>) -> tensor<f32> {
  %s = tg.fp8_current_scale %a {fp8_max = 57344.0}
  return %s : tensor<f32>
}

// -----

// Tests dropout (declared without a key, keyed by the train step), its keys and the uniform
// initialization draw.
// CHECK-LABEL: func.func @dropout
// CHECK: tg.dropout %{{.+}} {name = "model.layers.{i}.mlp.dropout", rate = 1.000000e-01 : f64} : tensor<1x8x16xbf16>
// CHECK: tg.dropout_key %{{.+}}, %{{.+}} {data_parallel = 2 : i64, data_parallel_axis = "dp", micro_batch = 1 : i64, micro_batches = 4 : i64} : tensor<2xi64>
// CHECK: tg.dropout %{{.+}}, %{{.+}} {name = "d", part_axis = "tp", part_dim = 2 : i64, parts = 2 : i64, rate = 5.000000e-01 : f64}
// CHECK: tg.eval_dropout_key : tensor<2xi64>
// CHECK: tg.random_uniform %{{.+}} {bound = 1.250000e-01 : f64, stream = 7 : i64} : tensor<16x64xbf16>
func.func @dropout(%x: tensor<1x8x16xbf16>, %seed: tensor<i64>, %step: tensor<i64>)
    -> (tensor<1x8x16xbf16>, tensor<1x8x16xbf16>, tensor<2xi64>, tensor<16x64xbf16>) {
  %a = tg.dropout %x {rate = 0.1, name = "model.layers.{i}.mlp.dropout"} : tensor<1x8x16xbf16>
  %key = tg.dropout_key %seed, %step {micro_batch = 1, micro_batches = 4, data_parallel = 2, data_parallel_axis = "dp"} : tensor<2xi64>
  %b = tg.dropout %a, %key {rate = 0.5, name = "d", part_dim = 2, parts = 2, part_axis = "tp"} : tensor<1x8x16xbf16>
  %eval = tg.eval_dropout_key : tensor<2xi64>
  %w = tg.random_uniform %seed {bound = 0.125, stream = 7} : tensor<16x64xbf16>
  return %a, %b, %eval, %w : tensor<1x8x16xbf16>, tensor<1x8x16xbf16>, tensor<2xi64>, tensor<16x64xbf16>
}

// -----

// Tests an element program: a broadcast scalar, a temporary, two results.
// CHECK-LABEL: func.func @elementwise
// CHECK: tg.elementwise %{{.+}}, %{{.+}}, %{{.+}} {program = "s = a1 a0 a0 * +; r0 = s; r1 = a0 a2 neg * s sqrt 1e-08 + /"} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
func.func @elementwise(%g: tensor<4x8xf32>, %s: tensor<4x8xf32>, %lr: tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %r:2 = tg.elementwise %g, %s, %lr {program = "s = a1 a0 a0 * +; r0 = s; r1 = a0 a2 neg * s sqrt 1e-08 + /"} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Tests evaluation's running mean: a loss added to [sum, count], then the mean and the
// running mean started again.
// CHECK-LABEL: func.func @running_mean
// CHECK: %[[NEXT:.+]] = tg.mean_accumulate %{{.+}}, %{{.+}} : tensor<2xf64>, tensor<f32> -> tensor<2xf64>
// CHECK: %[[MEAN:.+]], %[[RESTART:.+]] = tg.mean_finish %[[NEXT]] : tensor<2xf64> -> tensor<f64>, tensor<2xf64>
// CHECK: return %[[MEAN]], %[[RESTART]]
func.func @running_mean(%running: tensor<2xf64>, %loss: tensor<f32>) -> (tensor<f64>, tensor<2xf64>) {
  %next = tg.mean_accumulate %running, %loss : tensor<2xf64>, tensor<f32> -> tensor<2xf64>
  %mean, %restart = tg.mean_finish %next : tensor<2xf64> -> tensor<f64>, tensor<2xf64>
  return %mean, %restart : tensor<f64>, tensor<2xf64>
}
