// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --tg-fuse-attention | FileCheck %s

// Tests the pass's own example: causal grouped-query attention in bf16 (the declared Llama
// layer) becomes one tg.attention reading the KV heads directly.
// CHECK-LABEL: func.func @causal_gqa_bf16
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x32x16xbf16>, %[[K:.+]]: tensor<1x2x32x16xbf16>, %[[V:.+]]: tensor<1x2x32x16xbf16>)
// CHECK-NEXT: %[[O:.+]], %{{.+}} = tg.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64} : tensor<1x4x32x16xbf16>, tensor<1x2x32x16xbf16>, tensor<1x2x32x16xbf16> -> tensor<1x4x32x16xbf16>, tensor<1x4x32xf32>
// CHECK-NEXT: return %[[O]]
func.func @causal_gqa_bf16(%q: tensor<1x4x32x16xbf16>, %k: tensor<1x2x32x16xbf16>, %v: tensor<1x2x32x16xbf16>) -> tensor<1x4x32x16xbf16> {
  %kg = tg.repeat %k {dim = 1 : i64, times = 2 : i64} : tensor<1x2x32x16xbf16> -> tensor<1x4x32x16xbf16>
  %vg = tg.repeat %v {dim = 1 : i64, times = 2 : i64} : tensor<1x2x32x16xbf16> -> tensor<1x4x32x16xbf16>
  %s = tg.matmul %q, %kg {transpose_rhs} : tensor<1x4x32x16xbf16>, tensor<1x4x32x16xbf16> -> tensor<1x4x32x32xf32>
  %t = tg.scale %s {factor = 0.25 : f64} : tensor<1x4x32x32xf32>
  %m = tg.causal_mask %t : tensor<1x4x32x32xf32>
  %p = tg.softmax %m {dim = 3 : i64} : tensor<1x4x32x32xf32>
  %pb = tg.convert %p : tensor<1x4x32x32xf32> -> tensor<1x4x32x32xbf16>
  %o = tg.matmul %pb, %vg : tensor<1x4x32x32xbf16>, tensor<1x4x32x16xbf16> -> tensor<1x4x32x16xbf16>
  return %o : tensor<1x4x32x16xbf16>
}

// -----

// Tests that a sliding-window mask (GPT-OSS-20B's even layers) fuses with its window.
// CHECK-LABEL: func.func @sliding_window
// CHECK-NEXT: tg.attention %arg0, %arg1, %arg2 {causal, scale = 5.000000e-01 : f64, window = 3 : i64}
func.func @sliding_window(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %s = tg.matmul %q, %k {transpose_rhs} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x8xf32>
  %t = tg.scale %s {factor = 0.5 : f64} : tensor<1x2x8x8xf32>
  %m = tg.causal_mask %t {window = 3 : i64} : tensor<1x2x8x8xf32>
  %p = tg.softmax %m {dim = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Tests multi-head attention in f32 without a mask (cross attention: 8 queries, 12 keys) and
// without repeats: no convert, not causal.
// CHECK-LABEL: func.func @full_f32
// CHECK-NEXT: tg.attention %arg0, %arg1, %arg2 {scale = 5.000000e-01 : f64} : tensor<2x3x8x4xf32>, tensor<2x3x12x4xf32>, tensor<2x3x12x4xf32> -> tensor<2x3x8x4xf32>, tensor<2x3x8xf32>
// CHECK-NOT: tg.softmax
func.func @full_f32(%q: tensor<2x3x8x4xf32>, %k: tensor<2x3x12x4xf32>, %v: tensor<2x3x12x4xf32>) -> tensor<2x3x8x4xf32> {
  %s = tg.matmul %q, %k {transpose_rhs} : tensor<2x3x8x4xf32>, tensor<2x3x12x4xf32> -> tensor<2x3x8x12xf32>
  %t = tg.scale %s {factor = 0.5 : f64} : tensor<2x3x8x12xf32>
  %p = tg.softmax %t {dim = 3 : i64} : tensor<2x3x8x12xf32>
  %o = tg.matmul %p, %v : tensor<2x3x8x12xf32>, tensor<2x3x12x4xf32> -> tensor<2x3x8x4xf32>
  return %o : tensor<2x3x8x4xf32>
}

// -----

// Tests that bf16 scores stay unfused: the fused op computes them in f32, which would change
// the result.
// CHECK-LABEL: func.func @bf16_scores
// CHECK: tg.softmax
// CHECK-NOT: tg.attention
func.func @bf16_scores(%q: tensor<1x2x8x4xbf16>, %k: tensor<1x2x8x4xbf16>, %v: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xbf16> {
  %s = tg.matmul %q, %k {transpose_rhs} : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x8xbf16>
  %t = tg.scale %s {factor = 0.5 : f64} : tensor<1x2x8x8xbf16>
  // expected-remark @below {{tg-fuse-attention: left unfused: the scores are not f32}}
  %p = tg.softmax %t {dim = 3 : i64} : tensor<1x2x8x8xbf16>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x4xbf16>
  return %o : tensor<1x2x8x4xbf16>
}

// -----

// Tests that probabilities read elsewhere (returned for inspection) keep the graph: fusing
// would still have to build them.
// CHECK-LABEL: func.func @probabilities_used_twice
// CHECK-NOT: tg.attention
func.func @probabilities_used_twice(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x8xf32>) {
  %s = tg.matmul %q, %k {transpose_rhs} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x8xf32>
  %t = tg.scale %s {factor = 0.5 : f64} : tensor<1x2x8x8xf32>
  // expected-remark @below {{tg-fuse-attention: left unfused: the probabilities are not used once, as the lhs of probabilities · values}}
  %p = tg.softmax %t {dim = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  return %o, %p : tensor<1x2x8x4xf32>, tensor<1x2x8x8xf32>
}

// -----

// Tests that K and V with different repeats (not one grouped-query layout) stay unfused.
// CHECK-LABEL: func.func @different_groups
// CHECK-NOT: tg.attention
func.func @different_groups(%q: tensor<1x4x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x4x8x4xf32>) -> tensor<1x4x8x4xf32> {
  %kg = tg.repeat %k {dim = 1 : i64, times = 2 : i64} : tensor<1x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %s = tg.matmul %q, %kg {transpose_rhs} : tensor<1x4x8x4xf32>, tensor<1x4x8x4xf32> -> tensor<1x4x8x8xf32>
  %t = tg.scale %s {factor = 0.5 : f64} : tensor<1x4x8x8xf32>
  // expected-remark @below {{tg-fuse-attention: left unfused: keys and values are not [batch, kv_heads, seq, head_dim] of one type with one repeat over heads}}
  %p = tg.softmax %t {dim = 3 : i64} : tensor<1x4x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x4x8x8xf32>, tensor<1x4x8x4xf32> -> tensor<1x4x8x4xf32>
  return %o : tensor<1x4x8x4xf32>
}

// -----

// Tests that a softmax of anything but scaled scores (a classifier's) is not touched, silently.
// CHECK-LABEL: func.func @not_attention
// CHECK: tg.softmax
func.func @not_attention(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %p = tg.softmax %x {dim = 3 : i64} : tensor<1x2x8x8xf32>
  return %p : tensor<1x2x8x8xf32>
}
