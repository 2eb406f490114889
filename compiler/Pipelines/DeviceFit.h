//===- DeviceFit.h - Compile a train step that fits its device --*- C++ -*-===//
//
// The train-step and plan pipelines run on a copy of a declaration, and the placed plan's
// per-rank peak (compiler/Analysis/DeviceMemory.h) is checked against a device. With
// recompute policy `auto` the activation budgets tg-recompute gets are found by compiling:
// the cost model is the placed plan itself.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_PIPELINES_DEVICEFIT_H
#define MLPERFC_COMPILER_PIPELINES_DEVICEFIT_H

#include "compiler/Analysis/DeviceMemory.h"
#include "compiler/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>
#include <vector>

namespace mlir {
class PassManager;
} // namespace mlir

namespace mlperf {

struct CompiledStep {
  mlir::OwningOpRef<mlir::ModuleOp> module; // the lowered module with its placed plan(s)
  TrainStepOptions options;                 // what it was compiled with (auto's budgets found)
  std::vector<RankMemory> stages;           // per plan, in pipeline-stage order
  /// The largest stage peak, and the stage that has it.
  int64_t peakBytes() const;
  size_t peakStage() const;
};

/// Sets up a pass manager before a compile (IR dumps, timing, verification of every pass).
using ConfigurePassManager = llvm::function_ref<mlir::LogicalResult(mlir::PassManager &)>;

/// Lowers a copy of `declaration` (left as it is) with the train-step and plan pipelines and
/// measures every stage's plan. The lowered IR is verified (after every pass if `configure`
/// turns the verifier on). Errors are reported as diagnostics.
mlir::FailureOr<CompiledStep> compileStep(mlir::ModuleOp declaration,
                                          const TrainStepOptions &options,
                                          ConfigurePassManager configure = {});

/// compileStep for a device. With recompute `auto`: first with every layer recomputed fully
/// (the smallest plan; each stage's peak minus tg-recompute's reported cost is what it needs
/// whatever is recomputed, and the device's rest is its budget), then with those budgets, then,
/// while a stage still overflows and can recompute more, with its budget lowered by the
/// overflow (at most kMaxFitCompiles compiles; two in every configuration measured). Other
/// policies compile once. The result may still not fit: the caller compares peakBytes() with
/// the device.
mlir::FailureOr<CompiledStep> compileForDevice(mlir::ModuleOp declaration,
                                               const TrainStepOptions &options,
                                               const DeviceMemory &device,
                                               ConfigurePassManager configure = {});

/// Strategies one change away from `options` (zero=1; sp=on; tp, pp doubled with dp halved;
/// the full recompute policy) that the cluster and the model allow, each with its options
/// (accumulation steps follow dp) and its description ("zero=1", "tp=2", "--recompute full").
struct NearbyStrategy {
  std::string change;
  TrainStepOptions options;
};
std::vector<NearbyStrategy> nearbyStrategies(const TrainStepOptions &options,
                                             const rt::ModelDims &dims,
                                             int64_t microBatchesOnOneRank);

} // namespace mlperf

#endif // MLPERFC_COMPILER_PIPELINES_DEVICEFIT_H
