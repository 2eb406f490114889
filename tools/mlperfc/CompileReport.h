//===- CompileReport.h - What mlperfc compile prints about a plan -*- C++ -*-===//
//
// The summary `mlperfc compile` prints (each function's ops, arenas against their lower
// bounds, what recompute chose, per-rank memory against the device) and its refusal of a plan
// that does not fit, with the strategies one change away that would.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_TOOLS_MLPERFC_COMPILEREPORT_H
#define MLPERFC_TOOLS_MLPERFC_COMPILEREPORT_H

#include "compiler/Analysis/DeviceMemory.h"
#include "compiler/Pipelines/DeviceFit.h"

#include "runtime/dist/Mesh.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>

namespace mlperf::cli {

/// What tg-recompute chose for the differentiated functions described so far (their
/// `tg.recompute` reports): model FLOPs recomputed against the model FLOPs.
struct RecomputeTotals {
  double recomputed = 0, model = 0;
};

/// Prints one function of a lowered stage: its ops, its activation arena against the lower
/// bound and, for a differentiated function, what it keeps for backward next to Korthikanti
/// et al.'s estimate and what recompute chose (added to `recompute`).
void describeFunction(mlir::func::FuncOp func, const rt::ModelDims &dims, const rt::MeshShape &mesh,
                      RecomputeTotals &recompute);

/// What one rank holds by role and, with a device, its peak against it.
void describeRankMemory(const RankMemory &memory, const rt::MeshShape &mesh,
                        const DeviceMemory *device);

/// The refusal of a plan that does not fit `device`: where the peak is, what it is made of,
/// and the strategies one change away that fit. Returns 1.
int refuseUnfit(mlir::ModuleOp declaration, const TrainStepOptions &options,
                const rt::ModelDims &dims, int64_t microBatchesOnOneRank, const CompiledStep &step,
                const DeviceMemory &device);

} // namespace mlperf::cli

#endif // MLPERFC_TOOLS_MLPERFC_COMPILEREPORT_H
