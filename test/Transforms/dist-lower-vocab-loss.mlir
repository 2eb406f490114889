// RUN: mlperf-opt %s --dist-tensor-parallel="gpus-per-node=2 tp=2" --tg-autodiff --tg-optimizer --dist-partition --dist-lower-vocab-loss | FileCheck %s
// RUN: mlperf-opt %s --tg-fuse-cross-entropy --dist-tensor-parallel="gpus-per-node=2 tp=2" --tg-autodiff --tg-optimizer --dist-partition --dist-lower-vocab-loss | FileCheck %s --check-prefix=FUSED
// RUN: mlperf-opt %s --tg-autodiff --dist-lower-vocab-loss | FileCheck %s --check-prefix=WHOLE

// Tests dist-lower-vocab-loss on a vocab-parallel head (the embedding tied as the output
// layer, split over tp): the loss becomes local pieces around a maximum and an f64 sum over
// tp, and its gradient reuses the loss's combined statistics.

// CHECK-LABEL: func.func @forward_backward
// CHECK-NOT: tg.cross_entropy
// CHECK: %[[L:.+]] = tg.matmul %{{.+}}, %{{.+}} {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[M:.+]] = tg.vocab_max %[[L]] : tensor<1x4x8xf32> -> tensor<1x4xf32>
// CHECK-NEXT: %[[FM:.+]] = dist.all_reduce_start %[[M]] over @mesh ["tp"] {reduction = "max"} : tensor<1x4xf32> -> !dist.future<tensor<1x4xf32>>
// CHECK-NEXT: %[[MAX:.+]] = dist.done %[[FM]]
// CHECK-NEXT: %[[S:.+]] = tg.vocab_stats %[[L]], %[[LABELS:[^,]+]], %[[MAX]] {vocab_shard_axis = "tp"} : tensor<1x4x8xf32>, tensor<1x4xi32>, tensor<1x4xf32> -> tensor<2x1x4xf64>
// CHECK-NEXT: %[[FS:.+]] = dist.all_reduce_start %[[S]] over @mesh ["tp"] : tensor<2x1x4xf64> -> !dist.future<tensor<2x1x4xf64>>
// CHECK-NEXT: %[[STATS:.+]] = dist.done %[[FS]]
// CHECK-NEXT: %[[LOSS:.+]] = tg.vocab_loss %[[MAX]], %[[STATS]], %[[LABELS]] : tensor<1x4xf32>, tensor<2x1x4xf64>, tensor<1x4xi32> -> tensor<f32>
// CHECK-NOT: dist.all_reduce_start {{.*}}reduction
// CHECK: tg.vocab_cross_entropy_grad %[[L]], %[[LABELS]], %{{.+}}, %[[MAX]], %[[STATS]] {vocab_shard_axis = "tp"}
// CHECK-NOT: tg.cross_entropy_grad

// FUSED-LABEL: func.func @forward_backward
// FUSED: %[[M:.+]] = tg.linear_vocab_max %[[H:[^,]+]], %[[W:[^ ]+]] {logits_type = "f32"} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4xf32>
// FUSED-NEXT: dist.all_reduce_start %[[M]] over @mesh ["tp"] {reduction = "max"}
// FUSED-NEXT: %[[MAX:.+]] = dist.done
// FUSED-NEXT: %[[S:.+]] = tg.linear_vocab_stats %[[H]], %[[W]], %{{[^,]+}}, %[[MAX]] {logits_type = "f32", vocab_shard_axis = "tp"}
// FUSED-NEXT: dist.all_reduce_start %[[S]] over @mesh ["tp"] : tensor<2x1x4xf64>
// FUSED-NEXT: %[[STATS:.+]] = dist.done
// FUSED-NEXT: tg.vocab_loss %[[MAX]], %[[STATS]]
// FUSED: tg.linear_vocab_cross_entropy_grad %[[H]], %[[W]], %{{[^,]+}}, %{{[^,]+}}, %[[MAX]], %[[STATS]] {logits_type = "f32", vocab_shard_axis = "tp"}

// Without a split vocabulary there is nothing to lower.
// WHOLE-LABEL: func.func @forward_backward
// WHOLE: tg.cross_entropy %
// WHOLE: tg.cross_entropy_grad
// WHOLE-NOT: tg.vocab_

tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @norm : tensor<8xf32> {init = "ones"}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %n = tg.param_ref @norm : tensor<8xf32>
    %hn = tg.rms_norm %h, %n {epsilon = 1.0e-05} : tensor<1x4x8xf32>, tensor<8xf32>
    %l = tg.matmul %hn, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
