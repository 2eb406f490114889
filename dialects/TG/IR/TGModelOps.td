//===- TGModelOps.td - Model declaration ops ---------------*- tablegen -*-===//
//
// The training contract of a benchmark: the model, its parameters with their initialization,
// and the MLPerf-fixed hyperparameters (batch, optimizer, LR schedule, benchmark metadata).
// Everything the reference fixes is an attribute here, verified, so that a wrong declaration
// is caught when the file is read, not hours into a run.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_DIALECTS_TG_IR_TGMODELOPS_TD
#define MLPERFC_DIALECTS_TG_IR_TGMODELOPS_TD

include "dialects/TG/IR/TGBase.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def TG_ModelOp : TG_Op<"model", [Symbol, SymbolTable, NoTerminator, SingleBlock,
                                  IsolatedFromAbove, NoRegionArguments]> {
  let summary = "A benchmark model: metadata, parameters and functions";
  let description = [{
    Holds exactly one each of `tg.benchmark`, `tg.batch`, `tg.optimizer` and `tg.lr_schedule`,
    the `tg.param` declarations, and functions. `@forward` maps one micro-batch,
    `(tokens: [micro_batch, seq] int, labels: [micro_batch, seq] int) -> loss: tensor<f32>`.
    Verified across ops: the forward's shapes match `tg.batch`; the eval cadence is a multiple
    of the global batch size; the functions reachable from `@forward` have bodies and do not
    recurse; every declared parameter is used by them (MLPerf forbids extra trainable
    parameters).

    ```mlir
    tg.model @llama31_8b {
      tg.benchmark {name = "llama31_8b", eval_every_samples = 12288, eval_samples = 1024,
                    target_metric = "log_perplexity", target_value = 3.3}
      tg.batch {global_batch_size = 32, micro_batch_size = 1, seq_len = 8192}
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The model's `@forward` function, or null.
    ::mlir::Operation *getForward();
  }];
}

class TG_ModelMetadataOp<string mnemonic> : TG_Op<mnemonic, [HasParent<"ModelOp">]> {
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def TG_BenchmarkOp : TG_ModelMetadataOp<"benchmark"> {
  let summary = "MLPerf benchmark metadata: name, evaluation cadence, quality target";
  let description = [{
    `eval_every_samples`: evaluate after every so many training samples (sequences);
    `eval_samples`: validation sequences per evaluation; the run converges when `target_metric`
    (`log_perplexity`: mean token cross-entropy on the validation set, or `eval_loss`) reaches
    `target_value` or less. `allow_fp8 = false` says the benchmark's rules do not allow fp8
    GEMMs (its reference convergence points are for another precision): `mlperfc compile
    --precision fp8` refuses the model. Absent: allowed (the MLPerf LLM benchmarks).
    `rcp_batch_sizes` / `rcp_mean_samples`: the benchmark's reference convergence points, the
    mean samples to converge at each global batch size (ascending, positive, as many of
    each), which `mlperfc predict` and `plan-search` turn into time to train.
    `eval_skip`: the evaluations the rules let a run skip at its start (llama2_70b_lora's
    eval delay, floor(0.125 · global batch + 2)): the first evaluation comes after
    (eval_skip + 1) · eval_every_samples samples. Absent: 0.
    `mllog`: further MLPerf log keys the benchmark's closed rules require and the run logs
    once at init, as given (`{lora_rank = 16, lora_alpha = 32}`): integers, floats or
    strings under lower_snake_case keys that are not among the keys the runtime logs itself.
  }];
  let arguments = (ins StrAttr:$name, I64Attr:$eval_every_samples, I64Attr:$eval_samples,
                       StrAttr:$target_metric, F64Attr:$target_value,
                       OptionalAttr<BoolAttr>:$allow_fp8,
                       OptionalAttr<DenseI64ArrayAttr>:$rcp_batch_sizes,
                       OptionalAttr<DenseI64ArrayAttr>:$rcp_mean_samples,
                       OptionalAttr<I64Attr>:$eval_skip,
                       OptionalAttr<DictionaryAttr>:$mllog);
}

def TG_BatchOp : TG_ModelMetadataOp<"batch"> {
  let summary = "Global batch, micro-batch (sequences) and sequence length";
  let description = [{
    `global_batch_size = micro_batch_size × gradient accumulation steps × data-parallel ranks`;
    the parallel layout is chosen at compile time, so here only divisibility by the micro-batch
    is checked.
  }];
  let arguments = (ins I64Attr:$global_batch_size, I64Attr:$micro_batch_size,
                       I64Attr:$seq_len);
}

def TG_OptimizerOp : TG_ModelMetadataOp<"optimizer"> {
  let summary = "Optimizer and gradient clipping";
  let description = [{
    `name = "adamw"`: AdamW with bias correction and decoupled weight decay (apex/TE FusedAdam
    in adam_w_mode); `beta1`, `beta2` and `clip_grad_norm` are required.

    `name = "adagrad"`: Adagrad as `torch.optim.Adagrad` (and FBGEMM's EXACT_ADAGRAD) computes
    it: `g += weight_decay · p`, `G += g²`, `p −= lr · g / (sqrt(G) + epsilon)`, the state sum
    `G` starting at `initial_accumulator_value` (default 0). `lr_decay` (default 0) must be 0,
    as the DLRMv2 rules fix it. `clip_grad_norm` is optional (the reference does not clip).

    `weight_decay_params` is the reference's parameter-group rule: `all` (every parameter
    decays, as NeMo 2.1 runs Llama 3.1) or `matrices` (only rank ≥ 2 parameters). With
    `clip_grad_norm`, gradients are clipped to that global L2 norm.
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<F64Attr>:$beta1,
                       OptionalAttr<F64Attr>:$beta2, F64Attr:$epsilon, F64Attr:$weight_decay,
                       StrAttr:$weight_decay_params, OptionalAttr<F64Attr>:$clip_grad_norm,
                       OptionalAttr<F64Attr>:$initial_accumulator_value,
                       OptionalAttr<F64Attr>:$lr_decay);
  let extraClassDeclaration = [{
    /// The MLPerf log keys of this optimizer's hyperparameters (`opt_adamw_beta_1`, ...,
    /// `opt_adagrad_epsilon`, ..., `opt_gradient_clip_norm`) with their values. The plan
    /// carries them (ModelInfo.mllog) and mlperf-run logs them as they are, so the runtime
    /// knows no optimizer; the audit compares them with the reference's.
    ::llvm::SmallVector<::mlir::NamedAttribute> getMLLogKeys();
  }];
}

def TG_LRScheduleOp : TG_ModelMetadataOp<"lr_schedule"> {
  let summary = "Learning-rate schedule";
  let description = [{
    `kind = "cosine_with_linear_warmup"` (NeMo CosineAnnealing + WarmupAnnealHoldPolicy): at
    optimizer step k = 0, 1, …, with W = `warmup_steps` and T = `max_steps`:
    k ≤ W: `base_lr·(k+1)/(W+1)`; W < k ≤ T: `end_lr + (base_lr − end_lr)·(1 + cos(π(k−W)/(T−W)))/2`;
    k > T: `end_lr`. `decay_steps` must equal T − W.
  }];
  let arguments = (ins StrAttr:$kind, F64Attr:$base_lr, F64Attr:$end_lr,
                       I64Attr:$warmup_steps, I64Attr:$decay_steps, I64Attr:$max_steps);
}

def TG_ParamOp : TG_Op<"param", [Symbol, HasParent<"ModelOp">]> {
  let summary = "A parameter (trainable, or frozen) with its initialization";
  let description = [{
    Named as in Hugging Face checkpoints. A name containing `{i}` declares one parameter per
    layer, `repeat` of them (`model.layers.0.…` to `model.layers.{repeat-1}.…`).

    `init`: `normal` (mean 0, `std`), `scaled_normal` (mean 0, `std / sqrt(2 · repeat)`, the
    reference's rule for output projections), `kaiming_uniform` (uniform on `[-b, b]` with
    `b = 1 / sqrt(fan_in)`, fan_in the last dim: PyTorch's `nn.Linear` default,
    `kaiming_uniform_(a = sqrt(5))`, which PEFT uses for LoRA's A), `ones`, `zeros`, or
    `checkpoint` (the run must load the value; e.g. Llama 3.1 405B starts from Meta's
    checkpoint). Values are drawn in the parameter's element type.

    `frozen`: the parameter is part of the model but not trained (a LoRA fine-tune's base
    weights): tg-autodiff returns no gradient for it, so no weight-gradient computation is
    built for it (only the input gradients that flow through it to trainable parameters), and
    tg-optimizer keeps no master weight or moments for it. Its value only ever comes from
    initialization or a checkpoint.

    `shard`: how the parameter may be split over the mesh, declared by the model's author as
    Megatron-LM's layer classes are: one list of mesh axes per dimension (upstream MLIR
    `shard.sharding`'s `split_axes`, with axes named rather than numbered because the
    declaration is written once for every cluster shape). Today one axis exists for it,
    `tp`: `[["tp"], []]` splits the rows (a column-parallel linear's output features or an
    embedding's vocabulary), `[[], ["tp"]]` the columns (a row-parallel linear's input
    features). dist-tensor-parallel applies it when tp > 1 and propagates it through the ops'
    sharding rules; without it the parameter is replicated. `shard_blocks` says the split
    dim is several tensors concatenated, each split on its own: a fused
    `qkv_proj [q + k + v, hidden]` with `shard_blocks = array<i64: 8192, 1024, 1024>` gives
    each rank its slice of q, of k and of v (Megatron-LM splits its fused QKV per head group
    for the same reason).

    `checkpoint_parts`: checkpoints may also store the parameter as these tensors stacked
    along dim 0 (a fused `qkv_proj` as Hugging Face's separate `q_proj`, `k_proj` and
    `v_proj`), with `{i}` as in the name. `mlperf-run --init-from` concatenates them when the
    checkpoint lacks the fused name; their rows must add up to dim 0, and with
    `shard_blocks` they are the blocks (one part per block, of its rows).

    `layer`: set by tg-inline-layers on each copy of a per-layer parameter, its index in the
    layer stack (`tg.repeat_layers`). dist-pipeline cuts stages on it.

    ```mlir
    tg.param @"model.layers.{i}.self_attn.o_proj.weight" : tensor<4096x4096xbf16>
        {init = "scaled_normal", std = 0.02, repeat = 32, shard = [[], ["tp"]]}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<TG_Tensor>:$type, StrAttr:$init,
                       OptionalAttr<F64Attr>:$std, OptionalAttr<I64Attr>:$repeat,
                       OptionalAttr<ArrayAttr>:$shard,
                       OptionalAttr<DenseI64ArrayAttr>:$shard_blocks,
                       OptionalAttr<I64Attr>:$layer, UnitAttr:$frozen,
                       OptionalAttr<StrArrayAttr>:$checkpoint_parts);
  let assemblyFormat = "$sym_name `:` $type attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of parameters this op declares: `repeat` for per-layer ones, else 1.
    int64_t getCopies() { return getRepeatAttr() ? getRepeatAttr().getInt() : 1; }
    /// The dim `shard` splits over tp, or -1 (the verifier allows at most one).
    int64_t getDeclaredSplitDim();
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    /// The type on this rank before ZeRO-3 sharding (dist-shard-parameters holds the value
    /// as a 1-D shard and records the type it is a shard of as `dist.unsharded_type`).
    ::mlir::RankedTensorType getUnshardedType();
  }];
}

def TG_ParamRefOp : TG_Op<"param_ref", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The current value of a (non per-layer) parameter";
  let description = [{
    ```mlir
    %w = tg.param_ref @"lm_head.weight" : tensor<128256x4096xbf16>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def TG_RepeatLayersOp : TG_Op<"repeat_layers", [Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Applies a layer function `count` times with per-layer parameters";
  let description = [{
    `h_0 = input`, `h_{i+1} = f_i(h_i, P_0[i], …, P_n[i])`, `result = h_count`, where each
    `P_j` is a per-layer `tg.param` (name with `{i}`, `repeat = count`) and `f_i` is `callee`,
    or with `alternating [@g, ...]` the (i mod m)-th of `callee, @g, ...` (m functions of one
    type: GPT-OSS-20B's sliding-window layers on even indices, full attention on odd ones).
    The declaration stays readable at any depth; the compiler unrolls it.

    ```mlir
    %h = tg.repeat_layers @decoder_layer(%x) count 32
        params [@"model.layers.{i}.input_layernorm.weight", ...] : tensor<1x8192x4096xbf16>
    %g = tg.repeat_layers @sliding_layer(%x) count 24 alternating [@full_layer]
        params [...] : tensor<1x8192x2880xbf16>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, TG_Tensor:$input, I64Attr:$count,
                       OptionalAttr<FlatSymbolRefArrayAttr>:$alternating,
                       FlatSymbolRefArrayAttr:$params);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $callee `(` $input `)` `count` $count (`alternating` $alternating^)? `params` $params
        attr-dict `:` type($input)
  }];
  let extraClassDeclaration = [{
    /// The per-layer parameter names, "{i}" unresolved, in argument order.
    ::llvm::SmallVector<::llvm::StringRef> getParamNames();
    /// The layer functions in their cycle: `callee`, then `alternating`.
    ::llvm::SmallVector<::llvm::StringRef> getCallees();
    /// The function layer `layer` (0-based in this stack) calls.
    ::llvm::StringRef getLayerCallee(int64_t layer);
  }];
}

#endif // MLPERFC_DIALECTS_TG_IR_TGMODELOPS_TD
