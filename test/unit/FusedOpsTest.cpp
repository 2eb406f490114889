//===- FusedOpsTest.cpp - Fused element-wise ops against their graphs -----===//
//
// tg.swiglu and tg.swiglu_grad, run through the CPU dispatch every backend uses, against the
// unfused ops they replace (tg.silu, tg.mul, tg.silu_grad) run the same way: equal to the
// bit, in bf16 and f32, over more elements than one chunk of the fused kernel.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/OpKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

using namespace mlperf::rt;

namespace {

HostTensor randomTensor(DType type, int64_t count, unsigned seed, float spread) {
  HostTensor tensor = HostTensor::zeros(type, {count});
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  for (float &value : tensor.values) {
    value = normal(random);
  }
  roundBuffer(type, tensor.values.data(), count);
  return tensor;
}

/// `op` on `operands`, with `results` results shaped like the first operand.
std::vector<HostTensor> run(const char *op, const std::vector<const HostTensor *> &operands,
                            size_t results) {
  std::vector<HostTensor> out;
  for (size_t i = 0; i < results; ++i) {
    out.push_back(HostTensor::zeros(operands[0]->dtype, operands[0]->shape));
  }
  Status status = runHostOp(op, OpAttributes(), operands, out);
  EXPECT_TRUE(status.isOk()) << op << ": " << status.message();
  return out;
}

void expectSwigluIsItsGraph(DType type) {
  const int64_t count = 3 * 4096 + 123; // several chunks and a partial one
  HostTensor gate = randomTensor(type, count, 1, 3.0f), up = randomTensor(type, count, 2, 1.0f),
             grad = randomTensor(type, count, 3, 0.1f);
  HostTensor act = run("silu", {&gate}, 1)[0];
  HostTensor product = run("mul", {&act, &up}, 1)[0];
  HostTensor upGrad = run("mul", {&grad, &act}, 1)[0];
  HostTensor actGrad = run("mul", {&grad, &up}, 1)[0];
  HostTensor gateGrad = run("silu_grad", {&gate, &actGrad}, 1)[0];

  HostTensor fused = run("swiglu", {&gate, &up}, 1)[0];
  std::vector<HostTensor> fusedGrads = run("swiglu_grad", {&gate, &up, &grad}, 2);
  EXPECT_EQ(fused.values, product.values);
  EXPECT_EQ(fusedGrads[0].values, gateGrad.values);
  EXPECT_EQ(fusedGrads[1].values, upGrad.values);
}

/// linear_cross_entropy and its gradient against matmul + cross_entropy and the gradients
/// tg-autodiff builds for them (cross_entropy_grad, then the matmul's two gradient products).
void expectLinearCrossEntropyIsItsGraph(DType type, bool withMask) {
  const int64_t batch = 2, seq = 300, hidden = 24, vocab = 40; // 600 tokens: three chunks
  HostTensor h = randomTensor(type, batch * seq * hidden, 5, 1.0f);
  h.shape = {batch, seq, hidden};
  HostTensor w = randomTensor(type, vocab * hidden, 6, 0.3f);
  w.shape = {vocab, hidden};
  HostTensor labels = HostTensor::zeros(DType::kI64, {batch, seq});
  HostTensor mask = HostTensor::zeros(DType::kF32, {batch, seq});
  std::mt19937 random(7);
  for (int64_t t = 0; t < batch * seq; ++t) {
    labels.ints[t] = static_cast<int64_t>(random() % vocab);
    mask.values[t] = static_cast<float>(random() % 3 != 0);
  }
  HostTensor dloss = HostTensor::zeros(DType::kF32, {});
  dloss.values[0] = 0.125f;
  OpAttributes transposed;
  transposed.set("transpose_rhs", int64_t{1});
  std::vector<HostTensor> logits{HostTensor::zeros(type, {batch, seq, vocab})};
  ASSERT_TRUE(runHostOp("matmul", transposed, {&h, &w}, logits).isOk());
  std::vector<const HostTensor *> lossInputs{&logits[0], &labels};
  if (withMask) {
    lossInputs.push_back(&mask);
  }
  std::vector<HostTensor> loss{HostTensor::zeros(DType::kF32, {})};
  ASSERT_TRUE(runHostOp("cross_entropy", OpAttributes(), lossInputs, loss).isOk());
  std::vector<const HostTensor *> gradInputs{&logits[0], &labels, &dloss};
  if (withMask) {
    gradInputs.push_back(&mask);
  }
  std::vector<HostTensor> dlogits{HostTensor::zeros(type, logits[0].shape)};
  ASSERT_TRUE(runHostOp("cross_entropy_grad", OpAttributes(), gradInputs, dlogits).isOk());
  std::vector<HostTensor> dh{HostTensor::zeros(type, h.shape)},
      dw{HostTensor::zeros(type, w.shape)};
  ASSERT_TRUE(runHostOp("matmul", OpAttributes(), {&dlogits[0], &w}, dh).isOk());
  HostTensor dlogitRows = dlogits[0], hiddenRows = h; // flattened, as the matmul VJP does
  dlogitRows.shape = {batch * seq, vocab};
  hiddenRows.shape = {batch * seq, hidden};
  OpAttributes lhsTransposed;
  lhsTransposed.set("transpose_lhs", int64_t{1});
  ASSERT_TRUE(runHostOp("matmul", lhsTransposed, {&dlogitRows, &hiddenRows}, dw).isOk());

  OpAttributes fusedAttributes;
  fusedAttributes.set("logits_type", std::string(dtypeName(type)));
  std::vector<const HostTensor *> fusedInputs{&h, &w, &labels};
  if (withMask) {
    fusedInputs.push_back(&mask);
  }
  std::vector<HostTensor> fusedLoss{HostTensor::zeros(DType::kF32, {})};
  ASSERT_TRUE(runHostOp("linear_cross_entropy", fusedAttributes, fusedInputs, fusedLoss).isOk());
  std::vector<const HostTensor *> fusedGradInputs{&h, &w, &labels, &dloss};
  if (withMask) {
    fusedGradInputs.push_back(&mask);
  }
  std::vector<HostTensor> fusedGrads{HostTensor::zeros(type, h.shape),
                                     HostTensor::zeros(type, w.shape)};
  ASSERT_TRUE(
      runHostOp("linear_cross_entropy_grad", fusedAttributes, fusedGradInputs, fusedGrads).isOk());
  EXPECT_EQ(fusedLoss[0].values, loss[0].values);
  EXPECT_EQ(fusedGrads[0].values, dh[0].values);
  EXPECT_EQ(fusedGrads[1].values, dw[0].values);
}

TEST(FusedOps, LinearCrossEntropyBf16IsMatmulAndLoss) {
  expectLinearCrossEntropyIsItsGraph(DType::kBF16, false);
}
TEST(FusedOps, LinearCrossEntropyF32WithMaskIsMatmulAndLoss) {
  expectLinearCrossEntropyIsItsGraph(DType::kF32, true);
}

TEST(FusedOps, LinearCrossEntropyReportsABadLabel) {
  HostTensor h = HostTensor::zeros(DType::kF32, {1, 2, 3}),
             w = HostTensor::zeros(DType::kF32, {4, 3});
  HostTensor labels = HostTensor::zeros(DType::kI64, {1, 2});
  labels.ints[1] = 7;
  OpAttributes attributes;
  attributes.set("logits_type", std::string("f32"));
  std::vector<HostTensor> loss{HostTensor::zeros(DType::kF32, {})};
  Status status = runHostOp("linear_cross_entropy", attributes, {&h, &w, &labels}, loss);
  EXPECT_EQ(status.message(), "label 7 at position 1 is outside the vocabulary [0, 4)");
}

void expectAddRMSNormIsItsGraph(DType type) {
  HostTensor x = randomTensor(type, 6 * 40, 8, 1.0f), y = randomTensor(type, 6 * 40, 9, 1.0f),
             w = randomTensor(type, 40, 10, 1.0f);
  x.shape = y.shape = {6, 40};
  OpAttributes epsilon;
  epsilon.set("epsilon", 1e-5);
  HostTensor sum = run("add", {&x, &y}, 1)[0];
  std::vector<HostTensor> normed{HostTensor::zeros(type, x.shape)};
  ASSERT_TRUE(runHostOp("rms_norm", epsilon, {&sum, &w}, normed).isOk());
  std::vector<HostTensor> fused{HostTensor::zeros(type, x.shape), HostTensor::zeros(type, x.shape)};
  ASSERT_TRUE(runHostOp("add_rms_norm", epsilon, {&x, &y, &w}, fused).isOk());
  EXPECT_EQ(fused[0].values, sum.values);
  EXPECT_EQ(fused[1].values, normed[0].values);
}

TEST(FusedOps, AddRMSNormBf16IsAddThenNorm) { expectAddRMSNormIsItsGraph(DType::kBF16); }
TEST(FusedOps, AddRMSNormF32IsAddThenNorm) { expectAddRMSNormIsItsGraph(DType::kF32); }

TEST(FusedOps, RopeQKIsTwoRotations) {
  for (bool inverse : {false, true}) {
    HostTensor q = randomTensor(DType::kBF16, 2 * 6 * 4 * 8, 11, 1.0f),
               k = randomTensor(DType::kBF16, 2 * 6 * 2 * 8, 12, 1.0f);
    q.shape = {2, 6, 4, 8};
    k.shape = {2, 6, 2, 8};
    OpAttributes rotation;
    rotation.set("theta", 500000.0);
    rotation.set("scaling_factor", 8.0);
    rotation.set("low_freq_factor", 1.0);
    rotation.set("high_freq_factor", 4.0);
    rotation.set("original_max_position", int64_t{8192});
    if (inverse) {
      rotation.set("inverse", int64_t{1});
    }
    std::vector<HostTensor> qr{HostTensor::zeros(q.dtype, q.shape)},
        kr{HostTensor::zeros(k.dtype, k.shape)};
    ASSERT_TRUE(runHostOp("rope", rotation, {&q}, qr).isOk());
    ASSERT_TRUE(runHostOp("rope", rotation, {&k}, kr).isOk());
    std::vector<HostTensor> fused{HostTensor::zeros(q.dtype, q.shape),
                                  HostTensor::zeros(k.dtype, k.shape)};
    ASSERT_TRUE(runHostOp("rope_qk", rotation, {&q, &k}, fused).isOk());
    EXPECT_EQ(fused[0].values, qr[0].values);
    EXPECT_EQ(fused[1].values, kr[0].values);
  }
}

/// Central differences of a scalar function of `x` against `grad`, in f32 (the kernels' type).
template <typename Loss>
void expectGradient(HostTensor &x, const std::vector<float> &grad, Loss loss, const char *what) {
  const float eps = 1e-2f;
  for (size_t i = 0; i < x.values.size(); ++i) {
    float saved = x.values[i];
    x.values[i] = saved + eps;
    double plus = loss();
    x.values[i] = saved - eps;
    double minus = loss();
    x.values[i] = saved;
    double numeric = (plus - minus) / (2.0 * eps);
    EXPECT_NEAR(grad[i], numeric, 2e-3 + 2e-3 * std::fabs(numeric)) << what << "[" << i << "]";
  }
}

TEST(FusedOps, SwigluGradIsTheGradient) {
  HostTensor gate = randomTensor(DType::kF32, 12, 13, 1.5f),
             up = randomTensor(DType::kF32, 12, 14, 1.0f),
             w = randomTensor(DType::kF32, 12, 15, 1.0f);
  auto loss = [&] {
    HostTensor out = run("swiglu", {&gate, &up}, 1)[0];
    double sum = 0.0;
    for (size_t i = 0; i < out.values.size(); ++i) {
      sum += static_cast<double>(out.values[i]) * w.values[i];
    }
    return sum;
  };
  std::vector<HostTensor> grads = run("swiglu_grad", {&gate, &up, &w}, 2);
  expectGradient(gate, grads[0].values, loss, "gate");
  expectGradient(up, grads[1].values, loss, "up");
}

TEST(FusedOps, LinearCrossEntropyGradIsTheGradient) {
  HostTensor h = randomTensor(DType::kF32, 3 * 4, 16, 1.0f),
             w = randomTensor(DType::kF32, 5 * 4, 17, 1.0f);
  h.shape = {3, 4};
  w.shape = {5, 4};
  HostTensor labels = HostTensor::zeros(DType::kI64, {3});
  labels.ints = {4, 0, 2};
  HostTensor dloss = HostTensor::zeros(DType::kF32, {});
  dloss.values[0] = 1.0f;
  OpAttributes attributes;
  attributes.set("logits_type", std::string("f32"));
  auto loss = [&] {
    std::vector<HostTensor> out{HostTensor::zeros(DType::kF32, {})};
    EXPECT_TRUE(runHostOp("linear_cross_entropy", attributes, {&h, &w, &labels}, out).isOk());
    return static_cast<double>(out[0].values[0]);
  };
  std::vector<HostTensor> grads{HostTensor::zeros(DType::kF32, h.shape),
                                HostTensor::zeros(DType::kF32, w.shape)};
  ASSERT_TRUE(
      runHostOp("linear_cross_entropy_grad", attributes, {&h, &w, &labels, &dloss}, grads).isOk());
  expectGradient(h, grads[0].values, loss, "hidden");
  expectGradient(w, grads[1].values, loss, "weight");
}

TEST(FusedOps, SwigluBf16IsMulOfSilu) { expectSwigluIsItsGraph(DType::kBF16); }
TEST(FusedOps, SwigluF32IsMulOfSilu) { expectSwigluIsItsGraph(DType::kF32); }

} // namespace
