//===- MoeTest.cpp - Mixture-of-experts kernels: routing data and bad input ---===//
//
// The numerics of the MoE ops are checked against JAX (test/oracle/moe_oracle.py); these
// tests pin what an oracle run cannot reach: the sort's exact order, the bounds the kernels
// check on routing data that a plan computes at run time (an expert index, a permutation,
// group sizes), and that each is reported through the one dispatch every backend uses.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Moe.h"
#include "runtime/cpu/OpKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace mlperf::rt;

namespace {

HostTensor ints(std::vector<int64_t> shape, std::vector<int64_t> values) {
  HostTensor tensor = HostTensor::zeros(DType::kI32, std::move(shape));
  tensor.ints = std::move(values);
  return tensor;
}

HostTensor floats(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor tensor = HostTensor::zeros(DType::kF32, std::move(shape));
  tensor.values = std::move(values);
  return tensor;
}

TEST(Moe, RouteTakesTheLargestLogitsLowerIndexFirstAndSoftmaxesOverThem) {
  // Token 0: experts 1 and 3 tie at 2.0 above the rest; token 1: expert 2 alone on top.
  HostTensor logits = floats({2, 4}, {0.5f, 2.0f, -1.0f, 2.0f, 0.0f, 1.0f, 3.0f, 0.5f});
  std::vector<HostTensor> out = {HostTensor::zeros(DType::kF32, {2, 2}),
                                 HostTensor::zeros(DType::kI32, {2, 2})};
  OpAttributes attributes;
  attributes.set("top_k", int64_t{2});
  ASSERT_TRUE(runHostOp("moe_route", attributes, {&logits}, out).isOk());
  EXPECT_EQ(out[1].ints, (std::vector<int64_t>{1, 3, 2, 1}));
  EXPECT_FLOAT_EQ(out[0].values[0], 0.5f);
  EXPECT_FLOAT_EQ(out[0].values[1], 0.5f);
  EXPECT_FLOAT_EQ(out[0].values[2], static_cast<float>(1.0 / (1.0 + std::exp(-2.0))));
}

TEST(Moe, SortIsStableByExpertAndCountsEveryGroup) {
  // Pairs (t, j) flattened: experts [[2, 0], [0, 2], [1, 0]] -> expert 0: pairs 1, 2, 5;
  // expert 1: pair 4; expert 2: pairs 0, 3; expert 3: none.
  HostTensor experts = ints({3, 2}, {2, 0, 0, 2, 1, 0});
  std::vector<HostTensor> out = {HostTensor::zeros(DType::kI32, {6}),
                                 HostTensor::zeros(DType::kI32, {4})};
  ASSERT_TRUE(runHostOp("moe_sort", OpAttributes(), {&experts}, out).isOk());
  EXPECT_EQ(out[0].ints, (std::vector<int64_t>{1, 2, 5, 4, 0, 3}));
  EXPECT_EQ(out[1].ints, (std::vector<int64_t>{3, 1, 2, 0}));
}

TEST(Moe, SortReportsAnExpertOutsideTheRange) {
  HostTensor experts = ints({2, 2}, {0, 1, 4, 2});
  std::vector<HostTensor> out = {HostTensor::zeros(DType::kI32, {4}),
                                 HostTensor::zeros(DType::kI32, {4})};
  Status status = runHostOp("moe_sort", OpAttributes(), {&experts}, out);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "moe_sort: routed pair 2 names expert 4, outside [0, 4)");
}

TEST(Moe, PermuteAndUnpermuteAreTransposes) {
  // Two tokens, k = 2: rows in expert order are pairs 3, 0, 2, 1.
  HostTensor x = floats({2, 2}, {1, 2, 3, 4});
  HostTensor order = ints({4}, {3, 0, 2, 1});
  std::vector<HostTensor> rows = {HostTensor::zeros(DType::kF32, {4, 2})};
  ASSERT_TRUE(runHostOp("moe_permute", OpAttributes(), {&x, &order}, rows).isOk());
  EXPECT_EQ(rows[0].values, (std::vector<float>{3, 4, 1, 2, 3, 4, 1, 2}));
  HostTensor y = floats({4, 2}, {10, 20, 1, 2, 100, 200, 1000, 2000});
  std::vector<HostTensor> back = {HostTensor::zeros(DType::kF32, {2, 2})};
  ASSERT_TRUE(runHostOp("moe_unpermute", OpAttributes(), {&y, &order}, back).isOk());
  // Token 0 holds pairs 0 and 1 (rows 1 and 3), token 1 pairs 2 and 3 (rows 2 and 0).
  EXPECT_EQ(back[0].values, (std::vector<float>{1001, 2002, 110, 220}));
}

TEST(Moe, UnpermuteRefusesAnOrderThatIsNotAPermutation) {
  HostTensor y = floats({4, 1}, {1, 2, 3, 4});
  HostTensor order = ints({4}, {3, 0, 3, 1});
  std::vector<HostTensor> back = {HostTensor::zeros(DType::kF32, {2, 1})};
  Status status = runHostOp("moe_unpermute", OpAttributes(), {&y, &order}, back);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(),
            "moe_unpermute: order[2] = 3 repeats an earlier entry: not a permutation");
  HostTensor x = floats({2, 1}, {1, 2});
  HostTensor far = ints({4}, {0, 1, 2, 9});
  std::vector<HostTensor> rows = {HostTensor::zeros(DType::kF32, {4, 1})};
  status = runHostOp("moe_permute", OpAttributes(), {&x, &far}, rows);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "moe_permute: order[3] = 9 is outside [0, 4)");
}

TEST(Moe, GroupedMatmulMultipliesEachGroupByItsExpertAndZeroesTheRest) {
  // Three rows of width 1; experts [[2]], [[3]], [[5]] (1x1); groups 1, 0, 1: the third row
  // is past the groups.
  HostTensor x = floats({3, 1}, {1, 10, 100});
  HostTensor w = floats({3, 1, 1}, {2, 3, 5});
  HostTensor sizes = ints({3}, {1, 0, 1});
  std::vector<HostTensor> y = {HostTensor::zeros(DType::kF32, {3, 1})};
  y[0].values = {-1, -1, -1};
  ASSERT_TRUE(runHostOp("grouped_matmul", OpAttributes(), {&x, &w, &sizes}, y).isOk());
  EXPECT_EQ(y[0].values, (std::vector<float>{2, 50, 0}));
  std::vector<HostTensor> dw = {HostTensor::zeros(DType::kF32, {3, 1, 1})};
  HostTensor dy = floats({3, 1}, {1, 1, 1});
  ASSERT_TRUE(
      runHostOp("grouped_matmul_weight_grad", OpAttributes(), {&x, &dy, &sizes}, dw).isOk());
  EXPECT_EQ(dw[0].values, (std::vector<float>{1, 0, 10}));
}

TEST(Moe, GroupedMatmulRefusesGroupSizesBeyondItsRows) {
  HostTensor x = floats({3, 1}, {1, 2, 3});
  HostTensor w = floats({2, 1, 1}, {1, 1});
  std::vector<HostTensor> y = {HostTensor::zeros(DType::kF32, {3, 1})};
  HostTensor tooMany = ints({2}, {2, 2});
  Status status = runHostOp("grouped_matmul", OpAttributes(), {&x, &w, &tooMany}, y);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "grouped_matmul: group sizes add up to more than the 3 rows");
  HostTensor negative = ints({2}, {-1, 2});
  status = runHostOp("grouped_matmul", OpAttributes(), {&x, &w, &negative}, y);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "grouped_matmul: group size of expert 0 is negative (-1)");
}

TEST(Moe, TokenMaskDropsTheEndOfDocumentPositionsAndWeighsTheEvaluationMean) {
  HostTensor tokens = ints({2, 3}, {5, 255, 7, 255, 1, 2});
  std::vector<HostTensor> mask = {HostTensor::zeros(DType::kF32, {2, 3})};
  OpAttributes attributes;
  attributes.set("masked_token", int64_t{255});
  ASSERT_TRUE(runHostOp("token_mask", attributes, {&tokens}, mask).isOk());
  EXPECT_EQ(mask[0].values, (std::vector<float>{1, 0, 1, 0, 1, 1}));
  // A micro-batch mean of 2.5 over its 4 counted tokens: [sum + 2.5 · 4, count + 4].
  HostTensor running = HostTensor::zeros(DType::kF64, {2});
  running.wide = {10.0, 3.0};
  HostTensor loss = floats({}, {2.5f});
  std::vector<HostTensor> next = {HostTensor::zeros(DType::kF64, {2})};
  ASSERT_TRUE(
      runHostOp("mean_accumulate", OpAttributes(), {&running, &loss, &mask[0]}, next).isOk());
  EXPECT_EQ(next[0].wide, (std::vector<double>{20.0, 7.0}));
}

} // namespace
