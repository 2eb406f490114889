//===- PipelineScheduleTest.cpp - 1F1B and interleaved pipeline schedules ---===//

#include "compiler/Analysis/PipelineSchedule.h"

#include <gtest/gtest.h>

namespace rt = mlperf::rt;

namespace {

TEST(PipelineSchedule, OneForwardOneBackwardRunsEveryPassOnceInDependencyOrder) {
  std::vector<std::vector<mlperf::PipelineOp>> schedule;
  ASSERT_TRUE(mlperf::pipelineSchedule(4, 1, 8, schedule).isOk());
  ASSERT_EQ(schedule.size(), 4u);
  // Rank 0 warms up with pp - 1 = 3 forwards, the last rank alternates from the start.
  EXPECT_TRUE(schedule[0][0].forward && schedule[0][1].forward && schedule[0][2].forward);
  EXPECT_TRUE(schedule[3][0].forward);
  EXPECT_FALSE(schedule[3][1].forward);
  for (const auto &ops : schedule) {
    EXPECT_EQ(ops.size(), 16u);
  }
}

TEST(PipelineSchedule, InFlightMicroBatchesAreTheWarmUpPlusOne) {
  std::vector<std::vector<mlperf::PipelineOp>> schedule;
  // 1F1B: rank r runs min(pp - r - 1, m) forwards before its first backward, then one forward
  // before each backward, so it holds min(pp - r, m) micro-batches at once.
  ASSERT_TRUE(mlperf::pipelineSchedule(16, 1, 72, schedule).isOk());
  for (int64_t rank = 0; rank < 16; ++rank) {
    EXPECT_EQ(mlperf::maxInFlight(schedule[rank], 0), 16 - rank) << "rank " << rank;
  }
  ASSERT_TRUE(mlperf::pipelineSchedule(4, 1, 2, schedule).isOk());
  EXPECT_EQ(mlperf::maxInFlight(schedule[0], 0), 2);
  EXPECT_EQ(mlperf::maxInFlight(schedule[0], 1), 0); // no such chunk
}

TEST(PipelineSchedule, BubbleMatchesTheTextbookFractions) {
  struct Case {
    int64_t pp, vp, microBatches;
  };
  for (Case c : {Case{2, 1, 4}, Case{4, 1, 8}, Case{16, 1, 72}, Case{4, 2, 8}, Case{16, 4, 64}}) {
    std::vector<std::vector<mlperf::PipelineOp>> schedule;
    ASSERT_TRUE(mlperf::pipelineSchedule(c.pp, c.vp, c.microBatches, schedule).isOk());
    mlperf::PipelineTiming timing;
    // A chunk's share of a stage's forward (1) and backward (2).
    ASSERT_TRUE(
        mlperf::simulatePipeline(schedule, c.pp, c.vp, 1.0 / c.vp, 2.0 / c.vp, timing).isOk());
    EXPECT_NEAR(timing.bubbleFraction, mlperf::textbookBubbleFraction(c.pp, c.vp, c.microBatches),
                1e-12)
        << "pp " << c.pp << " vp " << c.vp << " m " << c.microBatches;
  }
}

TEST(PipelineSchedule, RejectsInterleavingWithMicroBatchesNotAMultipleOfStages) {
  std::vector<std::vector<mlperf::PipelineOp>> schedule;
  rt::Status status = mlperf::pipelineSchedule(16, 2, 72, schedule);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("multiple of pp=16"), std::string::npos);
}

} // namespace
