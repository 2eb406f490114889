//===- TGBase.td - Training-graph dialect definition -------*- tablegen -*-===//
//
// The `tg` dialect: tensor ops with value semantics that describe one training step of a
// benchmark model (forward graph, loss, and later the backward graph and optimizer).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_DIALECTS_TG_IR_TGBASE_TD
#define MLPERFC_DIALECTS_TG_IR_TGBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def TG_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::mlperf::tg";
  // Folded constants (splat tensors) are materialized as tg.fill.
  let hasConstantMaterializer = 1;
  let summary = "Training-graph dialect: tensor ops with value semantics";
  let description = [{
    Ops in `tg` operate on ranked tensors of the MLPerf approved floating-point formats used
    by the benchmarks: f32, bf16, f8E4M3FN and f8E5M2 (and f64 for the per-token statistics of
    a vocabulary-split loss, `dist-lower-vocab-loss`). Every op is pure; shapes are static and
    verified, and result types are inferred from operands so that passes can build ops without
    spelling shapes.
  }];
}

// Element types a tg compute op accepts.
def TG_Float : AnyTypeOf<[F32, BF16, F8E4M3FN, F8E5M2], "f32, bf16, f8E4M3FN or f8E5M2">;
def TG_Tensor : StaticShapeTensorOf<[TG_Float]>;
// Token ids and labels.
def TG_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
// Layout ops (reshape, split) also move token ids: the train step slices micro-batches.
def TG_AnyTensor : StaticShapeTensorOf<[TG_Float, I32, I64]>;
// Scalars such as the loss are f32 whatever the compute precision.
def TG_F32Scalar : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;
// Optimizer step counters.
def TG_I64Scalar : 0DTensorOf<[I64]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI64Type())">;
// A dropout key: the run's seed and a micro-batch counter (tg.dropout_key).
def TG_DropoutKey : 1DTensorOf<[I64]>,
    BuildableType<"::mlir::RankedTensorType::get({2}, $_builder.getI64Type())">;

class TG_Op<string mnemonic, list<Trait> traits = []> : Op<TG_Dialect, mnemonic, traits>;

#endif // MLPERFC_DIALECTS_TG_IR_TGBASE_TD
