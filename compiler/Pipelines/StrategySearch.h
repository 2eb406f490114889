//===- StrategySearch.h - Predicted steps and the strategy search -*- C++ -*-===//
//
// `mlperfc predict` and `mlperfc plan-search` on one library: a strategy is compiled (for a
// device when given: recompute `auto` fits it), its plans emitted and their step simulated
// by the step-time model (compiler/Analysis/StepTime.h). The search enumerates strategies of
// a cluster, compiles each as `mlperfc compile` would and ranks those that fit by predicted
// time to train: its numbers are `mlperfc predict`'s for the same command.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_PIPELINES_STRATEGYSEARCH_H
#define MLPERFC_COMPILER_PIPELINES_STRATEGYSEARCH_H

#include "compiler/Analysis/DeviceMemory.h"
#include "compiler/Analysis/StepTime.h"
#include "compiler/Pipelines/DeviceFit.h"

#include "runtime/plan.pb.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace mlperf {

struct PredictedStep {
  TrainStepOptions options;       // as compiled (auto's budgets resolved)
  std::vector<RankMemory> stages; // per plan, in stage order
  int64_t peakBytes = 0;
  size_t peakStage = 0; // the stage holding peakBytes
  StepPrediction step;
  std::vector<plan::Plan> plans;
};

/// Compiles a copy of `declaration` with `options` (compileForDevice with a device), emits the
/// plans and simulates their `train_step`. Errors are diagnostics (compile) or a failure with
/// `error` set (emission, simulation).
mlir::FailureOr<PredictedStep>
predictCompiledStep(mlir::ModuleOp declaration, const TrainStepOptions &options,
                    const DeviceMemory *device, const DeviceSpeed &speed, bool withTimeline,
                    std::string &error, ConfigurePassManager configure = {});

/// Mean samples to converge that the declaration's reference convergence points give for
/// global batch `gbs` (tg.benchmark rcp_batch_sizes / rcp_mean_samples), if it names `gbs`.
std::optional<int64_t> rcpMeanSamples(mlir::ModuleOp declaration, int64_t gbs);
/// The global batch sizes the declaration's reference convergence points name.
std::vector<int64_t> rcpBatchSizes(mlir::ModuleOp declaration);

/// A copy of `declaration` with global batch `gbs` (its evaluation cadence rounded up to a
/// multiple of it): the step `emit-model --set gbs=N` declares.
mlir::OwningOpRef<mlir::ModuleOp> withGlobalBatch(mlir::ModuleOp declaration, int64_t gbs);

struct SearchOptions {
  int64_t nodes = 1, gpusPerNode = 1;
  DeviceMemory device;
  DeviceSpeed speed;
  std::vector<int64_t> globalBatches; // empty: the RCP batch sizes, else the declared one
  /// Precision, fusions, scheduling and the recompute policy (`auto` fits each strategy to
  /// the device, as `mlperfc compile --device` does).
  TrainStepOptions base;
  /// Rank at least this many: a strategy whose lower bound is worse than the keep-th best
  /// found is not compiled. The bound is the larger of its share of the model FLOPs at the
  /// fastest GEMM rate and a stage's share of the GEMM and attention time its micro-batches
  /// take (measured on proxies of one and two layers per tp), stretched by the pipeline's
  /// fill and drain. 0: compile every one.
  size_t keep = 10;
  /// Called after each strategy considered with its description and what became of it.
  llvm::function_ref<void(const std::string &description, const std::string &outcome)> progress =
      nullptr;
};

struct RankedStrategy {
  std::string description;  // "dp=4 tp=8 pp=64 vp=1 sp=on zero=1 recompute=auto gbs=1152"
  TrainStepOptions options; // as compiled (auto's budgets resolved)
  int64_t globalBatch = 0;
  double stepSeconds = 0, samplesPerSecond = 0;
  std::optional<double> timeToTrainSeconds; // with an RCP for the batch
  int64_t peakBytes = 0;
  size_t peakStage = 0;
  StepPrediction step; // every stage's parts; step.criticalStage is the slowest
  double mfu = 0;
  double bound = 0; // the lower bound on the ranking metric the search ordered it by
};

/// A strategy left out, and why (the mesh checks, memory, a compile error, the bound).
struct ExcludedStrategy {
  std::string description, reason;
};

struct SearchResult {
  std::vector<RankedStrategy> ranked;     // fitting, best first
  std::vector<ExcludedStrategy> excluded; // those the mesh checks refuse among them
                                          // (not counted in `enumerated`)
  int64_t enumerated = 0, compiled = 0, tooLarge = 0, notCompiling = 0;
  int64_t pruned = 0; // not compiled: their bound could not make the list
  double seconds = 0;
};

/// Enumerates tp (powers of 2 within a node), pp, vp (1, 2), zero (0, 1, 3), sequence
/// parallelism (on whenever tp > 1: the same traffic as without, a tp-th of the activations)
/// and the global batch; drops strategies the mesh checks or an analytic bound on the
/// persistent state rule out; compiles the rest as `mlperfc compile` does (compileForDevice:
/// recompute `auto` fitted to the device) in the order of a lower bound on their time,
/// skipping those the bound shows cannot make the first `keep`; ranks those that fit by the
/// predicted step of their plans (by time to train when every batch has an RCP, else by time
/// per sample).
SearchResult searchStrategies(mlir::ModuleOp declaration, const SearchOptions &options);

} // namespace mlperf

#endif // MLPERFC_COMPILER_PIPELINES_STRATEGYSEARCH_H
