//===- Pipelines.h - mlperfc pass pipelines --------------------*- C++ -*-===//

#ifndef MLPERFC_COMPILER_PIPELINES_PIPELINES_H
#define MLPERFC_COMPILER_PIPELINES_PIPELINES_H

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlperf {

/// Exact clean-up of a tg module: removes layout no-ops and redundant computation. Runs after
/// verification and again after every pass that creates new tg ops (autodiff, partitioning).
void buildTGCleanupPipeline(mlir::OpPassManager &pm);

/// Registers every pipeline above with the pass registry (`mlperf-opt --tg-cleanup-pipeline`).
void registerMlperfcPipelines();

} // namespace mlperf

#endif // MLPERFC_COMPILER_PIPELINES_PIPELINES_H
