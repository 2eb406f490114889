//===- PlanOps.td - Execution-plan ops ---------------------*- tablegen -*-===//

#ifndef MLPERFC_DIALECTS_PLAN_IR_PLANOPS_TD
#define MLPERFC_DIALECTS_PLAN_IR_PLANOPS_TD

include "dialects/Plan/IR/PlanBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"

def Plan_PlanOp : Plan_Op<"plan", [SymbolTable, Symbol, SingleBlock, NoTerminator,
                                   IsolatedFromAbove, NoRegionArguments]> {
  let summary = "One execution plan: arenas, buffers, parameters and programs";
  let description = [{
    ```mlir
    plan.plan @llama31_8b_tiny.plan attributes {format_version = 1 : i64, model = {...}} {
      plan.arena @persistent "persistent" {size = 1908736 : i64}
      plan.buffer @"model.norm.weight" : tensor<64xbf16> in @persistent at 0
      plan.program @forward inputs [@"input.tokens", @"input.labels"] outputs [@loss] {
        plan.command "embedding" [@"model.embed_tokens.weight", @"input.tokens"]
            -> [@"forward.embedding.0"]
        ...
      }
    }
    ```
    `model` holds the training metadata the runtime needs (batch, optimizer, schedule,
    benchmark): the fields of `plan.ModelInfo` in runtime/plan.proto. `mesh`, in a plan for
    more than one rank, holds the fields of `plan.Mesh` (nodes, gpus_per_node, dp, tp, pp,
    vp, sequence_parallel, zero, hsdp).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$format_version,
                       DictionaryAttr:$model, OptionalAttr<DictionaryAttr>:$mesh);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Plan_MemoryClass : I32EnumAttr<"MemoryClass", "a memory class of the plan", [
    I32EnumAttrCase<"persistent", 1>, // the whole run (plan.proto MemoryClass PERSISTENT)
    I32EnumAttrCase<"activations", 2> // temporaries of programs (ACTIVATIONS)
  ]> {
  let cppNamespace = "::mlperf::plan_ir";
}

def Plan_ArenaOp : Plan_Op<"arena", [Symbol, HasParent<"PlanOp">]> {
  let summary = "One arena per memory class";
  let description = [{
    `memory_class` is `persistent` (parameters, optimizer state, gradients, inputs: the
    whole run) or `activations` (temporaries of one program; programs share it). `size` and
    `lower_bound` (most bytes alive at once) are set by `plan-memory`.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Plan_MemoryClass:$memory_class,
                       DefaultValuedAttr<I64Attr, "0">:$size,
                       DefaultValuedAttr<I64Attr, "0">:$lower_bound);
  let assemblyFormat = "$sym_name $memory_class attr-dict";
  let hasVerifier = 1;
}

def Plan_BufferOp : Plan_Op<"buffer", [Symbol, HasParent<"PlanOp">,
                                       DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A typed buffer at a byte offset of an arena";
  let description = [{
    The tensor type gives the dtype and shape. The offset is absent until `plan-memory`
    places the buffer. `view of @b` makes the buffer another view of `@b`'s bytes (a
    reshape): it takes `@b`'s offset and keeps `@b` alive as long as it is used.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<AnyRankedTensor>:$type,
                       FlatSymbolRefAttr:$arena, OptionalAttr<I64Attr>:$offset,
                       OptionalAttr<FlatSymbolRefAttr>:$view_of);
  let assemblyFormat = [{
    $sym_name `:` $type `in` $arena (`at` $offset^)? (`view` `of` $view_of^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes the buffer holds: elements x element bytes.
    int64_t getStorageBytes();
  }];
}

def Plan_ParameterOp : Plan_Op<"parameter", [HasParent<"PlanOp">,
                                             DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A parameter: its Hugging Face name and state buffers";
  let arguments = (ins StrAttr:$name, FlatSymbolRefAttr:$value,
                       OptionalAttr<FlatSymbolRefAttr>:$grad, StrAttr:$init,
                       DefaultValuedAttr<F64Attr, "0.0">:$std,
                       OptionalAttr<StrAttr>:$shard_axis, OptionalAttr<I64Attr>:$shard_count,
                       OptionalAttr<StrAttr>:$split_axis, OptionalAttr<I64Attr>:$split_dim,
                       OptionalAttr<I64Attr>:$split_count,
                       OptionalAttr<DenseI64ArrayAttr>:$split_blocks,
                       OptionalAttr<StrArrayAttr>:$checkpoint_parts,
                       OptionalAttr<DenseI64ArrayAttr>:$checkpoint_part_rows,
                       OptionalAttr<DenseI64ArrayAttr>:$value_shard_of);
  let description = [{
    A trained parameter has a `grad`, a frozen one (tg.param's `frozen`) none. Its optimizer
    state is not listed here: `plan.state` ops name it by role, as the optimizer step's roles
    say, so no optimizer is built into the plan dialect.
    With `split_axis`, `split_dim` and `split_count` (tensor parallelism), the value is this
    rank's slice of the full parameter along `split_dim` (of each of `split_blocks`, when the
    dim is made of blocks). `checkpoint_parts`: the tensors a checkpoint may store it as
    instead, stacked along dim 0 (tg.param's), of `checkpoint_part_rows` rows each when the
    declaration's blocks say. With `value_shard_of` (ZeRO-3), the value is a 1-D shard over
    `shard_axis` (`shard_count` shards) of the (tensor-parallel local) parameter of that shape.
  }];
  let assemblyFormat = "$name attr-dict";
}

def Plan_StateOp : Plan_Op<"state", [HasParent<"PlanOp">,
                                     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Train state beyond a parameter's value: a checkpointed persistent buffer";
  let description = [{
    `name` is its checkpoint tensor name, `role` what it is (the optimizer's state, as
    @optimizer_step's `tg.role`s name it: `master`, `exp_avg`, ...; or the fp8 scaling state of
    tg-fp8) and `param` the parameter (or fp8 GEMM group) it belongs to. With `shard_axis` and
    `shard_count` (ZeRO-1), the buffer is a 1-D shard: this rank's 1/shard_count of the
    flattened (tensor-parallel local) tensor. `starts_as_param`: `@init_optimizer` starts it
    as the parameter's value converted to its dtype (`tg.init = "param"`, an f32 master
    weight), so a checkpoint wider than the parameter can fill it exactly.
  }];
  let arguments = (ins StrAttr:$name, FlatSymbolRefAttr:$buffer, StrAttr:$role, StrAttr:$param,
                       OptionalAttr<StrAttr>:$shard_axis, OptionalAttr<I64Attr>:$shard_count,
                       UnitAttr:$starts_as_param);
  let assemblyFormat = "$name $buffer attr-dict";
}

def Plan_ProgramOp : Plan_Op<"program", [Symbol, HasParent<"PlanOp">, SingleBlock,
                                         NoTerminator, NoRegionArguments,
                                         DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Commands run in order on their streams";
  let description = [{
    `inputs` are the buffers filled before the program runs, `outputs` those holding its
    results afterwards. `train_step` and `eval_step` are what the runtime runs; they state
    what each input and output is in `input_roles` / `output_roles` (runtime/plan/StepRoles.h)
    and `call` the sub-programs (`forward`, `forward_backward`, `optimizer_step`), whose
    inputs the caller copies in first.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefArrayAttr:$inputs,
                       FlatSymbolRefArrayAttr:$outputs,
                       DefaultValuedAttr<I64Attr, "1">:$streams,
                       OptionalAttr<StrArrayAttr>:$input_roles,
                       OptionalAttr<StrArrayAttr>:$output_roles);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name `inputs` $inputs `outputs` $outputs attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Plan_CommandOp : Plan_Op<"command", [HasParent<"ProgramOp">,
                                         DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "One kernel: reads `operands`, writes `results`";
  let description = [{
    `kernel` names an op of the runtime's table (runtime/plan/PlanOps.cpp, the tg op names
    plus `copy`, the collectives and the events); `kernel_attrs` are its attributes (the tg
    op's). `stream` (default 0) is the stream it is issued on, below the program's `streams`;
    commands of one stream run in program order, and `event_record` / `event_wait`
    (`event = N`, an attribute of the command itself) order commands across streams;
    `micro_batch` (informative) is the micro-batch of the step a command works on: `plan-from-tg` puts each
    collective on stream 1 between a wait for stream 0's inputs and a record that stream 0
    waits for before it reads the result.
  }];
  let arguments = (ins StrAttr:$kernel, FlatSymbolRefArrayAttr:$operands,
                       FlatSymbolRefArrayAttr:$results,
                       DefaultValuedAttr<DictionaryAttr, "{}">:$kernel_attrs,
                       DefaultValuedAttr<I64Attr, "0">:$stream,
                       OptionalAttr<I64Attr>:$event, OptionalAttr<I64Attr>:$micro_batch);
  let assemblyFormat = "$kernel $operands `->` $results attr-dict";
  let hasVerifier = 1;
}

#endif // MLPERFC_DIALECTS_PLAN_IR_PLANOPS_TD
