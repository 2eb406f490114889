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
  // fp8 is bf16 everywhere but in the linears tg-fp8 rewrites at the end.
  pm.addPass(createTGSetPrecisionPass(
      TGSetPrecisionPassOptions{options.precision == "fp8" ? "bf16" : options.precision}));
  // Straight-line @forward with one tg.param per tensor: the form autodiff works on.
  pm.addPass(createTGInlineLayersPass());
  buildTGCleanupPipeline(pm);
  if (options.fuseAttention) {
    // Before partitioning (tg.attention has its own sharding rule) and autodiff (its VJP is
    // the fused backward), so no [seq, seq] tensor is ever built.
    pm.addPass(createTGFuseAttentionPass());
  }
  if (options.fuseRopeQK) {
    pm.addPass(createTGFuseRopeQKPass());
  }
  if (options.fuseSwiglu) {
    pm.addPass(createTGFuseSwigluPass());
  }
  if (options.fuseCrossEntropy) {
    pm.addPass(createTGFuseCrossEntropyPass());
  }
  const rt::MeshShape &mesh = options.mesh;
  if (mesh.worldSize() > 1) {
    // The mesh, and @forward split over tp before autodiff (Megatron's parallel layers).
    pm.addPass(createDistTensorParallelPass(
        DistTensorParallelPassOptions{mesh.nodes, mesh.gpusPerNode, mesh.dp, mesh.tp, mesh.pp,
                                      mesh.vp, mesh.sequenceParallel, mesh.zero, mesh.hsdp}));
    // One model per pipeline stage (pp > 1).
    pm.addPass(createDistPipelinePass());
    buildTGCleanupPipeline(pm);
  }
  if (options.fuseAddRMSNorm) {
    // After dist-pipeline: a layer's last residual add and the next layer's first norm may sit
    // on two stages, and a stage boundary must stay a value between two ops.
    pm.addPass(createTGFuseAddRMSNormPass());
  }
  // Backward of loss / (A·dp): summing A micro-batch gradients on each of dp ranks gives the
  // global batch's mean-loss gradient (Megatron scales by 1/A, then by 1/dp before reducing;
  // both are powers of two in every MLPerf configuration, so the product is the same bits).
  pm.addPass(createTGAutodiffPass(TGAutodiffPassOptions{
      1.0 / static_cast<double>(options.accumulationSteps * options.mesh.dp)}));
  // Clipping, LR schedule and AdamW from the model's metadata.
  pm.addPass(createTGOptimizerPass());
  buildTGCleanupPipeline(pm);
  if (mesh.worldSize() > 1) {
    // One rank's program: tp regions as collectives, gradients reduced over dp (ZeRO-1:
    // sharded optimizer state), the global norm counting every element once.
    pm.addPass(createDistPartitionPass());
    // A loss over a vocabulary split over tp as local pieces around all-reduces.
    pm.addPass(createDistLowerVocabLossPass());
    buildTGCleanupPipeline(pm);
  }
  // Last of the function rewrites, after the final CSE (which would merge a recomputed clone
  // back into its original): the backward reads clones of what the policy recomputes.
  TGRecomputePassOptions recompute;
  recompute.policy = options.recompute;
  recompute.accumulationSteps = options.accumulationSteps;
  recompute.budgets.assign(options.recomputeBudgets.begin(), options.recomputeBudgets.end());
  pm.addPass(createTGRecomputePass(recompute));
  if (mesh.zero == 3 && mesh.dp > 1) {
    // ZeRO-3: parameters held as dp shards, gathered for each forward and backward read
    // (after tg-recompute, so that recomputed ops read the backward's gather).
    pm.addPass(createDistShardParametersPass());
  }
  // The whole step: micro-batches in the pipeline schedule's order with their transfers,
  // gradient accumulation, the loss vector and the optimizer (@train_step, @eval_step).
  pm.addPass(createTGTrainStepPass(TGTrainStepPassOptions{options.accumulationSteps}));
  if (options.precision == "fp8") {
    // Needs the whole step: the scaling state is threaded through its calls in step order.
    TGFp8PassOptions fp8;
    fp8.recipe = options.fp8Recipe;
    pm.addPass(createTGFp8Pass(fp8));
  }
  if (mesh.dp > 1) {
    // Gradient buckets reduced in the backward that completes them, so that their
    // collectives can overlap the rest of it (plan-schedule).
    pm.addPass(createDistDecomposeCollectivesPass(
        DistDecomposeCollectivesPassOptions{options.bucketBytes}));
  }
}

void buildPlanPipeline(mlir::OpPassManager &pm, const TrainStepOptions &options) {
  // The train step's functions as programs of commands over typed buffers.
  pm.addPass(
      createPlanFromTGPass(PlanFromTGPassOptions{options.precision, options.accumulationSteps}));
  if (options.schedule) {
    // Collectives overlap computation, within the memory limit.
    pm.addPass(createPlanSchedulePass(
        PlanSchedulePassOptions{options.scheduleMemoryLimit, options.maxOutstanding}));
  }
  // Static offsets: liveness per program, first-fit placement in one arena per class.
  pm.addPass(createPlanMemoryPass());
}

void registerMlperfcPipelines() {
  mlir::PassPipelineRegistration<>("tg-cleanup-pipeline",
                                   "Exact clean-up of tg IR: tg-simplify, then CSE",
                                   [](mlir::OpPassManager &pm) { buildTGCleanupPipeline(pm); });
}

} // namespace mlperf
