// RUN: mlperf-opt %s --tg-optimizer | FileCheck %s

// Tests @optimizer_step for Adagrad: per parameter the master weight and the sum of squares
// (starting at the initial accumulator value), one element program per update as torch's
// Adagrad computes it (weight decay only on matrices here, the gradient clipped), the bf16
// parameter rounded from its f32 master; no AdamW state.
// CHECK-LABEL: func.func @optimizer_step
// CHECK-SAME: (%[[STEP:[^:]+]]: tensor<i64> {tg.role = "step"}, %[[GE:[^:]+]]: tensor<16x8xbf16> {tg.param = @embed, tg.role = "grad"}, %[[GN:[^:]+]]: tensor<8xbf16> {tg.param = @norm, tg.role = "grad"},
// CHECK-SAME: %[[ME:[^:]+]]: tensor<16x8xf32> {tg.init = "param", tg.param = @embed, tg.role = "master"}, %[[MN:[^:]+]]: tensor<8xf32> {tg.init = "param", tg.param = @norm, tg.role = "master"}, %[[SE:[^:]+]]: tensor<16x8xf32> {tg.init = 1.000000e-01 : f64, tg.param = @embed, tg.role = "sum"}, %[[SN:[^:]+]]: tensor<8xf32> {tg.init = 1.000000e-01 : f64, tg.param = @norm, tg.role = "sum"})
// CHECK-SAME: -> (tensor<16x8xbf16> {tg.param = @embed, tg.role = "param"}, tensor<8xbf16> {tg.param = @norm, tg.role = "param"}, tensor<16x8xf32> {tg.param = @embed, tg.role = "master"}, tensor<8xf32> {tg.param = @norm, tg.role = "master"}, tensor<16x8xf32> {tg.param = @embed, tg.role = "sum"}, tensor<8xf32> {tg.param = @norm, tg.role = "sum"}, tensor<f32> {tg.role = "lr"}, tensor<f32> {tg.role = "grad_norm"})
// CHECK: %[[NORM:.+]] = tg.global_norm %[[GE]], %[[GN]]
// CHECK: %[[CLIP:.+]] = tg.clip_coefficient %[[NORM]] {max_norm = 1.000000e+00 : f64}
// CHECK: %[[LR:.+]] = tg.lr_value %[[STEP]]
// CHECK: %[[E:.+]]:2 = tg.elementwise %[[ME]], %[[SE]], %[[GE]], %[[LR]], %[[CLIP]] {program = "g = a2 a4 * a0 0.01 * +; s = a1 g g * +; r0 = s; r1 = a0 a3 neg g * s sqrt 1e-10 + / +"} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xbf16>, tensor<f32>, tensor<f32>) -> (tensor<16x8xf32>, tensor<16x8xf32>)
// CHECK: %[[PE:.+]] = tg.convert %[[E]]#1 : tensor<16x8xf32> -> tensor<16x8xbf16>
// CHECK: %[[N:.+]]:2 = tg.elementwise %[[MN]], %[[SN]], %[[GN]], %[[LR]], %[[CLIP]] {program = "g = a2 a4 *; s = a1 g g * +; r0 = s; r1 = a0 a3 neg g * s sqrt 1e-10 + / +"}
// CHECK-NOT: tg.adamw
// CHECK: return %[[PE]], %{{.+}}, %[[E]]#1, %[[N]]#1, %[[E]]#0, %[[N]]#0, %[[LR]], %[[NORM]]
tg.model @opt {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adagrad", epsilon = 1.0e-10, initial_accumulator_value = 0.1, weight_decay = 0.01, weight_decay_params = "matrices", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xbf16> {init = "normal", std = 0.02}
  tg.param @norm : tensor<8xbf16> {init = "ones"}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xbf16>
    %w = tg.param_ref @norm : tensor<8xbf16>
    %h = tg.embedding %e, %tokens : tensor<16x8xbf16>, tensor<1x4xi32> -> tensor<1x4x8xbf16>
    %n = tg.rms_norm %h, %w {epsilon = 1.0e-05 : f64} : tensor<1x4x8xbf16>, tensor<8xbf16>
    %logits = tg.matmul %n, %e {transpose_rhs} : tensor<1x4x8xbf16>, tensor<16x8xbf16> -> tensor<1x4x16xbf16>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xbf16>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
