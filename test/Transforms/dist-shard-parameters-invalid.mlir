// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --dist-tensor-parallel="gpus-per-node=2 dp=2 zero=3" --tg-autodiff --tg-optimizer --dist-partition --dist-shard-parameters
// RUN: mlperf-opt %s --split-input-file --dist-tensor-parallel="gpus-per-node=2 dp=2 zero=1" --tg-autodiff --tg-optimizer --dist-shard-parameters | FileCheck %s --check-prefix=ZERO1

// Tests the refusals of dist-shard-parameters. Without zero=3 the pass changes nothing:
// ZERO1: tg.param @w : tensor<4x3xf32> {init = "normal", std = 2.000000e-02 : f64}
// ZERO1-NOT: dist.all_gather_start

// A parameter whose element count dp does not divide cannot be sharded evenly (a frozen
// one: dist-partition refuses a trained one first, as its ZeRO-1 state cannot be sharded).
tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @w : tensor<4x3xf32> {init = "normal", std = 0.02}
  // expected-error @below {{dist-shard-parameters: zero=3 shards every parameter over dp=2, but odd has 3 elements on each rank}}
  tg.param @odd : tensor<3xf32> {init = "ones", frozen}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %w = tg.param_ref @w : tensor<4x3xf32>
    %h = tg.embedding %w, %tokens : tensor<4x3xf32>, tensor<1x4xi32> -> tensor<1x4x3xf32>
    %o = tg.param_ref @odd : tensor<3xf32>
    %hn = tg.rms_norm %h, %o {epsilon = 1.0e-05} : tensor<1x4x3xf32>, tensor<3xf32>
    %l = tg.matmul %hn, %w {transpose_rhs} : tensor<1x4x3xf32>, tensor<4x3xf32> -> tensor<1x4x4xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x4xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
