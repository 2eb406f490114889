// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --tg-autodiff | FileCheck %s

// Tests the backward graph of embedding -> tied output projection -> loss: the loss seed, the
// cross-entropy VJP, both matmul VJPs (the weight is broadcast over the batch, so its gradient
// contracts flattened rows), the embedding VJP, and the two uses of the tied table summed.
// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME: (%[[TOK:.+]]: tensor<1x4xi32>, %[[LAB:.+]]: tensor<1x4xi32>) -> (tensor<f32>, tensor<16x8xf32>)
// CHECK-SAME: attributes {tg.gradients = [@embed]}
// CHECK: %[[E:.+]] = tg.param_ref @embed
// CHECK: %[[H:.+]] = tg.embedding %[[E]], %[[TOK]]
// CHECK: %[[LOGITS:.+]] = tg.matmul %[[H]], %[[E]] {transpose_rhs}
// CHECK: %[[LOSS:.+]] = tg.cross_entropy %[[LOGITS]], %[[LAB]]
// CHECK: %[[ONE:.+]] = tg.fill {value = 1.000000e+00 : f64} : tensor<f32>
// CHECK: %[[DLOGITS:.+]] = tg.cross_entropy_grad %[[LOGITS]], %[[LAB]], %[[ONE]]
// CHECK: %[[DH:.+]] = tg.matmul %[[DLOGITS]], %[[E]] : tensor<1x4x16xf32>, tensor<16x8xf32> -> tensor<1x4x8xf32>
// CHECK: %[[HROWS:.+]] = tg.reshape %[[H]] : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[GROWS:.+]] = tg.reshape %[[DLOGITS]] : tensor<1x4x16xf32> -> tensor<4x16xf32>
// CHECK: %[[DW:.+]] = tg.matmul %[[GROWS]], %[[HROWS]] {transpose_lhs} : tensor<4x16xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
// CHECK: %[[DTABLE:.+]] = tg.embedding_grad %[[TOK]], %[[DH]] : tensor<1x4xi32>, tensor<1x4x8xf32> -> tensor<16x8xf32>
// CHECK: %[[SUM:.+]] = tg.add %[[DW]], %[[DTABLE]] : tensor<16x8xf32>
// CHECK: return %[[LOSS]], %[[SUM]]
tg.model @tied {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %logits = tg.matmul %h, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Tests the attention-score VJPs: softmax from its output, the masked entries' zero
// gradient, the scale, and a bf16 x bf16 -> f32 matmul whose gradient enters the bf16 GEMMs
// converted to bf16; the RMSNorm VJP gives input and weight gradients.
// CHECK-LABEL: func.func @forward_backward
// CHECK: %[[P:.+]] = tg.softmax %{{.+}} {dim = 2 : i64} : tensor<1x4x4xf32>
// CHECK: %[[DS:.+]] = tg.softmax_grad %[[P]], %{{.+}} {dim = 2 : i64} : tensor<1x4x4xf32>
// CHECK: %[[DM:.+]] = tg.causal_mask %[[DS]] {gradient} : tensor<1x4x4xf32>
// CHECK: %[[DSC:.+]] = tg.scale %[[DM]] {factor = 5.000000e-01 : f64} : tensor<1x4x4xf32>
// CHECK: %[[D16:.+]] = tg.convert %[[DSC]] : tensor<1x4x4xf32> -> tensor<1x4x4xbf16>
// CHECK: tg.matmul %[[D16]], %{{.+}} : tensor<1x4x4xbf16>, tensor<1x4x8xbf16> -> tensor<1x4x8xbf16>
// CHECK: tg.matmul %[[D16]], %{{.+}} {transpose_lhs} : tensor<1x4x4xbf16>, tensor<1x4x8xbf16> -> tensor<1x4x8xbf16>
// CHECK: %{{.+}}, %{{.+}} = tg.rms_norm_grad %{{.+}}, %{{.+}}, %{{.+}} {epsilon = 1.000000e-05 : f64} : tensor<1x4x8xbf16>, tensor<8xbf16>
tg.model @scores {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xbf16> {init = "normal", std = 0.02}
  tg.param @norm : tensor<8xbf16> {init = "ones"}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xbf16>
    %w = tg.param_ref @norm : tensor<8xbf16>
    %h0 = tg.embedding %e, %tokens : tensor<16x8xbf16>, tensor<1x4xi32> -> tensor<1x4x8xbf16>
    %h = tg.rms_norm %h0, %w {epsilon = 1.0e-05 : f64} : tensor<1x4x8xbf16>, tensor<8xbf16>
    %s = tg.matmul %h, %h {transpose_rhs} : tensor<1x4x8xbf16>, tensor<1x4x8xbf16> -> tensor<1x4x4xf32>
    %sc = tg.scale %s {factor = 0.5 : f64} : tensor<1x4x4xf32>
    %m = tg.causal_mask %sc : tensor<1x4x4xf32>
    %p = tg.softmax %m {dim = 2 : i64} : tensor<1x4x4xf32>
    %p16 = tg.convert %p : tensor<1x4x4xf32> -> tensor<1x4x4xbf16>
    %c = tg.matmul %p16, %h : tensor<1x4x4xbf16>, tensor<1x4x8xbf16> -> tensor<1x4x8xbf16>
    %logits = tg.matmul %c, %e {transpose_rhs} : tensor<1x4x8xbf16>, tensor<16x8xbf16> -> tensor<1x4x16xbf16>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xbf16>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Tests that layer stacks must be unrolled first.
tg.model @stacked {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "normal", std = 0.02, repeat = 1}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    // expected-error @+1 {{tg-autodiff needs straight-line code: run tg-inline-layers first}}
    %h2 = tg.repeat_layers @layer(%h) count 1 params [@"layers.{i}.w"] : tensor<1x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<1x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<1x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    return %y : tensor<1x4x8xf32>
  }
}

// -----

// Tests that an op without a differentiation rule on the loss path is named.
tg.model @no_rule {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    // expected-error @+1 {{tg-autodiff: no vector-Jacobian product for 'tg.silu_grad'}}
    %g = tg.silu_grad %h, %h : tensor<1x4x8xf32>
    %logits = tg.matmul %g, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Tests that a transposed batched lhs against a shared weight is a diagnostic, not a crash.
tg.model @tlhs {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "matrices", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @w : tensor<4x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %w = tg.param_ref @w : tensor<4x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    // expected-error @+1 {{'tg.matmul' op tg-autodiff cannot differentiate a transposed batched lhs against a shared rank-2 rhs}}
    %t = tg.matmul %h, %w {transpose_lhs} : tensor<1x4x8xf32>, tensor<4x8xf32> -> tensor<1x8x8xf32>
    %t2 = tg.reshape %t : tensor<1x8x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %t2, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Tests the fused attention's VJP: tg.attention_grad takes the forward's output for a fused
// backward (cuDNN's reads it), and takes it as the [b, s, h, d] transpose the output
// projection reads (output_tokens_major) when the forward has one, so that the backward keeps
// nothing more alive than the projection's weight gradient already does.
// CHECK-LABEL: func.func @forward_backward
// CHECK: %[[O:.+]], %[[LSE:.+]] = tg.attention
// CHECK: %[[T:.+]] = tg.transpose %[[O]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK: tg.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %[[T]], %[[LSE]], %{{.+}} {causal, output_tokens_major, scale = 5.000000e-01 : f64} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x4x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x4xf32>
tg.model @tokens_major {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %h4 = tg.reshape %h : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
    %heads = tg.transpose %h4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
    %o, %lse = tg.attention %heads, %heads, %heads {scale = 0.5 : f64, causal} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>, tensor<1x2x4xf32>
    %tokens_major = tg.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x4x4xf32> -> tensor<1x4x2x4xf32>
    %flat = tg.reshape %tokens_major : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
    %logits = tg.matmul %flat, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Without that transpose the backward takes the output as it is.
// CHECK-LABEL: func.func @forward_backward
// CHECK: %[[O:.+]], %[[LSE:.+]] = tg.attention
// CHECK: tg.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %[[O]], %[[LSE]], %{{.+}} {scale = 5.000000e-01 : f64} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x4xf32>
tg.model @heads_major {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %heads = tg.reshape %h : tensor<1x4x8xf32> -> tensor<1x2x4x4xf32>
    %o, %lse = tg.attention %heads, %heads, %heads {scale = 0.5 : f64} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>, tensor<1x2x4xf32>
    %flat = tg.reshape %o : tensor<1x2x4x4xf32> -> tensor<1x4x8xf32>
    %logits = tg.matmul %flat, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
