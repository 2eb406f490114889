// RUN: mlperf-opt %s | mlperf-opt | FileCheck %s

// Tests that a minimal valid model round-trips: metadata, parameters, a layer stack.
// CHECK-LABEL: tg.model @m {
// CHECK: tg.benchmark {eval_every_samples = 64 : i64, eval_samples = 16 : i64, name = "llama31_8b", target_metric = "log_perplexity", target_value = 3.300000e+00 : f64}
// CHECK: tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", repeat = 2 : i64, std = 2.000000e-02 : f64}
// CHECK: %[[H:.+]] = tg.embedding
// CHECK: tg.repeat_layers @layer(%[[H]]) count 2 params [@"layers.{i}.w"] : tensor<2x4x8xf32>
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
    return %y : tensor<2x4x8xf32>
  }
}
