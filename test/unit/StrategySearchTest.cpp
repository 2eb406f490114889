//===- StrategySearchTest.cpp - plan-search's bound and pruning -----------===//
//
// The search skips a strategy whose lower bound cannot make the list; the bound must never
// exceed what the compiled strategy predicts, or pruning would change the ranking. Checked
// on the tiny Llama over two nodes of two GPUs (tp, pp, vp, ZeRO 0-3 and hsdp among them).

#include "compiler/Pipelines/StrategySearch.h"
#include "compiler/Registration.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlperf;

namespace {

struct TinySearch : ::testing::Test {
  std::unique_ptr<mlir::MLIRContext> context = createModelContext();
  mlir::OwningOpRef<mlir::ModuleOp> declaration = mlir::parseSourceFile<mlir::ModuleOp>(
      MLPERFC_SOURCE_DIR "/models/llama31_8b_tiny.mlir", context.get());

  SearchResult search(size_t keep) {
    SearchOptions options;
    options.nodes = options.gpusPerNode = 2;
    EXPECT_TRUE(parseDevice("h100", options.device).isOk());
    EXPECT_TRUE(builtinDeviceSpeed("h100", options.speed).isOk());
    options.base.recompute = "auto";
    options.keep = keep;
    return searchStrategies(*declaration, options);
  }
};

double perSample(const RankedStrategy &strategy) {
  return strategy.stepSeconds / static_cast<double>(strategy.globalBatch);
}

TEST_F(TinySearch, BoundNeverExceedsTheCompiledStrategy) {
  ASSERT_TRUE(declaration);
  SearchResult all = search(/*keep=*/0);
  EXPECT_EQ(all.pruned, 0);
  ASSERT_GT(all.ranked.size(), 10u);
  for (const RankedStrategy &strategy : all.ranked) {
    EXPECT_GT(strategy.bound, 0.0) << strategy.description;
    // The tiny model has no RCP: strategies rank by time per sample.
    EXPECT_LE(strategy.bound, perSample(strategy)) << strategy.description;
  }
}

TEST_F(TinySearch, PruningKeepsTheRanking) {
  ASSERT_TRUE(declaration);
  SearchResult all = search(/*keep=*/0);
  SearchResult pruned = search(/*keep=*/3);
  ASSERT_GE(pruned.ranked.size(), 3u);
  EXPECT_EQ(pruned.enumerated, all.enumerated);
  EXPECT_EQ(pruned.compiled + pruned.pruned, all.compiled);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(pruned.ranked[i].description, all.ranked[i].description);
    EXPECT_DOUBLE_EQ(pruned.ranked[i].stepSeconds, all.ranked[i].stepSeconds);
  }
}

} // namespace
