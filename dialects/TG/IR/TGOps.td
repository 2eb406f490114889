//===- TGOps.td - Training-graph dialect ops ---------------*- tablegen -*-===//

#ifndef MLPERFC_DIALECTS_TG_IR_TGOPS_TD
#define MLPERFC_DIALECTS_TG_IR_TGOPS_TD

include "dialects/TG/IR/TGBase.td"
include "dialects/TG/IR/TGInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def TG_AddOp : TG_Op<"add", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, Elementwise, Commutative, SameOperandsAndResultType]> {
  let summary = "Elementwise addition (residual connections)";
  let description = [{
    `result[i] = lhs[i] + rhs[i]`. Both operands have the same shape and element type; there
    is no implicit broadcasting, so every broadcast in a model is visible in the IR.

    ```mlir
    %h = tg.add %x, %attn : tensor<8x32x64xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def TG_MulOp : TG_Op<"mul", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, Elementwise, Commutative, SameOperandsAndResultType]> {
  let summary = "Elementwise multiplication (SwiGLU gating)";
  let description = [{
    `result[i] = lhs[i] * rhs[i]`, same shapes and element type, no implicit broadcasting.

    ```mlir
    %h = tg.mul %gate, %up : tensor<8x32x160xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def TG_ScaleOp : TG_Op<"scale", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "Multiplies every element by a constant";
  let description = [{
    `result[i] = input[i] * factor` (attention's `1/sqrt(head_dim)`), computed at least in
    f32 and rounded to the element type.

    ```mlir
    %s = tg.scale %scores {factor = 0.125 : f64} : tensor<8x4x32x32xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, F64Attr:$factor);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_SiluOp : TG_Op<"silu", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "Sigmoid linear unit, x * sigmoid(x)";
  let description = [{
    `result[i] = x / (1 + exp(-x))`, computed in f32 (the SwiGLU activation).

    ```mlir
    %a = tg.silu %gate : tensor<8x32x160xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def TG_SwigluOp : TG_Op<"swiglu", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "SwiGLU gating, silu(gate) · up, in one op";
  let description = [{
    `result[i] = silu(gate[i]) · up[i]` with `silu(gate)` rounded to the element type before
    the product: exactly `tg.mul(tg.silu(gate), up)`, which tg-fuse-swiglu replaces. Its VJP
    (`tg.swiglu_grad`) recomputes `silu(gate)` instead of keeping it: one `[tokens, ffn]`
    tensor less per layer saved for backward.

    ```mlir
    %g = tg.swiglu %gate, %up : tensor<1x8192x14336xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$gate, TG_Tensor:$up);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

def TG_ConvertOp : TG_Op<"convert", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, Elementwise, SameOperandsAndResultShape]> {
  let summary = "Converts between floating-point element types (round to nearest even)";
  let description = [{
    Widening (bf16 → f32) is exact; narrowing rounds to nearest, ties to even, and saturates
    nothing: values beyond the target's range become infinities, or NaN for f8E4M3FN, which
    has no infinity (fp8 scaling is tg-fp8's job, with explicit scales).

    ```mlir
    %p16 = tg.convert %p : tensor<8x4x32x32xf32> -> tensor<8x4x32x32xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

def TG_EmbeddingOp : TG_Op<"embedding", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface, ["applySplit"]>, Pure, InferTypeOpAdaptor]> {
  let summary = "Token embedding lookup";
  let description = [{
    `result[..., :] = table[ids[...], :]` for a table of shape `[vocab, hidden]`. An id outside
    `[0, vocab)` is a data error the runtime reports; it is not clamped.

    With `vocab_shard_axis` (vocab-parallel embedding, `dist-tensor-parallel`), `table` is
    this rank's slice `[k·V/G, (k+1)·V/G)` of a V-row table split over the G ranks of that mesh
    axis (k: the rank's index on it): rows of other ranks' ids are zero, and the sum over the
    axis is the full embedding.

    ```mlir
    %h = tg.embedding %table, %ids : tensor<256x64xbf16>, tensor<8x32xi32> -> tensor<8x32x64xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$table, TG_IndexTensor:$ids,
                       OptionalAttr<StrAttr>:$vocab_shard_axis);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$table `,` $ids attr-dict `:` type($table) `,` type($ids) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def TG_RMSNormOp : TG_Op<"rms_norm", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure]> {
  let summary = "Root-mean-square normalization over the last dimension";
  let description = [{
    For each row `x` along the last dimension of size `D`:
    `result = x / sqrt(mean(x * x) + epsilon) * weight`, with `weight` of shape `[D]`.
    The mean and the reciprocal square root are computed in f32 whatever the storage type
    (as the reference's fused RMSNorm kernels do). The result has the input's type, or f32
    (`-> tensor<...xf32>`): the unrounded output an fp8 cast reads directly, as Transformer
    Engine's LayerNormLinear quantizes its norm's f32 output.

    ```mlir
    %y = tg.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<8x32x64xbf16>, tensor<64xbf16>
    %z = tg.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<8x32x64xbf16>, tensor<64xbf16> -> tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, TG_Tensor:$weight, F64Attr:$epsilon);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight)
    custom<WiderResult>(ref(type($input)), type($result))
  }];
  let hasVerifier = 1;
}

def TG_AddRMSNormOp : TG_Op<"add_rms_norm", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure,
    AllTypesMatch<["lhs", "rhs", "sum", "normed"]>]> {
  let summary = "Residual add and RMSNorm of the sum, fused";
  let description = [{
    Exactly `sum = tg.add(lhs, rhs)` and `normed = tg.rms_norm(sum, weight)`, both results
    (the residual stream goes on with `sum`): what tg-fuse-add-rms-norm replaces. One pass over
    the row instead of two on a GPU; the same values.

    ```mlir
    %h, %hn = tg.add_rms_norm %x, %attn, %w {epsilon = 1.0e-05 : f64}
        : tensor<1x8192x4096xbf16>, tensor<4096xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs, TG_Tensor:$weight, F64Attr:$epsilon);
  let results = (outs TG_Tensor:$sum, TG_Tensor:$normed);
  let assemblyFormat = "$lhs `,` $rhs `,` $weight attr-dict `:` type($lhs) `,` type($weight)";
}

def TG_RopeOp : TG_Op<"rope", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Rotary position embedding, rotate-half form, with optional Llama 3.1 scaling";
  let description = [{
    The input is `[batch, seq, heads, head_dim]`; token `s` has position `s` (positions are not
    reset at document boundaries, as in the reference). For `i < head_dim/2`, with
    `x1 = x[..., i]`, `x2 = x[..., i + head_dim/2]` and angle `a = s * f_i`:
    `out[..., i] = x1 cos a - x2 sin a`, `out[..., i + head_dim/2] = x2 cos a + x1 sin a`
    (the non-interleaved form of Hugging Face Llama and NeMo `rotary_interleaved=False`).

    Base frequencies `f_i = theta^(-2i/head_dim)`. With the Llama 3.1 scaling attributes
    (`scaling_factor`, `low_freq_factor`, `high_freq_factor`, `original_max_position`, all or
    none), each `f_i` with wavelength `w = 2π/f_i` becomes: `f_i` if
    `w < original_max_position / high_freq_factor`; `f_i / scaling_factor` if
    `w > original_max_position / low_freq_factor`; otherwise `(1 - t) f_i / scaling_factor + t f_i`
    with `t = (original_max_position / w - low_freq_factor) / (high_freq_factor - low_freq_factor)`.
    Angles are computed in f32. With `inverse`, rotates by the negative angle: the inverse
    rotation, which is also the rotation's vector-Jacobian product.

    ```mlir
    %q = tg.rope %x {theta = 5.0e+05 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 1.0 : f64,
                     high_freq_factor = 4.0 : f64, original_max_position = 8192 : i64}
        : tensor<1x8192x32x128xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, F64Attr:$theta, UnitAttr:$inverse,
                       OptionalAttr<F64Attr>:$scaling_factor,
                       OptionalAttr<F64Attr>:$low_freq_factor,
                       OptionalAttr<F64Attr>:$high_freq_factor,
                       OptionalAttr<I64Attr>:$original_max_position);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def TG_RopeQKOp : TG_Op<"rope_qk", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure,
    AllTypesMatch<["query", "query_result"]>, AllTypesMatch<["key", "key_result"]>]> {
  let summary = "Rotary position embedding of the queries and keys, fused";
  let description = [{
    Exactly two `tg.rope` with these attributes, one on `query` `[batch, seq, heads, head_dim]`
    and one on `key` `[batch, seq, kv_heads, head_dim]`: what tg-fuse-rope-qk replaces. One
    kernel computes the angles once for both on a GPU; the same values. With `inverse`, both
    rotate back (the VJP).
  }];
  let arguments = (ins TG_Tensor:$query, TG_Tensor:$key, F64Attr:$theta, UnitAttr:$inverse,
                       OptionalAttr<F64Attr>:$scaling_factor,
                       OptionalAttr<F64Attr>:$low_freq_factor,
                       OptionalAttr<F64Attr>:$high_freq_factor,
                       OptionalAttr<I64Attr>:$original_max_position);
  let results = (outs TG_Tensor:$query_result, TG_Tensor:$key_result);
  let assemblyFormat = "$query `,` $key attr-dict `:` type($query) `,` type($key)";
}

//===----------------------------------------------------------------------===//
// Attention primitives
//===----------------------------------------------------------------------===//

def TG_CausalMaskOp : TG_Op<"causal_mask", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Masks attention scores of future keys with -infinity";
  let description = [{
    On `[..., queries, keys]` scores with `queries == keys`: `result[..., q, k] = -inf` when
    `k > q`, or with a `window` W when `k < q − W` (sliding-window attention: each query sees
    itself and the W keys before it, Transformer Engine's window (W, 0)), else
    `input[..., q, k]`. With `gradient`, the masked entries are 0 instead: the op's
    vector-Jacobian product.

    ```mlir
    %m = tg.causal_mask %scores : tensor<8x4x32x32xf32>
    %w = tg.causal_mask %scores {window = 128 : i64} : tensor<8x4x32x32xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, UnitAttr:$gradient, OptionalAttr<I64Attr>:$window);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_SoftmaxOp : TG_Op<"softmax", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Softmax along one dimension";
  let description = [{
    `result = exp(x - max(x)) / sum(exp(x - max(x)))` along `dim`, computed in f32 and rounded
    once to the element type. A row of only -inf is an error the runtime reports.

    ```mlir
    %p = tg.softmax %scores {dim = 3 : i64} : tensor<8x4x32x32xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, I64Attr:$dim);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_RepeatOp : TG_Op<"repeat", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, InferTypeOpAdaptor]> {
  let summary = "Repeats each slice along a dimension (grouped-query attention's KV sharing)";
  let description = [{
    Size `n` along `dim` becomes `n * times`; `result[..., j, ...] = input[..., j / times, ...]`
    (each slice repeated `times` times in place, as Hugging Face `repeat_kv`). Query head `h`
    thereby reads KV head `h / (heads / kv_heads)`.

    ```mlir
    %k = tg.repeat %kv {dim = 1 : i64, times = 4 : i64} : tensor<8x2x32x16xbf16> -> tensor<8x8x32x16xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, I64Attr:$dim, I64Attr:$times);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def TG_AttentionOp : TG_Op<"attention", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure]> {
  let summary = "Fused scaled-dot-product attention (grouped-query, optionally causal)";
  let description = [{
    `query` is `[batch, heads, seq, head_dim]`, `key` and `value` are
    `[batch, kv_heads, seq, head_dim]` with `heads` a multiple of `kv_heads`: query head `h`
    reads KV head `h / (heads / kv_heads)` (grouped-query attention without materialising
    the repeat). Per batch entry and query head, exactly the unfused graph
    `tg-fuse-attention` replaces:

    - `scores = (query · keyᵀ)` with f32 products and sums (`tg.matmul` to f32), then
      `scores · scale` rounded to f32 (`tg.scale`);
    - with `causal`, key positions after the query's are -inf (`tg.causal_mask`), and with
      a `window` W (only with `causal`) also those more than W before it;
    - `p = softmax(scores)` along keys, in f32 (`tg.softmax`), rounded to `value`'s element
      type (`tg.convert`);
    - `result = p · value` (`tg.matmul` to `result`'s element type).

    `lse` is each row's log-sum-exp in f32, `max + log(Σ exp(scores − max))`: what a fused
    backward needs to recompute `p` without storing it. No `[seq, seq]` tensor is a value:
    kernels work on blocks of query rows, so memory grows linearly with the sequence.
    Kernels may sum in another order (FlashAttention-2's online softmax on GPUs); the CPU
    kernels (runtime/cpu/Attention.h) give exactly the unfused graph's values.

    ```mlir
    %o, %lse = tg.attention %q, %k, %v {scale = 0.125 : f64, causal}
        : tensor<1x32x8192x128xbf16>, tensor<1x8x8192x128xbf16>, tensor<1x8x8192x128xbf16>
        -> tensor<1x32x8192x128xbf16>, tensor<1x32x8192xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$query, TG_Tensor:$key, TG_Tensor:$value, F64Attr:$scale,
                       UnitAttr:$causal, OptionalAttr<I64Attr>:$window);
  let results = (outs TG_Tensor:$result, TG_Tensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:` type($query) `,` type($key) `,` type($value)
        `->` type($result) `,` type($lse)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def TG_TokenMaskOp : TG_Op<"token_mask", [
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure]> {
  let summary = "A loss mask that drops the positions holding one token";
  let description = [{
    `result[...] = 0` where `tokens[...] == masked_token`, else 1 (f32, the tokens' shape):
    Megatron's `eod_mask_loss`, which excludes every position whose input token is the
    end-of-document token from the loss (`tg.cross_entropy`'s mask).

    ```mlir
    %mask = tg.token_mask %tokens {masked_token = 128001 : i64} : tensor<1x8192xi32> -> tensor<1x8192xf32>
    ```
  }];
  let arguments = (ins TG_IndexTensor:$tokens, I64Attr:$masked_token);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = "$tokens attr-dict `:` type($tokens) `->` type($result)";
  let hasVerifier = 1;
}

def TG_LinearCrossEntropyOp : TG_Op<"linear_cross_entropy", [
    DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface, ["applySplit"]>, Pure]> {
  let summary = "Output layer and mean token cross-entropy, fused";
  let description = [{
    Exactly `tg.cross_entropy(tg.matmul(hidden, weight) {transpose_rhs}, labels[, mask])`
    with the logits `[..., vocab]` rounded to `logits_type` (the replaced matmul's result
    element type, "bf16" or "f32"): `hidden` `[..., hidden_size]`, `weight`
    `[vocab, hidden_size]`. Kernels compute the logits and their gradient a chunk of tokens at
    a time, so neither exists for the whole micro-batch (runtime/cpu/LinearCrossEntropy.h).

    With `vocab_shard_axis` (vocab-parallel), `weight` holds this rank's rows of the
    vocabulary and the op combines each token's maxima, sums and label logit over the axis, as
    `tg.cross_entropy` does: the result is the whole loss on every rank.

    ```mlir
    %loss = tg.linear_cross_entropy %hn, %head, %labels {logits_type = "bf16"}
        : tensor<1x8192x4096xbf16>, tensor<128256x4096xbf16>, tensor<1x8192xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_Tensor:$hidden, TG_Tensor:$weight, TG_IndexTensor:$labels,
                       Optional<TG_Tensor>:$loss_mask, StrAttr:$logits_type,
                       OptionalAttr<StrAttr>:$vocab_shard_axis,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = [{
    $hidden `,` $weight `,` $labels (`,` $loss_mask^)? attr-dict `:` type($hidden) `,`
    type($weight) `,` type($labels) (`,` type($loss_mask)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_CrossEntropyOp : TG_Op<"cross_entropy", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface, ["applySplit"]>, Pure]> {
  let summary = "Mean token cross-entropy of logits against labels";
  let description = [{
    With `logits` `[..., vocab]` and integer `labels` `[...]`, per token
    `l = logsumexp(logits) - logits[label]`, computed in f32. The result (an f32 scalar) is the
    mean of `l` over all tokens, or, with the optional f32 `loss_mask` of the labels' shape,
    `sum(l * mask) / sum(mask)`. With `ignore_index` (PyTorch's, e.g. -100 for Hugging Face
    labels), tokens whose label equals it have mask 0 (the mean is over the others); a
    micro-batch with no counted token has loss 0 and gradient 0 (PyTorch would give NaN). Any
    other label outside `[0, vocab)` is a data error the runtime reports.

    With `vocab_shard_axis` (vocab-parallel cross-entropy), `logits` hold this rank's slice of
    the vocabulary (as for tg.embedding); the op combines the row maxima, the sums of
    exponentials and the label logits over the axis (Megatron-LM's vocab-parallel
    cross-entropy), so its result is the full loss on every rank.

    ```mlir
    %loss = tg.cross_entropy %logits, %labels : tensor<8x32x256xf32>, tensor<8x32xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_Tensor:$logits, TG_IndexTensor:$labels,
                       Optional<TG_Tensor>:$loss_mask, OptionalAttr<StrAttr>:$vocab_shard_axis,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = [{
    $logits `,` $labels (`,` $loss_mask^)? attr-dict `:` type($logits) `,` type($labels)
    (`,` type($loss_mask)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Vocabulary-split loss pieces (created by dist-lower-vocab-loss)
//===----------------------------------------------------------------------===//

// Per-token statistics of a vocabulary split over ranks, summed over them in f64.
def TG_F64Tensor : StaticShapeTensorOf<[F64]>;
def TG_F32Tensor : StaticShapeTensorOf<[F32]>;

def TG_VocabMaxOp : TG_Op<"vocab_max", [Pure]> {
  let summary = "Each token's largest logit of this rank's slice of the vocabulary";
  let description = [{
    `result[...] = max_v logits[..., v]` in f32. dist-lower-vocab-loss takes the maximum of
    these over the ranks that split the vocabulary (`dist.all_reduce_start {reduction = "max"}`)
    before `tg.vocab_stats`.
  }];
  let arguments = (ins TG_Tensor:$logits);
  let results = (outs TG_F32Tensor:$result);
  let assemblyFormat = "$logits attr-dict `:` type($logits) `->` type($result)";
  let hasVerifier = 1;
}

def TG_LinearVocabMaxOp : TG_Op<"linear_vocab_max", [Pure]> {
  let summary = "tg.vocab_max of the logits `hidden · weightᵀ` (rounded to `logits_type`)";
  let description = [{
    The logits exist a chunk of tokens at a time, as in `tg.linear_cross_entropy`.
  }];
  let arguments = (ins TG_Tensor:$hidden, TG_Tensor:$weight, StrAttr:$logits_type);
  let results = (outs TG_F32Tensor:$result);
  let assemblyFormat = [{
    $hidden `,` $weight attr-dict `:` type($hidden) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_VocabStatsOp : TG_Op<"vocab_stats", [Pure]> {
  let summary = "Each token's sum of exponentials and label logit on this rank's slice";
  let description = [{
    With `max` the maxima over the whole vocabulary, `result[0, ...] = Σ_v exp(logits[..., v] −
    max[...])` (f64, in column order) and `result[1, ...]` the label's logit where this rank
    holds the label (`[k·V/G, (k+1)·V/G)` for rank k of the G on `vocab_shard_axis`), else 0.
    Summed over the axis (one f64 all-reduce), they are the unsplit loss's sums and label
    logits. A label outside `[0, V)` (other than `ignore_index`) is a data error.
  }];
  let arguments = (ins TG_Tensor:$logits, TG_IndexTensor:$labels, TG_F32Tensor:$max,
                       StrAttr:$vocab_shard_axis, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs TG_F64Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $max attr-dict `:` type($logits) `,` type($labels) `,` type($max)
        `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_LinearVocabStatsOp : TG_Op<"linear_vocab_stats", [Pure]> {
  let summary = "tg.vocab_stats of the logits `hidden · weightᵀ` (rounded to `logits_type`)";
  let arguments = (ins TG_Tensor:$hidden, TG_Tensor:$weight, TG_IndexTensor:$labels,
                       TG_F32Tensor:$max, StrAttr:$logits_type, StrAttr:$vocab_shard_axis,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs TG_F64Tensor:$result);
  let assemblyFormat = [{
    $hidden `,` $weight `,` $labels `,` $max attr-dict `:` type($hidden) `,` type($weight) `,`
        type($labels) `,` type($max) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_VocabLossOp : TG_Op<"vocab_loss", [Pure]> {
  let summary = "The mean token cross-entropy from the combined maxima and statistics";
  let description = [{
    `Σ m·(max + log(stats[0]) − stats[1]) / Σ m` accumulated in f64 in token order, with `m`
    the loss mask (ones without one; 0 where the label is `ignore_index`): what
    `tg.cross_entropy` computes, for a vocabulary split over ranks.
  }];
  let arguments = (ins TG_F32Tensor:$max, TG_F64Tensor:$stats, TG_IndexTensor:$labels,
                       Optional<TG_Tensor>:$loss_mask, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = [{
    $max `,` $stats `,` $labels (`,` $loss_mask^)? attr-dict `:` type($max) `,` type($stats) `,`
        type($labels) (`,` type($loss_mask)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_VocabCrossEntropyGradOp : TG_Op<"vocab_cross_entropy_grad", [Pure,
    AllTypesMatch<["logits", "result"]>]> {
  let summary = "tg.cross_entropy_grad of this rank's logits slice, from combined statistics";
  let description = [{
    `dlogits = grad · m/Σm · (exp(logits − max)/stats[0] − onehot(label))` on this rank's
    columns of the vocabulary (f64, rounded to the logits' type).
  }];
  let arguments = (ins TG_Tensor:$logits, TG_IndexTensor:$labels, TG_F32Scalar:$grad,
                       TG_F32Tensor:$max, TG_F64Tensor:$stats, Optional<TG_Tensor>:$loss_mask,
                       StrAttr:$vocab_shard_axis, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad `,` $max `,` $stats (`mask` $loss_mask^)? attr-dict `:`
        type($logits) `,` type($labels) `,` type($grad) `,` type($max) `,` type($stats)
        (`,` type($loss_mask)^)?
  }];
  let hasVerifier = 1;
}

def TG_LinearVocabCrossEntropyGradOp : TG_Op<"linear_vocab_cross_entropy_grad", [Pure,
    AllTypesMatch<["hidden", "hidden_grad"]>, AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "tg.linear_cross_entropy_grad on this rank's vocabulary rows, from statistics";
  let description = [{
    `tg.vocab_cross_entropy_grad` of the logits `hidden · weightᵀ` (recomputed chunk by chunk,
    rounded to `logits_type`), then `hidden_grad` (this rank's partial sum) and `weight_grad`
    as `tg.linear_cross_entropy_grad` forms them.
  }];
  let arguments = (ins TG_Tensor:$hidden, TG_Tensor:$weight, TG_IndexTensor:$labels,
                       TG_F32Scalar:$grad, TG_F32Tensor:$max, TG_F64Tensor:$stats,
                       Optional<TG_Tensor>:$loss_mask, StrAttr:$logits_type,
                       StrAttr:$vocab_shard_axis, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs TG_Tensor:$hidden_grad, TG_Tensor:$weight_grad);
  let assemblyFormat = [{
    $hidden `,` $weight `,` $labels `,` $grad `,` $max `,` $stats (`mask` $loss_mask^)? attr-dict
        `:` type($hidden) `,` type($weight) `,` type($labels) `,` type($grad) `,` type($max) `,`
        type($stats) (`,` type($loss_mask)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The evaluation mean (created by tg-train-step)
//===----------------------------------------------------------------------===//

// A running mean: [sum, count] in f64, kept between evaluation micro-batches.
def TG_RunningMean : 1DTensorOf<[F64]>,
    BuildableType<"::mlir::RankedTensorType::get({2}, $_builder.getF64Type())">;

def TG_MeanAccumulateOp : TG_Op<"mean_accumulate", [Pure]> {
  let summary = "Adds a scalar and a count of one (or its weight) to a running [sum, count]";
  let description = [{
    `result = [running[0] + value, running[1] + 1]` in f64 (the f32 value widened exactly):
    @eval_step adds each evaluation micro-batch's loss to the running mean in persistent
    memory, and @eval_finish reduces and divides it (`tg.mean_finish`). With `weights` (the
    micro-batch's loss mask), `w = Σ weights` in f64 and `result = [running[0] + value · w,
    running[1] + w]`: a mean of token-mean losses weighted by their tokens, the token-weighted
    evaluation loss of a masked loss (GPT-OSS-20B's reference).

    ```mlir
    %next = tg.mean_accumulate %running, %loss : tensor<2xf64>, tensor<f32> -> tensor<2xf64>
    %weighted = tg.mean_accumulate %running, %loss weights %mask
        : tensor<2xf64>, tensor<f32>, tensor<2x32xf32> -> tensor<2xf64>
    ```
  }];
  let arguments = (ins TG_RunningMean:$running, TG_F32Scalar:$value,
                       Optional<TG_Tensor>:$weights);
  let results = (outs TG_RunningMean:$result);
  let assemblyFormat = [{
    $running `,` $value (`weights` $weights^)? attr-dict `:` type($running) `,` type($value)
        (`,` type($weights)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_MeanFinishOp : TG_Op<"mean_finish", [Pure]> {
  let summary = "The mean of a running [sum, count], and the running mean started again";
  let description = [{
    `mean = running[0] / running[1]` in f64 (NaN when nothing was added), and `restart =
    [0, 0]`: the next evaluation starts from an empty sum in the same buffer.

    ```mlir
    %mean, %restart = tg.mean_finish %running : tensor<2xf64> -> tensor<f64>, tensor<2xf64>
    ```
  }];
  let arguments = (ins TG_RunningMean:$running);
  let results = (outs 0DTensorOf<[F64]>:$mean, TG_RunningMean:$restart);
  let assemblyFormat = [{
    $running attr-dict `:` type($running) `->` type($mean) `,` type($restart)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Constants and gradient ops (created by tg-autodiff)
//===----------------------------------------------------------------------===//

def TG_FillOp : TG_Op<"fill", [Pure, ConstantLike]> {
  let summary = "A tensor with every element equal to a constant";
  let description = [{
    The value is rounded to the element type. Autodiff seeds the loss gradient with 1 and
    gives unused outputs zero gradients.

    ```mlir
    %one = tg.fill {value = 1.0 : f64} : tensor<f32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasFolder = 1;
}

def TG_RandomNormalOp : TG_Op<"random_normal", [Pure]> {
  let summary = "Initial parameter values: std times a normal draw of the counter-based RNG";
  let description = [{
    Element `i` is `std · z` rounded once to the element type, `z` the standard normal draw
    of Philox4x32-10 under `%seed` for element `i` of the stream `stream` (the FNV-1a of the
    parameter's full Hugging Face name; docs/train-step.md, Initialization). With `parts`
    > 1 the result is part k of a tensor split into `parts` equal parts along `part_dim`, k
    the rank's index along mesh axis `part_axis`, and each element is drawn as its element of
    the full tensor: every parallel layout initializes the same model. With `part_blocks`
    (full sizes adding up to `part_dim`), the dim is those blocks concatenated and part k is
    the k-th slice of every block (a fused q|k|v projection split over tp).

    ```mlir
    %w = tg.random_normal %seed {std = 2.0e-02 : f64, stream = 1234 : i64} : tensor<64x64xbf16>
    ```
  }];
  let arguments = (ins TG_I64Scalar:$seed, F64Attr:$std, I64Attr:$stream,
                       DefaultValuedAttr<I64Attr, "0">:$part_dim,
                       DefaultValuedAttr<I64Attr, "1">:$parts, OptionalAttr<StrAttr>:$part_axis,
                       OptionalAttr<DenseI64ArrayAttr>:$part_blocks);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$seed attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_RandomUniformOp : TG_Op<"random_uniform", [Pure]> {
  let summary = "Initial parameter values: a uniform draw on [-bound, bound] of the counter-based RNG";
  let description = [{
    Element `i` is `bound · (2u - 1)` rounded once to the element type, `u = (w + 0.5) / 2^32`
    with `w` the first output word of Philox4x32-10 under `%seed` for element `i` of the stream
    `stream` (the counter and key of tg.random_normal). `parts`, `part_dim`, `part_axis` and
    `part_blocks` are tg.random_normal's: a split tensor draws the full tensor's elements.
    tg-train-step builds it for `init = "kaiming_uniform"` (bound `1 / sqrt(fan_in)`).

    ```mlir
    %a = tg.random_uniform %seed {bound = 1.25e-01 : f64, stream = 1234 : i64} : tensor<16x64xbf16>
    ```
  }];
  let arguments = (ins TG_I64Scalar:$seed, F64Attr:$bound, I64Attr:$stream,
                       DefaultValuedAttr<I64Attr, "0">:$part_dim,
                       DefaultValuedAttr<I64Attr, "1">:$parts, OptionalAttr<StrAttr>:$part_axis,
                       OptionalAttr<DenseI64ArrayAttr>:$part_blocks);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$seed attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_DropoutOp : TG_Op<"dropout", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface, ["applySplit"]>, Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Inverted dropout with a mask from the counter-based RNG";
  let description = [{
    `result[e] = keep(e) ? input[e] / (1 - rate) : 0` (the identity when the counter `c` of
    `%key` is negative: evaluation), computed in f32 and rounded once to the
    element type, where element `e` (its row-major index in the full, unsplit tensor) is kept
    when the first output word of Philox4x32-10 with counter `(e, e >> 32, n, c)` and
    key `(s, s >> 32)` is at least `floor(rate · 2^32)`; `%key = [s, c]` is the run's seed and
    the micro-batch's counter (tg.dropout_key), `n` the FNV-1a of `name` (as a parameter's
    stream is of its name). The mask is a pure function of the seed, the name, the
    micro-batch's place in the run and the element: recomputation, every parallel layout and
    a reference implementation draw the same bits.

    A model declares dropout without `%key`: tg-train-step gives every function it calls per
    micro-batch a key argument (tg.role "dropout_key") that its dropouts read, and passes
    each call its micro-batch's key (tg.dropout_key), or the evaluation key in @eval_step. A
    dropout without a key cannot run (plan-from-tg refuses it). `name` says which dropout it
    is, e.g. `model.layers.{i}.self_attn.qkv_proj.lora_dropout` in a layer (tg-inline-layers
    resolves `{i}` per layer, so every layer draws its own mask).
    With `parts` > 1 the input is part k of a tensor split along `part_dim` over mesh axis
    `part_axis` (set by dist-tensor-parallel), and its elements are numbered as the full
    tensor's. Its vector-Jacobian product is the same dropout of the gradient.

    ```mlir
    %d = tg.dropout %x {rate = 1.0e-01 : f64, name = "model.layers.{i}.self_attn.qkv_proj.lora_dropout"}
        : tensor<1x32x64xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, Optional<TG_DropoutKey>:$key, F64Attr:$rate,
                       StrAttr:$name, DefaultValuedAttr<I64Attr, "0">:$part_dim,
                       DefaultValuedAttr<I64Attr, "1">:$parts, OptionalAttr<StrAttr>:$part_axis);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input (`,` $key^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_DropoutKeyOp : TG_Op<"dropout_key", [Pure]> {
  let summary = "The dropout key of one micro-batch of a training step";
  let description = [{
    `[seed, step · G + micro_batch · data_parallel + r]` with `G = micro_batches ·
    data_parallel` the global batch's micro-batches and `r` this rank's index along mesh axis
    `data_parallel_axis` (0 without it): the micro-batch's index in the run, counted in the
    global batch's order (micro-batch `a` of data-parallel rank `r` holds the global batch's
    micro-batch `a · dp + r`, as the data loader deals them), so a sample's dropout masks do
    not depend on the number of data-parallel ranks.

    ```mlir
    %key = tg.dropout_key %seed, %step {micro_batch = 1, micro_batches = 2, data_parallel = 1}
        : tensor<2xi64>
    ```
  }];
  let arguments = (ins TG_I64Scalar:$seed, TG_I64Scalar:$step, I64Attr:$micro_batch,
                       I64Attr:$micro_batches, I64Attr:$data_parallel,
                       OptionalAttr<StrAttr>:$data_parallel_axis);
  let results = (outs TG_DropoutKey:$result);
  let assemblyFormat = "$seed `,` $step attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_EvalDropoutKeyOp : TG_Op<"eval_dropout_key", [Pure]> {
  let summary = "The dropout key of an evaluation pass: [0, -1]";
  let description = [{
    Under this key (a negative micro-batch counter) every tg.dropout is the identity, as a
    PyTorch module in `eval()` mode: @eval_step passes it to @forward.

    ```mlir
    %key = tg.eval_dropout_key : tensor<2xi64>
    ```
  }];
  let results = (outs TG_DropoutKey:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def TG_RMSNormGradOp : TG_Op<"rms_norm_grad", [Pure, AllTypesMatch<["input", "grad", "input_grad"]>,
                                               AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "Vector-Jacobian product of tg.rms_norm";
  let description = [{
    For `y = rms_norm(x, w)` and cotangent `dy`: with `r = 1/sqrt(mean(x²) + epsilon)` per row,
    `dx = dy·w·r − x·r³·mean(dy·w·x)` and `dw = Σ_rows dy·x·r`, computed in f32.
  }];
  let arguments = (ins TG_Tensor:$input, TG_Tensor:$weight, TG_Tensor:$grad, F64Attr:$epsilon);
  let results = (outs TG_Tensor:$input_grad, TG_Tensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad attr-dict `:` type($input) `,` type($weight)
  }];
}

def TG_SiluGradOp : TG_Op<"silu_grad", [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "Vector-Jacobian product of tg.silu";
  let description = [{ `dx = dy · σ(x) · (1 + x · (1 − σ(x)))`, computed in f32. }];
  let arguments = (ins TG_Tensor:$input, TG_Tensor:$grad);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($result)";
}

def TG_SwigluGradOp : TG_Op<"swiglu_grad", [Pure, AllTypesMatch<["gate", "up", "grad",
                                                                    "gate_grad", "up_grad"]>]> {
  let summary = "Vector-Jacobian product of tg.swiglu";
  let description = [{
    With `a = silu(gate)` rounded to the element type: `up_grad = grad · a` and
    `gate_grad = silu_grad(gate, grad · up)`, each product rounded to the element type: what
    tg-autodiff builds for `tg.mul(tg.silu(gate), up)`.
  }];
  let arguments = (ins TG_Tensor:$gate, TG_Tensor:$up, TG_Tensor:$grad);
  let results = (outs TG_Tensor:$gate_grad, TG_Tensor:$up_grad);
  let assemblyFormat = "$gate `,` $up `,` $grad attr-dict `:` type($gate)";
}

def TG_SoftmaxGradOp : TG_Op<"softmax_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "Vector-Jacobian product of tg.softmax, from its output";
  let description = [{ `dx = y · (dy − Σ_dim dy · y)` with `y` the softmax output, in f32. }];
  let arguments = (ins TG_Tensor:$output, TG_Tensor:$grad, I64Attr:$dim);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_AttentionGradOp : TG_Op<"attention_grad", [Pure, AllTypesMatch<["query", "query_grad"]>,
    AllTypesMatch<["key", "key_grad"]>, AllTypesMatch<["value", "value_grad"]>]> {
  let summary = "Vector-Jacobian product of tg.attention";
  let description = [{
    For `result, lse = tg.attention(query, key, value)` and the cotangent `grad` of `result`
    (`lse` takes none), with `output` that `result`, exactly what tg-autodiff builds for the unfused graph, per block of
    query rows: `p` recomputed as in the forward; `dp = grad · valueᵀ` rounded to `value`'s
    type; `ds = p · (dp − Σ dp · p)` in f32 (`tg.softmax_grad`), 0 where masked, times
    `scale`, rounded to `query`'s type; `query_grad = ds · key`, and `key_grad = Σ dsᵀ · query`,
    `value_grad = Σ pᵀ · grad` over the query rows, then summed over each KV head's group of
    query heads (`tg.repeat_grad`). Every sum is in f32 blocks of 256 terms added in f64, as
    `tg.matmul`'s. `lse` is there for kernels that recompute `p` from it (FlashAttention-2);
    the CPU kernels recompute each row's maximum and sum as the forward did. `output` is there
    for kernels that take `Σ dp · p` as `Σ grad · output` per row (FlashAttention-2, cuDNN's
    SDPA backward); the CPU kernels do not read it. It is the forward's `result`
    `[batch, heads, seq, head_dim]`, or with `output_tokens_major` its transpose
    `[batch, seq, heads, head_dim]`: the tensor the output projection reads and keeps for its
    weight gradient, so that handing it over keeps nothing more alive (tg-autodiff picks it
    when the forward has that transpose).
  }];
  let arguments = (ins TG_Tensor:$query, TG_Tensor:$key, TG_Tensor:$value, TG_Tensor:$output,
                       TG_Tensor:$lse, TG_Tensor:$grad, F64Attr:$scale, UnitAttr:$causal,
                       UnitAttr:$output_tokens_major, OptionalAttr<I64Attr>:$window);
  let results = (outs TG_Tensor:$query_grad, TG_Tensor:$key_grad, TG_Tensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $lse `,` $grad attr-dict `:` type($query) `,`
        type($key) `,` type($value) `,` type($output) `,` type($lse) `,` type($grad)
  }];
}

def TG_EmbeddingGradOp : TG_Op<"embedding_grad", [Pure]> {
  let summary = "Vector-Jacobian product of tg.embedding with respect to the table";
  let description = [{
    `dtable[v, :] = Σ_{t : ids[t] = v} dy[t, :]`, accumulated in f32; the result type is the
    table's.
  }];
  let arguments = (ins TG_IndexTensor:$ids, TG_Tensor:$grad,
                       OptionalAttr<StrAttr>:$vocab_shard_axis);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$ids `,` $grad attr-dict `:` type($ids) `,` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

def TG_CrossEntropyGradOp : TG_Op<"cross_entropy_grad", [Pure,
    AllTypesMatch<["logits", "result"]>]> {
  let summary = "Vector-Jacobian product of tg.cross_entropy with respect to the logits";
  let description = [{
    `dlogits = dloss · (softmax(logits) − onehot(labels)) · m / Σ m` with `m` the loss mask
    (all ones without one), in f32.
  }];
  let arguments = (ins TG_Tensor:$logits, TG_IndexTensor:$labels, TG_F32Scalar:$grad,
                       Optional<TG_Tensor>:$loss_mask, OptionalAttr<StrAttr>:$vocab_shard_axis,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad (`mask` $loss_mask^)? attr-dict `:` type($logits) `,`
    type($labels) `,` type($grad) (`,` type($loss_mask)^)?
  }];
}

def TG_LinearCrossEntropyGradOp : TG_Op<"linear_cross_entropy_grad", [Pure,
    AllTypesMatch<["hidden", "hidden_grad"]>, AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "Vector-Jacobian product of tg.linear_cross_entropy";
  let description = [{
    What tg-autodiff builds for the replaced pair: `dlogits = tg.cross_entropy_grad(logits,
    labels, grad[, mask])` rounded to `logits_type`, `hidden_grad = dlogits · weight`,
    `weight_grad = Σ_tokens dlogitsᵀ · hidden` (f32 blocks of 256 tokens added in f64, as
    `tg.matmul` sums), with the logits recomputed chunk by chunk. With `vocab_shard_axis`,
    `hidden_grad` is this rank's partial sum (its vocabulary rows' share).
  }];
  let arguments = (ins TG_Tensor:$hidden, TG_Tensor:$weight, TG_IndexTensor:$labels,
                       TG_F32Scalar:$grad, Optional<TG_Tensor>:$loss_mask, StrAttr:$logits_type,
                       OptionalAttr<StrAttr>:$vocab_shard_axis,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs TG_Tensor:$hidden_grad, TG_Tensor:$weight_grad);
  let assemblyFormat = [{
    $hidden `,` $weight `,` $labels `,` $grad (`mask` $loss_mask^)? attr-dict `:` type($hidden)
    `,` type($weight) `,` type($labels) `,` type($grad) (`,` type($loss_mask)^)?
  }];
}

def TG_RepeatGradOp : TG_Op<"repeat_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "Vector-Jacobian product of tg.repeat: sums each group of repeated slices";
  let description = [{
    `dx[..., j, ...] = Σ_r dy[..., j·times + r, ...]` (what GQA's shared KV heads receive).
  }];
  let arguments = (ins TG_Tensor:$grad, I64Attr:$dim, I64Attr:$times);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Optimizer (created by tg-optimizer)
//===----------------------------------------------------------------------===//

def TG_LRValueOp : TG_Op<"lr_value", [Pure]> {
  let summary = "The learning rate at an optimizer step";
  let description = [{
    `kind = "cosine_with_linear_warmup"` at step k (i64 scalar, 0-based), W = warmup_steps,
    T = max_steps: k ≤ W: `base_lr·(k+1)/(W+1)`; W < k ≤ T:
    `end_lr + (base_lr − end_lr)·(1 + cos(π(k−W)/(T−W)))/2`; k > T: `end_lr` (NeMo
    CosineAnnealing with WarmupAnnealHoldPolicy). Computed in f64, returned as f32.
  }];
  let arguments = (ins TG_I64Scalar:$step, StrAttr:$kind, F64Attr:$base_lr,
                       F64Attr:$end_lr, I64Attr:$warmup_steps, I64Attr:$max_steps);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = "$step attr-dict";
}

def TG_GlobalNormOp : TG_Op<"global_norm", [Pure]> {
  let summary = "The L2 norm of all gradients together";
  let description = [{
    `sqrt(Σ_tensors Σ_i g_i²)` over f32 copies of the gradients, each counted once,
    accumulated in f64.
  }];
  let arguments = (ins Variadic<TG_Tensor>:$grads);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = "$grads attr-dict `:` type($grads)";
}

def TG_SumSquaresOp : TG_Op<"sum_squares", [Pure]> {
  let summary = "The sum of squares of all elements of several tensors";
  let description = [{
    `Σ_tensors Σ_i g_i²` over f32 copies, accumulated in f64 and rounded to f32 once: one
    rank's share of a global norm whose gradients are sharded (`dist-partition`).
  }];
  let arguments = (ins Variadic<TG_Tensor>:$inputs);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
}

def TG_SqrtOp : TG_Op<"sqrt", [Pure]> {
  let summary = "The square root of an f32 scalar (computed in f64, rounded once)";
  let arguments = (ins TG_F32Scalar:$input);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = "$input attr-dict";
}

def TG_ClipCoefficientOp : TG_Op<"clip_coefficient", [Pure]> {
  let summary = "The gradient-clipping factor for a global norm";
  let description = [{
    `c = max_norm / (norm + 1e-6)`; the result is `c` when `c < 1` and 1 otherwise, so the
    gradients are scaled only when clipping applies (torch.nn.utils.clip_grad_norm_).
  }];
  let arguments = (ins TG_F32Scalar:$norm, F64Attr:$max_norm);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = "$norm attr-dict";
}

def TG_ElementwiseOp : TG_Op<"elementwise", [Pure]> {
  let summary = "Element-by-element math written as a small program";
  let description = [{
    Every result element is computed from the operands' elements of the same index by
    `program` (runtime/plan/ElementwiseProgram.h: statements `name = <postfix expression>`
    over operands `aN`, earlier names, constants, `+ - * /`, `neg`, `sqrt`, and in f64 `pow`;
    result K is `rK`), in `arithmetic` (f32, the default, or f64) with IEEE rounding and no
    contraction. Operands are f32 or bf16 (in f64 also i32/i64) and either have the results'
    shape or one element (broadcast); results are f32 or bf16, one shape, each rounded once.
    tg-optimizer writes the optimizers' updates this way (AdamW's bias corrections in f64,
    its update and Adagrad's in f32), so the runtime runs them without knowing them.
  }];
  let arguments = (ins Variadic<TG_AnyTensor>:$inputs, StrAttr:$program,
                       OptionalAttr<StrAttr>:$arithmetic);
  let results = (outs Variadic<TG_Tensor>:$results);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, $results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and layout
//===----------------------------------------------------------------------===//

def TG_MatmulOp : TG_Op<"matmul", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, InferTypeOpAdaptorWithIsCompatible]> {
  let summary = "Batched matrix multiplication with optional operand transposes";
  let description = [{
    `result[..., m, n] = sum_k A[..., m, k] * B[..., k, n]` where `A` is `lhs` (or its
    transpose over the last two dimensions when `transpose_lhs` is set) and `B` is `rhs` (or
    its transpose when `transpose_rhs` is set). Leading dimensions of `lhs` are batch
    dimensions; `rhs` either has the same batch dimensions or is a rank-2 matrix shared by
    every batch (a weight). Accumulation is in f32 for every storage type; the result's
    element type is the GEMM's output precision: the operands' type, or f32 (e.g. bf16
    operands with f32 scores as fused attention computes them). Never narrower than the
    operands: narrowing to fp8 needs tg-fp8's explicit scaling.

    A linear layer with a weight stored `[out_features, in_features]` (the Hugging Face and
    Megatron layout) is `y = x · Wᵀ`:

    ```mlir
    %y = tg.matmul %x, %w {transpose_rhs} : tensor<8x32x64xbf16>, tensor<160x64xbf16> -> tensor<8x32x160xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasCanonicalizer = 1;
}

// fp8 ops: tg-fp8 inserts them; the exact rounding and the scaling recipe are in
// docs/dialects/tg.md ("fp8") and docs/numerics.md.
def TG_Fp8QuantizeOp : TG_Op<"fp8_quantize", [Pure]> {
  let summary = "Scaled, saturating cast to an 8-bit float format";
  let description = [{
    `result[i] = sat(rne(f32(f32(input[i]) · scale)))` in the result's format (f8E4M3FN or
    f8E5M2): the product rounded once to f32, then to the nearest fp8 value (ties to even),
    magnitudes beyond the format's largest finite value (448 for E4M3, 57344 for E5M2) and
    infinities saturated to it with their sign; NaN stays NaN. As Transformer Engine's cast
    kernels (CUDA's `__NV_SATFINITE` conversions). `scale` is an f32 scalar.

    ```mlir
    %xq = tg.fp8_quantize %x, %scale : tensor<8x64xbf16>, tensor<f32> -> tensor<8x64xf8E4M3FN>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, TG_F32Scalar:$scale);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` type($input) `,` type($scale) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_Fp8MatmulOp : TG_Op<"fp8_matmul", [Pure]> {
  let summary = "Matrix multiplication of fp8 operands with their scales, f32 accumulation";
  let description = [{
    `result = rnd(acc · f32(f32(1 / lhs_scale) · f32(1 / rhs_scale)))` with `acc` the
    `tg.matmul` of the operands' values (same shapes, transposes and broadcasting) summed in
    f32, `lhs_scale` / `rhs_scale` the f32 scalars the operands were quantized with
    (`tg.fp8_quantize`), and `rnd` the rounding to the result type (bf16 or f32). The
    operands may be of different fp8 formats (E5M2 gradients times E4M3 weights), as
    cuBLASLt's scaled fp8 GEMMs take them.

    ```mlir
    %y = tg.fp8_matmul %xq, %wq, %sx, %sw {transpose_rhs} : tensor<8x64xf8E4M3FN>, tensor<160x64xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<8x160xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs, TG_F32Scalar:$lhs_scale,
                       TG_F32Scalar:$rhs_scale, UnitAttr:$transpose_lhs,
                       UnitAttr:$transpose_rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $lhs_scale `,` $rhs_scale attr-dict `:` type($lhs) `,` type($rhs) `,`
    type($lhs_scale) `,` type($rhs_scale) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_AmaxOp : TG_Op<"amax", [Pure]> {
  let summary = "The largest magnitude over every element of the operands";
  let description = [{
    `max |x|` over all elements of all operands, as an f32 scalar (exact: every operand value
    is an f32 value); NaN elements are skipped (`fmaxf`, as Transformer Engine's amax
    kernels), infinities count; 0 when there is no other element. The amax of a fused GEMM's
    operands (q, k and v projections sharing a scale) is one op over all of them.

    ```mlir
    %a = tg.amax %x, %y : tensor<8x64xbf16>, tensor<8x32xbf16>
    ```
  }];
  let arguments = (ins Variadic<TG_Tensor>:$inputs);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def TG_Fp8ScaleUpdateOp : TG_Op<"fp8_scale_update", [Pure,
    AllTypesMatch<["history", "new_history"]>]> {
  let summary = "Delayed scaling: records an amax, rolls the history, computes the next scale";
  let description = [{
    Transformer Engine's `amax_and_scale_update` kernel on one tensor's state, in f32.
    `history` (length L) is TE's amax history at rest (row 0 is where the next amax is
    recorded). With `h = history` where `h[0] = fmaxf(history[0], amax)`:

    - `a = h[0]` (`amax_compute_algo = "most_recent"`) or `max(h)` (`"max"`);
    - `new_scale = f32(fp8_max · 2^-margin) / a` when `a` is finite and positive, `scale`
      otherwise;
    - `new_history[0] = 0`, `new_history[i] = h[i + 1]` for `0 < i < L - 1`,
      `new_history[L - 1] = h[0]` (TE's roll).

    ```mlir
    %h2, %s2 = tg.fp8_scale_update %h, %amax, %s {fp8_max = 448.0, margin = 0.0, amax_compute_algo = "most_recent"} : tensor<4xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$history, TG_F32Scalar:$amax, TG_F32Scalar:$scale,
                       F64Attr:$fp8_max, F64Attr:$margin, StrAttr:$amax_compute_algo);
  let results = (outs TG_Tensor:$new_history, TG_F32Scalar:$new_scale);
  let assemblyFormat = [{
    $history `,` $amax `,` $scale attr-dict `:` type($history)
  }];
  let hasVerifier = 1;
}

def TG_Fp8CurrentScaleOp : TG_Op<"fp8_current_scale", [Pure]> {
  let summary = "Current scaling: the scale of a tensor from its own amax";
  let description = [{
    Transformer Engine's `compute_scale_from_amax` (Float8CurrentScaling, epsilon 0, no
    power-of-two rounding), in f32: 1 when `amax` is 0 or infinite, else
    `f32(fp8_max) / amax`, the largest float when that overflows.

    ```mlir
    %s = tg.fp8_current_scale %amax {fp8_max = 448.0}
    ```
  }];
  let arguments = (ins TG_F32Scalar:$amax, F64Attr:$fp8_max);
  let results = (outs TG_F32Scalar:$scale);
  let assemblyFormat = "$amax attr-dict";
  let hasVerifier = 1;
}

def TG_TransposeOp : TG_Op<"transpose", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, InferTypeOpAdaptor]> {
  let summary = "Permutes the dimensions of a tensor";
  let description = [{
    `result` dimension `i` is `input` dimension `permutation[i]`.

    ```mlir
    %t = tg.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<8x32x64xf32> -> tensor<8x64x32xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def TG_ReshapeOp : TG_Op<"reshape", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure]> {
  let summary = "Reinterprets a tensor's shape in row-major order";
  let description = [{
    Same elements in the same row-major order, new shape: the element counts must be equal
    (e.g. splitting `[batch, seq, heads * head_dim]` into `[batch, seq, heads, head_dim]`).

    ```mlir
    %q = tg.reshape %x : tensor<8x32x64xbf16> -> tensor<8x32x4x16xbf16>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_SplitOp : TG_Op<"split", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface, ["applySplit"]>, Pure, InferTypeOpAdaptor]> {
  let summary = "Splits a tensor into consecutive pieces along one dimension";
  let description = [{
    Result `j` holds the `sizes[j]` slices along `dim` that follow those of results `0..j-1`;
    the sizes add up to the dimension's size (a fused QKV projection split into Q, K, V).

    ```mlir
    %q, %k, %v = tg.split %qkv {dim = 2 : i64, sizes = array<i64: 64, 32, 32>}
        : tensor<8x32x128xbf16> -> tensor<8x32x64xbf16>, tensor<8x32x32xbf16>, tensor<8x32x32xbf16>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input, I64Attr:$dim, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<TG_AnyTensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
}

def TG_ConcatOp : TG_Op<"concat", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure, InferTypeOpAdaptor]> {
  let summary = "Concatenates tensors along one dimension";
  let description = [{
    The inverse of `tg.split`: inputs agree on every dimension but `dim` and on element type.

    ```mlir
    %qkv = tg.concat %q, %k, %v {dim = 2 : i64}
        : tensor<8x32x64xbf16>, tensor<8x32x32xbf16>, tensor<8x32x32xbf16> -> tensor<8x32x128xbf16>
    ```
  }];
  let arguments = (ins Variadic<TG_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Mixture of experts: dropless token routing (docs/dialects/tg.md, "Mixture of experts").
// A layer routes T tokens to k of E experts each: the T·k (token, slot) pairs are sorted by
// expert, so every expert's rows are contiguous and the grouped GEMMs read them in place;
// shapes stay static because the sorted tensor always has T·k rows, whatever the routing.
//===----------------------------------------------------------------------===//

def TG_I32Tensor : StaticShapeTensorOf<[I32]>;

def TG_MoeRouteOp : TG_Op<"moe_route", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure]> {
  let summary = "Top-k routing on raw router logits, then softmax over the k";
  let description = [{
    For logits `[tokens, experts]` (f32, the router GEMM's output): `experts[t, :]` are the
    `top_k` largest logits' expert indices, largest first (equal logits: the lower index
    first), and `probs[t, :] = softmax(logits[t, experts[t, :]])`, the softmax over the k
    selected logits only (Megatron's `pre_softmax = false`: no scaling, no bias, no
    normalisation over all experts).

    ```mlir
    %probs, %experts = tg.moe_route %logits {top_k = 4 : i64}
        : tensor<64x32xf32> -> tensor<64x4xf32>, tensor<64x4xi32>
    ```
  }];
  let arguments = (ins TG_F32Tensor:$logits, I64Attr:$top_k);
  let results = (outs TG_F32Tensor:$probs, TG_I32Tensor:$experts);
  let assemblyFormat = "$logits attr-dict `:` type($logits) `->` type($probs) `,` type($experts)";
  let hasVerifier = 1;
}

def TG_MoeRouteGradOp : TG_Op<"moe_route_grad", [Pure, AllTypesMatch<["probs", "grad"]>]> {
  let summary = "Vector-Jacobian product of tg.moe_route with respect to the logits";
  let description = [{
    `dlogits[t, experts[t, j]] = probs[t, j] · (grad[t, j] − Σ_i probs[t, i] · grad[t, i])`
    (the softmax's VJP over the k selected logits), 0 at every expert not selected; in f32.
    The selection itself is piecewise constant and takes no gradient.
  }];
  let arguments = (ins TG_F32Tensor:$probs, TG_I32Tensor:$experts, TG_F32Tensor:$grad);
  let results = (outs TG_F32Tensor:$result);
  let assemblyFormat = [{
    $probs `,` $experts `,` $grad attr-dict `:` type($probs) `,` type($experts) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_MoeSortOp : TG_Op<"moe_sort", [DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>,
    Pure]> {
  let summary = "Sorts the (token, slot) pairs of a routing by expert";
  let description = [{
    For `experts [tokens, k]` (tg.moe_route's) and E experts (the result's size):
    `group_sizes[e]` is the number of pairs routed to expert e, and `order` lists the
    flattened pair indices `t·k + j` sorted by expert, stably (within an expert, by token,
    then slot). Row r of the sorted tensors (tg.moe_permute) is pair `order[r]`; expert e's
    rows start at `Σ_{e' < e} group_sizes[e']`. An expert index outside [0, E) is a runtime
    error, never dropped.

    ```mlir
    %order, %sizes = tg.moe_sort %experts : tensor<64x4xi32> -> tensor<256xi32>, tensor<32xi32>
    ```
  }];
  let arguments = (ins TG_I32Tensor:$experts);
  let results = (outs TG_I32Tensor:$order, TG_I32Tensor:$group_sizes);
  let assemblyFormat = "$experts attr-dict `:` type($experts) `->` type($order) `,` type($group_sizes)";
  let hasVerifier = 1;
}

def TG_MoePermuteOp : TG_Op<"moe_permute", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure]> {
  let summary = "Gathers token rows into expert order";
  let description = [{
    For `input [S, d]` and `order [N]` (tg.moe_sort's, N = S·f):
    `result[r, :] = input[order[r] / f, :]`. With S the tokens (f = k) it copies each token
    once per expert it was routed to; with the flattened `[T·k, 1]` probabilities (f = 1) it
    puts each pair's probability on its row.

    ```mlir
    %rows = tg.moe_permute %x, %order : tensor<64x32xbf16>, tensor<256xi32> -> tensor<256x32xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, TG_I32Tensor:$order);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `,` $order attr-dict `:` type($input) `,` type($order) `->` type($result)";
  let hasVerifier = 1;
}

def TG_MoeUnpermuteOp : TG_Op<"moe_unpermute", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure]> {
  let summary = "Sums rows in expert order back onto their tokens";
  let description = [{
    The transpose of tg.moe_permute: for `input [N, d]`, `order [N]` and the result
    `[S, d]` (f = N / S), `result[s, :] = Σ_{j < f} input[r_j, :]` where `order[r_j] = s·f + j`,
    added in slot order j in f32 and rounded once to the element type. The MoE combine: each
    token's k expert outputs (already weighted by their probabilities) summed.

    ```mlir
    %y = tg.moe_unpermute %rows, %order : tensor<256x32xbf16>, tensor<256xi32> -> tensor<64x32xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, TG_I32Tensor:$order);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `,` $order attr-dict `:` type($input) `,` type($order) `->` type($result)";
  let hasVerifier = 1;
}

def TG_GroupedMatmulOp : TG_Op<"grouped_matmul", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure]> {
  let summary = "One GEMM per expert over its contiguous group of rows";
  let description = [{
    For `lhs [N, K]`, `rhs [E, K, M]` (`[E, M, K]` with `transpose_rhs`: per expert a weight
    stored `[out_features, in_features]`) and `group_sizes [E]` (tg.moe_sort's): rows
    `[o_e, o_e + group_sizes[e])` with `o_e = Σ_{e' < e} group_sizes[e']` are multiplied by
    expert e's matrix, each product summed as `tg.matmul` sums (f32 partial sums added in
    f64) and rounded to the element type. Rows past `Σ group_sizes` are 0; group sizes that
    are negative or add up to more than N are a runtime error.

    ```mlir
    %h = tg.grouped_matmul %rows, %fc1, %sizes {transpose_rhs}
        : tensor<256x32xbf16>, tensor<8x128x32xbf16>, tensor<8xi32> -> tensor<256x128xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs, TG_I32Tensor:$group_sizes,
                       UnitAttr:$transpose_rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $group_sizes attr-dict `:` type($lhs) `,` type($rhs) `,` type($group_sizes)
        `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_GroupedMatmulWeightGradOp : TG_Op<"grouped_matmul_weight_grad", [Pure]> {
  let summary = "Vector-Jacobian product of tg.grouped_matmul with respect to the weights";
  let description = [{
    For the forward's `lhs [N, K]`, the result's cotangent `grad [N, M]` and `group_sizes`:
    `result[e] = lhs_eᵀ · grad_e` (`[E, K, M]`), or with `transpose_rhs` `grad_eᵀ · lhs_e`
    (`[E, M, K]`), over expert e's rows; an expert without rows gets 0.
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$grad, TG_I32Tensor:$group_sizes,
                       UnitAttr:$transpose_rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $grad `,` $group_sizes attr-dict `:` type($lhs) `,` type($grad) `,`
        type($group_sizes) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_ScaleRowsOp : TG_Op<"scale_rows", [DeclareOpInterfaceMethods<TG_VJPOpInterface>,
    DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>, Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Multiplies each row by its own factor";
  let description = [{
    `result[..., c] = input[..., c] · scales[...]` in f32, rounded to the element type, for
    `scales` of `input`'s shape without the last dimension (the MoE's routing probabilities
    on the expert activation before fc2).

    ```mlir
    %w = tg.scale_rows %act, %p : tensor<256x64xbf16>, tensor<256xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, TG_F32Tensor:$scales);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `,` $scales attr-dict `:` type($input) `,` type($scales)";
  let hasVerifier = 1;
}

def TG_RowDotOp : TG_Op<"row_dot", [Pure, AllTypesMatch<["lhs", "rhs"]>]> {
  let summary = "Dot product of each pair of rows";
  let description = [{
    `result[...] = Σ_c lhs[..., c] · rhs[..., c]`, summed in f64, in f32 (tg.scale_rows'
    gradient with respect to its scales).
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs);
  let results = (outs TG_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
  let hasVerifier = 1;
}

#endif // MLPERFC_DIALECTS_TG_IR_TGOPS_TD
