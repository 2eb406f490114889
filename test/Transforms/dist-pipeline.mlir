// RUN: mlperf-opt %s --split-input-file --dist-tensor-parallel="gpus-per-node=2 pp=2" --dist-pipeline | FileCheck %s

// Tests dist-pipeline on hand-written models whose parameters carry their index in the layer
// stack (`layer`, as tg-inline-layers leaves them): stages are cut on the stack, no name is
// read.
// CHECK-LABEL: tg.model @m.stage0 attributes {dist.stage = 0 : i64, dist.stages = 2 : i64}
// CHECK: tg.param @embed : tensor<16x8xf32>
// CHECK-NEXT: tg.param @w0 : tensor<8x8xf32> {init = "normal", layer = 0 : i64, std = 2.000000e-02 : f64}
// CHECK-NEXT: func.func @forward(%[[T:.+]]: tensor<1x4xi32>) -> tensor<1x4x8xf32> {
// CHECK-NEXT: %[[E:.+]] = tg.param_ref @embed : tensor<16x8xf32>
// CHECK-NEXT: %[[H0:.+]] = tg.embedding %[[E]], %[[T]] : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[W0:.+]] = tg.param_ref @w0 : tensor<8x8xf32>
// CHECK-NEXT: %[[M0:.+]] = tg.matmul %[[H0]], %[[W0]] {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[H1:.+]] = tg.add %[[H0]], %[[M0]] : tensor<1x4x8xf32>
// CHECK-NEXT: return %[[H1]] : tensor<1x4x8xf32>
// CHECK-LABEL: tg.model @m.stage1 attributes {dist.stage = 1 : i64, dist.stages = 2 : i64}
// CHECK-NOT: @embed
// CHECK: tg.param @w1 : tensor<8x8xf32> {init = "normal", layer = 1 : i64, std = 2.000000e-02 : f64}
// CHECK-NEXT: tg.param @norm : tensor<8xf32> {init = "ones"}
// CHECK-NEXT: tg.param @head : tensor<16x8xf32>
// CHECK-NEXT: func.func @forward(%[[X:.+]]: tensor<1x4x8xf32>, %[[L:.+]]: tensor<1x4xi32>) -> tensor<f32> {
// CHECK-NEXT: %[[W1:.+]] = tg.param_ref @w1 : tensor<8x8xf32>
// CHECK-NEXT: %[[M1:.+]] = tg.matmul %[[X]], %[[W1]] {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[H2:.+]] = tg.add %[[X]], %[[M1]] : tensor<1x4x8xf32>
// CHECK-NEXT: tg.param_ref @norm
// CHECK-NEXT: tg.rms_norm %[[H2]]
// CHECK-NEXT: tg.param_ref @head
// CHECK-NEXT: tg.matmul
// CHECK-NEXT: tg.cross_entropy %{{.+}}, %[[L]]
// CHECK-NEXT: return

// Two layers on two stages: stage 0 embeds and runs layer 0, stage 1 runs layer 1, the final
// norm, the head and the loss; each stage keeps only its parameters, and the residual stream
// is the one activation between them.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @w0 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 0}
  tg.param @w1 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 1}
  tg.param @norm : tensor<8xf32> {init = "ones"}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h0 = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w0 = tg.param_ref @w0 : tensor<8x8xf32>
    %m0 = tg.matmul %h0, %w0 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h1 = tg.add %h0, %m0 : tensor<1x4x8xf32>
    %w1 = tg.param_ref @w1 : tensor<8x8xf32>
    %m1 = tg.matmul %h1, %w1 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h2 = tg.add %h1, %m1 : tensor<1x4x8xf32>
    %n = tg.param_ref @norm : tensor<8xf32>
    %hn = tg.rms_norm %h2, %n {epsilon = 1.0e-05} : tensor<1x4x8xf32>, tensor<8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %hn, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// CHECK-LABEL: tg.model @three.stage0
// CHECK: tg.param @embed
// CHECK-NEXT: tg.param @w0
// CHECK-NEXT: func.func @forward
// CHECK-LABEL: tg.model @three.stage1
// CHECK: tg.param @w1
// CHECK-NEXT: tg.param @w2
// CHECK-NEXT: tg.param @head
// CHECK-NEXT: func.func @forward

// Three layers on two stages split as Megatron-LM does (1, 2): the extra layer goes to the
// last stage; parameters outside the stack follow the ops that read them.
tg.model @three {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @w0 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 0}
  tg.param @w1 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 1}
  tg.param @w2 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 2}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h0 = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w0 = tg.param_ref @w0 : tensor<8x8xf32>
    %m0 = tg.matmul %h0, %w0 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h1 = tg.add %h0, %m0 : tensor<1x4x8xf32>
    %w1 = tg.param_ref @w1 : tensor<8x8xf32>
    %m1 = tg.matmul %h1, %w1 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h2 = tg.add %h1, %m1 : tensor<1x4x8xf32>
    %w2 = tg.param_ref @w2 : tensor<8x8xf32>
    %m2 = tg.matmul %h2, %w2 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h3 = tg.add %h2, %m2 : tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %h3, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// CHECK-LABEL: tg.model @scaled_head.stage0
// CHECK-NOT: @head
// CHECK-LABEL: tg.model @scaled_head.stage1
// CHECK: tg.param @head
// CHECK: %[[W:.+]] = tg.param_ref @head : tensor<16x8xf32>
// CHECK-NEXT: %[[S:.+]] = tg.scale %[[W]] {factor = 2.000000e+00 : f64} : tensor<16x8xf32>
// CHECK-NEXT: tg.matmul %{{.+}}, %[[S]] {transpose_rhs}
// A parameter outside the stack read through an op of parameters only (a tg.scale of the
// head) goes to the stage of that op's users.
tg.model @scaled_head {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @w0 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 0}
  tg.param @w1 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 1}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h0 = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w0 = tg.param_ref @w0 : tensor<8x8xf32>
    %m0 = tg.matmul %h0, %w0 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h1 = tg.add %h0, %m0 : tensor<1x4x8xf32>
    %w1 = tg.param_ref @w1 : tensor<8x8xf32>
    %m1 = tg.matmul %h1, %w1 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h2 = tg.add %h1, %m1 : tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %hs = tg.scale %hw {factor = 2.0} : tensor<16x8xf32>
    %l = tg.matmul %h2, %hs {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
