//===- OptimizerTest.cpp - LR schedule, clipping, AdamW ------------------===//

#include "runtime/cpu/Optimizer.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlperf::rt::cpu;

namespace {

// The NeMo schedule (shared/reference/MLPERF.md): warmup reaches base_lr at step W, the
// cosine reaches end_lr at T, then holds.
TEST(Optimizer, LearningRateScheduleShape) {
  LRSchedule s{1e-3, 1e-4, 4, 14};
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 1e-3 / 5);
  EXPECT_DOUBLE_EQ(learningRate(s, 3), 1e-3 * 4 / 5);
  EXPECT_DOUBLE_EQ(learningRate(s, 4), 1e-3);
  EXPECT_DOUBLE_EQ(learningRate(s, 9), 1e-4 + 0.9e-3 * 0.5); // halfway: cos(pi/2) = 0
  EXPECT_NEAR(learningRate(s, 14), 1e-4, 1e-18);
  EXPECT_DOUBLE_EQ(learningRate(s, 15), 1e-4);
  EXPECT_DOUBLE_EQ(learningRate(s, 1000), 1e-4);
  for (int64_t k = 5; k < 14; ++k) {
    EXPECT_LT(learningRate(s, k + 1), learningRate(s, k)) << k;
  }
}

TEST(Optimizer, ClipCoefficientAppliesOnlyAboveTheLimit) {
  EXPECT_DOUBLE_EQ(clipCoefficient(0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(clipCoefficient(4.0, 1.0), 1.0 / (4.0 + 1e-6));
  EXPECT_DOUBLE_EQ(clipCoefficient(0.0, 1.0), 1.0);
}

// First step from zero moments: m̂ = g, v̂ = g², so the update is lr (sign(g) g/(|g| + ε)) plus
// decay, whatever β.
TEST(Optimizer, AdamWFirstStepMatchesClosedForm) {
  float master[3] = {1.0f, -2.0f, 0.5f}, m[3] = {}, v[3] = {};
  const float grad[3] = {0.3f, -0.01f, 0.0f};
  AdamWHyper h{0.9, 0.95, 1e-5, 0.1};
  adamwUpdate(master, m, v, grad, 3, 0.01f, 1.0f, /*step=*/0, h);
  const float expected[3] = {1.0f - 0.01f * (0.3f / (0.3f + 1e-5f) + 0.1f * 1.0f),
                             -2.0f - 0.01f * (-0.01f / (0.01f + 1e-5f) + 0.1f * -2.0f),
                             0.5f - 0.01f * (0.0f + 0.1f * 0.5f)};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(master[i], expected[i], 1e-6) << i;
    EXPECT_NEAR(m[i], 0.1f * grad[i], 1e-6 * std::fabs(grad[i])) << i;
    EXPECT_NEAR(v[i], 0.05f * grad[i] * grad[i], 1e-6 * grad[i] * grad[i]) << i;
  }
}

// Adam's update is nearly scale-invariant, so the moments (which are not) show the clip.
TEST(Optimizer, ClipScalesTheGradient) {
  float a[1] = {0}, ma[1] = {}, va[1] = {}, b[1] = {0}, mb[1] = {}, vb[1] = {};
  float c[1] = {0}, mc[1] = {}, vc[1] = {};
  const float grad[1] = {2.0f}, half[1] = {1.0f};
  AdamWHyper h{0.9, 0.95, 1e-8, 0.0};
  adamwUpdate(a, ma, va, grad, 1, 1.0f, 0.5f, 0, h);
  adamwUpdate(b, mb, vb, half, 1, 1.0f, 1.0f, 0, h);
  adamwUpdate(c, mc, vc, grad, 1, 1.0f, 1.0f, 0, h);
  EXPECT_EQ(ma[0], mb[0]);
  EXPECT_EQ(va[0], vb[0]);
  EXPECT_NE(ma[0], mc[0]);
  EXPECT_NE(va[0], vc[0]);
}

TEST(Optimizer, SumOfSquares) {
  const float g[3] = {3.0f, 4.0f, 0.0f};
  EXPECT_DOUBLE_EQ(sumOfSquares(g, 3), 25.0);
}

} // namespace
