//===- Pipelines.h - mlperfc pass pipelines --------------------*- C++ -*-===//

#ifndef MLPERFC_COMPILER_PIPELINES_PIPELINES_H
#define MLPERFC_COMPILER_PIPELINES_PIPELINES_H

#include "runtime/dist/Mesh.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlperf::tg {
class ModelOp;
} // namespace mlperf::tg

namespace mlperf {

/// Exact clean-up of a tg module: removes layout no-ops and redundant computation. Runs after
/// verification and again after every pass that creates new tg ops (autodiff, partitioning).
void buildTGCleanupPipeline(mlir::OpPassManager &pm);

struct TrainStepOptions {
  /// "bf16" (the declaration's reference precision), "fp32" (oracle and RCP runs) or "fp8"
  /// (bf16 with the layer stack's linears in fp8: tg-fp8 with `fp8Recipe`).
  std::string precision = "bf16";
  /// tg-fp8's scaling recipe with precision "fp8" (Transformer Engine's: "delayed").
  std::string fp8Recipe = "delayed";
  /// tg-fuse-attention after inlining (mlperfc compile --fuse-attention=false keeps the
  /// unfused graph, e.g. to audit the fusion against it).
  bool fuseAttention = true;
  /// tg-fuse-swiglu after inlining (exact: on unless --fuse-swiglu=false).
  bool fuseSwiglu = true;
  /// tg-fuse-cross-entropy after inlining (exact; --fuse-cross-entropy=false skips it).
  bool fuseCrossEntropy = true;
  /// tg-fuse-add-rms-norm after partitioning (exact; off by default: it saves a GPU kernel's
  /// second read of the row, the CPU nothing, and its plan keeps one [tokens, hidden] tensor
  /// more: --fuse-add-rms-norm turns it on).
  bool fuseAddRMSNorm = false;
  /// tg-fuse-rope-qk after tg-fuse-attention (exact; off by default for the same reason:
  /// --fuse-rope-qk turns it on).
  bool fuseRopeQK = false;
  /// tg-recompute's policy (none, selective, full, auto) and, for auto, the activation bytes
  /// each pipeline stage's differentiated functions may use (one value: every stage).
  std::string recompute = "none";
  std::vector<int64_t> recomputeBudgets;
  /// Micro-batches per optimizer step on one data-parallel rank (global / micro-batch / dp).
  int64_t accumulationSteps = 1;
  /// The cluster and parallel strategy (validated: runtime/dist/Mesh.h validateMesh); a
  /// mesh of more than one rank adds dist-partition.
  rt::MeshShape mesh;
  /// dist-decompose-collectives: gradient bytes per bucket (mlperfc --bucket-mib); 0 is
  /// Megatron's 40 M elements.
  int64_t bucketBytes = 0;
  /// plan-schedule (on unless mlperfc --schedule=false): collectives overlap computation,
  /// with at most `scheduleMemoryLimit` activation bytes alive at once (0: the unscheduled
  /// plan's peak) and `maxOutstanding` collectives in flight.
  bool schedule = true;
  int64_t scheduleMemoryLimit = 0;
  int64_t maxOutstanding = 4;
};

/// Micro-batches per optimizer step with every one on a single data-parallel rank:
/// global_batch_size / micro_batch_size.
int64_t accumulationStepsOnOneRank(mlperf::tg::ModelOp model);

/// Lowers a declaration to its train step: @forward_backward (one micro-batch, gradients of
/// loss / (accumulationSteps × dp)) and @optimizer_step, partitioned for one rank of the mesh
/// when it has more than one. docs/train-step.md states the semantics.
void buildTrainStepPipeline(mlir::OpPassManager &pm, const TrainStepOptions &options);

/// Registers every pipeline above with the pass registry (`mlperf-opt --tg-cleanup-pipeline`).
/// After buildTrainStepPipeline: plan-from-tg, then plan-memory. The module then holds a
/// placed `plan.plan` that plan-emit (compiler/Plan/PlanEmit.h) writes as plan.pb.
void buildPlanPipeline(mlir::OpPassManager &pm, const TrainStepOptions &options);

void registerMlperfcPipelines();

} // namespace mlperf

#endif // MLPERFC_COMPILER_PIPELINES_PIPELINES_H
