// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --tg-train-step

// Tests that an @optimizer_step whose arguments state no roles is refused (the step is built
// by role, never by position).
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 1, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @w : tensor<16x4xf32> {init = "ones"}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %w = tg.param_ref @w : tensor<16x4xf32>
    %u = tg.param_ref @w : tensor<16x4xf32>
    %h = tg.embedding %w, %tokens : tensor<16x4xf32>, tensor<1x4xi32> -> tensor<1x4x4xf32>
    %logits = tg.matmul %h, %u {transpose_rhs} : tensor<1x4x4xf32>, tensor<16x4xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> (tensor<f32>, tensor<16x4xf32>) attributes {tg.gradients = [@w]} {
    %z = tg.fill {value = 0.0 : f64} : tensor<f32>
    %g = tg.fill {value = 0.0 : f64} : tensor<16x4xf32>
    return %z, %g : tensor<f32>, tensor<16x4xf32>
  }
  // expected-error @below {{tg-train-step: @optimizer_step has no argument with tg.role "step"}}
  func.func @optimizer_step(%step: tensor<i64>, %g: tensor<16x4xf32>) -> tensor<f32> {
    %z = tg.fill {value = 0.0 : f64} : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// Tests that a backward must return the gradient of every parameter the optimizer updates.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 1, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @w : tensor<16x4xf32> {init = "ones"}
  tg.param @u : tensor<16x4xf32> {init = "ones"}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %w = tg.param_ref @w : tensor<16x4xf32>
    %u = tg.param_ref @u : tensor<16x4xf32>
    %h = tg.embedding %w, %tokens : tensor<16x4xf32>, tensor<1x4xi32> -> tensor<1x4x4xf32>
    %logits = tg.matmul %h, %u {transpose_rhs} : tensor<1x4x4xf32>, tensor<16x4xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> (tensor<f32>, tensor<16x4xf32>) attributes {tg.gradients = [@w]} {
    %z = tg.fill {value = 0.0 : f64} : tensor<f32>
    %g = tg.fill {value = 0.0 : f64} : tensor<16x4xf32>
    return %z, %g : tensor<f32>, tensor<16x4xf32>
  }
  // expected-error @below {{tg-train-step: no backward of this stage returns the gradient of @u}}
  func.func @optimizer_step(%step: tensor<i64> {tg.role = "step"}, %g: tensor<16x4xf32> {tg.role = "grad", tg.param = @u}) -> tensor<f32> {
    %z = tg.fill {value = 0.0 : f64} : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// Tests that model chunks without pipeline parallelism are refused.
// expected-error @below {{tg-train-step: model chunks need pipeline parallelism}}
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 1, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %z = tg.fill {value = 0.0 : f64} : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> attributes {tg.gradients = []} {
    %z = tg.fill {value = 0.0 : f64} : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @"forward.chunk1"(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %z = tg.fill {value = 0.0 : f64} : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @"forward_backward.chunk1"(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> attributes {tg.gradients = []} {
    %z = tg.fill {value = 0.0 : f64} : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @optimizer_step(%step: tensor<i64> {tg.role = "step"}) -> tensor<f32> {
    %z = tg.fill {value = 0.0 : f64} : tensor<f32>
    return %z : tensor<f32>
  }
}
