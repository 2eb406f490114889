// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --dist-tensor-parallel="gpus-per-node=2 tp=2 sp=true"

// Tests every refusal of sequence parallelism in dist-tensor-parallel: ops outside the
// tensor-parallel regions run on sequence slices only where their sharding rule keeps the
// slice, and every whole operand they read must be a parameter (its gradient is then summed
// over tp).

// sp=on needs the declaration to name the sequence dim.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  // expected-error @below {{dist-tensor-parallel: sp=on splits the activations' sequence dim, which @forward must declare (tg.sequence_dim = <dim>)}}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    // The vocab-parallel embedding leaves the region as sequence slices [1, 2, 8].
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %x, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// An op without a sharding rule cannot take a sequence slice.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32>
      attributes {tg.sequence_dim = 1 : i64} {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    // The vocab-parallel embedding leaves the region as sequence slices [1, 2, 8].
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    // expected-error @below {{dist-tensor-parallel: tg.silu_grad has no sharding rule for a sequence slice (sp=on)}}
    %g = tg.silu_grad %x, %x : tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %x, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Slices and whole sequences do not mix in an element-wise op.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @bias : tensor<1x4x8xf32> {init = "zeros"}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32>
      attributes {tg.sequence_dim = 1 : i64} {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    // The vocab-parallel embedding leaves the region as sequence slices [1, 2, 8].
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %b = tg.param_ref @bias : tensor<1x4x8xf32>
    // expected-error @below {{'tg.add' op operands split differently (operand 0 along dim 1, operand 1 along dim -1; -1: whole)}}
    // expected-error @below {{dist-tensor-parallel: cannot run this op on a sequence slice (sp=on)}}
    %s = tg.add %x, %b : tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %x, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// An op that moves the sequence dim leaves sequence parallelism.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32>
      attributes {tg.sequence_dim = 1 : i64} {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    // The vocab-parallel embedding leaves the region as sequence slices [1, 2, 8].
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    // expected-error @below {{dist-tensor-parallel: sequence parallelism keeps the sequence split along dim 1; this op would not}}
    %t = tg.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<1x4x8xf32> -> tensor<1x8x4xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %x, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A whole operand that is not a parameter cannot join a slice.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32>
      attributes {tg.sequence_dim = 1 : i64} {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    // The vocab-parallel embedding leaves the region as sequence slices [1, 2, 8].
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %one = tg.fill {value = 1.0 : f64} : tensor<8xf32>
    // expected-error @below {{dist-tensor-parallel: mixes sequence slices with whole sequences}}
    %n = tg.rms_norm %x, %one {epsilon = 1.0e-05} : tensor<1x4x8xf32>, tensor<8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %x, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Logits split along the sequence (a whole head weight: no region to gather into) cannot
// feed the vocab-parallel cross-entropy.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32>
      attributes {tg.sequence_dim = 1 : i64} {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    // The vocab-parallel embedding leaves the region as sequence slices [1, 2, 8].
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %x, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    // expected-error @below {{'tg.cross_entropy' op can only be split along the vocabulary (the last dim of the logits), got logits along dim 1 and labels along dim -1}}
    // expected-error @below {{dist-tensor-parallel: cannot run this op on a sequence slice (sp=on)}}
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// The declared sequence dim must exist in the activations it splits.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32>
      attributes {tg.sequence_dim = 7 : i64} {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    // expected-error @below {{dist-tensor-parallel: sp=on splits dim 7 (tg.sequence_dim) of 'tensor<1x4x8xf32>' into 2 slices, which it does not have}}
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %x, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A whole parameter read on sequence slices and inside a tensor-parallel region would have
// its gradient summed over tp twice.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @up : tensor<8x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @m : tensor<8x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32>
      attributes {tg.sequence_dim = 1 : i64} {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    // The vocab-parallel embedding leaves the region as sequence slices [1, 2, 8].
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    // expected-error @below {{dist-tensor-parallel: @m is read on sequence slices and inside a tensor-parallel region; its gradient would be summed over tp twice}}
    %m = tg.param_ref @m : tensor<8x8xf32>
    %y = tg.matmul %x, %m {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %u = tg.param_ref @up : tensor<8x8xf32>
    %z = tg.matmul %m, %u {transpose_rhs} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %x, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

