//===- RunningMeanTest.cpp - Evaluation's running mean in the plan --------------===//
//
// @eval_step adds each micro-batch's loss to a running [sum, count] (mean_accumulate) and
// @eval_finish divides it and starts it again (mean_finish). Through the CPU dispatch every
// backend's twin uses: the mean is the f64 sum of the f32 losses in order over their count,
// the restart is zeros (the loader's type checks are in PlanTest).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/OpKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace mlperf;
using namespace mlperf::rt;

namespace {

TEST(RunningMean, AccumulatesInF64AndFinishesWithTheMeanAndZeros) {
  const float losses[] = {10.375f, 3.1415927f, 1e-7f, 7.0f};
  HostTensor running = HostTensor::zeros(DType::kF64, {2});
  double expected = 0.0; // the reference: f64 sum of the f32 values, in order
  for (float loss : losses) {
    HostTensor value = HostTensor::zeros(DType::kF32, {});
    value.values[0] = loss;
    std::vector<HostTensor> results{HostTensor::zeros(DType::kF64, {2})};
    Status status = runHostOp("mean_accumulate", OpAttributes(), {&running, &value}, results);
    ASSERT_TRUE(status.isOk()) << status.message();
    running = std::move(results[0]);
    expected += static_cast<double>(loss);
  }
  EXPECT_EQ(running.wide[0], expected);
  EXPECT_EQ(running.wide[1], 4.0);
  std::vector<HostTensor> results{HostTensor::zeros(DType::kF64, {}),
                                  HostTensor::zeros(DType::kF64, {2})};
  results[1].wide = {5.0, 6.0}; // a restart overwrites whatever the buffer held
  Status status = runHostOp("mean_finish", OpAttributes(), {&running}, results);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(results[0].wide[0], expected / 4.0);
  EXPECT_EQ(results[1].wide, (std::vector<double>{0.0, 0.0}));
  // Nothing added: the mean of nothing is not a number (no rank had a micro-batch).
  HostTensor empty = HostTensor::zeros(DType::kF64, {2});
  ASSERT_TRUE(runHostOp("mean_finish", OpAttributes(), {&empty}, results).isOk());
  EXPECT_TRUE(std::isnan(results[0].wide[0]));
}

} // namespace
