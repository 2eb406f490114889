// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --dist-tensor-parallel="gpus-per-node=2 pp=2" --dist-pipeline
// RUN: not mlperf-opt %s --split-input-file --dist-pipeline 2>&1 | FileCheck %s --check-prefix=MESH

// Tests every refusal of dist-pipeline. Without the mesh dist-tensor-parallel places, every
// model is refused:
// MESH: error: dist-pipeline needs the model's @mesh: run dist-tensor-parallel first

// Stages are cut on the declared layer stack: without layer indices there is none.
// expected-error @below {{dist-pipeline cuts stages on the layer stack, but no parameter has a layer index: declare the layers with tg.repeat_layers and run tg-inline-layers first}}
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @w0 : tensor<8x8xf32> {init = "normal", std = 0.02}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h0 = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w0 = tg.param_ref @w0 : tensor<8x8xf32>
    %m0 = tg.matmul %h0, %w0 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h1 = tg.add %h0, %m0 : tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %h1, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Every stage needs at least one layer.
// expected-error @below {{dist-pipeline: 2 (virtual) stages for 1 layers}}
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @w0 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 0}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h0 = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w0 = tg.param_ref @w0 : tensor<8x8xf32>
    %m0 = tg.matmul %h0, %w0 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h1 = tg.add %h0, %m0 : tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %h1, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A tied weight (the embedding reused as the head) would live on two stages.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @w0 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 0}
  tg.param @w1 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 1}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h0 = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w0 = tg.param_ref @w0 : tensor<8x8xf32>
    %m0 = tg.matmul %h0, %w0 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h1 = tg.add %h0, %m0 : tensor<1x4x8xf32>
    %w1 = tg.param_ref @w1 : tensor<8x8xf32>
    %m1 = tg.matmul %h1, %w1 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h2 = tg.add %h1, %m1 : tensor<1x4x8xf32>
    %hw = tg.param_ref @embed : tensor<16x8xf32>
    // expected-error @below {{dist-pipeline: stage 1 reads parameter @embed of stage 0 (tied weights cannot be split over stages)}}
    %l = tg.matmul %h2, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// One activation crosses each boundary: a skip connection over it is refused.
tg.model @m {
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
    // expected-error @below {{dist-pipeline: stage 1 reads a value of stage 0 other than the activation passed between them}}
    %h2 = tg.add %h0, %m1 : tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %h2, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A stage whose result the next stage does not read has nothing to pass on.
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @w0 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 0}
  tg.param @w1 : tensor<8x8xf32> {init = "normal", std = 0.02, layer = 1}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02}
  // expected-error @below {{dist-pipeline: nothing flows from stage 0 to stage 1}}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h0 = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w0 = tg.param_ref @w0 : tensor<8x8xf32>
    %m0 = tg.matmul %h0, %w0 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h1 = tg.add %h0, %m0 : tensor<1x4x8xf32>
    %c = tg.fill {value = 1.0 : f64} : tensor<1x4x8xf32>
    %w1 = tg.param_ref @w1 : tensor<8x8xf32>
    %m1 = tg.matmul %c, %w1 {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %h2 = tg.add %c, %m1 : tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %l = tg.matmul %h2, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

