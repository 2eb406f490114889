// RUN: mlperf-opt %s --tg-optimizer | FileCheck %s

// Tests @optimizer_step: the global norm of every gradient, the clip factor, the LR from the
// schedule, the step's bias corrections (an f64 program), one AdamW update per parameter (an
// f32 program of FusedAdam's arithmetic) with weight decay only on matrices ("matrices"), and the
// bf16 parameter rounded from its f32 master; every argument and result states its role,
// and every state argument how it starts (the master as the parameter, moments at zero).
// CHECK-LABEL: func.func @optimizer_step
// CHECK-SAME: (%[[STEP:[^:]+]]: tensor<i64> {tg.role = "step"}, %[[GE:[^:]+]]: tensor<16x8xbf16> {tg.param = @embed, tg.role = "grad"}, %[[GN:[^:]+]]: tensor<8xbf16> {tg.param = @norm, tg.role = "grad"},
// CHECK-SAME: %[[ME:[^:]+]]: tensor<16x8xf32> {tg.init = "param", tg.param = @embed, tg.role = "master"}, %[[MN:[^:]+]]: tensor<8xf32> {tg.init = "param", tg.param = @norm, tg.role = "master"}, %[[M1E:[^:]+]]: tensor<16x8xf32> {tg.init = "zeros", tg.param = @embed, tg.role = "exp_avg"}, %[[M1N:[^:]+]]: tensor<8xf32> {tg.init = "zeros", tg.param = @norm, tg.role = "exp_avg"}, %[[VE:[^:]+]]: tensor<16x8xf32> {tg.init = "zeros", tg.param = @embed, tg.role = "exp_avg_sq"}, %[[VN:[^:]+]]: tensor<8xf32> {tg.init = "zeros", tg.param = @norm, tg.role = "exp_avg_sq"})
// CHECK-SAME: -> (tensor<16x8xbf16> {tg.param = @embed, tg.role = "param"}, tensor<8xbf16> {tg.param = @norm, tg.role = "param"}, tensor<16x8xf32> {tg.param = @embed, tg.role = "master"},
// CHECK-SAME: tensor<f32> {tg.role = "lr"}, tensor<f32> {tg.role = "grad_norm"})
// CHECK-SAME: attributes {tg.parameters = [@embed, @norm]}
// CHECK: %[[NORM:.+]] = tg.global_norm %[[GE]], %[[GN]] : tensor<16x8xbf16>, tensor<8xbf16>
// CHECK: %[[CLIP:.+]] = tg.clip_coefficient %[[NORM]] {max_norm = 1.000000e+00 : f64}
// CHECK: %[[LR:.+]] = tg.lr_value %[[STEP]] {base_lr = 1.000000e-03 : f64, end_lr = 1.000000e-04 : f64, kind = "cosine_with_linear_warmup", max_steps = 10 : i64, warmup_steps = 2 : i64}
// CHECK: %[[C:.+]]:2 = tg.elementwise %[[STEP]] {arithmetic = "f64", program = "t = a0 1 +; r0 = 1 0.90000000000000002 t pow -; r1 = 1 0.94999999999999996 t pow -"} : (tensor<i64>) -> (tensor<f32>, tensor<f32>)
// CHECK: %[[E:.+]]:3 = tg.elementwise %[[ME]], %[[M1E]], %[[VE]], %[[GE]], %[[LR]], %[[CLIP]], %[[C]]#0, %[[C]]#1 {program = "g = a3 a5 *; m = 0.89999997615814209 a1 * 0.10000002384185791 g * +; v = 0.94999998807907104 a2 * 0.050000011920928955 g * g * +; r0 = a0 a4 m a6 / v a7 / sqrt 9.9999997473787516e-06 + / 0.10000000149011612 a0 * + * -; r1 = m; r2 = v"}
// CHECK: %[[PE:.+]] = tg.convert %[[E]]#0 : tensor<16x8xf32> -> tensor<16x8xbf16>
// CHECK: %[[N:.+]]:3 = tg.elementwise %[[MN]], %[[M1N]], %[[VN]], %[[GN]], %[[LR]], %[[CLIP]], %[[C]]#0, %[[C]]#1 {program = "{{.*}} / 0 a0 * + * -; r1 = m; r2 = v"}
// CHECK-NOT: tg.adamw
// CHECK: return %[[PE]], %{{.+}}, %[[E]]#0, %[[N]]#0, %[[E]]#1, %[[N]]#1, %[[E]]#2, %[[N]]#2, %[[LR]], %[[NORM]]
tg.model @opt {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "matrices", clip_grad_norm = 1.0}
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
