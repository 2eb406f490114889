//===- Passes.td - mlperfc transformation passes ----------*- tablegen -*-===//
//
// Every pass states its rewrite class in its description (exact, reassociation, precision) and
// declares it, for `mlperfc audit`, with MLPERF_DECLARE_REWRITE_CLASS in its .cpp file
// (compiler/Support/RewriteClass.h). See docs/passes.md and docs/compliance.md.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_TRANSFORMS_PASSES_TD
#define MLPERFC_COMPILER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TGSimplifyPass : Pass<"tg-simplify"> {
  let summary = "Applies the tg dialect's exact algebraic simplifications";
  let description = [{
    Rewrite class: exact.

    Runs the canonicalization patterns of the `tg` ops, and the folders of every op it visits
    (the greedy driver folds any foldable op; folds are exact), to a fixed point. Patterns of
    other dialects are left to the standard canonicalizer. Every rewrite computes the same
    real-valued function with the same products and sums; only layout and op count change:

    - `tg.transpose` with the identity permutation is removed;
    - `tg.transpose` of a `tg.transpose` becomes one transpose with the composed permutation;
    - a `tg.transpose` that swaps the last two dimensions of a `tg.matmul` operand becomes the
      matmul's `transpose_lhs` / `transpose_rhs` flag (GEMM libraries read transposed operands
      at no cost);
    - `tg.scale` by 1.0, `tg.repeat` once and a same-type `tg.reshape` are removed;
    - `tg.reshape` of a `tg.reshape` becomes one reshape;
    - `tg.convert` to the same type, and exact round trips (bf16 -> f32 -> bf16), are removed.

    Before:

    ```mlir
    %t = tg.transpose %w {permutation = array<i64: 1, 0>} : tensor<160x64xf32> -> tensor<64x160xf32>
    %y = tg.matmul %x, %t : tensor<32x64xf32>, tensor<64x160xf32> -> tensor<32x160xf32>
    ```

    After:

    ```mlir
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<32x64xf32>, tensor<160x64xf32> -> tensor<32x160xf32>
    ```

    The pass fails, naming the op it ran on, if the rewrites do not reach a fixed point within
    `max-iterations` sweeps: a pattern set that cycles is a compiler bug, not a result.
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "int64_t", /*default=*/"10",
           "Maximum number of sweeps over the IR before giving up">,
  ];
  let dependentDialects = ["::mlperf::tg::TGDialect"];
}

def TGInlineLayersPass : Pass<"tg-inline-layers", "::mlir::ModuleOp"> {
  let summary = "Unrolls layer stacks, inlines calls and expands per-layer parameters";
  let description = [{
    Rewrite class: exact.

    Makes every public function of each `tg.model` straight-line code, the form tg-autodiff
    and the plan lowering work on:

    - a per-layer `tg.param @"model.layers.{i}.…" {repeat = N}` becomes N parameters
      `model.layers.0.…` to `model.layers.{N-1}.…`; `scaled_normal` initialization becomes
      `normal` with the already scaled standard deviation `std / sqrt(2N)` (the same
      distribution);
    - `tg.repeat_layers @f(%x) count N params [...]` becomes N inlined copies of `@f`'s body,
      copy i reading layer i's parameters;
    - `func.call`s are inlined;
    - private functions no longer referenced are erased.

    Before:

    ```mlir
    tg.param @"layers.{i}.w" : tensor<8x8xf32> {init = "normal", std = 0.02, repeat = 2}
    ...
    %h = tg.repeat_layers @layer(%x) count 2 params [@"layers.{i}.w"] : tensor<4x8xf32>
    ```

    After:

    ```mlir
    tg.param @"layers.0.w" : tensor<8x8xf32> {init = "normal", std = 0.02}
    tg.param @"layers.1.w" : tensor<8x8xf32> {init = "normal", std = 0.02}
    ...
    %w0 = tg.param_ref @"layers.0.w" : tensor<8x8xf32>
    %h0 = tg.matmul %x, %w0 {transpose_rhs} : ...
    %w1 = tg.param_ref @"layers.1.w" : tensor<8x8xf32>
    %h = tg.matmul %h0, %w1 {transpose_rhs} : ...
    ```
  }];
  let dependentDialects = ["::mlperf::tg::TGDialect", "::mlir::func::FuncDialect"];
}

def TGFuseAttentionPass : Pass<"tg-fuse-attention", "::mlir::ModuleOp"> {
  let summary = "Fuses softmax(mask(Q·Kᵀ·s))·V, with its GQA repeats, into tg.attention";
  let description = [{
    Rewrite class: reassociation. `tg.attention` admits kernels that sum the softmax and the
    products in another order (FlashAttention-2's online softmax on GPUs); the CPU kernels
    compute exactly the values of the graph it replaces (runtime/cpu/Attention.h), so on
    the CPU backend the rewrite changes no bit.

    In every function of each `tg.model`, the chain

    - `%k_groups = tg.repeat %k {dim = 1}` and the same for `%v` (optional: none when heads
      equal KV heads),
    - `%scores = tg.matmul %q, %k_groups {transpose_rhs}` with f32 scores,
    - `%scaled = tg.scale %scores`, an optional `tg.causal_mask`, `tg.softmax` over keys,
    - an optional `tg.convert` of the probabilities to the value's element type,
    - `%context = tg.matmul %probs, %v_groups`

    becomes `%context, %lse = tg.attention %q, %k, %v {scale, causal}`. No `[seq, seq]`
    tensor remains, in the forward or (after tg-autodiff) the backward. A chain whose shapes
    or types the fused op does not take (scores not f32, probabilities not of the value's
    type, an intermediate value used elsewhere, different repeats of K and V) is left as it
    is, with a remark on its softmax naming the reason: never a different result.

    Before (a causal GQA head group of 2):

    ```mlir
    %kg = tg.repeat %k {dim = 1 : i64, times = 2 : i64} : tensor<1x2x32x16xbf16> -> tensor<1x4x32x16xbf16>
    %vg = tg.repeat %v {dim = 1 : i64, times = 2 : i64} : tensor<1x2x32x16xbf16> -> tensor<1x4x32x16xbf16>
    %s = tg.matmul %q, %kg {transpose_rhs} : tensor<1x4x32x16xbf16>, tensor<1x4x32x16xbf16> -> tensor<1x4x32x32xf32>
    %t = tg.scale %s {factor = 0.25 : f64} : tensor<1x4x32x32xf32>
    %m = tg.causal_mask %t : tensor<1x4x32x32xf32>
    %p = tg.softmax %m {dim = 3 : i64} : tensor<1x4x32x32xf32>
    %pb = tg.convert %p : tensor<1x4x32x32xf32> -> tensor<1x4x32x32xbf16>
    %o = tg.matmul %pb, %vg : tensor<1x4x32x32xbf16>, tensor<1x4x32x16xbf16> -> tensor<1x4x32x16xbf16>
    ```

    After:

    ```mlir
    %o, %lse = tg.attention %q, %k, %v {causal, scale = 2.500000e-01 : f64}
        : tensor<1x4x32x16xbf16>, tensor<1x2x32x16xbf16>, tensor<1x2x32x16xbf16>
        -> tensor<1x4x32x16xbf16>, tensor<1x4x32xf32>
    ```
  }];
  let dependentDialects = ["::mlperf::tg::TGDialect"];
}

def TGFuseSwigluPass : Pass<"tg-fuse-swiglu", "::mlir::ModuleOp"> {
  let summary = "Fuses tg.mul(tg.silu(gate), up) into tg.swiglu";
  let description = [{
    Rewrite class: exact. `tg.swiglu` is defined as the pair it replaces, with `silu(gate)`
    rounded to the element type before the product, and its VJP as what tg-autodiff builds for
    the pair; only the storage differs: the backward recomputes `silu(gate)` from `gate`
    instead of keeping it (7·s·b·h bf16 bytes less per Llama layer).

    A `tg.silu` whose result has one use, a `tg.mul` (either operand), becomes part of one
    `tg.swiglu`; a silu read elsewhere stays.

    Before:

    ```mlir
    %a = tg.silu %gate : tensor<1x32x160xbf16>
    %g = tg.mul %a, %up : tensor<1x32x160xbf16>
    ```

    After:

    ```mlir
    %g = tg.swiglu %gate, %up : tensor<1x32x160xbf16>
    ```
  }];
  let dependentDialects = ["::mlperf::tg::TGDialect"];
}

def TGFuseCrossEntropyPass : Pass<"tg-fuse-cross-entropy", "::mlir::ModuleOp"> {
  let summary = "Fuses the output layer's matmul and tg.cross_entropy into tg.linear_cross_entropy";
  let description = [{
    Rewrite class: exact. `tg.linear_cross_entropy` is defined as the pair it replaces (logits
    rounded to the matmul's result type, the same loss and gradients, runtime/cpu/
    LinearCrossEntropy.h gives them to the bit); only storage changes: the logits
    `[tokens, vocab]` and their gradient exist a chunk of tokens at a time instead of for the
    whole micro-batch, and nothing of them is kept for backward (the backward recomputes them).

    A `tg.cross_entropy` of `tg.matmul %hidden, %weight {transpose_rhs}` with a `[vocab,
    hidden]` weight, whose logits nothing else reads, becomes one op. Under tensor
    parallelism dist-tensor-parallel then splits the weight's rows (vocab-parallel, as for the
    unfused pair).

    Before:

    ```mlir
    %logits = tg.matmul %hn, %head {transpose_rhs} : tensor<1x32x64xbf16>, tensor<256x64xbf16> -> tensor<1x32x256xbf16>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x32x256xbf16>, tensor<1x32xi32> -> tensor<f32>
    ```

    After:

    ```mlir
    %loss = tg.linear_cross_entropy %hn, %head, %labels {logits_type = "bf16"}
        : tensor<1x32x64xbf16>, tensor<256x64xbf16>, tensor<1x32xi32> -> tensor<f32>
    ```
  }];
  let dependentDialects = ["::mlperf::tg::TGDialect"];
}

def TGFuseAddRMSNormPass : Pass<"tg-fuse-add-rms-norm", "::mlir::ModuleOp"> {
  let summary = "Fuses a residual tg.add and the tg.rms_norm of its sum into tg.add_rms_norm";
  let description = [{
    Rewrite class: exact. `tg.add_rms_norm` returns both the sum and its normalization, each
    exactly as the pair computed it, and its VJP is what tg-autodiff builds for the pair. On a
    GPU one kernel reads the row once instead of twice; on the CPU nothing changes.

    Every `tg.rms_norm` whose input a `tg.add` computes becomes part of one op (the sum stays
    a result: the residual stream reads it).

    Before:

    ```mlir
    %h = tg.add %x, %attn : tensor<1x32x64xbf16>
    %hn = tg.rms_norm %h, %w {epsilon = 1.0e-05 : f64} : tensor<1x32x64xbf16>, tensor<64xbf16>
    ```

    After:

    ```mlir
    %h, %hn = tg.add_rms_norm %x, %attn, %w {epsilon = 1.0e-05 : f64} : tensor<1x32x64xbf16>, tensor<64xbf16>
    ```
  }];
  let dependentDialects = ["::mlperf::tg::TGDialect"];
}

def TGFuseRopeQKPass : Pass<"tg-fuse-rope-qk", "::mlir::ModuleOp"> {
  let summary = "Fuses the tg.rope of an attention's queries and that of its keys into tg.rope_qk";
  let description = [{
    Rewrite class: exact. `tg.rope_qk` is the two rotations with their one set of attributes;
    its VJP is both inverse rotations. On a GPU one kernel computes the angles once; on the CPU
    nothing changes.

    For each `tg.attention` whose query and key are `tg.transpose`s of two `tg.rope` with the
    same attributes, read by nothing else, the two become one op (run after
    tg-fuse-attention).

    Before:

    ```mlir
    %qr = tg.rope %q {theta = 1.0e+04 : f64} : tensor<1x32x4x16xbf16>
    %kr = tg.rope %k {theta = 1.0e+04 : f64} : tensor<1x32x2x16xbf16>
    ```

    After:

    ```mlir
    %qr, %kr = tg.rope_qk %q, %k {theta = 1.0e+04 : f64} : tensor<1x32x4x16xbf16>, tensor<1x32x2x16xbf16>
    ```
  }];
  let dependentDialects = ["::mlperf::tg::TGDialect"];
}

def TGAutodiffPass : Pass<"tg-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of @forward into @forward_backward";
  let description = [{
    Rewrite class: exact (adds a function; @forward is unchanged).

    For each `tg.model` whose `@forward` is straight-line (run tg-inline-layers first), adds

    ```mlir
    func.func @forward_backward(%tokens, %labels) -> (tensor<f32>, grad_0, ..., grad_n)
        attributes {tg.gradients = [@param_0, ..., @param_n]}
    ```

    returning the micro-batch loss and the gradient of the loss with respect to every
    `tg.param`, in declaration order (`tg.gradients` names them). The backward graph is
    ordinary tg IR built by each op's `VJPOpInterface` rule in reverse program order, seeded
    with d loss = 1; gradients of a value used several times are summed with `tg.add`, and a
    parameter read several times accumulates its gradient the same way. Gradients have the
    type of their primal value (bf16 gradients for bf16 parameters, as the reference).

    The gradient seed is `loss-scale` (default 1): with gradient accumulation over A
    micro-batches the reference back-propagates loss / A, so the train-step pipeline sets
    `loss-scale = 1/A` and the micro-batch gradients add up to the gradient of the mean loss.

    Fails, naming the op, if `@forward` still contains calls or layer stacks, or if an op on
    the path to the loss has no VJP rule.
  }];
  let options = [
    Option<"lossScale", "loss-scale", "double", /*default=*/"1.0",
           "Gradient of the loss seeding the backward pass (1/A with A micro-batches)">,
  ];
  let dependentDialects = ["::mlperf::tg::TGDialect", "::mlir::func::FuncDialect"];
}

def TGOptimizerPass : Pass<"tg-optimizer", "::mlir::ModuleOp"> {
  let summary = "Builds @optimizer_step from the model's optimizer and LR schedule";
  let description = [{
    Rewrite class: exact (adds a function).

    For each `tg.model` (concrete parameters: run tg-inline-layers first), adds

    ```mlir
    func.func @optimizer_step(%step: tensor<i64>, %grad_0, ..., %master_0, ..., %m_0, ...,
                              %v_0, ...)
        -> (params..., masters..., ms..., vs..., lr: tensor<f32>, grad_norm: tensor<f32>)
        attributes {tg.parameters = [@param_0, ...]}
    ```

    implementing the reference's update after gradient accumulation: the global L2 norm of
    all gradients, the clipping factor min(1, clip_grad_norm / (norm + 1e-6)), the learning
    rate of `tg.lr_schedule` at `%step` (0-based), one `tg.adamw` per parameter on f32 master
    weights with the parameter's weight decay (`weight_decay_params`: `all`, or `matrices`
    for rank >= 2 only), and the new parameters rounded to their declared type.
  }];
  let dependentDialects = ["::mlperf::tg::TGDialect", "::mlir::func::FuncDialect"];
}

def TGSetPrecisionPass : Pass<"tg-set-precision", "::mlir::ModuleOp"> {
  let summary = "Sets the compute precision of a model: bf16 as declared, or all fp32";
  let description = [{
    Rewrite class: precision (towards more precision: `fp32` is what oracle and RCP
    reference runs use). With `precision=fp32`, every bf16 and fp8 element type in each
    `tg.model` (parameters, function signatures, values) becomes f32; conversions that become
    f32 -> f32 are left for tg-simplify to remove. `precision=bf16` keeps the declaration.
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "fp32 or bf16">,
  ];
  let dependentDialects = ["::mlperf::tg::TGDialect", "::mlir::func::FuncDialect"];
}

def DistTensorParallelPass : Pass<"dist-tensor-parallel", "::mlir::ModuleOp"> {
  let summary = "Places the device mesh and splits @forward over tensor-parallel ranks";
  let description = [{
    Rewrite class: reassociation (matmuls over split features are summed across ranks).

    Adds `dist.mesh @mesh` (dp × tp × pp ranks) to each `tg.model`. With tp > 1 it splits the
    inlined `@forward` the way Megatron-LM's parallel layers do, before `tg-autodiff`, so
    that the backward pass follows from the region ops' VJPs (autograd through Megatron's
    `f` and `g`). It reads no parameter name: each parameter is split as its declaration's
    `shard` says (`[["tp"], []]` rows, `[[], ["tp"]]` columns), and every other value as its
    op's sharding rule (`tg::ShardingRuleOpInterface`, dialects/TG/IR/TGSharding.cpp) says
    given how the op's operands are split. From those rules follow:

    - column-parallel (a weight `W [out, in]` split by rows): the replicated input enters the
      region through `dist.copy_to_region` (identity; its gradient is summed over tp) — every
      whole floating-point operand of a split op does — and the output keeps `out / tp`
      features; every op after it (reshape to heads, rope, transposes, GQA repeat, attention
      matmuls, mask, softmax, SwiGLU) runs on this rank's heads or FFN channels, each
      refusing a split it cannot compute locally (a softmax over the split dim, a rope over
      positions, a reshape that would split a head);
    - row-parallel (`W [out, in]` split by columns, its input split along the features):
      partial products (the rule's `partialSum`) are summed by `dist.reduce_from_region` (an
      all-reduce; its gradient is copied);
    - vocab-parallel embedding (table split by rows): `tg.embedding {vocab_shard_axis}`
      yields zero rows for other ranks' ids, summed by `dist.reduce_from_region`;
    - vocab-parallel cross-entropy: `tg.cross_entropy {vocab_shard_axis}` on `vocab / tp`
      logits combines maxima, exponential sums and label logits over tp
      (`dist-lower-vocab-loss` turns it into local pieces and all-reduces).

    Split parameters get a smaller type and `dist.sharding` naming the split dim. Norm
    weights stay replicated: their gradients are complete on every rank.

    ```mlir
    // before
    %q = tg.matmul %x, %wq {transpose_rhs} : tensor<1x32x64xbf16>, tensor<64x64xbf16> -> tensor<1x32x64xbf16>
    // after (tp = 2)
    %xe = dist.copy_to_region %x over @mesh ["tp"] : tensor<1x32x64xbf16>
    %q = tg.matmul %xe, %wq {transpose_rhs} : tensor<1x32x64xbf16>, tensor<32x64xbf16> -> tensor<1x32x32xbf16>
    ```

    Pipeline parallelism is `dist-pipeline`'s, after this pass; with sp=on, norms and
    residual adds run on sequence slices (along the dim `@forward` declares as
    `tg.sequence_dim`, by the same sharding rules) between `dist.all_gather_region` and
    `dist.reduce_scatter_region`; a whole parameter they read (a norm weight) is marked
    `dist.sequence_parallel`.
  }];
  let options = [
    Option<"nodes", "nodes", "int64_t", /*default=*/"1", "Nodes in the cluster">,
    Option<"gpusPerNode", "gpus-per-node", "int64_t", /*default=*/"1", "Ranks per node">,
    Option<"dp", "dp", "int64_t", /*default=*/"1", "Data-parallel degree">,
    Option<"tp", "tp", "int64_t", /*default=*/"1", "Tensor-parallel degree">,
    Option<"pp", "pp", "int64_t", /*default=*/"1", "Pipeline-parallel degree">,
    Option<"vp", "vp", "int64_t", /*default=*/"1", "Virtual pipeline stages per rank">,
    Option<"sp", "sp", "bool", /*default=*/"false", "Sequence parallelism">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "1: shard optimizer state and master weights over dp (ZeRO-1)">,
    Option<"hsdp", "hsdp", "int64_t", /*default=*/"0",
           "ZeRO shards over groups of this many dp ranks, replicated across them (0: all of dp)">,
  ];
  let dependentDialects = ["::mlperf::dist::DistDialect", "::mlperf::tg::TGDialect"];
}

def DistPipelinePass : Pass<"dist-pipeline", "::mlir::ModuleOp"> {
  let summary = "Splits a model into one model per pipeline stage";
  let description = [{
    Rewrite class: exact (the same ops, run by different ranks).

    With `pp > 1` on the model's `dist.mesh` (and vp model chunks per rank, the interleaved
    schedule: virtual stage c·pp + r is chunk c of rank r, `@"forward.chunk<c>"`), stage k
    keeps layers [k·L/S, (k+1)·L/S) of S = pp·vp virtual stages of the declared layer stack
    (the `layer` index tg-inline-layers gives each copy of a `tg.repeat_layers` parameter;
    Megatron-LM's even split; when pp does not divide L, runtime/dist/Mesh.h
    `pipelineLayerSplit` gives the L mod pp extra layers to the middle stages first, as
    Megatron's first/last-stage layer options do). Every op follows its operands; a
    parameter outside the stack goes to the stage of the ops that read it (the embedding to
    the first stage, the final norm, the head and the loss to the last), and one read by two
    stages (a tied weight) is refused. Each stage becomes a `tg.model @<name>.stage<k>`
    (attributes `dist.stage`, `dist.stages`) with only its parameters and a `@forward` that
    maps the tokens (first stage) or the previous stage's activation to its output
    activation, or, on the last stage, the activation and the labels to the loss. Exactly
    one activation may cross each stage boundary (the residual stream).

    `tg-autodiff` then builds each stage's backward: a stage that returns an activation takes
    its gradient as a last argument, and a stage that takes an activation returns its
    gradient last.
  }];
  let dependentDialects = ["::mlperf::dist::DistDialect", "::mlperf::tg::TGDialect"];
}

def DistPartitionPass : Pass<"dist-partition", "::mlir::ModuleOp"> {
  let summary = "Turns the train step into the program of one rank of the model's mesh";
  let description = [{
    Rewrite class: reassociation (sums over ranks instead of over one rank's micro-batches).

    Runs after `tg-optimizer` on a model with a `dist.mesh` (placed by
    `dist-tensor-parallel`):

    - the tensor-parallel region ops become collectives: `dist.reduce_from_region` an
      `all_reduce_start` / `done` pair over tp, `dist.copy_to_region` its input;
    - data parallelism: every rank runs `@forward_backward` on its own micro-batches (the
      loss is scaled by 1 / (micro-batches × dp) in `tg-autodiff`), so summing gradients over
      dp gives the global batch's mean-loss gradient. With `zero = 0` each gradient is
      all-reduced over dp before clipping and AdamW, which run replicated.
    - `zero = 1` (ZeRO-1, Megatron's distributed optimizer): each gradient is flattened and
      reduce-scattered over dp; the f32 master weights and both moments become 1-D shards
      (`#dist.sharding<@mesh, [["dp"]]>` on their arguments); AdamW updates the shard and the
      new parameter is the all-gather of the shard rounded to the parameter's type. Every
      parameter's (local) element count must divide by dp.
    - the global norm counts every element once: the sum of squares of tp-split gradients is
      all-reduced over tp, replicated ones are added once, and with ZeRO-1 the result is
      all-reduced over dp before the square root.
    - `zero = 3` shards the optimizer state as zero = 1 does, and `@optimizer_step` returns
      each new parameter as its rounded shard, not gathered: `dist-shard-parameters` then
      shards the parameters themselves.
    - hybrid sharding (the mesh's `hsdp` > 0): the shards are over `dp_shard` (groups of
      hsdp data-parallel ranks) instead of dp, each reduce-scattered shard is then
      all-reduced over `dp_replicate`, and the global norm sums squares over `dp_shard`.

    Before (zero = 1, dp = 2):

    ```mlir
    %n = tg.global_norm %g : tensor<64x64xf32>
    %w, %m2, %v2 = tg.adamw %master, %m, %v, %g, %lr, %c, %step {...} : tensor<64x64xf32>, tensor<64x64xf32>
    ```

    After:

    ```mlir
    %flat = tg.reshape %g : tensor<64x64xf32> -> tensor<4096xf32>
    %f = dist.reduce_scatter_start %flat over @mesh ["dp"] : tensor<4096xf32> -> !dist.future<tensor<2048xf32>>
    %gs = dist.done %f : !dist.future<tensor<2048xf32>> -> tensor<2048xf32>
    %ss = tg.sum_squares %gs : tensor<2048xf32>
    ... all-reduce %ss over dp, tg.sqrt, tg.clip_coefficient ...
    %w, %m2, %v2 = tg.adamw %master, %m, %v, %gs, ... : tensor<2048xf32>, tensor<2048xf32>
    ... all-gather %w over dp, tg.reshape to tensor<64x64xf32> ...
    ```
  }];
  let dependentDialects = ["::mlperf::dist::DistDialect", "::mlperf::tg::TGDialect"];
}

def DistLowerVocabLossPass : Pass<"dist-lower-vocab-loss", "::mlir::ModuleOp"> {
  let summary = "A loss over a vocabulary split over ranks as local pieces and all-reduces";
  let description = [{
    Rewrite class: exact (the split loss's own combination, as ops: the same maxima, f64
    sums and order).

    Runs after `dist-partition` on a model whose `tg.cross_entropy`,
    `tg.linear_cross_entropy` or their gradients carry `vocab_shard_axis`
    (`dist-tensor-parallel`'s vocab-parallel loss, Megatron-LM's): each becomes

    - `tg.vocab_max` (or `tg.linear_vocab_max`, which computes the logits chunk by chunk):
      each token's largest logit on this rank, then their maximum over the axis
      (`dist.all_reduce_start {reduction = "max"}`);
    - `tg.vocab_stats` (`tg.linear_vocab_stats`): each token's sum of exponentials and label
      logit on this rank in f64, summed over the axis (one f64 all-reduce);
    - `tg.vocab_loss` for the loss, `tg.vocab_cross_entropy_grad`
      (`tg.linear_vocab_cross_entropy_grad`) for its gradient, local from there on.

    A gradient over the same logits and labels as a loss earlier in its function reuses that
    loss's combined statistics (they are the same values), so the backward adds no
    collective. The collectives are plan commands like any other: `plan-schedule` moves
    them, the step-time model costs them and no kernel talks to other ranks. The fused form
    computes its logits once more in the forward (once for the maxima, once for the sums),
    the price of the unsplit loss's bits.

    ```mlir
    // before (tp = 2)
    %loss = tg.cross_entropy %logits, %labels {vocab_shard_axis = "tp"}
        : tensor<2x8x128xf32>, tensor<2x8xi64> -> tensor<f32>
    // after
    %m = tg.vocab_max %logits : tensor<2x8x128xf32> -> tensor<2x8xf32>
    %fm = dist.all_reduce_start %m over @mesh ["tp"] {reduction = "max"}
        : tensor<2x8xf32> -> !dist.future<tensor<2x8xf32>>
    %max = dist.done %fm : !dist.future<tensor<2x8xf32>> -> tensor<2x8xf32>
    %s = tg.vocab_stats %logits, %labels, %max {vocab_shard_axis = "tp"}
        : tensor<2x8x128xf32>, tensor<2x8xi64>, tensor<2x8xf32> -> tensor<2x2x8xf64>
    %fs = dist.all_reduce_start %s over @mesh ["tp"]
        : tensor<2x2x8xf64> -> !dist.future<tensor<2x2x8xf64>>
    %stats = dist.done %fs : !dist.future<tensor<2x2x8xf64>> -> tensor<2x2x8xf64>
    %loss = tg.vocab_loss %max, %stats, %labels
        : tensor<2x8xf32>, tensor<2x2x8xf64>, tensor<2x8xi64> -> tensor<f32>
    ```
  }];
  let dependentDialects = ["::mlperf::tg::TGDialect", "::mlperf::dist::DistDialect"];
}

def DistShardParametersPass : Pass<"dist-shard-parameters", "::mlir::ModuleOp"> {
  let summary = "ZeRO-3 / FSDP: parameters held as dp shards, gathered where they are read";
  let description = [{
    Rewrite class: exact (an all-gather reassembles the bits the replicated parameter held).

    Runs on a model whose `dist.mesh` has `zero = 3` and dp > 1, after `dist-partition`
    (which returns the new parameters from `@optimizer_step` as their rounded shards) and
    `tg-recompute` (so that the backward's recomputed ops read the backward's gather), and
    before `tg-train-step`. For every parameter (frozen ones too):

    - the `tg.param` becomes this rank's 1/dp of the flattened (tensor-parallel local)
      parameter (1/hsdp over `dp_shard` with hybrid sharding), the layout of a ZeRO-1
      shard; `dist.zero_shard` records the axis and
      `dist.unsharded_type` the type it is a shard of (what `tg-train-step` draws at
      initialization, the gradient's type, and what `--init-from` slices);
    - in every function, each `tg.param_ref` yields the shard, and the parameter is gathered
      (`dist.all_gather_start` over dp, `dist.done`, `tg.reshape`) right before its first
      read in the forward half and again before its first read in the backward half (after
      the op computing the function's first result), so that the full parameter lives only
      while a layer runs, as PyTorch FSDP unshards a module for its forward and again for its
      backward. `plan-schedule` later starts the gathers early (prefetch) within its memory
      limit.

    Gradients keep their full local type here; `dist-decompose-collectives` then makes each
    micro-batch's backward reduce-scatter them in buckets into shard-sized sums (as for
    zero = 2). Fails, naming the parameter, if its element count does not divide by dp.

    ```mlir
    // before (dp = 2): tg.param @w : tensor<64x64xbf16>
    %w = tg.param_ref @w : tensor<64x64xbf16>
    %y = tg.matmul %x, %w ...
    // after: tg.param @w : tensor<2048xbf16> {dist.unsharded_type = tensor<64x64xbf16>, dist.zero_shard = "dp"}
    %s = tg.param_ref @w : tensor<2048xbf16>
    %f = dist.all_gather_start %s over @mesh ["dp"] : tensor<2048xbf16> -> !dist.future<tensor<4096xbf16>>
    %g = dist.done %f : !dist.future<tensor<4096xbf16>> -> tensor<4096xbf16>
    %w = tg.reshape %g : tensor<4096xbf16> -> tensor<64x64xbf16>
    %y = tg.matmul %x, %w ...
    ```
  }];
  let dependentDialects = ["::mlperf::dist::DistDialect", "::mlperf::tg::TGDialect"];
}

def TGFp8Pass : Pass<"tg-fp8", "::mlir::ModuleOp"> {
  let summary = "Runs the layer stack's linears in fp8 with explicit scaling state";
  let description = [{
    Rewrite class: precision (approved formats E4M3 and E5M2, per-tensor scaling). After
    tg-train-step (and before dist-decompose-collectives): as Transformer Engine's DelayedScaling (format HYBRID) runs
    under Megatron-Core with `fp8_params`, but with the scaling state as train-state values
    (docs/numerics.md, "fp8"):

    - the linears `x · Wᵀ` whose weight is a bf16 matrix of the declared layer stack (a
      `tg.param` with `layer`) read only by linears and their data gradients; the linears
      reading one input form a GEMM group (q/k/v, gate/up), named by its first weight, with
      one scale per role (input, weight, output gradient), as the reference's fused GEMMs;
    - in every function @train_step calls: the input's amax and E4M3 cast, `tg.fp8_matmul`
      forward; the output gradient's amax and E5M2 cast, data gradient `dy · W` and weight
      gradient `dyᵀ · x` from the casts; the input's and gradient's `tg.fp8_scale_update`
      (histories and scales in as arguments, out as results); in the functions @eval_step
      calls the same forward without updates;
    - the weights are stored in E4M3 (the `tg.param`'s type): @optimizer_step casts each new
      f32 master with the group's weight scale, then updates that scale from the masters'
      amax and returns the scale it cast with; @init_params draws the bf16 value, starts the
      master from it and casts it with scale 1, @init_optimizer no longer starts those masters;
    - @train_step threads the state through its calls in step order (micro-batch j casts with
      the scales micro-batch j - 1 left) and returns it; every value has a `tg.role`
      (`fp8_input_history`, `fp8_input_scale`, `fp8_grad_history`, `fp8_grad_scale`,
      `fp8_weight_history`, `fp8_weight_scale`, `fp8_weight_cast_scale`) and the group as
      `tg.param`, so checkpoints carry it. The model records the recipe as `tg.fp8`.

    On a mesh, every amax (the inputs' and gradients' of a call, the weights' after the
    optimizer's cast, the initial weights') is reduced with MAX over the data- and
    tensor-parallel ranks: one all-gather per mesh axis of more than one rank for all of them,
    then the maximum per amax. With ZeRO-1 each rank casts its master shard and the fp8
    shards are gathered. Copies of forward linears tg-recompute made cast their input with the
    same scale.

    `recipe=current` is Float8CurrentScaling instead: every cast's scale from its own tensor's
    amax (`tg.fp8_current_scale`: the group's input before the forward GEMMs, the group's
    output gradients once all are complete, the new masters after the optimizer, the draw at
    init), no histories; the only state is the weights' cast scale per group. The amaxes are
    not reduced over ranks (each rank's GEMM dequantizes its own operands) except the masters'
    over dp with ZeRO-1 (the gathered shards share a scale). Not yet: pipeline stages, the
    `mxfp8` recipe.
  }];
  let options = [
    Option<"recipe", "recipe", "std::string", /*default=*/"\"delayed\"",
           "delayed (Transformer Engine DelayedScaling) or current (Float8CurrentScaling)">,
    Option<"amaxHistory", "amax-history", "int64_t", /*default=*/"4",
           "amax history length">,
    Option<"amaxComputeAlgo", "amax-compute-algo", "std::string",
           /*default=*/"\"most_recent\"", "most_recent or max">,
    Option<"margin", "margin", "double", /*default=*/"0.0",
           "scale = fp8_max / amax / 2^margin">,
  ];
  let dependentDialects = ["::mlperf::tg::TGDialect", "::mlir::func::FuncDialect"];
}

def TGRecomputePass : Pass<"tg-recompute", "::mlir::ModuleOp"> {
  let summary = "Recomputes forward values in the backward instead of keeping them";
  let description = [{
    Rewrite class: exact. A recomputed value is the same op on the same operands, so the CPU
    backend's kernels give the same bits as the kept value (the MLPerf closed rules allow
    "recomputation of node state").

    In every function tg-autodiff built (`@forward_backward`, the chunk functions of an
    interleaved pipeline rank), a backward op that reads a forward value chosen for recompute
    reads a clone instead, computed just before the first backward op that needs it from
    values that are kept (recursively: a recomputed op whose operand is recomputed too reads
    its clone). The forward value then dies at its last forward use. Per declared layer (the
    parameters' `layer`), one of four levels:

    - keep: nothing recomputed;
    - swiglu: the `tg.swiglu` output (its inputs are kept for its backward anyway);
    - selective: also the attention core, `tg.attention` and the layout ops of its output
      (Korthikanti et al. 2205.05198, Megatron's selective recompute);
    - full: everything the layer computes except what later layers read (its output): the
      layer's forward runs again before its backward (Megatron's full, uniform method).

    `policy` chooses the levels: `none`, `selective` and `full` set every layer to keep,
    selective and full; `auto` recomputes as little as makes each function's activation arena
    (memory planning's placement of the rewritten function, `planFunctionMemory`) fit its
    model's budget: it applies swiglu, then selective, then full, layer by layer from the
    first, in that order of cost per byte saved, and takes the shortest prefix that fits
    (binary search, every candidate placed for real). When even full recompute does not fit,
    it keeps full and the caller reports the overflow.

    On a pipeline stage (a `tg.model` with `dist.stage`), the function of every chunk but the
    pipeline's last is then split in two: `@forward_and_stash` (the forward half, returning
    the output and the stash, the forward values the backward reads) and
    `@backward_from_stash` (the forward's arguments, the stash and the output's gradient to
    what the function returned after its output; `tg.from_stash`), which tg-train-step calls
    at the micro-batch's forward and its backward, so the stage keeps the stash across the
    pipeline window instead of recomputing its forward. There `auto` costs a candidate as
    the larger half's arena plus the stash once per micro-batch in flight (from the 1F1B or
    interleaved schedule of `accumulation-steps` micro-batches) and once in the halves'
    buffers.

    Each function gets `tg.recompute`: the policy, the levels per layer (`first_layer`,
    `levels`: 0 keep, 1 swiglu, 2 selective, 3 full), the recomputed model FLOPs against the
    function's model FLOPs (3 x its forward half), the arena before and after, the budget, and
    on a pipeline chunk the stash before and after and the micro-batches in flight.
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"none\"",
           "none, selective, full or auto">,
    Option<"accumulationSteps", "accumulation-steps", "int64_t", /*default=*/"1",
           "Micro-batches per step on a rank: with the pipeline schedule, how many a stage "
           "keeps across its window">,
    ListOption<"budgets", "budgets", "int64_t",
               "auto: the activation arena bytes each tg.model's differentiated functions may "
               "use, one value for every model or one per model in module order">,
  ];
  let dependentDialects = ["::mlperf::tg::TGDialect"];
}

def TGTrainStepPass : Pass<"tg-train-step", "::mlir::ModuleOp"> {
  let summary = "Builds @train_step, @eval_step and @eval_finish: the whole optimizer step as "
                "one function";
  let description = [{
    Rewrite class: exact (adds functions; the same ops run in the order the runtime used to
    drive them).

    Runs last in the train-step pipeline. For each `tg.model` (one pipeline stage's, with
    dist-pipeline) it adds

    ```mlir
    func.func @train_step(%tokens: tensor<A x rows x seq x i64> {tg.role = "tokens"},
                          %labels: ... {tg.role = "labels"}, %step: tensor<i64> {tg.role = "step"},
                          %master: ... {tg.role = "master", tg.param = @w}, ...)
        -> (params..., masters..., moments..., lr, grad_norm, losses: tensor<(dp·A)xf32>)
    func.func @eval_step(%tokens: tensor<rows x seq x i64>, %labels: ...,
                         %running: tensor<2xf64> {tg.role = "eval_sum"}) -> (eval_sum)
    func.func @eval_finish(%running: tensor<2xf64> {tg.role = "eval_sum"})
        -> (loss: tensor<f64>, eval_sum)
    ```

    `@train_step` is everything one optimizer step does on one rank, in order: the `A`
    micro-batches (`accumulation-steps`) are sliced from the batch inputs (`tg.split` along
    dim 0, `tg.reshape`), each runs `@forward_backward` (a `func.call`), the gradients are
    summed with `tg.add` in their own type in the order the backwards complete (bf16 in the
    reference: `grad_reduce_in_fp32` off), and `@optimizer_step` is called with the sums and
    the optimizer state. Its results and the vector of micro-batch losses (all-gathered over
    `dp` in rank order) are returned; every argument and result carries its `tg.role`
    (`runtime/plan/StepRoles.h`).

    With pipeline parallelism the calls follow the schedule of `runtime/dist/PipelineSchedule.h`
    for this stage (Megatron's 1F1B, or the interleaved order with one `@forward.chunk<c>`
    pair per model chunk): a forward receives its input activation (`dist.recv_start` /
    `dist.done` over `pp`, tag 16 + 2·v for virtual stage v), calls `@forward` and sends the
    output on; a backward recomputes the forward from the stashed input, receives the output's
    gradient (tag 17 + 2·v), calls `@forward_backward` and sends its input's gradient back.
    Only the first stage takes tokens and only the last labels; the last stage sends the
    loss vector to the first (tag 1), whose ranks log it.

    `@eval_step` runs one micro-batch through `@forward` of every chunk in virtual-stage
    order, with the same transfers, and on the last stage adds the loss to the running mean
    (`tg.mean_accumulate`: f64 [sum, count], kept in persistent memory between calls).
    `@eval_finish` sums the running mean over `pp` (the other stages' is zero) and then `dp`
    (`dist.all_reduce_start`, in rank order) and divides (`tg.mean_finish`, which also
    starts the running mean again): every rank gets the mean of every micro-batch.

    Fails, naming the function, if `@optimizer_step` lacks `tg.role`s, a stage's backward
    does not return the gradient of a parameter the optimizer updates, or the schedule does
    not exist (interleaving needs a multiple of pp micro-batches).
  }];
  let options = [
    Option<"accumulationSteps", "accumulation-steps", "int64_t", /*default=*/"1",
           "Micro-batches per optimizer step on one data-parallel rank">,
  ];
  let dependentDialects = ["::mlperf::dist::DistDialect", "::mlperf::tg::TGDialect",
                           "::mlir::func::FuncDialect"];
}

def DistDecomposeCollectivesPass : Pass<"dist-decompose-collectives", "::mlir::ModuleOp"> {
  let summary = "Reduces gradients over dp in buckets, in the backward that completes them";
  let description = [{
    Rewrite class: reassociation (the buckets' collectives sum each element over the ranks in
    group order, as the per-parameter ones did: the CPU backend's bits do not change, but a
    collective library may order the sum of a larger message differently).

    Runs after `tg-train-step` on a model with a `dist.mesh` whose dp > 1 (otherwise it does
    nothing). `dist-partition` left one dp collective per gradient in `@optimizer_step`: an
    all-reduce, or with ZeRO-1 a reduce-scatter of the flattened gradient (after a tp
    all-reduce for a sequence-parallel weight). As the `call` of `@optimizer_step` is a
    barrier, none of them can overlap the backward. This pass

    - copies the backward whose call completes the gradient sums (the last micro-batch's
      `@forward_backward`, or a pipeline stage's last `@backward_from_stash`, per model chunk)
      to `@<name>.reduce` and calls the copy there instead;
    - moves every gradient's reduction chain from `@optimizer_step` into the copy: the
      optimizer's gradient argument becomes the reduced value (a ZeRO-1 shard);
    - packs the gradients into **buckets** in the order the backward completes them (Megatron's
      DDP buckets): a gradient is viewed as `[rows, n/rows]` (rows = dp for a reduce-scatter,
      so that row r is rank r's shard, 1 for an all-reduce), buckets take consecutive column
      ranges up to `bucket-bytes` (default Megatron's 40 M elements), cutting a gradient where a
      bucket fills up (so a very large collective is **chunked**), and each bucket is one
      collective over the `tg.concat` of its pieces along dim 1, flattened;
    - starts a bucket's collective right after its last piece is computed and puts its
      `dist.done`, and the `tg.split` / `tg.concat` that reassemble each gradient, before the
      copy's return. `plan-schedule` then lets the rest of the backward run meanwhile.

    ZeRO-2 and ZeRO-3 (`zero` 2 or 3) with several micro-batches: instead of a copy, the backward itself
    reduce-scatters its gradients in the buckets above every micro-batch, and each returned
    sum becomes `tg.add %shard_sum, %reduced_shard` with the accumulator argument (role
    `grad`) shard-sized; every call of it in `@train_step` passes the shard sums, starting
    from shard-sized `tg.fill` zeros. With hybrid sharding the shard sums' all-reduce over
    `dp_replicate` stays in `@optimizer_step` (once a step).

    With ZeRO-1 the global norm's per-shard partial sums stay in `@optimizer_step`, so only
    its one scalar all-reduce waits there. ZeRO-1's all-gathers of the updated f32/bf16
    parameter shards there are packed into buckets too, in update order and without cutting
    a parameter (one that fills a bucket alone keeps its gather): the shards' `tg.concat`
    is gathered once right after the last shard's old gather, viewed as `[dp, columns]` and
    split along dim 1 into `[dp, n/dp]` pieces, each reshaped into the whole parameter (ops
    that read a gathered parameter earlier move after the pieces). An all-reduce (zero=0) is kept whole rather than
    decomposed into a reduce-scatter and an all-gather: without sharded optimizer state
    nothing would use the sharded middle.

    ```mlir
    // before, in @optimizer_step (zero=1, dp=2):
    %flat = tg.reshape %g : tensor<64x64xbf16> -> tensor<4096xbf16>
    %f = dist.reduce_scatter_start %flat over @mesh ["dp"] : tensor<4096xbf16> -> !dist.future<tensor<2048xbf16>>
    // after, in @forward_backward.reduce, after the backward computed %g and %h (64 elements):
    %gv = tg.reshape %g : tensor<64x64xbf16> -> tensor<2x2048xbf16>
    %hv = tg.reshape %h : tensor<64xbf16> -> tensor<2x32xbf16>
    %b = tg.concat %hv, %gv {dim = 1 : i64} : ... -> tensor<2x2080xbf16>
    %bf = tg.reshape %b : tensor<2x2080xbf16> -> tensor<4160xbf16>
    %f = dist.reduce_scatter_start %bf over @mesh ["dp"] : tensor<4160xbf16> -> !dist.future<tensor<2080xbf16>>
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"0",
           "Bytes of gradient per bucket (mlperfc --bucket-mib); 0: 40 M elements (Megatron)">,
  ];
  let dependentDialects = ["::mlperf::dist::DistDialect", "::mlperf::tg::TGDialect",
                           "::mlir::func::FuncDialect"];
}

def PlanFromTGPass : Pass<"plan-from-tg", "::mlir::ModuleOp"> {
  let summary = "Builds the execution plan (plan dialect) of a lowered train step";
  let description = [{
    Rewrite class: exact (a representation change: one command per op, in op order). For each `tg.model` that has
    `@forward`, `@forward_backward`, `@optimizer_step`, `@train_step` and `@eval_step` (the
    train-step pipeline's output), appends a `plan.plan` to the module:

    - persistent buffers, per parameter its value, gradient and f32 master and moments
      (`grad.<name>`, `optimizer.master.<name>`, ...), the batch inputs, `loss`, `step`,
      `lr` and `grad_norm`, and a `plan.parameter` tying them to the Hugging Face name;
    - per function a `plan.program` whose commands are its ops in order, one
      `plan.command` per op with the op's attributes, reading and writing buffers: the
      arguments are the program's inputs, returned values are written straight into its
      output buffers (a `copy` where a value is returned that another op produced), every
      other result gets an activation buffer (`<function>.<op>.<n>`), and a reshape's
      result is a view of its input's bytes;
    - `@train_step`, `@eval_step` and `@eval_finish` become the programs the runtime runs,
      their inputs and
      outputs found by `tg.role` (`input_roles` / `output_roles`): a `func.call` copies its
      operands into the callee's input buffers (none where the value is already there) and
      becomes a `call` command; values that live in a callee's buffers and are read at or
      after the call (an earlier micro-batch's loss) are first copied to `<function>.saved.<n>`;
      a value read only as a call's input is produced straight into that input buffer (the
      zeroed gradient sums, a received cotangent); `dist.send_start` / `dist.recv_start`
      become `send` / `recv` commands (`axis`, `shift`, `tag`) on the communication stream.

    A `dist.mesh` in the model becomes the plan's `mesh`; a collective's start/done pair
    becomes one command (`all_reduce`, `reduce_scatter`, `all_gather`, attributes `axis`,
    `dim`) on stream 1 after an `event_wait` for stream 0's `event_record`, followed by an
    `event_record` that stream 0 waits for (the program then has 2 streams); a model with
    several chunk functions gets a program pair per chunk; optimizer state with `#dist.sharding` on its argument is a 1-D
    shard and its `plan.parameter` records `shard_axis` and `shard_count`.

    Offsets are left for `plan-memory`. The `tg.model` stays (audits compare the two).

    ```mlir
    // before: func.func @forward(%tokens, %labels) { %e = tg.embedding %w, %tokens ... }
    // after:
    plan.program @forward inputs [@"input.tokens", @"input.labels"] outputs [@loss] {
      plan.command "embedding" [@"model.embed_tokens.weight", @"input.tokens"]
          -> [@"forward.embedding.0"]
      ...
    }
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "The precision the train step was lowered at, recorded in the plan">,
    Option<"accumulationSteps", "accumulation-steps", "int64_t", /*default=*/"1",
           "Micro-batches per optimizer step, recorded in the plan">,
  ];
  let dependentDialects = ["::mlperf::plan_ir::PlanDialect"];
}

def PlanSchedulePass : Pass<"plan-schedule", "::mlir::ModuleOp"> {
  let summary = "Latency-hiding order: collectives start early and are waited for late";
  let description = [{
    Rewrite class: exact (commands only change places where no buffer and no event orders
    them: every command reads the same values).

    Runs between `plan-from-tg` and `plan-memory`. `plan-from-tg` emits each collective as
    five commands, `event_record` (stream 0), `event_wait` (stream 1), the collective (stream
    1), `event_record` (stream 1), `event_wait` (stream 0): nothing overlaps. Per program, in
    program order, this pass

    - moves each collective's *start* (the first four) above the compute-stream commands
      before it that do not write what it reads nor touch what it writes; never above a
      `call` (a barrier), an event or a communication-stream command, so the communication
      stream keeps its order (the same on every rank: collectives must match);
    - then moves each *done* (the last `event_wait`) below the commands after it that
      neither read what the collective writes nor write what it touches (the other
      collectives' events and communication included), never below a `call`, and never so
      far that more than `max-outstanding` collectives are in flight at once;
    - bounded by a hard memory limit: a collective's buffers stay alive from its start to its
      done (`plan-memory` places them so), and no move may raise the program's peak of live
      activation bytes (a `call` counting its callee's peak) above the limit, less what the
      program's callers keep alive at a call of it. The limit is `memory-limit`, or else the
      unscheduled plan's peak. (Not the device's room by default: the limit bounds live
      bytes, placement adds fragmentation on top, and a schedule filling the device would
      make `--device` refuse the plan or recompute more, costing more than it hides.)
      The schedule with every move at its farthest is tried first; if it passes the limit,
      each move goes only as far as stays within it (a binary search per move, the peak
      growing the farther a move goes). A program already over the limit keeps its peak.
      The limit bounds that lower bound; the arena plan-memory places is larger by its
      fragmentation and because a caller's buffers are stacked above its callees'.

    In a backward that reduces gradient buckets (`dist-decompose-collectives`) the bucket
    of the last layers is reduced while the earlier layers' backward runs; in
    `@optimizer_step` the all-gathers of new parameters overlap the later parameters' AdamW.

    ```mlir
    // before
    plan.command "event_record" [] -> [] {event = 0 : i64}
    plan.command "event_wait" [] -> [] {event = 0 : i64, stream = 1 : i64}
    plan.command "reduce_scatter" [@bucket] -> [@shard] {kernel_attrs = {axis = "dp"}, stream = 1 : i64}
    plan.command "event_record" [] -> [] {event = 1 : i64, stream = 1 : i64}
    plan.command "event_wait" [] -> [] {event = 1 : i64}
    plan.command "matmul" [@dy, @x] -> [@dw]
    plan.command "split" [@shard] -> [@g0, @g1]
    // after: the matmul runs while the reduce-scatter does
    ... "reduce_scatter" ... "event_record" {stream = 1} ...
    plan.command "matmul" [@dy, @x] -> [@dw]
    plan.command "event_wait" [] -> [] {event = 1 : i64}
    plan.command "split" [@shard] -> [@g0, @g1]
    ```
  }];
  let options = [
    Option<"memoryLimit", "memory-limit", "int64_t", /*default=*/"0",
           "Most activation bytes alive at once (0: the unscheduled plan's peak)">,
    Option<"maxOutstanding", "max-outstanding", "int64_t", /*default=*/"4",
           "Most collectives in flight at once per program">,
  ];
  let dependentDialects = ["::mlperf::plan_ir::PlanDialect"];
}

def PlanMemoryPass : Pass<"plan-memory", "::mlir::ModuleOp"> {
  let summary = "Liveness of plan buffers and static arena offsets";
  let description = [{
    Rewrite class: exact (memory placement: no math changes). Persistent buffers get consecutive
    256-byte aligned slots. Activation buffers are alive from the first command that uses
    them to the last command that uses them (a view keeps its source alive) within their
    program; each program's buffers are placed by first fit (largest first and longest-lived
    first, keeping the smaller arena) so that live buffers never overlap, and programs share
    the activation arena. A program that `call`s others places its buffers above the highest
    byte of every callee (their temporaries are live during the call), so callees must come
    first in the plan; its lower bound counts a callee's at each call. Sets every buffer's offset, each arena's `size`, and the activation
    arena's `lower_bound` (most bytes alive at once, which no placement can beat).

    ```mlir
    // before: plan.buffer @"forward.matmul.3" : tensor<1x32x64xbf16> in @activations
    // after:  plan.buffer @"forward.matmul.3" : tensor<1x32x64xbf16> in @activations at 4096
    ```
  }];
  let dependentDialects = ["::mlperf::plan_ir::PlanDialect"];
}

#endif // MLPERFC_COMPILER_TRANSFORMS_PASSES_TD
