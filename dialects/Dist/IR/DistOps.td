//===- DistOps.td - Distribution ops ------------------------*- tablegen -*-===//

#ifndef MLPERFC_DIALECTS_DIST_IR_DISTOPS_TD
#define MLPERFC_DIALECTS_DIST_IR_DISTOPS_TD

include "dialects/Dist/IR/DistBase.td"
include "dialects/TG/IR/TGInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Dist_MeshOp : Dist_Op<"mesh", [Symbol]> {
  let summary = "The device mesh a module is partitioned for";
  let description = [{
    ```mlir
    dist.mesh @mesh {axes = ["dp", "tp", "pp"], shape = array<i64: 2, 2, 1>,
                     nodes = 1 : i64, gpus_per_node = 4 : i64}
    ```
    Axis names are unique and among dp, tp, pp, cp, ep; the product of `shape` is the number
    of ranks, nodes × gpus_per_node. Ranks are laid out as runtime/dist/Mesh.h says: tp
    fastest, then dp, then pp. `vp` (virtual pipeline stages), `sp`
    (sequence parallelism) and `zero` (1: ZeRO-1 optimizer sharding; 3: parameters sharded too,
    dist-shard-parameters) record the strategy. `hsdp` = N > 0 (hybrid sharding, which needs
    zero 1 or 3 and N a divisor of dp below it) shards over groups of N consecutive
    data-parallel ranks and replicates across them: the mesh then also has the axes
    `dp_shard` (size N) and `dp_replicate` (size dp / N), which split dp.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axes, DenseI64ArrayAttr:$shape,
                       I64Attr:$nodes, I64Attr:$gpus_per_node,
                       DefaultValuedAttr<I64Attr, "1">:$vp,
                       DefaultValuedAttr<BoolAttr, "false">:$sp,
                       DefaultValuedAttr<I64Attr, "0">:$zero,
                       DefaultValuedAttr<I64Attr, "0">:$hsdp);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The size of axis `name`; 1 for an axis the mesh does not have.
    int64_t getAxisSize(::llvm::StringRef name);
    bool hasAxis(::llvm::StringRef name);
    /// The axis ZeRO shards over: dp, or dp_shard with hybrid sharding.
    ::llvm::StringRef getZeroShardAxis();
  }];
}

class Dist_CollectiveStartOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits,
                                    [DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  let results = (outs Dist_FutureType:$future);
  let assemblyFormat = [{
    $input `over` $mesh $axes attr-dict `:` type($input) `->` qualified(type($future))
  }];
}

def Dist_AllReduceStartOp : Dist_CollectiveStartOp<"all_reduce_start"> {
  let summary = "Starts an element-wise sum (or maximum) over the ranks of mesh axes";
  let description = [{
    ```mlir
    %f = dist.all_reduce_start %g over @mesh ["dp"] : tensor<64x64xbf16>
        -> !dist.future<tensor<64x64xbf16>>
    %sum = dist.done %f : !dist.future<tensor<64x64xbf16>> -> tensor<64x64xbf16>
    ```
    Every member receives the same sum (members added in group order). With
    `reduction = "max"` (f32 only: a vocabulary-split loss's row maxima) the maximum instead.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       DefaultValuedAttr<StrAttr, "\"sum\"">:$reduction);
  let hasVerifier = 1;
}

def Dist_ReduceScatterStartOp : Dist_CollectiveStartOp<"reduce_scatter_start"> {
  let summary = "Starts a sum over mesh axes of which each rank keeps one slice of a dim";
  let description = [{
    Along `dim` (default 0), `N` becomes `N/G` with G the group size: member i keeps the
    slice [i·N/G, (i+1)·N/G) of the sum.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       DefaultValuedAttr<I64Attr, "0">:$dim);
}

def Dist_AllGatherStartOp : Dist_CollectiveStartOp<"all_gather_start"> {
  let summary = "Starts the concatenation along `dim` (default 0) of every member's tensor";
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       DefaultValuedAttr<I64Attr, "0">:$dim);
}

def Dist_AllToAllStartOp : Dist_CollectiveStartOp<"all_to_all_start"> {
  let summary = "Starts an exchange: member i sends its j-th dim-0 slice to member j";
  let description = [{
    The shape is unchanged: dim 0 is split into G slices, slice j goes to member j, and the
    received slices are concatenated in member order (expert-parallel token exchange).
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
}

def Dist_SendStartOp : Dist_Op<"send_start",
                               [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Starts sending a tensor to the rank `shift` steps along one mesh axis";
  let description = [{
    Pipeline stages pass activations forward (`shift = 1`) and gradients back
    (`shift = -1`) along `pp`; the future carries no value. `tag` (default 0) tells apart
    messages between the same two ranks: a receive takes the oldest message of its sender
    with its tag, so sends and receives of one tag must be issued in the same order.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh, StrAttr:$axis,
                       I64Attr:$shift, DefaultValuedAttr<I64Attr, "0">:$tag);
  let results = (outs Dist_FutureType:$future);
  let assemblyFormat = [{
    $input `to` $mesh $axis `shift` $shift attr-dict `:` type($input) `->` qualified(type($future))
  }];
}

def Dist_RecvStartOp : Dist_Op<"recv_start",
                               [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Starts receiving a tensor from the rank `shift` steps along one mesh axis";
  let description = [{
    The counterpart of `dist.send_start` with the same `tag` on the sending rank.
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrAttr:$axis, I64Attr:$shift,
                       DefaultValuedAttr<I64Attr, "0">:$tag);
  let results = (outs Dist_FutureType:$future);
  let assemblyFormat = [{
    `from` $mesh $axis `shift` $shift attr-dict `:` qualified(type($future))
  }];
}

def Dist_DoneOp : Dist_Op<"done"> {
  let summary = "Waits for a started collective and yields its result";
  let arguments = (ins Dist_FutureType:$future);
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat = "$future attr-dict `:` qualified(type($future)) (`->` type($result)^)?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor-parallel regions (Megatron-LM's f and g)
//===----------------------------------------------------------------------===//

def Dist_LocalShardOp : Dist_Op<"local_shard",
                                [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "This rank's 1/G of a 1-D tensor, G the group size of a mesh axis";
  let description = [{
    Member i of the group keeps elements [i·N/G, (i+1)·N/G): the layout of a ZeRO-1
    optimizer-state shard, so that `@init_optimizer` starts a shard from its slice of the
    (replicated) parameter.

    ```mlir
    %s = dist.local_shard %flat over @mesh "dp" : tensor<64xf32> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh, StrAttr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axis attr-dict `:` type($input) `->` type($result)
  }];
}

def Dist_CopyToRegionOp : Dist_Op<"copy_to_region", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<TG_VJPOpInterface>]> {
  let summary = "Enters a tensor-parallel region: identity; its gradient is summed over the axes";
  let description = [{
    Megatron-LM's `f`: the replicated input of column-parallel linears. Every rank computes a
    partial gradient for it (from its own output columns), so the VJP is a
    `dist.reduce_from_region`. `dist-partition` lowers the op itself to nothing.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `over` $mesh $axes attr-dict `:` type($input)";
}

def Dist_ReduceFromRegionOp : Dist_Op<"reduce_from_region", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<TG_VJPOpInterface>]> {
  let summary = "Leaves a tensor-parallel region: the sum over the axes; its gradient is copied";
  let description = [{
    Megatron-LM's `g`: the partial results of a row-parallel linear (or of a vocab-parallel
    embedding) summed over the ranks of the axes. The VJP is a `dist.copy_to_region`.
    `dist-partition` lowers it to a `dist.all_reduce_start` / `dist.done` pair.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `over` $mesh $axes attr-dict `:` type($input)";
}

def Dist_ReduceScatterRegionOp : Dist_Op<"reduce_scatter_region", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<TG_VJPOpInterface>]> {
  let summary = "Leaves a tensor-parallel region into the sequence-parallel one";
  let description = [{
    Sequence parallelism's `g`: partial results summed over the axes, each rank keeping its
    slice of `dim` (the sequence); the VJP is a `dist.all_gather_region`. Lowered to a
    `dist.reduce_scatter_start` / `done` pair.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `over` $mesh $axes attr-dict `:` type($input) `->` type($result)";
}

def Dist_AllGatherRegionOp : Dist_Op<"all_gather_region", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<TG_VJPOpInterface>]> {
  let summary = "Enters a tensor-parallel region from the sequence-parallel one";
  let description = [{
    Sequence parallelism's `f`: every rank's slice of `dim` concatenated; the VJP is a
    `dist.reduce_scatter_region` (each rank's partial gradient summed and split again).
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `over` $mesh $axes attr-dict `:` type($input) `->` type($result)";
}

#endif // MLPERFC_DIALECTS_DIST_IR_DISTOPS_TD
