// RUN: mlperf-opt %s --tg-autodiff --tg-optimizer --tg-train-step --plan-from-tg | FileCheck %s

// Tests that buffer names stay unique when a parameter is called like a generated buffer or
// an arena: the later one gets the next free number, and plan.parameter keeps the real name.
// CHECK: plan.buffer @loss : tensor<16x8xf32> in @persistent
// CHECK: plan.buffer @persistent.0 : tensor<8xf32> in @persistent
// CHECK: plan.parameter "loss" {{{.*}}value = @loss}
// CHECK: plan.parameter "persistent" {{{.*}}value = @persistent.0}
// CHECK: plan.buffer @loss.0 : tensor<f32> in @persistent
// CHECK: plan.program @forward inputs [@input.tokens, @input.labels] outputs [@loss.0]
tg.model @clash {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 1, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @loss : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @persistent : tensor<8xf32> {init = "ones"}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @loss : tensor<16x8xf32>
    %w = tg.param_ref @persistent : tensor<8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %n = tg.rms_norm %h, %w {epsilon = 1.0e-05 : f64} : tensor<1x4x8xf32>, tensor<8xf32>
    %logits = tg.matmul %n, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %out = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %out : tensor<f32>
  }
}
