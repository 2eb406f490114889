// RUN: mlperf-opt %s --split-input-file --plan-from-tg --verify-diagnostics

// Tests that plan-from-tg needs the train step the train-step pipeline builds.
// expected-error @below {{plan-from-tg needs @forward, @forward_backward (or tg-recompute's @forward_and_stash and @backward_from_stash) and @optimizer_step: run the train-step pipeline first}}
tg.model @untrained {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
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

// Tests that each function has the signature of its program's buffers.
tg.model @wrong {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
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
  // expected-error @below {{plan-from-tg: @forward_backward should take @forward's inputs and return its result and one gradient per parameter}}
  func.func @forward_backward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %logits = tg.matmul %h, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @optimizer_step(%step: tensor<i64> {tg.role = "step"}) {
    return
  }
}
