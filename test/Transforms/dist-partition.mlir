// RUN: mlperf-opt %s --dist-tensor-parallel="gpus-per-node=2 dp=2" --tg-autodiff --tg-optimizer --dist-partition | FileCheck %s --check-prefix=DP
// RUN: mlperf-opt %s --dist-tensor-parallel="gpus-per-node=2 dp=2 zero=1" --tg-autodiff --tg-optimizer --dist-partition | FileCheck %s --check-prefix=ZERO
// RUN: mlperf-opt %s --dist-tensor-parallel="gpus-per-node=2 tp=2" --tg-autodiff --tg-optimizer --dist-partition | FileCheck %s --check-prefix=TP
// RUN: mlperf-opt %s --dist-tensor-parallel="gpus-per-node=2 dp=2 zero=1" --tg-autodiff --tg-optimizer --dist-partition --tg-train-step=accumulation-steps=1 --dist-decompose-collectives | FileCheck %s --check-prefix=GATHER
// RUN: mlperf-opt %s --dist-tensor-parallel="nodes=2 gpus-per-node=2 dp=4 zero=1 hsdp=2" --tg-autodiff --tg-optimizer --dist-partition | FileCheck %s --check-prefix=HSDP
// RUN: mlperf-opt %s --dist-tensor-parallel="gpus-per-node=2 dp=2 zero=2" --tg-autodiff --tg-optimizer --dist-partition --tg-train-step=accumulation-steps=2 --dist-decompose-collectives | FileCheck %s --check-prefix=ZERO2

// Tests dist-partition on a hand-written model (a vocab-parallel embedding tied as the head,
// and a norm weight), after the passes it needs (the mesh, autodiff, the optimizer step).

// Data parallelism: every gradient is summed over dp before the global norm and the AdamW
// updates, which then run replicated.
// DP-LABEL: func.func @optimizer_step(
// DP-SAME: %{{[^:]+}}: tensor<i64> {tg.role = "step"}, %[[GE:[^:]+]]: tensor<16x8xf32> {tg.param = @embed, tg.role = "grad"}, %[[GN:[^:]+]]: tensor<8xf32> {tg.param = @norm, tg.role = "grad"}
// DP-NEXT: %[[FE:.+]] = dist.all_reduce_start %[[GE]] over @mesh ["dp"] : tensor<16x8xf32> -> !dist.future<tensor<16x8xf32>>
// DP-NEXT: %[[SE:.+]] = dist.done %[[FE]] : !dist.future<tensor<16x8xf32>> -> tensor<16x8xf32>
// DP-NEXT: %[[FN:.+]] = dist.all_reduce_start %[[GN]] over @mesh ["dp"] : tensor<8xf32> -> !dist.future<tensor<8xf32>>
// DP-NEXT: %[[SN:.+]] = dist.done %[[FN]] : !dist.future<tensor<8xf32>> -> tensor<8xf32>
// DP-NEXT: tg.global_norm %[[SE]], %[[SN]] : tensor<16x8xf32>, tensor<8xf32>
// DP: tg.elementwise %{{.+}}, %{{.+}}, %{{.+}}, %[[SE]], {{.+}} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>,
// DP: tg.elementwise %{{.+}}, %{{.+}}, %{{.+}}, %[[SN]], {{.+}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,

// ZeRO-1: each gradient is flattened and reduce-scattered; masters and moments are 1-D shards
// (their arguments say so); the global norm adds the shards' squares over dp; each new
// parameter is the all-gather of its updated shard.
// ZERO-LABEL: func.func @optimizer_step(
// ZERO-SAME: %{{[^:]+}}: tensor<64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\["dp"\]\]}}>, tg.init = "param", tg.param = @embed, tg.role = "master"}
// ZERO: %[[FLAT:.+]] = tg.reshape %{{.+}} : tensor<16x8xf32> -> tensor<128xf32>
// ZERO-NEXT: %[[F:.+]] = dist.reduce_scatter_start %[[FLAT]] over @mesh ["dp"] : tensor<128xf32> -> !dist.future<tensor<64xf32>>
// ZERO-NEXT: %[[SHARD:.+]] = dist.done %[[F]] : !dist.future<tensor<64xf32>> -> tensor<64xf32>
// ZERO: %[[SQ:.+]] = tg.sum_squares %[[SHARD]], %{{.+}} : tensor<64xf32>, tensor<4xf32>
// ZERO-NEXT: %[[FS:.+]] = dist.all_reduce_start %[[SQ]] over @mesh ["dp"] : tensor<f32> -> !dist.future<tensor<f32>>
// ZERO-NEXT: %[[S:.+]] = dist.done %[[FS]]
// ZERO-NEXT: tg.sqrt %[[S]]
// ZERO: %[[NEW:[^:]+]]:3 = tg.elementwise %{{.+}}, %{{.+}}, %{{.+}}, %[[SHARD]], {{.+}} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>,
// ZERO-NEXT: %[[FG:.+]] = dist.all_gather_start %[[NEW]]#0 over @mesh ["dp"] : tensor<64xf32> -> !dist.future<tensor<128xf32>>
// ZERO-NEXT: %[[G:.+]] = dist.done %[[FG]]
// ZERO-NEXT: tg.reshape %[[G]] : tensor<128xf32> -> tensor<16x8xf32>
// ZERO-NOT: tg.global_norm

// Hybrid sharding (dp=4 in two groups of two): ZeRO-1 inside each group (dp_shard), each
// reduce-scattered shard then summed over the groups (dp_replicate); the norm adds the
// shards' squares over the group only, whose replicas hold the same elements.
// HSDP: dist.mesh @mesh {axes = ["dp", "tp", "pp"], gpus_per_node = 2 : i64, hsdp = 2 : i64, nodes = 2 : i64, shape = array<i64: 4, 1, 1>, zero = 1 : i64}
// HSDP-LABEL: func.func @optimizer_step(
// HSDP-SAME: %{{[^:]+}}: tensor<64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\["dp_shard"\]\]}}>, tg.init = "param", tg.param = @embed, tg.role = "master"}
// HSDP: %[[FLAT:.+]] = tg.reshape %{{.+}} : tensor<16x8xf32> -> tensor<128xf32>
// HSDP-NEXT: %[[F:.+]] = dist.reduce_scatter_start %[[FLAT]] over @mesh ["dp_shard"] : tensor<128xf32> -> !dist.future<tensor<64xf32>>
// HSDP-NEXT: %[[GROUP:.+]] = dist.done %[[F]] : !dist.future<tensor<64xf32>> -> tensor<64xf32>
// HSDP-NEXT: %[[FR:.+]] = dist.all_reduce_start %[[GROUP]] over @mesh ["dp_replicate"] : tensor<64xf32> -> !dist.future<tensor<64xf32>>
// HSDP-NEXT: %[[SHARD:.+]] = dist.done %[[FR]] : !dist.future<tensor<64xf32>> -> tensor<64xf32>
// HSDP: %[[SQ:.+]] = tg.sum_squares %[[SHARD]], %{{.+}} : tensor<64xf32>, tensor<4xf32>
// HSDP-NEXT: %[[FS:.+]] = dist.all_reduce_start %[[SQ]] over @mesh ["dp_shard"] : tensor<f32> -> !dist.future<tensor<f32>>
// HSDP: %[[NEW:[^:]+]]:3 = tg.elementwise %{{.+}}, %{{.+}}, %{{.+}}, %[[SHARD]], {{.+}} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>,
// HSDP-NEXT: dist.all_gather_start %[[NEW]]#0 over @mesh ["dp_shard"] : tensor<64xf32> -> !dist.future<tensor<128xf32>>

// ZeRO-2 (two micro-batches): every micro-batch's backward reduce-scatters its gradients in
// one bucket (4 + 64 per rank of 136) and adds this rank's shards to shard-sized sums, which
// the train step starts at zero and passes from call to call to @optimizer_step; no full
// gradient outlives its bucket.
// ZERO2-LABEL: func.func @forward_backward(
// ZERO2-SAME: %{{[^:]+}}: tensor<64xf32> {tg.param = @embed, tg.role = "grad"}, %{{[^:]+}}: tensor<4xf32> {tg.param = @norm, tg.role = "grad"}) -> (tensor<f32>, tensor<64xf32>, tensor<4xf32>)
// ZERO2: dist.reduce_scatter_start %{{.+}} over @mesh ["dp"] : tensor<136xf32> -> !dist.future<tensor<68xf32>>
// ZERO2: tg.add %{{.+}}, %{{.+}} : tensor<4xf32>
// ZERO2: tg.add %{{.+}}, %{{.+}} : tensor<64xf32>
// ZERO2-LABEL: func.func @optimizer_step(
// ZERO2-NOT: dist.reduce_scatter_start
// ZERO2-LABEL: func.func @train_step(
// ZERO2: %[[E:.+]] = tg.fill {value = 0.000000e+00 : f64} : tensor<64xf32>
// ZERO2: %[[N:.+]] = tg.fill {value = 0.000000e+00 : f64} : tensor<4xf32>
// ZERO2: %[[A:.+]]:3 = call @forward_backward(%{{.+}}, %{{.+}}, %[[E]], %[[N]])
// ZERO2: call @forward_backward(%{{.+}}, %{{.+}}, %[[A]]#1, %[[A]]#2)
// ZERO2: call @optimizer_step(

// dist-decompose-collectives then gathers ZeRO-1's updated shards in one bucket: their
// concatenation (64 + 4) gathered once, viewed as [dp, 68] (row r: rank r's shards), split
// along the columns into [2, 64] and [2, 4], each flattened into its whole parameter.
// GATHER-LABEL: func.func @optimizer_step(
// GATHER: %[[E:.+]]:3 = tg.elementwise {{.*}} -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
// GATHER: %[[N:.+]]:3 = tg.elementwise {{.*}} -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// GATHER-NEXT: %[[CAT:.+]] = tg.concat %[[E]]#0, %[[N]]#0 {dim = 0 : i64} : tensor<64xf32>, tensor<4xf32> -> tensor<68xf32>
// GATHER-NEXT: %[[FG:.+]] = dist.all_gather_start %[[CAT]] over @mesh ["dp"] : tensor<68xf32> -> !dist.future<tensor<136xf32>>
// GATHER-NEXT: %[[G:.+]] = dist.done %[[FG]]
// GATHER-NEXT: %[[ROWS:.+]] = tg.reshape %[[G]] : tensor<136xf32> -> tensor<2x68xf32>
// GATHER-NEXT: %[[P:.+]]:2 = tg.split %[[ROWS]] {dim = 1 : i64, sizes = array<i64: 64, 4>}
// GATHER-NEXT: %[[WE:.+]] = tg.reshape %[[P]]#0 : tensor<2x64xf32> -> tensor<128xf32>
// GATHER-NEXT: %[[WN:.+]] = tg.reshape %[[P]]#1 : tensor<2x4xf32> -> tensor<8xf32>
// GATHER-NEXT: %[[EMBED:.+]] = tg.reshape %[[WE]] : tensor<128xf32> -> tensor<16x8xf32>
// GATHER-NEXT: %[[NORM:.+]] = tg.reshape %[[WN]] : tensor<8xf32> -> tensor<8xf32>
// GATHER-NEXT: return %[[EMBED]], %[[NORM]],

// Tensor parallelism: the region ops of @forward_backward become all-reduces over tp; the
// global norm sums the squares of the tp-split gradient over tp and adds the replicated one
// once.
// TP-LABEL: func.func @forward_backward
// TP-NOT: dist.reduce_from_region
// TP-NOT: dist.copy_to_region
// TP: dist.all_reduce_start %{{.+}} over @mesh ["tp"]
// TP-LABEL: func.func @optimizer_step(
// TP-SAME: %{{[^:]+}}: tensor<i64> {tg.role = "step"}, %[[GE:[^:]+]]: tensor<8x8xf32> {tg.param = @embed, tg.role = "grad"}, %[[GN:[^:]+]]: tensor<8xf32> {tg.param = @norm, tg.role = "grad"}
// TP-NEXT: %[[SQE:.+]] = tg.sum_squares %[[GE]] : tensor<8x8xf32>
// TP-NEXT: %[[F:.+]] = dist.all_reduce_start %[[SQE]] over @mesh ["tp"] : tensor<f32> -> !dist.future<tensor<f32>>
// TP-NEXT: %[[SUM:.+]] = dist.done %[[F]]
// TP-NEXT: %[[SQN:.+]] = tg.sum_squares %[[GN]] : tensor<8xf32>
// TP-NEXT: %[[ALL:.+]] = tg.add %[[SUM]], %[[SQN]] : tensor<f32>
// TP-NEXT: tg.sqrt %[[ALL]]

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
