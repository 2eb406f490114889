// RUN: mlperf-opt %s --split-input-file --dist-tensor-parallel="gpus-per-node=2 tp=2" | FileCheck %s
// RUN: mlperf-opt %s --split-input-file --dist-tensor-parallel="gpus-per-node=2 tp=2 sp=true" | FileCheck %s --check-prefix=SP
// RUN: mlperf-opt %s --split-input-file --dist-tensor-parallel="gpus-per-node=2 dp=2" | FileCheck %s --check-prefix=DP

// Tests dist-tensor-parallel on hand-written models: parameters split as their declaration's
// `shard` says (no name is read), every other value by its op's sharding rule. An MLP block:
// vocab-parallel embedding (zero rows summed by reduce_from_region), column-parallel `up`
// behind copy_to_region, SiLU on this rank's channels, row-parallel `down` summed over tp,
// column-parallel head and vocab-parallel cross-entropy; the norm weight stays whole.
// CHECK-LABEL: tg.model @m
// CHECK-NEXT: dist.mesh @mesh {axes = ["dp", "tp", "pp"], gpus_per_node = 2 : i64, nodes = 1 : i64, shape = array<i64: 1, 2, 1>}
// CHECK: tg.param @embed : tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\["tp"\], \[\]\]}}>, init = "normal", std = 2.000000e-02 : f64}
// CHECK-NEXT: tg.param @norm : tensor<8xf32> {init = "ones"}
// CHECK-NEXT: tg.param @up : tensor<6x8xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\["tp"\], \[\]\]}}>, init = "normal", std = 2.000000e-02 : f64}
// CHECK-NEXT: tg.param @down : tensor<8x6xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[\], \["tp"\]\]}}>, init = "normal", std = 2.000000e-02 : f64}
// CHECK-NEXT: tg.param @head : tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\["tp"\], \[\]\]}}>, init = "normal", std = 2.000000e-02 : f64}
// CHECK: %[[E:.+]] = tg.param_ref @embed : tensor<8x8xf32>
// CHECK-NEXT: %[[H0:.+]] = tg.embedding %[[E]], %{{.+}} {vocab_shard_axis = "tp"} : tensor<8x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[H:.+]] = dist.reduce_from_region %[[H0]] over @mesh ["tp"] : tensor<1x4x8xf32>
// CHECK-NEXT: %[[N:.+]] = tg.param_ref @norm : tensor<8xf32>
// CHECK-NEXT: %[[HN:.+]] = tg.rms_norm %[[H]], %[[N]] {epsilon = 1.000000e-05 : f64} : tensor<1x4x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[U:.+]] = tg.param_ref @up : tensor<6x8xf32>
// CHECK-NEXT: %[[IN:.+]] = dist.copy_to_region %[[HN]] over @mesh ["tp"] : tensor<1x4x8xf32>
// CHECK-NEXT: %[[A:.+]] = tg.matmul %[[IN]], %[[U]] {transpose_rhs} : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
// CHECK-NEXT: %[[S:.+]] = tg.silu %[[A]] : tensor<1x4x6xf32>
// CHECK-NEXT: %[[D:.+]] = tg.param_ref @down : tensor<8x6xf32>
// CHECK-NEXT: %[[PART:.+]] = tg.matmul %[[S]], %[[D]] {transpose_rhs} : tensor<1x4x6xf32>, tensor<8x6xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[SUM:.+]] = dist.reduce_from_region %[[PART]] over @mesh ["tp"] : tensor<1x4x8xf32>
// CHECK-NEXT: %[[R:.+]] = tg.add %[[H]], %[[SUM]] : tensor<1x4x8xf32>
// CHECK-NEXT: %[[W:.+]] = tg.param_ref @head : tensor<8x8xf32>
// CHECK-NEXT: %[[RIN:.+]] = dist.copy_to_region %[[R]] over @mesh ["tp"] : tensor<1x4x8xf32>
// CHECK-NEXT: %[[L:.+]] = tg.matmul %[[RIN]], %[[W]] {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: tg.cross_entropy %[[L]], %{{.+}} {vocab_shard_axis = "tp"} : tensor<1x4x8xf32>, tensor<1x4xi32> -> tensor<f32>

// Sequence parallelism (sp=true): the residual stream is [1, 4 / 2, 8] slices along the
// declared tg.sequence_dim; the norm runs on a slice and its weight is marked
// dist.sequence_parallel; regions are entered by all-gathers and left by reduce-scatters.
// SP-LABEL: tg.model @m
// SP: sp = true
// SP: tg.param @norm : tensor<8xf32> {dist.sequence_parallel, init = "ones"}
// SP: %[[H0:.+]] = tg.embedding
// SP-NEXT: %[[H:.+]] = dist.reduce_scatter_region %[[H0]] over @mesh ["tp"] {dim = 1 : i64} : tensor<1x4x8xf32> -> tensor<1x2x8xf32>
// SP-NEXT: tg.param_ref @norm
// SP-NEXT: %[[HN:.+]] = tg.rms_norm %[[H]], %{{.+}} {epsilon = 1.000000e-05 : f64} : tensor<1x2x8xf32>, tensor<8xf32>
// SP-NEXT: tg.param_ref @up
// SP-NEXT: dist.all_gather_region %[[HN]] over @mesh ["tp"] {dim = 1 : i64} : tensor<1x2x8xf32> -> tensor<1x4x8xf32>
// SP: %[[SUM:.+]] = dist.reduce_scatter_region %{{.+}} over @mesh ["tp"] {dim = 1 : i64} : tensor<1x4x8xf32> -> tensor<1x2x8xf32>
// SP-NEXT: %[[R:.+]] = tg.add %[[H]], %[[SUM]] : tensor<1x2x8xf32>
// SP: dist.all_gather_region %[[R]] over @mesh ["tp"] {dim = 1 : i64} : tensor<1x2x8xf32> -> tensor<1x4x8xf32>

// Without tp the pass only places the mesh: the declared splits stay declarations.
// DP-LABEL: tg.model @m
// DP-NEXT: dist.mesh @mesh {axes = ["dp", "tp", "pp"], gpus_per_node = 2 : i64, nodes = 1 : i64, shape = array<i64: 2, 1, 1>}
// DP: tg.param @up : tensor<12x8xf32> {init = "normal", shard = {{\[\["tp"\], \[\]\]}}, std = 2.000000e-02 : f64}
// DP-NOT: dist.copy_to_region

tg.model @m {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @norm : tensor<8xf32> {init = "ones"}
  tg.param @up : tensor<12x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  tg.param @down : tensor<8x12xf32> {init = "normal", std = 0.02, shard = [[], ["tp"]]}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32>
      attributes {tg.sequence_dim = 1 : i64} {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %n = tg.param_ref @norm : tensor<8xf32>
    %hn = tg.rms_norm %h, %n {epsilon = 1.0e-05} : tensor<1x4x8xf32>, tensor<8xf32>
    %u = tg.param_ref @up : tensor<12x8xf32>
    %a = tg.matmul %hn, %u {transpose_rhs} : tensor<1x4x8xf32>, tensor<12x8xf32> -> tensor<1x4x12xf32>
    %s = tg.silu %a : tensor<1x4x12xf32>
    %d = tg.param_ref @down : tensor<8x12xf32>
    %m = tg.matmul %s, %d {transpose_rhs} : tensor<1x4x12xf32>, tensor<8x12xf32> -> tensor<1x4x8xf32>
    %r = tg.add %h, %m : tensor<1x4x8xf32>
    %w = tg.param_ref @head : tensor<16x8xf32>
    %logits = tg.matmul %r, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Attention with a fused q|k|v projection declared as blocks: each rank holds half of q, of k
// and of v ([4 + 2 + 2, 8]), the split after the matmul takes this rank's pieces, heads and
// kv heads are split (2 and 1 per rank), rope, transposes, the GQA repeat, the score and
// context matmuls, the mask and the softmax all run on this rank's heads; the row-parallel
// output is summed over tp. A parameter without `shard` (@embed) stays whole.
// CHECK-LABEL: tg.model @attention
// CHECK: tg.param @embed : tensor<16x8xf32> {init = "normal", std = 2.000000e-02 : f64}
// CHECK-NEXT: tg.param @qkv : tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\["tp"\], \[\]\]}}, blocks = [8, 4, 4]>, init = "normal", std = 2.000000e-02 : f64}
// CHECK-NEXT: tg.param @o : tensor<8x4xf32>
// CHECK: %[[X:.+]] = tg.embedding %{{.+}}, %{{.+}} : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[W:.+]] = tg.param_ref @qkv : tensor<8x8xf32>
// CHECK-NEXT: %[[XIN:.+]] = dist.copy_to_region %[[X]] over @mesh ["tp"] : tensor<1x4x8xf32>
// CHECK-NEXT: %[[QKV:.+]] = tg.matmul %[[XIN]], %[[W]] {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[P:.+]]:3 = tg.split %[[QKV]] {dim = 2 : i64, sizes = array<i64: 4, 2, 2>} : tensor<1x4x8xf32> -> tensor<1x4x4xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>
// CHECK-NEXT: tg.reshape %[[P]]#0 : tensor<1x4x4xf32> -> tensor<1x4x2x2xf32>
// CHECK-NEXT: tg.reshape %[[P]]#1 : tensor<1x4x2xf32> -> tensor<1x4x1x2xf32>
// CHECK-NEXT: tg.reshape %[[P]]#2 : tensor<1x4x2xf32> -> tensor<1x4x1x2xf32>
// CHECK-NEXT: tg.rope %{{.+}} {theta = 1.000000e+04 : f64} : tensor<1x4x2x2xf32>
// CHECK-NEXT: tg.rope %{{.+}} {theta = 1.000000e+04 : f64} : tensor<1x4x1x2xf32>
// CHECK-NEXT: tg.transpose %{{.+}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x2xf32> -> tensor<1x2x4x2xf32>
// CHECK-NEXT: tg.transpose %{{.+}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x1x2xf32> -> tensor<1x1x4x2xf32>
// CHECK-NEXT: tg.transpose %{{.+}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x1x2xf32> -> tensor<1x1x4x2xf32>
// CHECK-NEXT: tg.repeat %{{.+}} {dim = 1 : i64, times = 2 : i64} : tensor<1x1x4x2xf32> -> tensor<1x2x4x2xf32>
// CHECK-NEXT: tg.repeat %{{.+}} {dim = 1 : i64, times = 2 : i64} : tensor<1x1x4x2xf32> -> tensor<1x2x4x2xf32>
// CHECK-NEXT: tg.matmul %{{.+}}, %{{.+}} {transpose_rhs} : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> -> tensor<1x2x4x4xf32>
// CHECK-NEXT: tg.causal_mask %{{.+}} : tensor<1x2x4x4xf32>
// CHECK-NEXT: tg.softmax %{{.+}} {dim = 3 : i64} : tensor<1x2x4x4xf32>
// CHECK-NEXT: tg.matmul %{{.+}}, %{{.+}} : tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32> -> tensor<1x2x4x2xf32>
// CHECK-NEXT: tg.transpose %{{.+}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x4x2xf32> -> tensor<1x4x2x2xf32>
// CHECK-NEXT: tg.reshape %{{.+}} : tensor<1x4x2x2xf32> -> tensor<1x4x4xf32>
// CHECK-NEXT: %[[O:.+]] = tg.param_ref @o : tensor<8x4xf32>
// CHECK-NEXT: %[[PART:.+]] = tg.matmul %{{.+}}, %[[O]] {transpose_rhs} : tensor<1x4x4xf32>, tensor<8x4xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[OUT:.+]] = dist.reduce_from_region %[[PART]] over @mesh ["tp"] : tensor<1x4x8xf32>
// CHECK-NEXT: tg.param_ref @head : tensor<8x8xf32>
// CHECK-NEXT: %[[OIN:.+]] = dist.copy_to_region %[[OUT]] over @mesh ["tp"] : tensor<1x4x8xf32>
// CHECK-NEXT: tg.matmul %[[OIN]], %{{.+}} {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: tg.cross_entropy %{{.+}}, %{{.+}} {vocab_shard_axis = "tp"} : tensor<1x4x8xf32>, tensor<1x4xi32> -> tensor<f32>
// With sp=true the whole embedding output enters the region whole; the output projection's
// sum leaves as sequence slices, gathered again for the head.
// SP-LABEL: tg.model @attention
// SP: dist.copy_to_region %{{.+}} over @mesh ["tp"] : tensor<1x4x8xf32>
// SP: dist.reduce_scatter_region %{{.+}} over @mesh ["tp"] {dim = 1 : i64} : tensor<1x4x8xf32> -> tensor<1x2x8xf32>
// SP-NEXT: tg.param_ref @head
// SP-NEXT: dist.all_gather_region %{{.+}} over @mesh ["tp"] {dim = 1 : i64} : tensor<1x2x8xf32> -> tensor<1x4x8xf32>
// DP-LABEL: tg.model @attention

tg.model @attention {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  tg.param @qkv : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []], shard_blocks = array<i64: 8, 4, 4>}
  tg.param @o : tensor<8x8xf32> {init = "normal", std = 0.02, shard = [[], ["tp"]]}
  tg.param @head : tensor<16x8xf32> {init = "normal", std = 0.02, shard = [["tp"], []]}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32>
      attributes {tg.sequence_dim = 1 : i64} {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %x = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %w = tg.param_ref @qkv : tensor<16x8xf32>
    %qkv = tg.matmul %x, %w {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %q, %k, %v = tg.split %qkv {dim = 2 : i64, sizes = array<i64: 8, 4, 4>} : tensor<1x4x16xf32> -> tensor<1x4x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>
    %q4 = tg.reshape %q : tensor<1x4x8xf32> -> tensor<1x4x4x2xf32>
    %k4 = tg.reshape %k : tensor<1x4x4xf32> -> tensor<1x4x2x2xf32>
    %v4 = tg.reshape %v : tensor<1x4x4xf32> -> tensor<1x4x2x2xf32>
    %qr = tg.rope %q4 {theta = 10000.0} : tensor<1x4x4x2xf32>
    %kr = tg.rope %k4 {theta = 10000.0} : tensor<1x4x2x2xf32>
    %qh = tg.transpose %qr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
    %kh = tg.transpose %kr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x2xf32> -> tensor<1x2x4x2xf32>
    %vh = tg.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x2xf32> -> tensor<1x2x4x2xf32>
    %kg = tg.repeat %kh {dim = 1, times = 2} : tensor<1x2x4x2xf32> -> tensor<1x4x4x2xf32>
    %vg = tg.repeat %vh {dim = 1, times = 2} : tensor<1x2x4x2xf32> -> tensor<1x4x4x2xf32>
    %s = tg.matmul %qh, %kg {transpose_rhs} : tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32> -> tensor<1x4x4x4xf32>
    %sm = tg.causal_mask %s : tensor<1x4x4x4xf32>
    %p = tg.softmax %sm {dim = 3} : tensor<1x4x4x4xf32>
    %c = tg.matmul %p, %vg : tensor<1x4x4x4xf32>, tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
    %ct = tg.transpose %c {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
    %cf = tg.reshape %ct : tensor<1x4x4x2xf32> -> tensor<1x4x8xf32>
    %ow = tg.param_ref @o : tensor<8x8xf32>
    %out = tg.matmul %cf, %ow {transpose_rhs} : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
    %hw = tg.param_ref @head : tensor<16x8xf32>
    %logits = tg.matmul %out, %hw {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
