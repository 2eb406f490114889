// RUN: mlperf-opt %s --split-input-file --verify-diagnostics --dist-tensor-parallel="gpus-per-node=2 dp=2 zero=3" --tg-autodiff --tg-optimizer --dist-partition --cse --dist-shard-parameters --tg-train-step=accumulation-steps=1 | FileCheck %s

// Tests ZeRO-3 on a hand-written model (an embedding tied as the head, and a norm weight):
// every parameter becomes this rank's 1-D half, recording the type it is a shard of; each
// function gathers it right before its first read in the forward half and again before its
// first read in the backward half (not one gather kept alive across both); the optimizer
// returns the updated shards themselves; the initial draw is the whole parameter's, sharded.
// CHECK: tg.param @embed : tensor<64xf32> {dist.unsharded_type = tensor<16x8xf32>, dist.zero_shard = "dp"
// CHECK: tg.param @norm : tensor<4xf32> {dist.unsharded_type = tensor<8xf32>, dist.zero_shard = "dp"
// CHECK-LABEL: func.func @forward_backward(
// CHECK-NEXT: %[[E:.+]] = tg.param_ref @embed : tensor<64xf32>
// CHECK-NEXT: %[[EF:.+]] = dist.all_gather_start %[[E]] over @mesh ["dp"] : tensor<64xf32> -> !dist.future<tensor<128xf32>>
// CHECK-NEXT: %[[EG:.+]] = dist.done %[[EF]] : !dist.future<tensor<128xf32>> -> tensor<128xf32>
// CHECK-NEXT: %[[EW:.+]] = tg.reshape %[[EG]] : tensor<128xf32> -> tensor<16x8xf32>
// CHECK-NEXT: %[[H:.+]] = tg.embedding %[[EW]]
// CHECK-NEXT: %[[N:.+]] = tg.param_ref @norm : tensor<4xf32>
// CHECK-NEXT: dist.all_gather_start %[[N]] over @mesh ["dp"] : tensor<4xf32> -> !dist.future<tensor<8xf32>>
// CHECK: tg.matmul %{{.+}}, %[[EW]] {transpose_rhs}
// CHECK: %[[DY:.+]] = tg.cross_entropy_grad
// CHECK-NEXT: %[[EF2:.+]] = dist.all_gather_start %[[E]] over @mesh ["dp"]
// CHECK-NEXT: %[[EG2:.+]] = dist.done %[[EF2]]
// CHECK-NEXT: %[[EW2:.+]] = tg.reshape %[[EG2]] : tensor<128xf32> -> tensor<16x8xf32>
// CHECK-NEXT: tg.matmul %[[DY]], %[[EW2]] :
// CHECK: dist.all_gather_start %[[N]] over @mesh ["dp"]
// CHECK: tg.rms_norm_grad
// CHECK-NOT: %[[EW]]
// CHECK: return
// CHECK-LABEL: func.func @optimizer_step(
// CHECK-SAME: -> (tensor<64xf32> {tg.param = @embed, tg.role = "param"}, tensor<4xf32> {tg.param = @norm, tg.role = "param"}
// CHECK-NOT: dist.all_gather_start
// CHECK: %[[NEW:[^:]+]]:3 = tg.elementwise
// CHECK-NOT: dist.all_gather_start
// CHECK: return %[[NEW]]#0,
// CHECK-LABEL: func.func @init_params(
// CHECK-NEXT: %[[DRAW:.+]] = tg.random_normal %{{.+}} {std = 2.000000e-02 : f64, stream = 672900686 : i64} : tensor<16x8xf32>
// CHECK-NEXT: %[[FLAT:.+]] = tg.reshape %[[DRAW]] : tensor<16x8xf32> -> tensor<128xf32>
// CHECK-NEXT: dist.local_shard %[[FLAT]] over @mesh "dp" : tensor<128xf32> -> tensor<64xf32>
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

// -----

// Tests FSDP's unit: the parameters of one layer (names sharing `model.layers.0.`) are
// gathered by one collective before the first read of any of them, their shards
// concatenated (4 + 32 elements) and the gathered [dp, 36] split back; a parameter of no
// layer keeps its own gather.
// CHECK-LABEL: func.func @forward(
// CHECK: dist.all_gather_start %{{.+}} over @mesh ["dp"] : tensor<64xf32> -> !dist.future<tensor<128xf32>>
// CHECK: %[[CAT:.+]] = tg.concat %{{.+}}, %{{.+}} {dim = 0 : i64} : tensor<4xf32>, tensor<32xf32> -> tensor<36xf32>
// CHECK-NEXT: %[[F:.+]] = dist.all_gather_start %[[CAT]] over @mesh ["dp"] : tensor<36xf32> -> !dist.future<tensor<72xf32>>
// CHECK-NEXT: %[[G:.+]] = dist.done %[[F]]
// CHECK-NEXT: %[[ROWS:.+]] = tg.reshape %[[G]] : tensor<72xf32> -> tensor<2x36xf32>
// CHECK-NEXT: %[[P:.+]]:2 = tg.split %[[ROWS]] {dim = 1 : i64, sizes = array<i64: 4, 32>}
// CHECK-NEXT: %[[NORM:.+]] = tg.reshape %[[P]]#0 : tensor<2x4xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[W:.+]] = tg.reshape %[[P]]#1 : tensor<2x32xf32> -> tensor<64xf32>
// CHECK-NOT: dist.all_gather_start
// CHECK: tg.rms_norm %{{.+}}, %[[NORM]]
// CHECK: return
tg.model @layered {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @"model.layers.0.norm" : tensor<8xf32> {init = "ones"}
  tg.param @"model.layers.0.w" : tensor<8x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %n = tg.param_ref @"model.layers.0.norm" : tensor<8xf32>
    %hn = tg.rms_norm %h, %n {epsilon = 1.0e-05} : tensor<1x4x8xf32>, tensor<8xf32>
    %w = tg.param_ref @"model.layers.0.w" : tensor<8x8xf32>
    %y = tg.matmul %hn, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %l = tg.matmul %y, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %l, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
