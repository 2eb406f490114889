//===- DropoutTest.cpp - Dropout masks, keys and ignored labels -*- C++ -*-===//
//
// The CPU kernels of tg.dropout, tg.dropout_key and cross_entropy's ignore_index, checked
// against their definitions (docs/train-step.md); the JAX oracle (test/oracle/lora_oracle.py)
// checks the same bits end to end.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Numerics.h"
#include "runtime/cpu/OpKernels.h"
#include "runtime/plan/PlanOps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace mlperf::rt;

namespace {

HostTensor keyTensor(int64_t seed, int64_t counter) {
  HostTensor key = HostTensor::zeros(DType::kI64, {2});
  key.ints = {seed, counter};
  return key;
}

HostTensor dropout(const HostTensor &x, const HostTensor &key, double rate,
                   const OpAttributes &extra = OpAttributes()) {
  OpAttributes attributes = extra;
  attributes.set("rate", rate);
  attributes.set("name", std::string("model.layers.0.self_attn.qkv_proj.lora_dropout"));
  std::vector<HostTensor> out{HostTensor::zeros(x.dtype, x.shape)};
  Status status = runHostOp("dropout", attributes, {&x, &key}, out);
  EXPECT_TRUE(status.isOk()) << status.message();
  return out[0];
}

HostTensor ones(std::vector<int64_t> shape) {
  HostTensor x = HostTensor::zeros(DType::kF32, shape);
  std::fill(x.values.begin(), x.values.end(), 1.0f);
  return x;
}

TEST(Dropout, KeepsAboutOneMinusRateAndScalesTheKept) {
  HostTensor x = ones({4, 64, 128});
  HostTensor y = dropout(x, keyTensor(7, 3), 0.1);
  int64_t kept = 0;
  for (float v : y.values) {
    ASSERT_TRUE(v == 0.0f || v == static_cast<float>(1.0 / 0.9));
    kept += v != 0.0f;
  }
  double fraction = static_cast<double>(kept) / static_cast<double>(x.numElements());
  EXPECT_NEAR(fraction, 0.9, 0.01); // 32768 draws: 5 standard deviations
  // The mask is the definition's: element e is kept when Philox's first word is at least
  // floor(rate · 2^32).
  uint32_t stream = parameterStreamId("model.layers.0.self_attn.qkv_proj.lora_dropout");
  for (int64_t e = 0; e < 100; ++e) {
    EXPECT_EQ(y.values[e] != 0.0f, dropoutKeeps(7, 3, stream, e, dropoutThreshold(0.1))) << e;
  }
}

TEST(Dropout, EveryMicroBatchAndSeedDrawsItsOwnMask) {
  HostTensor x = ones({1, 32, 64});
  HostTensor a = dropout(x, keyTensor(7, 3), 0.5), b = dropout(x, keyTensor(7, 4), 0.5),
             c = dropout(x, keyTensor(8, 3), 0.5), again = dropout(x, keyTensor(7, 3), 0.5);
  EXPECT_NE(a.values, b.values);
  EXPECT_NE(a.values, c.values);
  EXPECT_EQ(a.values, again.values); // a pure function of the key: recomputation agrees
}

TEST(Dropout, EvaluationKeyIsTheIdentity) {
  HostTensor x = ones({1, 8, 16});
  x.values[5] = 3.5f;
  EXPECT_EQ(dropout(x, keyTensor(0, -1), 0.1).values, x.values);
}

TEST(Dropout, ASplitTensorsPartHasTheFullTensorsMask) {
  // [1, 4, 8] split into two parts along dim 2: part k holds columns [4k, 4k + 4).
  HostTensor full = ones({1, 4, 8});
  HostTensor whole = dropout(full, keyTensor(11, 2), 0.5);
  for (int64_t part = 0; part < 2; ++part) {
    OpAttributes split;
    split.set("parts", int64_t{2});
    split.set("part_dim", int64_t{2});
    split.set("part_index", part);
    HostTensor half = dropout(ones({1, 4, 4}), keyTensor(11, 2), 0.5, split);
    for (int64_t row = 0; row < 4; ++row) {
      for (int64_t col = 0; col < 4; ++col) {
        EXPECT_EQ(half.values[row * 4 + col], whole.values[row * 8 + part * 4 + col]);
      }
    }
  }
}

TEST(Dropout, RefusesACounterBeyond32Bits) {
  HostTensor x = ones({2});
  OpAttributes attributes;
  attributes.set("rate", 0.1);
  attributes.set("name", std::string("d"));
  HostTensor key = keyTensor(1, int64_t{1} << 33);
  std::vector<HostTensor> out{HostTensor::zeros(x.dtype, x.shape)};
  EXPECT_FALSE(runHostOp("dropout", attributes, {&x, &key}, out).isOk());
}

TEST(DropoutKey, CountsMicroBatchesInGlobalBatchOrder) {
  // Step 3 of a global batch of 2 data-parallel ranks x 4 micro-batches: micro-batch 1 of
  // rank 1 is the global batch's micro-batch 1·2 + 1 = 3, the run's 3·8 + 3 = 27.
  HostTensor seed = HostTensor::zeros(DType::kI64, {}), step = HostTensor::zeros(DType::kI64, {});
  seed.ints[0] = 42;
  step.ints[0] = 3;
  OpAttributes attributes;
  attributes.set("micro_batch", int64_t{1});
  attributes.set("micro_batches", int64_t{4});
  attributes.set("data_parallel", int64_t{2});
  attributes.set("part_index", int64_t{1});
  std::vector<HostTensor> out{HostTensor::zeros(DType::kI64, {2})};
  ASSERT_TRUE(runHostOp("dropout_key", attributes, {&seed, &step}, out).isOk());
  EXPECT_EQ(out[0].ints, (std::vector<int64_t>{42, 27}));
  std::vector<HostTensor> eval{HostTensor::zeros(DType::kI64, {2})};
  ASSERT_TRUE(runHostOp("eval_dropout_key", OpAttributes(), {}, eval).isOk());
  EXPECT_EQ(eval[0].ints, (std::vector<int64_t>{0, -1}));
}

TEST(CrossEntropy, IgnoreIndexAveragesTheOtherTokens) {
  // Three tokens of vocabulary 2 with logits (0, 0): each loss is log 2. Labels (1, -100, 0):
  // the mean over the two counted tokens is log 2; the ignored one's logits get no gradient.
  HostTensor logits = HostTensor::zeros(DType::kF32, {3, 2});
  HostTensor labels = HostTensor::zeros(DType::kI64, {3});
  labels.ints = {1, -100, 0};
  OpAttributes ignore;
  ignore.set("ignore_index", int64_t{-100});
  std::vector<HostTensor> loss{HostTensor::zeros(DType::kF32, {})};
  ASSERT_TRUE(runHostOp("cross_entropy", ignore, {&logits, &labels}, loss).isOk());
  EXPECT_FLOAT_EQ(loss[0].values[0], static_cast<float>(std::log(2.0)));
  HostTensor dloss = HostTensor::zeros(DType::kF32, {});
  dloss.values[0] = 1.0f;
  std::vector<HostTensor> grad{HostTensor::zeros(DType::kF32, {3, 2})};
  ASSERT_TRUE(runHostOp("cross_entropy_grad", ignore, {&logits, &labels, &dloss}, grad).isOk());
  EXPECT_EQ(grad[0].values, (std::vector<float>{0.25f, -0.25f, 0.0f, 0.0f, -0.25f, 0.25f}));
  // Without the attribute -100 is a bad label.
  EXPECT_FALSE(runHostOp("cross_entropy", OpAttributes(), {&logits, &labels}, loss).isOk());
  // Every label ignored: loss 0 and gradient 0, not NaN.
  labels.ints = {-100, -100, -100};
  ASSERT_TRUE(runHostOp("cross_entropy", ignore, {&logits, &labels}, loss).isOk());
  EXPECT_EQ(loss[0].values[0], 0.0f);
  ASSERT_TRUE(runHostOp("cross_entropy_grad", ignore, {&logits, &labels, &dloss}, grad).isOk());
  EXPECT_EQ(grad[0].values, std::vector<float>(6, 0.0f));
}

} // namespace
