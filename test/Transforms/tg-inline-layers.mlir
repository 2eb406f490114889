// RUN: mlperf-opt %s --split-input-file --tg-inline-layers | FileCheck %s

// Tests that a two-layer stack becomes two inlined copies reading per-layer parameters, that
// scaled_normal becomes normal with std / sqrt(2 x layers), that each copy knows its index in
// the layer stack (layer, which dist-pipeline cuts on), that a helper call is inlined, and
// that the private functions disappear.
// CHECK-LABEL: tg.model @stack
// CHECK: tg.param @layers.0.w : tensor<8x8xf32> {init = "normal", layer = 0 : i64, std = 1.000000e-02 : f64}
// CHECK-NEXT: tg.param @layers.1.w : tensor<8x8xf32> {init = "normal", layer = 1 : i64, std = 1.000000e-02 : f64}
// CHECK-NOT: repeat
// CHECK: func.func @forward
// CHECK: %[[H:.+]] = tg.embedding
// CHECK: %[[W0:.+]] = tg.param_ref @layers.0.w
// CHECK: %[[Y0:.+]] = tg.matmul %[[H]], %[[W0]] {transpose_rhs}
// CHECK: %[[S0:.+]] = tg.silu %[[Y0]]
// CHECK: %[[W1:.+]] = tg.param_ref @layers.1.w
// CHECK: %[[Y1:.+]] = tg.matmul %[[S0]], %[[W1]] {transpose_rhs}
// CHECK: %[[S1:.+]] = tg.silu %[[Y1]]
// CHECK: tg.matmul %[[S1]], %{{.+}} {transpose_rhs}
// CHECK-NOT: func.func private
// CHECK-NOT: tg.repeat_layers
// CHECK-NOT: func.call
tg.model @stack {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "scaled_normal", std = 0.02, repeat = 2}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %h2 = tg.repeat_layers @layer(%h) count 2 params [@"layers.{i}.w"] : tensor<1x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @layer(%x: tensor<1x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<1x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %z = func.call @activation(%y) : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
    return %z : tensor<1x4x8xf32>
  }
  func.func private @activation(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
    %y = tg.silu %x : tensor<1x4x8xf32>
    return %y : tensor<1x4x8xf32>
  }
}

// -----

// Tests that layers are numbered across every stack of a model, in program order: the second
// stack's layers follow the first's (dist-pipeline cuts them as one sequence).
// CHECK-LABEL: tg.model @two_stacks
// CHECK: tg.param @a.0.w : tensor<8x8xf32> {init = "normal", layer = 0 : i64
// CHECK-NEXT: tg.param @a.1.w : tensor<8x8xf32> {init = "normal", layer = 1 : i64
// CHECK-NEXT: tg.param @b.0.w : tensor<8x8xf32> {init = "normal", layer = 2 : i64
// CHECK-NEXT: tg.param @b.1.w : tensor<8x8xf32> {init = "normal", layer = 3 : i64
// CHECK-NEXT: tg.param @b.2.w : tensor<8x8xf32> {init = "normal", layer = 4 : i64
tg.model @two_stacks {
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
    %h2 = tg.repeat_layers @layer(%h1) count 3 params [@"b.{i}.w"] : tensor<1x4x8xf32>
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

// Tests an alternating stack (GPT-OSS-20B's sliding-window and full-attention layers): layer i
// inlines the (i mod 2)-th function, each with its own layer's parameters.
// CHECK-LABEL: tg.model @alternating
// CHECK: func.func @forward
// CHECK: tg.param_ref @layers.0.w
// CHECK-NEXT: tg.matmul
// CHECK-NEXT: tg.silu
// CHECK: tg.param_ref @layers.1.w
// CHECK-NEXT: tg.matmul
// CHECK-NEXT: tg.scale
// CHECK: tg.param_ref @layers.2.w
// CHECK-NEXT: tg.matmul
// CHECK-NEXT: tg.silu
// CHECK-NOT: tg.param_ref @layers.
// CHECK-NOT: func.func private
tg.model @alternating {
  tg.benchmark {name = "gpt_oss_20b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.34}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "normal", std = 0.02, repeat = 3}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %h2 = tg.repeat_layers @even(%h) count 3 alternating [@odd] params [@"layers.{i}.w"] : tensor<1x4x8xf32>
    %logits = tg.matmul %h2, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @even(%x: tensor<1x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<1x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %z = tg.silu %y : tensor<1x4x8xf32>
    return %z : tensor<1x4x8xf32>
  }
  func.func private @odd(%x: tensor<1x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<1x4x8xf32> {
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %z = tg.scale %y {factor = 0.5 : f64} : tensor<1x4x8xf32>
    return %z : tensor<1x4x8xf32>
  }
}
