// RUN: mlperf-opt %s --tg-autodiff --tg-recompute=policy=none | FileCheck %s --check-prefix=NONE
// RUN: mlperf-opt %s --tg-autodiff --tg-recompute=policy=selective | FileCheck %s --check-prefix=SELECTIVE
// RUN: mlperf-opt %s --tg-autodiff --tg-recompute=policy=full | FileCheck %s --check-prefix=FULL
// RUN: mlperf-opt %s --tg-autodiff --tg-recompute="policy=auto budgets=1000000" | FileCheck %s --check-prefix=ROOMY
// RUN: mlperf-opt %s --tg-autodiff --tg-recompute="policy=auto budgets=0" | FileCheck %s --check-prefix=TIGHT
// RUN: not mlperf-opt %s --tg-autodiff --tg-recompute=policy=auto 2>&1 | FileCheck %s --check-prefix=NOBUDGET
// RUN: not mlperf-opt %s --tg-autodiff --tg-recompute=policy=most 2>&1 | FileCheck %s --check-prefix=BADPOLICY

// Two layers of norm -> gate/up -> SwiGLU -> down -> residual add. The backward of each layer
// reads the norm's input and output, gate, up and the SwiGLU output.

// none: one SwiGLU per layer, every value kept; off a pipeline nothing is placed to report.
// NONE-LABEL: func.func @forward_backward
// NONE-SAME: tg.recompute = {first_layer = 0 : i64, levels = array<i64: 0, 0>, {{.*}}policy = "none", recomputed_flops = 0.000000e+00 : f64}
// NONE-COUNT-2: tg.swiglu %
// NONE-NOT: tg.swiglu %

// selective: the SwiGLU output is recomputed from the kept gate and up just before each
// layer's backward reads it (the down projection's weight gradient); nothing else is.
// SELECTIVE-LABEL: func.func @forward_backward
// SELECTIVE-SAME: levels = array<i64: 2, 2>, {{.*}}policy = "selective", recomputed_flops = 0.000000e+00 : f64
// SELECTIVE: %[[G1:.+]] = tg.matmul %[[N1:.+]], %{{.+}} {transpose_rhs} : tensor<1x4x8xbf16>, tensor<16x8xbf16> -> tensor<1x4x16xbf16>
// SELECTIVE: %[[U1:.+]] = tg.matmul %[[N1]], %{{.+}} {transpose_rhs} : tensor<1x4x8xbf16>, tensor<16x8xbf16> -> tensor<1x4x16xbf16>
// SELECTIVE: tg.swiglu %[[G1]], %[[U1]]
// SELECTIVE: tg.cross_entropy
// SELECTIVE: %[[S1:.+]] = tg.swiglu %[[G1]], %[[U1]] : tensor<1x4x16xbf16>
// SELECTIVE-NEXT: tg.reshape %[[S1]]
// SELECTIVE-NOT: tg.rms_norm %
// SELECTIVE: tg.swiglu_grad %[[G1]], %[[U1]]

// full: each layer's forward runs again before its backward, from the kept layer input; the
// clones' matmuls are counted (2 x 2·4·8·16 per layer for gate and up).
// FULL-LABEL: func.func @forward_backward
// FULL-SAME: arena_after = 2304 : i64, arena_before = 4096 : i64, first_layer = 0 : i64, levels = array<i64: 3, 3>, {{.*}}policy = "full", recomputed_flops = 4.096000e+03 : f64
// FULL: tg.cross_entropy
// FULL: %[[N:.+]] = tg.rms_norm %[[X1:.+]], %{{.+}} {epsilon = 1.000000e-05 : f64} : tensor<1x4x8xbf16>, tensor<8xbf16>
// FULL-NEXT: %[[G:.+]] = tg.matmul %[[N]]
// FULL-NEXT: %[[U:.+]] = tg.matmul %[[N]]
// FULL-NEXT: %[[S:.+]] = tg.swiglu %[[G]], %[[U]]
// FULL-NEXT: tg.reshape %[[S]]
// FULL: tg.swiglu_grad %[[G]], %[[U]]
// FULL: tg.rms_norm_grad %[[X1]]
// FULL: tg.rms_norm %[[X0:.+]], %{{.+}} {epsilon
// FULL: tg.rms_norm_grad %[[X0]]

// auto keeps everything when it fits, and recomputes every layer fully when nothing does;
// the model records its cost before and after, in the budget's terms.
// ROOMY: tg.model @two_layers attributes {tg.recompute = {budget = 1000000 : i64, cost_after = 4096 : i64, cost_before = 4096 : i64, everything_recomputed = false}}
// ROOMY: levels = array<i64: 0, 0>, {{.*}}policy = "auto"
// TIGHT: tg.model @two_layers attributes {tg.recompute = {budget = 0 : i64, cost_after = 2304 : i64, cost_before = 4096 : i64, everything_recomputed = true}}
// TIGHT: levels = array<i64: 3, 3>, {{.*}}policy = "auto"

// NOBUDGET: error: tg-recompute: policy=auto needs budgets: one, or one per tg.model (1), got 0
// BADPOLICY: error: tg-recompute: policy must be none, selective, full or auto, got 'most'

tg.model @two_layers {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 8, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<32x8xbf16> {init = "normal", std = 0.02}
  tg.param @norm0 : tensor<8xbf16> {init = "ones", layer = 0 : i64}
  tg.param @gate0 : tensor<16x8xbf16> {init = "normal", std = 0.02, layer = 0 : i64}
  tg.param @up0 : tensor<16x8xbf16> {init = "normal", std = 0.02, layer = 0 : i64}
  tg.param @down0 : tensor<8x16xbf16> {init = "normal", std = 0.02, layer = 0 : i64}
  tg.param @norm1 : tensor<8xbf16> {init = "ones", layer = 1 : i64}
  tg.param @gate1 : tensor<16x8xbf16> {init = "normal", std = 0.02, layer = 1 : i64}
  tg.param @up1 : tensor<16x8xbf16> {init = "normal", std = 0.02, layer = 1 : i64}
  tg.param @down1 : tensor<8x16xbf16> {init = "normal", std = 0.02, layer = 1 : i64}
  tg.param @head : tensor<32x8xbf16> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<32x8xbf16>
    %x0 = tg.embedding %e, %tokens : tensor<32x8xbf16>, tensor<1x4xi32> -> tensor<1x4x8xbf16>
    %w0 = tg.param_ref @norm0 : tensor<8xbf16>
    %g0w = tg.param_ref @gate0 : tensor<16x8xbf16>
    %u0w = tg.param_ref @up0 : tensor<16x8xbf16>
    %d0w = tg.param_ref @down0 : tensor<8x16xbf16>
    %n0 = tg.rms_norm %x0, %w0 {epsilon = 1.0e-05} : tensor<1x4x8xbf16>, tensor<8xbf16>
    %g0 = tg.matmul %n0, %g0w {transpose_rhs} : tensor<1x4x8xbf16>, tensor<16x8xbf16> -> tensor<1x4x16xbf16>
    %u0 = tg.matmul %n0, %u0w {transpose_rhs} : tensor<1x4x8xbf16>, tensor<16x8xbf16> -> tensor<1x4x16xbf16>
    %s0 = tg.swiglu %g0, %u0 : tensor<1x4x16xbf16>
    %o0 = tg.matmul %s0, %d0w {transpose_rhs} : tensor<1x4x16xbf16>, tensor<8x16xbf16> -> tensor<1x4x8xbf16>
    %x1 = tg.add %x0, %o0 : tensor<1x4x8xbf16>
    %w1 = tg.param_ref @norm1 : tensor<8xbf16>
    %g1w = tg.param_ref @gate1 : tensor<16x8xbf16>
    %u1w = tg.param_ref @up1 : tensor<16x8xbf16>
    %d1w = tg.param_ref @down1 : tensor<8x16xbf16>
    %n1 = tg.rms_norm %x1, %w1 {epsilon = 1.0e-05} : tensor<1x4x8xbf16>, tensor<8xbf16>
    %g1 = tg.matmul %n1, %g1w {transpose_rhs} : tensor<1x4x8xbf16>, tensor<16x8xbf16> -> tensor<1x4x16xbf16>
    %u1 = tg.matmul %n1, %u1w {transpose_rhs} : tensor<1x4x8xbf16>, tensor<16x8xbf16> -> tensor<1x4x16xbf16>
    %s1 = tg.swiglu %g1, %u1 : tensor<1x4x16xbf16>
    %o1 = tg.matmul %s1, %d1w {transpose_rhs} : tensor<1x4x16xbf16>, tensor<8x16xbf16> -> tensor<1x4x8xbf16>
    %x2 = tg.add %x1, %o1 : tensor<1x4x8xbf16>
    %h = tg.param_ref @head : tensor<32x8xbf16>
    %logits = tg.matmul %x2, %h {transpose_rhs} : tensor<1x4x8xbf16>, tensor<32x8xbf16> -> tensor<1x4x32xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x32xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
