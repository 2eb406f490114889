//===- Fp8Test.cpp - fp8 scaling kernels against their definitions ------===//
//
// tg.amax, tg.fp8_scale_update and tg.fp8_matmul through the CPU dispatch every backend
// uses, against values worked out from the definitions (docs/dialects/tg.md, "fp8") and
// Transformer Engine's amax_and_scale_update kernel. The cast itself is checked against
// ml_dtypes in NumericsTest.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Fp8.h"
#include "runtime/cpu/Numerics.h"
#include "runtime/cpu/OpKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mlperf::rt;

namespace {

HostTensor tensor(DType type, std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor t = HostTensor::zeros(type, std::move(shape));
  t.values = std::move(values);
  return t;
}

HostTensor scalar(float value) { return tensor(DType::kF32, {}, {value}); }

struct Update {
  std::vector<float> history;
  float scale;
};

Update scaleUpdate(std::vector<float> history, float amax, float scale, const char *algo,
                   double fp8Max = 448.0, double margin = 0.0) {
  int64_t length = static_cast<int64_t>(history.size());
  HostTensor h = tensor(DType::kF32, {length}, history), a = scalar(amax), s = scalar(scale);
  std::vector<HostTensor> out{HostTensor::zeros(DType::kF32, {length}),
                              HostTensor::zeros(DType::kF32, {})};
  OpAttributes attributes;
  attributes.set("fp8_max", fp8Max);
  attributes.set("margin", margin);
  attributes.set("amax_compute_algo", std::string(algo));
  Status status = runHostOp("fp8_scale_update", attributes, {&h, &a, &s}, out);
  EXPECT_TRUE(status.isOk()) << status.message();
  return {out[0].values, out[1].values[0]};
}

TEST(Fp8, ScaleUpdateRollsAsTransformerEngine) {
  // TE's history at rest: row 0 empty, rows 1..L-1 the older amaxes, the newest last.
  Update u = scaleUpdate({0.0f, 1.0f, 2.0f, 3.0f}, 5.0f, 7.0f, "most_recent");
  EXPECT_EQ(u.history, (std::vector<float>{0.0f, 2.0f, 3.0f, 5.0f}));
  EXPECT_EQ(u.scale, 448.0f / 5.0f);
  // "max" takes the largest amax of the whole window, this one included.
  EXPECT_EQ(scaleUpdate({0.0f, 9.0f, 2.0f, 3.0f}, 5.0f, 7.0f, "max").scale, 448.0f / 9.0f);
  EXPECT_EQ(scaleUpdate({0.0f, 9.0f, 2.0f, 3.0f}, 5.0f, 7.0f, "most_recent").scale, 448.0f / 5.0f);
  // A margin halves the target per unit; E5M2's maximum.
  EXPECT_EQ(scaleUpdate({0.0f, 0.0f}, 3.0f, 1.0f, "most_recent", 57344.0, 1.0).scale,
            28672.0f / 3.0f);
  // Length 1: the history stays empty.
  Update single = scaleUpdate({0.0f}, 2.0f, 1.0f, "most_recent");
  EXPECT_EQ(single.history, (std::vector<float>{0.0f}));
  EXPECT_EQ(single.scale, 224.0f);
}

TEST(Fp8, ScaleKeptWhenAmaxIsZeroOrNotFinite) {
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(scaleUpdate({0.0f, 1.0f}, 0.0f, 3.0f, "most_recent").scale, 3.0f);
  EXPECT_EQ(scaleUpdate({0.0f, 1.0f}, inf, 3.0f, "most_recent").scale, 3.0f);
  Update withInf = scaleUpdate({0.0f, 1.0f}, inf, 3.0f, "most_recent");
  EXPECT_EQ(withInf.history[1], inf); // recorded as it is
  // A NaN amax is skipped where it is recorded (fmaxf): nothing was seen, scale kept.
  Update withNan = scaleUpdate({0.0f, 1.0f}, std::nanf(""), 3.0f, "most_recent");
  EXPECT_EQ(withNan.scale, 3.0f);
  EXPECT_EQ(withNan.history, (std::vector<float>{0.0f, 0.0f}));
  // An amax whose scale overflows f32 gives the largest float, not infinity.
  EXPECT_EQ(scaleUpdate({0.0f, 0.0f}, 1e-38f, 1.0f, "most_recent").scale,
            std::numeric_limits<float>::max());
}

TEST(Fp8, CurrentScaleAsTransformerEngine) {
  auto current = [](float amax, double fp8Max = 448.0) {
    HostTensor a = scalar(amax);
    std::vector<HostTensor> out{HostTensor::zeros(DType::kF32, {})};
    OpAttributes attributes;
    attributes.set("fp8_max", fp8Max);
    EXPECT_TRUE(runHostOp("fp8_current_scale", attributes, {&a}, out).isOk());
    return out[0].values[0];
  };
  EXPECT_EQ(current(3.5f), 448.0f / 3.5f);
  EXPECT_EQ(current(3.5f, 57344.0), 57344.0f / 3.5f);
  EXPECT_EQ(current(0.0f), 1.0f);
  EXPECT_EQ(current(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(current(1e-40f), std::numeric_limits<float>::max()); // 448 / denormal overflows
}

TEST(Fp8, AmaxSkipsNaNAndCountsInfinity) {
  HostTensor a = tensor(DType::kBF16, {3}, {-2.5f, std::nanf(""), 1.0f});
  HostTensor b = tensor(DType::kF32, {2}, {0.5f, -3.0f});
  std::vector<HostTensor> out{HostTensor::zeros(DType::kF32, {})};
  ASSERT_TRUE(runHostOp("amax", OpAttributes(), {&a, &b}, out).isOk());
  EXPECT_EQ(out[0].values[0], 3.0f);
  HostTensor c = tensor(DType::kF32, {2}, {-std::numeric_limits<float>::infinity(), 1.0f});
  ASSERT_TRUE(runHostOp("amax", OpAttributes(), {&a, &c}, out).isOk());
  EXPECT_EQ(out[0].values[0], std::numeric_limits<float>::infinity());
}

TEST(Fp8, QuantizeDispatchSaturates) {
  HostTensor x = tensor(DType::kBF16, {4}, {300.0f, -1000.0f, std::nanf(""), 0.01f});
  HostTensor s = scalar(2.0f);
  std::vector<HostTensor> out{HostTensor::zeros(DType::kF8E4M3FN, {4})};
  ASSERT_TRUE(runHostOp("fp8_quantize", OpAttributes(), {&x, &s}, out).isOk());
  EXPECT_EQ(out[0].values[0], 448.0f);  // 600 saturates
  EXPECT_EQ(out[0].values[1], -448.0f); // -2000 saturates
  EXPECT_TRUE(std::isnan(out[0].values[2]));
  EXPECT_EQ(out[0].values[3], 0.01953125f); // 0.02 to the nearest E4M3 subnormal (5 · 2^-8)
}

TEST(Fp8, MatmulScalesTheF32SumOnceThenRounds) {
  // [1, 2] · [2, 2]ᵀ in E4M3 / E5M2 values, scales 4 and 8: (sum) · (1/4 · 1/8), then bf16.
  HostTensor a = tensor(DType::kF8E4M3FN, {1, 2}, {1.5f, -3.0f});
  HostTensor b = tensor(DType::kF8E5M2, {2, 2}, {2.0f, 0.75f, -1.0f, 5.0f});
  HostTensor sa = scalar(4.0f), sb = scalar(8.0f);
  OpAttributes attributes;
  attributes.set("transpose_rhs", int64_t{1});
  std::vector<HostTensor> out{HostTensor::zeros(DType::kBF16, {1, 2})};
  ASSERT_TRUE(runHostOp("fp8_matmul", attributes, {&a, &b, &sa, &sb}, out).isOk());
  EXPECT_EQ(out[0].values[0], static_cast<float>(roundTo(DType::kBF16, (3.0 - 2.25) / 32.0)));
  EXPECT_EQ(out[0].values[1], static_cast<float>(roundTo(DType::kBF16, (-1.5 - 15.0) / 32.0)));
  // A factor that is not a power of two rounds in f32 first, then to bf16.
  HostTensor s3 = scalar(3.0f);
  ASSERT_TRUE(runHostOp("fp8_matmul", attributes, {&a, &b, &s3, &s3}, out).isOk());
  float factor = (1.0f / 3.0f) * (1.0f / 3.0f);
  EXPECT_EQ(out[0].values[0], static_cast<float>(roundTo(DType::kBF16, 0.75f * factor)));
}

} // namespace
