// RUN: mlperf-opt %s --tg-set-precision=precision=fp32 | FileCheck %s --check-prefix=FP32
// RUN: mlperf-opt %s --tg-set-precision=precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: not mlperf-opt %s --tg-set-precision=precision=fp16 2>&1 | FileCheck %s --check-prefix=BAD

// Tests tg-set-precision: fp32 turns every bf16 type (parameters, values, function types) into
// f32 and leaves the conversions that became f32 -> f32 for tg-simplify; bf16 keeps the
// declaration; any other precision is refused.
// FP32-LABEL: tg.model @m
// FP32: tg.param @embed : tensor<16x8xf32> {init = "normal", std = 2.000000e-02 : f64}
// FP32-NEXT: tg.param @norm : tensor<8xf32> {init = "ones"}
// FP32-NEXT: func.func @forward(%[[T:.+]]: tensor<1x4xi32>, %{{.+}}: tensor<1x4xi32>) -> tensor<f32> {
// FP32-NEXT: %[[E:.+]] = tg.param_ref @embed : tensor<16x8xf32>
// FP32-NEXT: %[[H:.+]] = tg.embedding %[[E]], %[[T]] : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
// FP32-NEXT: %[[HF:.+]] = tg.convert %[[H]] : tensor<1x4x8xf32> -> tensor<1x4x8xf32>
// FP32-NEXT: tg.param_ref @norm : tensor<8xf32>
// FP32-NEXT: %[[HN:.+]] = tg.rms_norm %[[HF]], %{{.+}} {epsilon = 1.000000e-05 : f64} : tensor<1x4x8xf32>, tensor<8xf32>
// FP32-NEXT: %[[HB:.+]] = tg.convert %[[HN]] : tensor<1x4x8xf32> -> tensor<1x4x8xf32>
// FP32-NEXT: %[[L:.+]] = tg.matmul %[[HB]], %[[E]] {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
// FP32-NEXT: tg.cross_entropy %[[L]], %{{.+}} : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
// FP32-NOT: bf16
// BF16: tg.param @embed : tensor<16x8xbf16>
// BF16: tg.matmul %{{.+}}, %{{.+}} {transpose_rhs} : tensor<1x4x8xbf16>, tensor<16x8xbf16> -> tensor<1x4x16xbf16>
// BAD: error: tg-set-precision: precision must be fp32 or bf16, got 'fp16'

tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xbf16> {init = "normal", std = 0.02}
  tg.param @norm : tensor<8xf32> {init = "ones"}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xbf16>
    %h = tg.embedding %e, %tokens : tensor<16x8xbf16>, tensor<1x4xi32> -> tensor<1x4x8xbf16>
    %hf = tg.convert %h : tensor<1x4x8xbf16> -> tensor<1x4x8xf32>
    %n = tg.param_ref @norm : tensor<8xf32>
    %hn = tg.rms_norm %hf, %n {epsilon = 1.0e-05} : tensor<1x4x8xf32>, tensor<8xf32>
    %hb = tg.convert %hn : tensor<1x4x8xf32> -> tensor<1x4x8xbf16>
    %l = tg.matmul %hb, %e {transpose_rhs} : tensor<1x4x8xbf16>, tensor<16x8xbf16> -> tensor<1x4x16xbf16>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xbf16>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
