//===- FusedOpsTest.cpp - Fused element-wise ops against their graphs -----===//
//
// tg.swiglu and tg.swiglu_grad, run through the CPU dispatch every backend uses, against the
// unfused ops they replace (tg.silu, tg.mul, tg.silu_grad) run the same way: equal to the
// bit, in bf16 and f32, over more elements than one chunk of the fused kernel.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/OpKernels.h"

#include <gtest/gtest.h>

#include <random>

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

TEST(FusedOps, SwigluBf16IsMulOfSilu) { expectSwigluIsItsGraph(DType::kBF16); }
TEST(FusedOps, SwigluF32IsMulOfSilu) { expectSwigluIsItsGraph(DType::kF32); }

} // namespace
