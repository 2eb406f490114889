// RUN: mlperf-opt %s --split-input-file --verify-diagnostics

// Tests that the benchmark has a name.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op name must name the MLPerf benchmark (e.g. "llama31_8b")}}
  tg.benchmark {name = "", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the eval cadence is positive.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op eval_every_samples must be positive, got 0}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 0, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the reference convergence points come in pairs.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op rcp_batch_sizes and rcp_mean_samples must come together, one mean per batch size}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 16, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3, rcp_batch_sizes = array<i64: 16, 32>, rcp_mean_samples = array<i64: 100>}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the reference convergence points ascend.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op rcp_batch_sizes must be positive and ascending and rcp_mean_samples positive (entry 1)}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 16, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3, rcp_batch_sizes = array<i64: 32, 16>, rcp_mean_samples = array<i64: 100, 200>}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the eval set is not empty.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op eval_samples must be positive, got -1}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = -1, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the target metric is known.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op unknown target_metric 'accuracy' (supported: log_perplexity, eval_loss)}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "accuracy", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the target is positive.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op target_value must be a finite positive number, got 0}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 0.0}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a missing benchmark field is named.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op requires attribute 'eval_samples'}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the eval cadence is a multiple of the global batch (MLPerf rounds it up).
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op eval_every_samples 60 is not a multiple of global_batch_size 8: MLPerf rounds the cadence up to the next step boundary, so evaluation would run every 64 samples instead; choose a global batch size that divides 60}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 60, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that batch sizes are positive.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  // expected-error @+1 {{'tg.batch' op seq_len must be positive, got 0}}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 0}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the global batch is a multiple of the micro-batch.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  // expected-error @+1 {{'tg.batch' op global_batch_size 7 is not a multiple of micro_batch_size 2 (global batch = micro-batch x accumulation steps x data-parallel ranks)}}
  tg.batch {global_batch_size = 7, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the optimizer is known.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  // expected-error @+1 {{'tg.optimizer' op unknown optimizer 'sgd' (supported: adamw, adagrad)}}
  tg.optimizer {name = "sgd", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that adagrad takes no beta1.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  // expected-error @+1 {{'tg.optimizer' op 'beta1' is an adamw hyperparameter; adagrad has none}}
  tg.optimizer {name = "adagrad", beta1 = 0.9, epsilon = 1.0e-08, weight_decay = 0.0, weight_decay_params = "all"}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that adagrad's learning-rate decay is 0 (the DLRMv2 rules).
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  // expected-error @+1 {{'tg.optimizer' op adagrad lr_decay 0.5 is not supported: only 0, as the DLRMv2 rules fix it}}
  tg.optimizer {name = "adagrad", epsilon = 1.0e-08, lr_decay = 0.5, weight_decay = 0.0, weight_decay_params = "all"}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that adagrad's initial accumulator value is >= 0.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  // expected-error @+1 {{'tg.optimizer' op initial_accumulator_value must be finite and >= 0}}
  tg.optimizer {name = "adagrad", epsilon = 1.0e-08, initial_accumulator_value = -1.0, weight_decay = 0.0, weight_decay_params = "all"}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that beta2 is in [0, 1).
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  // expected-error @+1 {{'tg.optimizer' op beta2 must be in [0, 1), got 1}}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 1.0, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that epsilon is positive.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  // expected-error @+1 {{'tg.optimizer' op epsilon must be a finite positive number, got 0}}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 0.0, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that weight decay is not negative.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  // expected-error @+1 {{'tg.optimizer' op weight_decay must be finite and >= 0, got -0.1}}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = -0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the weight-decay parameter group rule is known.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  // expected-error @+1 {{'tg.optimizer' op unknown weight_decay_params 'norms' (supported: all, matrices)}}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "norms", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that gradient clipping is positive.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  // expected-error @+1 {{'tg.optimizer' op clip_grad_norm must be a finite positive number, got 0}}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 0.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a missing optimizer field is named.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  // expected-error @+1 {{'tg.optimizer' op adamw needs 'clip_grad_norm'}}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all"}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the schedule kind is known.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  // expected-error @+1 {{'tg.lr_schedule' op unknown kind 'linear' (supported: cosine_with_linear_warmup)}}
  tg.lr_schedule {kind = "linear", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the base LR is positive.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  // expected-error @+1 {{'tg.lr_schedule' op base_lr must be a finite positive number, got 0}}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 0.0, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the end LR does not exceed the base LR.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  // expected-error @+1 {{'tg.lr_schedule' op end_lr must be in [0, base_lr = 0.001], got 0.01}}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-02, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that warmup is not negative.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  // expected-error @+1 {{'tg.lr_schedule' op warmup_steps must be >= 0, got -1}}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = -1, decay_steps = 11, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that training outlasts warmup.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  // expected-error @+1 {{'tg.lr_schedule' op max_steps (10) must exceed warmup_steps (10)}}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 10, decay_steps = 0, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that decay steps contradicting max_steps - warmup_steps are named.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  // expected-error @+1 {{'tg.lr_schedule' op decay_steps (10) contradicts max_steps - warmup_steps (8): the reference decays from the end of warmup to max_steps}}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 10, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a parameter without init is an error.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.param' op requires attribute 'init'}}
  tg.param @"embed" : tensor<16x8xf32> {std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the init distribution is known.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.param' op unknown init 'uniform' (supported: normal, scaled_normal, kaiming_uniform, ones, zeros, checkpoint)}}
  tg.param @"embed" : tensor<16x8xf32> {init = "uniform", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a normal init states its std.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.param' op init 'normal' needs std}}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal"}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that std is rejected where it means nothing.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.param' op std is meaningless for init 'ones'}}
  tg.param @"embed" : tensor<16x8xf32> {init = "ones", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that std is positive.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.param' op std must be a finite positive number, got -0.02}}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = -0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a repeated parameter has a per-layer name.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.param' op repeat needs a per-layer name containing '{i}'}}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02, repeat = 2}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that scaled_normal needs a layer count.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.param' op scaled_normal scales std by 1/sqrt(2 x layers) and needs a per-layer parameter (repeat)}}
  tg.param @"embed" : tensor<16x8xf32> {init = "scaled_normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a per-layer name needs a repeat count.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  // expected-error @+1 {{'tg.param' op name contains '{i}' but no repeat count says how many layers}}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that repeat is at least one.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  // expected-error @+1 {{'tg.param' op repeat must be >= 1, got 0}}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 0}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that param element types are tg types.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.param' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor of f32, bf16, f8E4M3FN or f8E5M2 values}}
  tg.param @"embed" : tensor<16x8xf16> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that param_ref names a declared parameter.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    // expected-error @+1 {{'tg.param_ref' op refers to undeclared parameter @embedding}}
    %e = tg.param_ref @"embedding" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that param_ref has the declared type.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    // expected-error @+1 {{'tg.param_ref' op result type 'tensor<16x8xbf16>' differs from the declared type 'tensor<16x8xf32>' of @embed}}
    %bad = tg.param_ref @"embed" : tensor<16x8xbf16>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that per-layer parameters go through repeat_layers.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.param_ref' op parameter @"layers.{i}.w" is per-layer; pass it through tg.repeat_layers}}
    %bad = tg.param_ref @"layers.{i}.w" : tensor<8x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the layer function exists.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.repeat_layers' op layer function @block is not declared}}
    %h2 = tg.repeat_layers @block(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the stack depth matches the parameters' repeat.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.repeat_layers' op parameter @"layers.{i}.w" is declared for 2 layer(s) but the stack has 3}}
    %h2 = tg.repeat_layers @layer(%h) count 3 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that stacked parameters are per-layer ones.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.repeat_layers' op parameter @embed is not per-layer (no '{i}' in its name, no repeat); pass it with tg.param_ref}}
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"embed"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the layer function's signature matches the stack.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.repeat_layers' op layer function @layer has type '(tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>' but the stack needs '(tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>' (hidden state, then the listed parameters in order)}}
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %z: tensor<8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that every function of an alternating stack has the stack's signature.
tg.model @m {
  tg.benchmark {name = "gpt_oss_20b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.34}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.repeat_layers' op layer function @odd has type '(tensor<2x4x8xf32>) -> tensor<2x4x8xf32>' but the stack needs '(tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>'}}
    %h2 = tg.repeat_layers @layer(%h) count 2 alternating [@odd] params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
  func.func private @odd(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
    return %x : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a model without an optimizer names what is missing.
// expected-error @+1 {{'tg.model' op declares no tg.optimizer: every model states its MLPerf metadata, batch, optimizer and LR schedule}}
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a model without a batch names what is missing.
// expected-error @+1 {{'tg.model' op declares no tg.batch: every model states its MLPerf metadata, batch, optimizer and LR schedule}}
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that metadata is declared once.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  // expected-note @+1 {{first declared here}}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.lr_schedule' op is declared twice in model @m}}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that compute ops do not float at model level.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  // expected-error @+1 {{'arith.constant' op is not allowed directly in a tg.model (metadata ops, tg.param, dist.mesh and func.func only)}}
  %c = arith.constant 1.0 : f32
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that the forward function matches tg.batch.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 8}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  // expected-error @+1 {{'func.func' op @forward has type '(tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<f32>' but tg.batch (micro_batch_size 2, seq_len 8) needs '(tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<f32>'}}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that every declared parameter is used.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  // expected-error @+1 {{'tg.param' op declares a parameter that no computation reachable from @forward uses; MLPerf closed division forbids extra trainable parameters}}
  tg.param @"unused.weight" : tensor<8xf32> {init = "ones"}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a model has a forward function.
// expected-error @+1 {{'tg.model' op has no func.func @forward (tokens, labels) -> loss}}
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @fwd(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that metadata lives inside a tg.model.
// expected-error @+1 {{'tg.batch' op expects parent op 'tg.model'}}
tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}

// -----

// Tests that a layer stack has at least one layer.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.repeat_layers' op count must be >= 1, got 0}}
    %h2 = tg.repeat_layers @layer(%h) count 0 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that stacked parameters are declared.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.repeat_layers' op refers to undeclared parameter @"layers.{i}.v"}}
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.v"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a layer function may not stack itself (no recursion).
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.repeat_layers' op makes @layer call itself (directly or through other functions): layers are repeated with tg.repeat_layers, not recursion}}
    %z = tg.repeat_layers @layer(%y) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    return %z : tensor<2x4x8xf32>
  }
}

// -----

// Tests that functions may not recurse through calls.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'func.call' op makes @layer call itself (directly or through other functions): layers are repeated with tg.repeat_layers, not recursion}}
    %z = func.call @layer(%y, %w) : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    return %z : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a layer function has a body.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.repeat_layers' op layer function @layer has no body: a model declares every computation}}
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32>
}

// -----

// Tests that a called function has a body.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    // expected-error @+1 {{'func.call' op calls @external, which has no body: a model declares every computation}}
    %h3 = func.call @external(%h2) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %logits = tg.matmul %h3, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @external(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that @forward is public.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  // expected-error @+1 {{'func.func' op @forward must be a public function with a body}}
  func.func private @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a parameter used only by an uncalled function counts as unused.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  // expected-error @+1 {{'tg.param' op declares a parameter that no computation reachable from @forward uses; MLPerf closed division forbids extra trainable parameters}}
  tg.param @"dead.weight" : tensor<8xf32> {init = "ones"}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @dead() -> tensor<8xf32> {
    %d = tg.param_ref @"dead.weight" : tensor<8xf32>
    return %d : tensor<8xf32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that param_ref names a parameter, not another symbol.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    // expected-error @+1 {{'tg.param_ref' op refers to @layer, which is a 'func.func', not a tg.param}}
    %bad = tg.param_ref @layer : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a stack of one layer still needs per-layer parameters.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"w" : tensor<8x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.repeat_layers' op parameter @w is not per-layer (no '{i}' in its name, no repeat); pass it with tg.param_ref}}
    %h2 = tg.repeat_layers @layer(%h) count 1 params [@"w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that stacked parameters are plain symbol names.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{'tg.repeat_layers' op attribute 'params' failed to satisfy constraint: flat symbol ref array attribute}}
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"::@x] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a parameter's element count fits in int64.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.param' op declares more than 2^63 elements}}
  tg.param @"huge" : tensor<4611686018427387904x4xf32> {init = "ones"}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a parameter has no empty dimension (ffn = 0 would divide by zero later).
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.param' op declares a tensor with an empty dimension ('tensor<0x4xf32>'): every dimension of a parameter must be at least 1}}
  tg.param @"empty" : tensor<0x4xf32> {init = "ones"}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a model without tg.benchmark names what is missing.
// expected-error @+1 {{'tg.model' op declares no tg.benchmark: every model states its MLPerf metadata, batch, optimizer and LR schedule}}
tg.model @m {
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a model without tg.lr_schedule names what is missing.
// expected-error @+1 {{'tg.model' op declares no tg.lr_schedule: every model states its MLPerf metadata, batch, optimizer and LR schedule}}
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a value too large to store (4 x 2^31 x 2^31 f32 attention scores: 2^66 bytes) is
// refused where it is computed, before any pass sizes a buffer with wrapped arithmetic.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 2147483648}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x2147483648xi32>, %labels: tensor<1x2147483648xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x2147483648xi32> -> tensor<1x2147483648x8xf32>
    %q = tg.reshape %h : tensor<1x2147483648x8xf32> -> tensor<1x2147483648x4x2xf32>
    %qh = tg.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2147483648x4x2xf32> -> tensor<1x4x2147483648x2xf32>
    // expected-error @below {{'tg.matmul' op result 0 'tensor<1x4x2147483648x2147483648xf32>' holds more than 2^63 bytes}}
    %s = tg.matmul %qh, %qh {transpose_rhs} : tensor<1x4x2147483648x2xf32>, tensor<1x4x2147483648x2xf32> -> tensor<1x4x2147483648x2147483648xf32>
    %l = tg.matmul %h, %e {transpose_rhs} : tensor<1x2147483648x8xf32>, tensor<16x8xf32> -> tensor<1x2147483648x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x2147483648x16xf32>, tensor<1x2147483648xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Tests that a computed value with an empty dimension is refused (nothing to compute, and
// passes and kernels divide by row sizes).
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    // expected-error @below {{'tg.fill' op result 0 'tensor<0x8xf32>' has an empty dimension: every dimension must be at least 1}}
    %z = tg.fill {value = 0.0 : f64} : tensor<0x8xf32>
    %l = tg.matmul %h, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Tests that the skipped evaluations are not negative.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op eval_skip must be non-negative, got -1}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 16, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3, eval_skip = -1}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that declared log keys are MLPerf-style keys.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op mllog key 'LoraRank' is not a lower_snake_case MLPerf log key}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 16, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3, mllog = {LoraRank = 16}}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a declared log key does not restate one the runtime logs.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op mllog key 'opt_learning_rate_training_steps' is logged by the runtime from the declaration itself; do not restate it}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 16, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3, mllog = {opt_learning_rate_training_steps = 1024}}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that declared log values are numbers or strings.
tg.model @m {
  // expected-error @+1 {{'tg.benchmark' op mllog value of 'lora_rank' must be an integer, a float or a string}}
  tg.benchmark {name = "llama31_8b", eval_every_samples = 16, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3, mllog = {lora_rank = [16]}}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that checkpoint parts are several tensors.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 16, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @+1 {{'tg.param' op checkpoint_parts must name at least two tensors}}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02, checkpoint_parts = ["embed.a"]}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// Tests that a per-layer parameter's checkpoint parts are per layer.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 16, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 2, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @"embed" : tensor<16x8xf32> {init = "normal", std = 0.02}
  // expected-error @+1 {{'tg.param' op checkpoint part 'layers.b' must be a tensor name containing '{i}', as the parameter's}}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2, checkpoint_parts = ["layers.{i}.a", "layers.b"]}
  func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @"embed" : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}
