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

int64_t accumulationStepsOnOneRank(tg::ModelOp model) {
  auto batch = *model.getBody().front().getOps<tg::BatchOp>().begin();
  return batch.getGlobalBatchSizeAttr().getInt() / batch.getMicroBatchSizeAttr().getInt();
}

void buildTrainStepPipeline(mlir::OpPassManager &pm, const TrainStepOptions &options) {
  // Compute precision first, so every later pass sees the types that will execute.
  pm.addPass(createTGSetPrecisionPass(TGSetPrecisionPassOptions{options.precision}));
  // Straight-line @forward with one tg.param per tensor: the form autodiff works on.
  pm.addPass(createTGInlineLayersPass());
  buildTGCleanupPipeline(pm);
  // Backward of loss / A: summing A micro-batch gradients gives the mean-loss gradient.
  pm.addPass(createTGAutodiffPass(
      TGAutodiffPassOptions{1.0 / static_cast<double>(options.accumulationSteps)}));
  // Clipping, LR schedule and AdamW from the model's metadata.
  pm.addPass(createTGOptimizerPass());
  buildTGCleanupPipeline(pm);
}

void buildPlanPipeline(mlir::OpPassManager &pm, const TrainStepOptions &options) {
  // The train step's functions as programs of commands over typed buffers.
  pm.addPass(
      createPlanFromTGPass(PlanFromTGPassOptions{options.precision, options.accumulationSteps}));
  // Static offsets: liveness per program, first-fit placement in one arena per class.
  pm.addPass(createPlanMemoryPass());
}

void registerMlperfcPipelines() {
  mlir::PassPipelineRegistration<>("tg-cleanup-pipeline",
                                   "Exact clean-up of tg IR: tg-simplify, then CSE",
                                   [](mlir::OpPassManager &pm) { buildTGCleanupPipeline(pm); });
}

} // namespace mlperf
