//===- OptimizerTest.cpp - LR schedule, clipping, AdamW ------------------===//
//
// AdamW is checked as the compiler writes it (an element program, compiler/Support/
// OptimizerPrograms.h: header-only, no MLIR) on the runtime's CPU kernel: the runtime itself
// knows no optimizer.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Optimizer.h"
#include "compiler/Support/OptimizerPrograms.h"
#include "runtime/cpu/OpKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

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

// AdamW as the compiler writes it (compiler/Support/OptimizerPrograms.h): the f64 bias
// corrections of the step, then the f32 update, both run by the CPU's `elementwise` kernel.
struct AdamWState {
  std::vector<float> master, m, v;
};

void adamwStep(AdamWState &state, const std::vector<float> &grad, float lr, float clip,
               int64_t step, double beta1, double beta2, double epsilon, double weightDecay) {
  using mlperf::rt::DType;
  using mlperf::rt::HostTensor;
  using mlperf::rt::OpAttributes;
  auto tensor = [](const std::vector<float> &values) {
    HostTensor t = HostTensor::zeros(DType::kF32, {static_cast<int64_t>(values.size())});
    t.values = values;
    return t;
  };
  auto scalar = [](float value) {
    HostTensor t = HostTensor::zeros(DType::kF32, {});
    t.values[0] = value;
    return t;
  };
  HostTensor stepTensor = HostTensor::zeros(DType::kI64, {});
  stepTensor.ints[0] = step;
  OpAttributes corrections;
  corrections.set("program", mlperf::adamwCorrectionsProgram(beta1, beta2));
  corrections.set("arithmetic", std::string("f64"));
  std::vector<HostTensor> c{scalar(0), scalar(0)};
  ASSERT_TRUE(mlperf::rt::runHostOp("elementwise", corrections, {&stepTensor}, c).isOk());
  HostTensor master = tensor(state.master), m = tensor(state.m), v = tensor(state.v),
             g = tensor(grad), rate = scalar(lr), factor = scalar(clip);
  OpAttributes update;
  update.set("program", mlperf::adamwProgram(beta1, beta2, epsilon, weightDecay));
  std::vector<HostTensor> out{master, m, v};
  mlperf::rt::Status status = mlperf::rt::runHostOp(
      "elementwise", update, {&master, &m, &v, &g, &rate, &factor, &c[0], &c[1]}, out);
  ASSERT_TRUE(status.isOk()) << status.message();
  state = {out[0].values, out[1].values, out[2].values};
}

// First step from zero moments: m̂ = g, v̂ = g², so the update is lr (sign(g) g/(|g| + ε)) plus
// decay, whatever β.
TEST(Optimizer, AdamWFirstStepMatchesClosedForm) {
  AdamWState state{{1.0f, -2.0f, 0.5f}, {0, 0, 0}, {0, 0, 0}};
  const std::vector<float> grad = {0.3f, -0.01f, 0.0f};
  adamwStep(state, grad, 0.01f, 1.0f, /*step=*/0, 0.9, 0.95, 1e-5, 0.1);
  const float expected[3] = {1.0f - 0.01f * (0.3f / (0.3f + 1e-5f) + 0.1f * 1.0f),
                             -2.0f - 0.01f * (-0.01f / (0.01f + 1e-5f) + 0.1f * -2.0f),
                             0.5f - 0.01f * (0.0f + 0.1f * 0.5f)};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(state.master[i], expected[i], 1e-6) << i;
    EXPECT_NEAR(state.m[i], 0.1f * grad[i], 1e-6 * std::fabs(grad[i])) << i;
    EXPECT_NEAR(state.v[i], 0.05f * grad[i] * grad[i], 1e-6 * grad[i] * grad[i]) << i;
  }
}

// Bit for bit the f32 arithmetic of Transformer Engine's FusedAdam (adam_w_mode), written out
// here with one rounding per operation, over steps where the bias corrections matter.
TEST(Optimizer, AdamWProgramIsFusedAdamInF32) {
  const double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-5, decay = 0.1;
  AdamWState state{{0.5f, -0.25f, 1e-3f, 0.0f}, {0, 0, 0, 0}, {0, 0, 0, 0}};
  AdamWState expected = state;
  for (int64_t step = 0; step < 40; ++step) {
    std::vector<float> grad;
    for (int i = 0; i < 4; ++i) {
      grad.push_back(static_cast<float>(std::sin(0.7 * static_cast<double>(step * 4 + i))) *
                     (i == 3 ? 1e-6f : 0.1f));
    }
    const float lr = 1e-3f, clip = step % 3 == 0 ? 0.5f : 1.0f;
    adamwStep(state, grad, lr, clip, step, beta1, beta2, epsilon, decay);
    const double t = static_cast<double>(step + 1);
    const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2),
                c1 = static_cast<float>(1.0 - std::pow(beta1, t)),
                c2 = static_cast<float>(1.0 - std::pow(beta2, t));
    for (int i = 0; i < 4; ++i) {
      volatile float g = grad[i] * clip;
      volatile float first = b1 * expected.m[i];
      volatile float firstNew = (1.0f - b1) * g;
      expected.m[i] = first + firstNew;
      volatile float second = b2 * expected.v[i];
      volatile float scaled = (1.0f - b2) * g;
      volatile float secondNew = scaled * g;
      expected.v[i] = second + secondNew;
      volatile float mHat = expected.m[i] / c1, vHat = expected.v[i] / c2;
      volatile float denominator = std::sqrt(vHat) + static_cast<float>(epsilon);
      volatile float ratio = mHat / denominator;
      volatile float decayed = static_cast<float>(decay) * expected.master[i];
      volatile float sum = ratio + decayed;
      volatile float delta = lr * sum;
      expected.master[i] = expected.master[i] - delta;
      ASSERT_EQ(state.m[i], expected.m[i]) << "step " << step << " element " << i;
      ASSERT_EQ(state.v[i], expected.v[i]) << "step " << step << " element " << i;
      ASSERT_EQ(state.master[i], expected.master[i]) << "step " << step << " element " << i;
    }
  }
}

// Adam's update is nearly scale-invariant, so the moments (which are not) show the clip.
TEST(Optimizer, ClipScalesTheGradient) {
  AdamWState a{{0}, {0}, {0}}, b = a, c = a;
  adamwStep(a, {2.0f}, 1.0f, 0.5f, 0, 0.9, 0.95, 1e-8, 0.0);
  adamwStep(b, {1.0f}, 1.0f, 1.0f, 0, 0.9, 0.95, 1e-8, 0.0);
  adamwStep(c, {2.0f}, 1.0f, 1.0f, 0, 0.9, 0.95, 1e-8, 0.0);
  EXPECT_EQ(a.m[0], b.m[0]);
  EXPECT_EQ(a.v[0], b.v[0]);
  EXPECT_NE(a.m[0], c.m[0]);
  EXPECT_NE(a.v[0], c.v[0]);
}

TEST(Optimizer, SumOfSquares) {
  const float g[3] = {3.0f, 4.0f, 0.0f};
  EXPECT_DOUBLE_EQ(sumOfSquares(g, 3), 25.0);
}

} // namespace
