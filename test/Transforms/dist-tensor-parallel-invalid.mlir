// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --dist-tensor-parallel="gpus-per-node=2 tp=2"
// RUN: not mlperf-opt %s --split-input-file --dist-tensor-parallel="gpus-per-node=3 tp=2" 2>&1 | FileCheck %s --check-prefix=CLUSTER

// Tests every refusal of dist-tensor-parallel and of the ops' sharding rules it applies
// (dialects/TG/IR/TGSharding.cpp): each names what cannot be split and why. A cluster that
// does not hold dp x tp x pp ranks is refused for every model:
// CLUSTER: error: dist-tensor-parallel: dp × tp × pp = 2 ranks does not match the cluster 1x3, or zero is not 0, 1, 2 or 3

// A model that already has a mesh is refused.
// expected-error @below {{dist-tensor-parallel: the model already has a @mesh}}
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  dist.mesh @mesh {axes = ["dp", "tp", "pp"], gpus_per_node = 2 : i64, nodes = 1 : i64, shape = array<i64: 1, 2, 1>}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Splitting runs before autodiff: a model with @forward_backward is refused.
// expected-error @below {{dist-tensor-parallel splits @forward before tg-autodiff}}
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x4xi32>) -> tensor<f32> {
    %z = tg.fill {value = 0.0 : f64} : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// Parameters must be concrete (tg-inline-layers first).
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @below {{dist-tensor-parallel needs concrete parameters: run tg-inline-layers first}}
  tg.param @"l.{i}.w" : tensor<8x8xf32> {init = "normal", std = 0.02, repeat = 2, shard = [["tp"], []]}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %h = tg.repeat_layers @layer(%x) count 2 params [@"l.{i}.w"] : tensor<1x4x8xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<1x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<1x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    return %y : tensor<1x4x8xf32>
  }
}

// -----

// tp must divide the dim the declaration splits.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @below {{dist-tensor-parallel: tp=2 does not divide dim 0 (3) of 'tensor<3x8xf32>', which the declaration splits over tp}}
  tg.param @w : tensor<3x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w = tg.param_ref @w : tensor<3x8xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// tp must divide every block of a blocked split.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  // expected-error @below {{dist-tensor-parallel: tp=2 does not divide the block of 3 in dim 0 of 'tensor<10x8xf32>' (shard_blocks): every rank holds a slice of every block}}
  tg.param @qkv : tensor<10x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []], shard_blocks = array<i64: 4, 3, 3>}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w = tg.param_ref @qkv : tensor<10x8xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// An op without a sharding rule cannot take a split operand.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @up : tensor<6x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %u = tg.param_ref @up : tensor<6x8xf32>
    %a = tg.matmul %x, %u {transpose_rhs} : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
    // expected-error @below {{dist-tensor-parallel: tg.silu_grad has no sharding rule (ShardingRuleOpInterface) for an operand split over tp}}
    %g = tg.silu_grad %a, %a : tensor<1x4x6xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Element-wise ops need every operand split the same way.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @up : tensor<6x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %u = tg.param_ref @up : tensor<6x8xf32>
    %a = tg.matmul %x, %u {transpose_rhs} : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
    %c = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %whole = tg.reshape %c : tensor<1x4x16xf32> -> tensor<1x4x16xf32>
    %w6:2 = tg.split %whole {dim = 2 : i64, sizes = array<i64: 6, 10>} : tensor<1x4x16xf32> -> tensor<1x4x6xf32>, tensor<1x4x10xf32>
    // expected-error @below {{'tg.add' op operands split differently (operand 0 along dim 2, operand 1 along dim -1; -1: whole)}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %s = tg.add %a, %w6#0 : tensor<1x4x6xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A softmax over the split dim would normalize a slice.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @up : tensor<6x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %u = tg.param_ref @up : tensor<6x8xf32>
    %a = tg.matmul %x, %u {transpose_rhs} : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
    // expected-error @below {{'tg.softmax' op cannot be split along dim 2: the softmax normalizes over it}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %p = tg.softmax %a {dim = 2} : tensor<1x4x6xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A norm normalizes over its last dim, which must be whole.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @up : tensor<6x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @n : tensor<6xf32> {init = "ones"}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %u = tg.param_ref @up : tensor<6x8xf32>
    %a = tg.matmul %x, %u {transpose_rhs} : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
    %nw = tg.param_ref @n : tensor<6xf32>
    // expected-error @below {{'tg.rms_norm' op normalizes over the last dim: only the rows of its input can be split, and its weight is whole (input split along dim 2, weight along dim -1)}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %y = tg.rms_norm %a, %nw {epsilon = 1.0e-05} : tensor<1x4x6xf32>, tensor<6xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A reshape into groups needs whole groups on every rank.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @up : tensor<6x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %u = tg.param_ref @up : tensor<6x8xf32>
    %a = tg.matmul %x, %u {transpose_rhs} : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
    // expected-error @below {{'tg.reshape' op 2 ranks do not divide the 3 groups of dim 2 ('tensor<1x4x3x2xf32>'): each rank must hold whole groups}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %r = tg.reshape %a : tensor<1x4x6xf32> -> tensor<1x4x3x2xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Other reshapes of a split dim have no rule.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @up : tensor<6x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %u = tg.param_ref @up : tensor<6x8xf32>
    %a = tg.matmul %x, %u {transpose_rhs} : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
    // expected-error @below {{'tg.reshape' op has no split rule for an input split 2 ways along dim 2 ('tensor<1x4x3xf32>' -> 'tensor<1x24xf32>'): only splitting or merging the split dim with the dim after it}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %r = tg.reshape %a : tensor<1x4x6xf32> -> tensor<1x24xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A blocked (fused) value must be split into its blocks before a reshape.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @qkv : tensor<8x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []], shard_blocks = array<i64: 4, 2, 2>}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w = tg.param_ref @qkv : tensor<8x8xf32>
    %f = tg.matmul %x, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    // expected-error @below {{'tg.reshape' op cannot take an operand split by blocks (a fused tensor) along dim 2: split the fused tensor into its parts first}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %r = tg.reshape %f : tensor<1x4x8xf32> -> tensor<1x4x4x2xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Pieces of a contiguously split dim would each sit on one rank.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @up : tensor<6x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %u = tg.param_ref @up : tensor<6x8xf32>
    %a = tg.matmul %x, %u {transpose_rhs} : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
    // expected-error @below {{'tg.split' op splits dim 2 into pieces while that dim is split over ranks: declare the pieces as the parameter's shard_blocks so each rank holds a slice of every piece}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %q:2 = tg.split %a {dim = 2 : i64, sizes = array<i64: 4, 2>} : tensor<1x4x6xf32> -> tensor<1x4x4xf32>, tensor<1x4x2xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Blocked values cannot be concatenated along their blocks.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @qkv : tensor<8x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []], shard_blocks = array<i64: 4, 2, 2>}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w = tg.param_ref @qkv : tensor<8x8xf32>
    %f = tg.matmul %x, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    // expected-error @below {{'tg.concat' op cannot concatenate tensors split by blocks along dim 2}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %c = tg.concat %f, %f {dim = 2 : i64} : tensor<1x4x8xf32>, tensor<1x4x8xf32> -> tensor<1x4x16xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A row-parallel matmul contracts slices that must match.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @qkv : tensor<8x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []], shard_blocks = array<i64: 4, 2, 2>}
  tg.param @o : tensor<8x8xf32> {init = "normal", std = 0.02, shard = [[], ["tp"]]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w = tg.param_ref @qkv : tensor<8x8xf32>
    %f = tg.matmul %x, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %o = tg.param_ref @o : tensor<8x8xf32>
    // expected-error @below {{'tg.matmul' op contracts operands whose split dims are made of different blocks}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %y = tg.matmul %f, %o {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Two column-parallel linears in a row: the second needs a whole input.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @up : tensor<6x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @up2 : tensor<4x6xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %u = tg.param_ref @up : tensor<6x8xf32>
    %a = tg.matmul %x, %u {transpose_rhs} : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
    %u2 = tg.param_ref @up2 : tensor<4x6xf32>
    // expected-error @below {{'tg.matmul' op has no split rule for lhs split along dim 2 and rhs along dim 0 (-1: whole): column-parallel splits rhs's output features, row-parallel both contraction dims, batch-parallel the same batch dim of both}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %y = tg.matmul %a, %u2 {transpose_rhs} : tensor<1x4x6xf32>, tensor<4x6xf32> -> tensor<1x4x4xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// The vocab-parallel embedding needs one contiguous range of rows per rank.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []], shard_blocks = array<i64: 8, 8>}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    // expected-error @below {{'tg.embedding' op cannot take an operand split by blocks (a fused tensor) along dim 0: a rank's vocabulary is one range of ids}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A rotary embedding reads positions from the sequence dim.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @up : tensor<8x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %u = tg.param_ref @up : tensor<8x8xf32>
    %a = tg.matmul %x, %u {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %r4 = tg.reshape %a : tensor<1x4x8xf32> -> tensor<1x4x4x2xf32>
    %t = tg.transpose %r4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
    // expected-error @below {{'tg.rope' op cannot be split along dim 1: a rotary embedding reads positions (dim 1) and pairs head_dim entries (dim 3)}}
    // expected-error @below {{dist-tensor-parallel: cannot split this op over tp=2}}
    %q = tg.rope %t {theta = 10000.0} : tensor<1x4x4x2xf32>
    %l = tg.matmul %x, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}


// -----

// Experts split along the expert dim (expert parallelism is an `ep` axis, not a tp split):
// the grouped GEMM names the splits it has rules for.
tg.model @m {
  tg.benchmark {name = "gpt_oss_20b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.34}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @router : tensor<4x8xf32> {init = "normal", std = 0.02}
  tg.param @fc : tensor<4x8x8xf32> {init = "normal", std = 0.02, shard = [["tp"], [], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %x2 = tg.reshape %x : tensor<1x4x8xf32> -> tensor<4x8xf32>
    %r = tg.param_ref @router : tensor<4x8xf32>
    %logits = tg.matmul %x2, %r {transpose_rhs} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
    %p, %ex = tg.moe_route %logits {top_k = 2 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi32>
    %order, %sizes = tg.moe_sort %ex : tensor<4x2xi32> -> tensor<8xi32>, tensor<4xi32>
    %rows = tg.moe_permute %x2, %order : tensor<4x8xf32>, tensor<8xi32> -> tensor<8x8xf32>
    %fc = tg.param_ref @fc : tensor<4x8x8xf32>
    // expected-error @+2 {{'tg.grouped_matmul' op has no split rule for rows split along dim -1 and expert weights along dim 0 (-1: whole)}}
    // expected-error @+1 {{dist-tensor-parallel: cannot split this op over tp=2}}
    %h = tg.grouped_matmul %rows, %fc, %sizes {transpose_rhs} : tensor<8x8xf32>, tensor<4x8x8xf32>, tensor<4xi32> -> tensor<8x8xf32>
    %y = tg.moe_unpermute %h, %order : tensor<8x8xf32>, tensor<8xi32> -> tensor<4x8xf32>
    %y3 = tg.reshape %y : tensor<4x8xf32> -> tensor<1x4x8xf32>
    %l = tg.matmul %y3, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
