//===- MemoryPlanTest.cpp - Arena placement invariants on real models ----===//

#include "compiler/Analysis/MemoryPlan.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlperf;

namespace {

/// Checks every function of a compiled declaration: buffers alive at the same time never
/// share bytes, offsets are aligned, and the arena is within 5% of the lower bound.
void checkModel(const std::string &path) {
  std::unique_ptr<mlir::MLIRContext> context = createModelContext();
  ModelFile file(*context, path);
  mlir::OwningOpRef<mlir::ModuleOp> module = file.load();
  ASSERT_TRUE(module);
  mlir::PassManager pm(context.get());
  buildTrainStepPipeline(pm, TrainStepOptions{});
  ASSERT_TRUE(succeeded(pm.run(*module)));
  int checked = 0;
  getModel(*module).walk([&](mlir::func::FuncOp func) {
    bool calls = false;
    func.walk([&](mlir::func::CallOp) { calls = true; });
    if (calls) {
      return; // a step function: its temporaries are placed around its calls in the plan
    }
    MemoryPlan plan = planFunctionMemory(func, 256);
    const auto &buffers = plan.buffers;
    for (size_t i = 0; i < buffers.size(); ++i) {
      EXPECT_EQ(buffers[i].offset % 256, 0) << func.getSymName().str();
      EXPECT_LE(buffers[i].offset + buffers[i].bytes, plan.arenaBytes);
      for (size_t j = i + 1; j < buffers.size(); ++j) {
        bool together =
            buffers[i].firstUse <= buffers[j].lastUse && buffers[j].firstUse <= buffers[i].lastUse;
        bool overlap = buffers[i].offset < buffers[j].offset + buffers[j].bytes &&
                       buffers[j].offset < buffers[i].offset + buffers[i].bytes;
        EXPECT_FALSE(together && overlap)
            << func.getSymName().str() << ": buffers " << i << " and " << j << " collide";
      }
    }
    EXPECT_GE(plan.arenaBytes, plan.lowerBoundBytes);
    EXPECT_LE(static_cast<double>(plan.arenaBytes), 1.05 * plan.lowerBoundBytes)
        << func.getSymName().str();
    ++checked;
  });
  // forward, forward_backward, optimizer_step, eval_finish, init_params, init_optimizer
  EXPECT_EQ(checked, 6);
}

TEST(MemoryPlan, TinyModelTrainStep) {
  checkModel(MLPERFC_SOURCE_DIR "/models/llama31_8b_tiny.mlir");
}

TEST(MemoryPlan, FullLlama31_8bTrainStep) {
  checkModel(MLPERFC_SOURCE_DIR "/models/llama31_8b.mlir");
}

} // namespace
