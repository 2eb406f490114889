// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --tg-inline-layers

// Tests that two stacks reading the same per-layer parameters are refused: each layer index
// names one layer's own parameters (dist-pipeline places them by it).
tg.model @shared {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"a.{i}.w" : tensor<8x8xf32> {init = "normal", std = 0.02, repeat = 2}
  tg.param @"b.{i}.w" : tensor<8x8xf32> {init = "normal", std = 0.02, repeat = 3}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %h1 = tg.repeat_layers @layer(%h) count 2 params [@"a.{i}.w"] : tensor<1x4x8xf32>
    // expected-error @below {{tg-inline-layers: parameter 'a.0.w' is read by two layers of the stack (0 and 2): a layer's parameters are its own}}
    %h2 = tg.repeat_layers @layer(%h1) count 2 params [@"a.{i}.w"] : tensor<1x4x8xf32>
    %unused = tg.repeat_layers @layer(%h1) count 3 params [@"b.{i}.w"] : tensor<1x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<1x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<1x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    return %y : tensor<1x4x8xf32>
  }
}
