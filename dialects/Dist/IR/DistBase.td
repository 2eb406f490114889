//===- DistBase.td - Distribution dialect definition --------*- tablegen -*-===//
//
// The `dist` dialect: the device mesh a train step is partitioned over, the sharding of
// values across it, and collectives as asynchronous start/done pairs, so that scheduling can
// move independent work between a start and its done to overlap communication.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_DIALECTS_DIST_IR_DISTBASE_TD
#define MLPERFC_DIALECTS_DIST_IR_DISTBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::mlperf::dist";
  let summary = "Device mesh, shardings and asynchronous collectives";
  let description = [{
    `dist-partition` turns a single-device train step into the program of one rank of a
    `dist.mesh`: values carry `#dist.sharding` where they hold a slice, and the data that
    ranks exchange flows through `dist.*_start` / `dist.done` pairs.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
}

class Dist_Op<string mnemonic, list<Trait> traits = []> : Op<Dist_Dialect, mnemonic, traits>;

def Dist_FutureType : TypeDef<Dist_Dialect, "Future"> {
  let mnemonic = "future";
  let summary = "The pending result of a started collective";
  let description = [{
    `!dist.future<tensor<...>>` is consumed by exactly one `dist.done`, which yields the
    tensor; `!dist.future<none>` (a send) yields nothing.
  }];
  let parameters = (ins "::mlir::Type":$valueType);
  let assemblyFormat = "`<` $valueType `>`";
}

def Dist_ShardingAttr : AttrDef<Dist_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "How a value is split over mesh axes";
  let description = [{
    `#dist.sharding<@mesh, [["dp"], []]>`: one list of mesh axes per tensor dimension; the
    dimension is split over the product of those axes (in order), every other dimension is
    replicated. A rank holds the slice at its coordinates. With `blocks` (full sizes adding
    up to the split dimension), that dimension is the concatenation of the blocks and the
    rank holds its slice of each, in block order:
    `#dist.sharding<@mesh, [["tp"], []], blocks = array<i64: 64, 32, 32>>` (a fused q|k|v).
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh, "::mlir::ArrayAttr":$dims,
                        OptionalParameter<"::mlir::DenseI64ArrayAttr">:$blocks);
  let assemblyFormat = "`<` $mesh `,` $dims (`,` `blocks` `=` $blocks^)? `>`";
}

#endif // MLPERFC_DIALECTS_DIST_IR_DISTBASE_TD
