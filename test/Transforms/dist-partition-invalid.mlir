// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --dist-tensor-parallel="gpus-per-node=2 dp=2 zero=1" --dist-partition
// RUN: not mlperf-opt %s --split-input-file --dist-partition 2>&1 | FileCheck %s --check-prefix=MESH

// Tests every refusal of dist-partition on hand-written optimizer steps. Without the mesh
// dist-tensor-parallel places, every model is refused:
// MESH: error: dist-partition needs the model's @mesh: run dist-tensor-parallel first

// An @optimizer_step that tg-optimizer did not write (no tg.role on its arguments) is refused.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @w : tensor<16x4xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %w = tg.param_ref @w : tensor<16x4xf32>
    %h = tg.embedding %w, %tokens : tensor<16x4xf32>, tensor<1x4xi32> -> tensor<1x4x4xf32>
    %l = tg.matmul %h, %w {transpose_rhs} : tensor<1x4x4xf32>, tensor<16x4xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  // expected-error @below {{dist-partition: @optimizer_step argument 0 has no tg.role: run tg-optimizer}}
  func.func @optimizer_step(%step: tensor<i64>, %g: tensor<16x4xf32>, %master: tensor<16x4xf32>, %m: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> (tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>) {
    %n = tg.global_norm %g : tensor<16x4xf32>
    %c = tg.clip_coefficient %n {max_norm = 1.0 : f64}
    %lr = tg.lr_value %step {base_lr = 1.0e-03 : f64, end_lr = 1.0e-04 : f64, kind = "cosine_with_linear_warmup", max_steps = 10 : i64, warmup_steps = 2 : i64}
    %nw, %nm, %nv = tg.elementwise %master, %m, %v, %g, %lr, %c {program = "r0 = a0 a4 a3 * -; r1 = a1; r2 = a2"} : (tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<f32>, tensor<f32>) -> (tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>)
    return %nw, %nm, %nv : tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>
  }
}

// -----

// ZeRO-1 shards every parameter's elements evenly over dp.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @w : tensor<15x3xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %w = tg.param_ref @w : tensor<15x3xf32>
    %h = tg.embedding %w, %tokens : tensor<15x3xf32>, tensor<1x4xi32> -> tensor<1x4x3xf32>
    %l = tg.matmul %h, %w {transpose_rhs} : tensor<1x4x3xf32>, tensor<15x3xf32> -> tensor<1x4x15xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x15xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  // expected-error @below {{dist-partition: zero=1 shards every parameter over dp=2, but @w has 45 elements on each rank}}
  func.func @optimizer_step(%step: tensor<i64> {tg.role = "step"}, %g: tensor<15x3xf32> {tg.param = @w, tg.role = "grad"}, %master: tensor<15x3xf32> {tg.param = @w, tg.role = "master"}, %m: tensor<15x3xf32> {tg.param = @w, tg.role = "exp_avg"}, %v: tensor<15x3xf32> {tg.param = @w, tg.role = "exp_avg_sq"}) -> (tensor<15x3xf32> {tg.param = @w, tg.role = "param"}, tensor<15x3xf32> {tg.param = @w, tg.role = "exp_avg"}, tensor<15x3xf32> {tg.param = @w, tg.role = "exp_avg_sq"}) attributes {tg.parameters = [@w]} {
    %n = tg.global_norm %g : tensor<15x3xf32>
    %c = tg.clip_coefficient %n {max_norm = 1.0 : f64}
    %lr = tg.lr_value %step {base_lr = 1.0e-03 : f64, end_lr = 1.0e-04 : f64, kind = "cosine_with_linear_warmup", max_steps = 10 : i64, warmup_steps = 2 : i64}
    %nw, %nm, %nv = tg.elementwise %master, %m, %v, %g, %lr, %c {program = "r0 = a0 a4 a3 * -; r1 = a1; r2 = a2"} : (tensor<15x3xf32>, tensor<15x3xf32>, tensor<15x3xf32>, tensor<15x3xf32>, tensor<f32>, tensor<f32>) -> (tensor<15x3xf32>, tensor<15x3xf32>, tensor<15x3xf32>)
    return %nw, %nm, %nv : tensor<15x3xf32>, tensor<15x3xf32>, tensor<15x3xf32>
  }
}

// -----

// The global norm is rebuilt from the one tg.global_norm of the step.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @w : tensor<16x4xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %w = tg.param_ref @w : tensor<16x4xf32>
    %h = tg.embedding %w, %tokens : tensor<16x4xf32>, tensor<1x4xi32> -> tensor<1x4x4xf32>
    %l = tg.matmul %h, %w {transpose_rhs} : tensor<1x4x4xf32>, tensor<16x4xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  // expected-error @below {{dist-partition: expected one tg.global_norm}}
  func.func @optimizer_step(%step: tensor<i64> {tg.role = "step"}, %g: tensor<16x4xf32> {tg.param = @w, tg.role = "grad"}, %master: tensor<16x4xf32> {tg.param = @w, tg.role = "master"}, %m: tensor<16x4xf32> {tg.param = @w, tg.role = "exp_avg"}, %v: tensor<16x4xf32> {tg.param = @w, tg.role = "exp_avg_sq"}) -> (tensor<16x4xf32> {tg.param = @w, tg.role = "param"}, tensor<16x4xf32> {tg.param = @w, tg.role = "exp_avg"}, tensor<16x4xf32> {tg.param = @w, tg.role = "exp_avg_sq"}) attributes {tg.parameters = [@w]} {
    %c = tg.fill {value = 1.0 : f64} : tensor<f32>
    %lr = tg.lr_value %step {base_lr = 1.0e-03 : f64, end_lr = 1.0e-04 : f64, kind = "cosine_with_linear_warmup", max_steps = 10 : i64, warmup_steps = 2 : i64}
    %nw, %nm, %nv = tg.elementwise %master, %m, %v, %g, %lr, %c {program = "r0 = a0 a4 a3 * -; r1 = a1; r2 = a2"} : (tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<f32>, tensor<f32>) -> (tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>)
    return %nw, %nm, %nv : tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>
  }
}

// -----

// ZeRO-1 updates shards of gradient arguments only.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @w : tensor<16x4xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %w = tg.param_ref @w : tensor<16x4xf32>
    %h = tg.embedding %w, %tokens : tensor<16x4xf32>, tensor<1x4xi32> -> tensor<1x4x4xf32>
    %l = tg.matmul %h, %w {transpose_rhs} : tensor<1x4x4xf32>, tensor<16x4xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @optimizer_step(%step: tensor<i64> {tg.role = "step"}, %g: tensor<16x4xf32> {tg.param = @w, tg.role = "grad"}, %master: tensor<16x4xf32> {tg.param = @w, tg.role = "master"}, %m: tensor<16x4xf32> {tg.param = @w, tg.role = "exp_avg"}, %v: tensor<16x4xf32> {tg.param = @w, tg.role = "exp_avg_sq"}) -> (tensor<16x4xf32> {tg.param = @w, tg.role = "param"}, tensor<16x4xf32> {tg.param = @w, tg.role = "exp_avg"}, tensor<16x4xf32> {tg.param = @w, tg.role = "exp_avg_sq"}) attributes {tg.parameters = [@w]} {
    %n = tg.global_norm %g : tensor<16x4xf32>
    %c = tg.clip_coefficient %n {max_norm = 1.0 : f64}
    %lr = tg.lr_value %step {base_lr = 1.0e-03 : f64, end_lr = 1.0e-04 : f64, kind = "cosine_with_linear_warmup", max_steps = 10 : i64, warmup_steps = 2 : i64}
    %g2 = tg.scale %g {factor = 2.0 : f64} : tensor<16x4xf32>
    // expected-error @below {{dist-partition: tg.elementwise must read a gradient argument}}
    %nw, %nm, %nv = tg.elementwise %master, %m, %v, %g2, %lr, %c {program = "r0 = a0 a4 a3 * -; r1 = a1; r2 = a2"} : (tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<f32>, tensor<f32>) -> (tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>)
    return %nw, %nm, %nv : tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>
  }
}

// -----

// A model without the step tg-optimizer writes is refused.
// expected-error @below {{dist-partition needs @optimizer_step: run tg-optimizer first}}
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @w : tensor<16x4xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %w = tg.param_ref @w : tensor<16x4xf32>
    %h = tg.embedding %w, %tokens : tensor<16x4xf32>, tensor<1x4xi32> -> tensor<1x4x4xf32>
    %l = tg.matmul %h, %w {transpose_rhs} : tensor<1x4x4xf32>, tensor<16x4xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

