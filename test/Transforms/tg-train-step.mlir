// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --tg-autodiff --tg-optimizer --tg-train-step=accumulation-steps=2 | FileCheck %s

// Tests the single-rank step: two micro-batches sliced from [A, rows, seq] inputs, one
// @forward_backward call each that adds its gradient to the sum so far (zero at first; the
// sums are the micro-batch gradients added in their type in completion order), the
// optimizer called with the sums and the state arguments, and the loss vector returned;
// every argument and result has its role.
// CHECK-LABEL: tg.model @single
// CHECK: func.func @forward_backward(%{{[^:]+}}: tensor<1x4xi32>, %{{[^:]+}}: tensor<1x4xi32>, %[[SOFAR:[^:]+]]: tensor<16x8xbf16> {tg.param = @embed, tg.role = "grad"})
// CHECK: %[[G:.+]] = tg.add %{{.+}}, %{{.+}} : tensor<16x8xbf16>
// CHECK-NEXT: %[[NEWSUM:.+]] = tg.add %[[SOFAR]], %[[G]] : tensor<16x8xbf16>
// CHECK: return %{{.+}}, %[[NEWSUM]]
// CHECK: func.func @train_step(%[[TOK:[^:]+]]: tensor<2x1x4xi32> {tg.role = "tokens"}, %[[LAB:[^:]+]]: tensor<2x1x4xi32> {tg.role = "labels"}, %[[STEP:[^:]+]]: tensor<i64> {tg.role = "step"}, %[[MASTER:[^:]+]]: tensor<16x8xf32> {tg.param = @embed, tg.role = "master"}, %[[M:[^:]+]]: tensor<16x8xf32> {tg.param = @embed, tg.role = "exp_avg"}, %[[V:[^:]+]]: tensor<16x8xf32> {tg.param = @embed, tg.role = "exp_avg_sq"})
// CHECK-SAME: -> (tensor<16x8xbf16> {tg.param = @embed, tg.role = "param"}, {{.*}}, tensor<f32> {tg.role = "lr"}, tensor<f32> {tg.role = "grad_norm"}, tensor<2xf32> {tg.role = "losses"})
// CHECK: %[[TS:.+]]:2 = tg.split %[[TOK]] {dim = 0 : i64, sizes = array<i64: 1, 1>} : tensor<2x1x4xi32> -> tensor<1x1x4xi32>, tensor<1x1x4xi32>
// CHECK: %[[T0:.+]] = tg.reshape %[[TS]]#0 : tensor<1x1x4xi32> -> tensor<1x4xi32>
// CHECK: %[[LS:.+]]:2 = tg.split %[[LAB]]
// CHECK: %[[L0:.+]] = tg.reshape %[[LS]]#0
// CHECK: %[[L1:.+]] = tg.reshape %[[LS]]#1
// CHECK: %[[ZERO:.+]] = tg.fill {value = 0.000000e+00 : f64} : tensor<16x8xbf16>
// CHECK: %[[R0:.+]]:2 = call @forward_backward(%[[T0]], %[[L0]], %[[ZERO]]) {tg.micro_batch = 0 : i64}
// CHECK: %[[R1:.+]]:2 = call @forward_backward(%{{.+}}, %[[L1]], %[[R0]]#1) {tg.micro_batch = 1 : i64}
// CHECK: %[[NEW:.+]]:6 = call @optimizer_step(%[[STEP]], %[[R1]]#1, %[[MASTER]], %[[M]], %[[V]])
// CHECK: %[[A:.+]] = tg.reshape %[[R0]]#0 : tensor<f32> -> tensor<1xf32>
// CHECK: %[[B:.+]] = tg.reshape %[[R1]]#0 : tensor<f32> -> tensor<1xf32>
// CHECK: %[[LOSSES:.+]] = tg.concat %[[A]], %[[B]] {dim = 0 : i64}
// CHECK: return %[[NEW]]#0, %[[NEW]]#1, %[[NEW]]#2, %[[NEW]]#3, %[[NEW]]#4, %[[NEW]]#5, %[[LOSSES]]
// Evaluation: the last stage adds each micro-batch's loss to the running mean, which
// @eval_finish divides (one rank: nothing to reduce) and starts again.
// CHECK: func.func @eval_step(%[[ET:[^:]+]]: tensor<1x4xi32> {tg.role = "tokens"}, %[[EL:[^:]+]]: tensor<1x4xi32> {tg.role = "labels"}, %[[ES:[^:]+]]: tensor<2xf64> {tg.role = "eval_sum"}) -> (tensor<2xf64> {tg.role = "eval_sum"})
// CHECK-NEXT: %[[EVAL:.+]] = call @forward(%[[ET]], %[[EL]])
// CHECK-NEXT: %[[ADDED:.+]] = tg.mean_accumulate %[[ES]], %[[EVAL]] : tensor<2xf64>, tensor<f32> -> tensor<2xf64>
// CHECK-NEXT: return %[[ADDED]]
// CHECK: func.func @eval_finish(%[[ACC:[^:]+]]: tensor<2xf64> {tg.role = "eval_sum"}) -> (tensor<f64> {tg.role = "loss"}, tensor<2xf64> {tg.role = "eval_sum"})
// CHECK-NEXT: %[[MEAN:.+]], %[[RESTART:.+]] = tg.mean_finish %[[ACC]]
// CHECK-NEXT: return %[[MEAN]], %[[RESTART]]
// The initial state: the parameter drawn from the seed on its stream (FNV-1a of "embed"),
// then the optimizer state from it as @optimizer_step's tg.init says.
// CHECK: func.func @init_params(%[[SEED:[^:]+]]: tensor<i64> {tg.role = "seed"}) -> (tensor<16x8xbf16> {tg.param = @embed, tg.role = "param"})
// CHECK-NEXT: %[[DRAWN:.+]] = tg.random_normal %[[SEED]] {std = 2.000000e-02 : f64, stream = 672900686 : i64} : tensor<16x8xbf16>
// CHECK-NEXT: return %[[DRAWN]]
// CHECK: func.func @init_optimizer(%[[P:[^:]+]]: tensor<16x8xbf16> {tg.param = @embed, tg.role = "param"}) -> (tensor<16x8xf32> {tg.param = @embed, tg.role = "master"}, tensor<16x8xf32> {tg.param = @embed, tg.role = "exp_avg"}, tensor<16x8xf32> {tg.param = @embed, tg.role = "exp_avg_sq"})
// CHECK-NEXT: %[[MASTER0:.+]] = tg.convert %[[P]] : tensor<16x8xbf16> -> tensor<16x8xf32>
// CHECK-NEXT: %[[Z1:.+]] = tg.fill {value = 0.000000e+00 : f64} : tensor<16x8xf32>
// CHECK-NEXT: %[[Z2:.+]] = tg.fill {value = 0.000000e+00 : f64} : tensor<16x8xf32>
// CHECK-NEXT: return %[[MASTER0]], %[[Z1]], %[[Z2]]
tg.model @single {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xbf16> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xbf16>
    %h = tg.embedding %e, %tokens : tensor<16x8xbf16>, tensor<1x4xi32> -> tensor<1x4x8xbf16>
    %logits = tg.matmul %h, %e {transpose_rhs} : tensor<1x4x8xbf16>, tensor<16x8xbf16> -> tensor<1x4x16xbf16>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xbf16>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Tests the first of two pipeline stages: 1F1B for two micro-batches (one warm-up forward,
// then F1 B0, then B1); each forward sends its activation on (tag 16 + 2·1), each backward
// receives the activation's gradient (tag 17) and recomputes the forward from the tokens;
// the stage takes no labels and receives the loss vector from the last stage (tag 1).
// CHECK-LABEL: tg.model @stage0
// CHECK: func.func @train_step(%[[TOK:[^:]+]]: tensor<2x1x4xi32> {tg.role = "tokens"}, %{{[^:]+}}: tensor<i64> {tg.role = "step"},
// CHECK: %[[T0:.+]] = tg.reshape
// CHECK: %[[T1:.+]] = tg.reshape
// CHECK: %[[F0:.+]] = call @forward(%[[T0]]) {tg.micro_batch = 0 : i64}
// CHECK-NEXT: %[[S0:.+]] = dist.send_start %[[F0]] to @mesh "pp" shift 1 {tag = 18 : i64, tg.micro_batch = 0 : i64}
// CHECK-NEXT: dist.done %[[S0]]
// CHECK-NEXT: %[[F1:.+]] = call @forward(%[[T1]]) {tg.micro_batch = 1 : i64}
// CHECK-NEXT: dist.send_start %[[F1]] to @mesh "pp" shift 1 {tag = 18 : i64, tg.micro_batch = 1 : i64}
// CHECK-NEXT: dist.done
// CHECK-NEXT: %[[G0:.+]] = dist.recv_start from @mesh "pp" shift 1 {tag = 17 : i64, tg.micro_batch = 0 : i64} : !dist.future<tensor<1x4x8xf32>>
// CHECK-NEXT: %[[C0:.+]] = dist.done %[[G0]]
// CHECK-NEXT: %[[B0:.+]]:2 = call @forward_backward(%[[T0]], %[[C0]], %{{.+}}) {tg.micro_batch = 0 : i64}
// CHECK-NEXT: dist.recv_start from @mesh "pp" shift 1 {tag = 17 : i64, tg.micro_batch = 1 : i64}
// CHECK-NEXT: %[[C1:.+]] = dist.done
// CHECK-NEXT: %[[B1:.+]]:2 = call @forward_backward(%[[T1]], %[[C1]], %[[B0]]#1) {tg.micro_batch = 1 : i64}
// CHECK-NEXT: %[[NEW:.+]]:6 = call @optimizer_step(%{{.+}}, %[[B1]]#1,
// CHECK-NEXT: %[[LF:.+]] = dist.recv_start from @mesh "pp" shift 1 {tag = 1 : i64} : !dist.future<tensor<2xf32>>
// CHECK-NEXT: %[[LOSSES:.+]] = dist.done %[[LF]]
// CHECK-NEXT: return %[[NEW]]#0, {{.*}}, %[[LOSSES]] :
// CHECK: func.func @eval_step(%[[ET:[^:]+]]: tensor<1x4xi32> {tg.role = "tokens"}) {
// CHECK-NEXT: %[[EF:.+]] = call @forward(%[[ET]])
// CHECK-NEXT: dist.send_start %[[EF]] to @mesh "pp" shift 1 {tag = 18 : i64}
// Every stage takes part in the mean: the running means summed over pp (the first stage's
// is zero), then divided.
// CHECK: func.func @eval_finish(%[[RUN0:[^:]+]]: tensor<2xf64> {tg.role = "eval_sum"}) -> (tensor<f64> {tg.role = "loss"}, tensor<2xf64> {tg.role = "eval_sum"})
// CHECK-NEXT: %[[SUMF:.+]] = dist.all_reduce_start %[[RUN0]] over @mesh ["pp"] : tensor<2xf64>
// CHECK-NEXT: %[[SUM:.+]] = dist.done %[[SUMF]]
// CHECK-NEXT: tg.mean_finish %[[SUM]]
tg.model @stage0 attributes {dist.stage = 0 : i64, dist.stages = 2 : i64} {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  dist.mesh @mesh {axes = ["dp", "tp", "pp"], shape = array<i64: 1, 1, 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>) -> tensor<1x4x8xf32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    return %h : tensor<1x4x8xf32>
  }
}
