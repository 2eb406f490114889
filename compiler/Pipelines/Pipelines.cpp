//===- Pipelines.cpp - mlperfc pass pipelines -------------------*- C++ -*-===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlperf {

void buildTGCleanupPipeline(mlir::OpPassManager &pm) {
  // Fold layout no-ops first: removing transposes exposes identical matmuls to CSE.
  pm.addPass(createTGSimplifyPass());
  // Common subexpression elimination: exact, explicitly allowed by the MLPerf closed rules.
  pm.addPass(mlir::createCSEPass());
}

void registerMlperfcPipelines() {
  mlir::PassPipelineRegistration<>("tg-cleanup-pipeline",
                                   "Exact clean-up of tg IR: tg-simplify, then CSE",
                                   [](mlir::OpPassManager &pm) { buildTGCleanupPipeline(pm); });
}

} // namespace mlperf
