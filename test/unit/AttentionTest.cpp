//===- AttentionTest.cpp - Fused attention against the unfused graph -----===//
//
// tg.attention's CPU kernels (runtime/cpu/Attention.h) must give, to the bit, what the graph
// tg-fuse-attention replaces gives: the forward (repeat, matmul to f32, scale, causal_mask,
// softmax, convert, matmul) and the backward tg-autodiff builds for it, composed here from the
// same kernels the unfused plan runs. The sequences span several 256-row blocks (and a partial
// one) with grouped-query heads, in bf16 and f32, causal and not. Finite differences check the
// backward is the forward's gradient.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Attention.h"
#include "runtime/cpu/Kernels.h"
#include "test/unit/UnfusedAttention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace mlperf::rt;
using namespace mlperf::rt::cpu;
using namespace mlperf::rt::cpu::testing;

namespace {

Floats randomValues(size_t count, DType type, unsigned seed, float spread = 1.0f) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  Floats values(count);
  for (float &value : values) {
    value = normal(random);
  }
  roundBuffer(type, values.data(), static_cast<int64_t>(values.size()));
  return values;
}

void expectBitIdentical(int64_t queries, int64_t keys, bool causal, DType type,
                        int64_t window = -1) {
  AttentionShape s;
  s.batch = 2;
  s.heads = 4;
  s.kvHeads = 2;
  s.queries = queries;
  s.keys = keys;
  s.headDim = 16;
  s.causal = causal;
  s.window = window;
  s.scale = 0.25;
  s.valueType = type;
  Floats q = randomValues(s.batch * s.heads * queries * 16, type, 1);
  Floats k = randomValues(s.batch * s.kvHeads * keys * 16, type, 2);
  Floats v = randomValues(k.size(), type, 3);
  Floats dout = randomValues(q.size(), type, 4, 0.01f);
  Unfused expected = unfusedAttention(q, k, v, dout, s, type);
  ASSERT_EQ(expected.badRow, -1);

  Floats out(q.size()), lse(s.batch * s.heads * queries);
  ASSERT_EQ(attentionForward(q.data(), k.data(), v.data(), out.data(), lse.data(), s), -1);
  roundBuffer(type, out.data(), static_cast<int64_t>(out.size()));
  Floats dq(q.size()), dk(k.size()), dv(v.size());
  ASSERT_EQ(attentionBackward(q.data(), k.data(), v.data(), dout.data(), dq.data(), dk.data(),
                              dv.data(), s, type),
            -1);
  for (Floats *grad : {&dq, &dk, &dv}) {
    roundBuffer(type, grad->data(), static_cast<int64_t>(grad->size()));
  }
  auto same = [](const Floats &a, const Floats &b, const char *what) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i], b[i]) << what << "[" << i << "]";
    }
  };
  same(out, expected.out, "out");
  same(dq, expected.dq, "dq");
  same(dk, expected.dk, "dk");
  same(dv, expected.dv, "dv");
  // lse is the log of each row's softmax denominator, offset by its maximum.
  EXPECT_TRUE(std::isfinite(lse[0]) && std::isfinite(lse.back()));
}

TEST(Attention, CausalBf16EqualsTheUnfusedGraphAcrossBlocks) {
  expectBitIdentical(600, 600, true, DType::kBF16); // blocks of 256, 256 and 88 rows
}

TEST(Attention, CausalF32EqualsTheUnfusedGraphAcrossBlocks) {
  expectBitIdentical(520, 520, true, DType::kF32);
}

TEST(Attention, SlidingWindowEqualsTheUnfusedGraphAcrossBlocks) {
  // GPT-OSS-20B's window of 128 earlier keys, over blocks of 256 query rows whose first keys
  // the window hides entirely.
  expectBitIdentical(600, 600, true, DType::kBF16, 128);
  expectBitIdentical(300, 300, true, DType::kF32, 0); // only the query's own key
}

TEST(Attention, NonCausalWithFewerKeysEqualsTheUnfusedGraph) {
  expectBitIdentical(300, 70, false, DType::kBF16);
}

TEST(Attention, BackwardIsTheGradientOfTheForward) {
  // f32, small: L = Σ out · w; central differences of L against the backward's gradients.
  AttentionShape s;
  s.heads = 2;
  s.kvHeads = 1;
  s.queries = s.keys = 5;
  s.headDim = 3;
  s.causal = true;
  s.scale = 0.7;
  Floats q = randomValues(2 * 5 * 3, DType::kF32, 5), k = randomValues(5 * 3, DType::kF32, 6),
         v = randomValues(5 * 3, DType::kF32, 7), w = randomValues(2 * 5 * 3, DType::kF32, 8);
  auto loss = [&](const Floats &qq, const Floats &kk, const Floats &vv) {
    Floats out(qq.size()), lse(10);
    EXPECT_EQ(attentionForward(qq.data(), kk.data(), vv.data(), out.data(), lse.data(), s), -1);
    double sum = 0.0;
    for (size_t i = 0; i < out.size(); ++i) {
      sum += static_cast<double>(out[i]) * w[i];
    }
    return sum;
  };
  Floats dq(q.size()), dk(k.size()), dv(v.size());
  ASSERT_EQ(attentionBackward(q.data(), k.data(), v.data(), w.data(), dq.data(), dk.data(),
                              dv.data(), s, DType::kF32),
            -1);
  const float eps = 1e-2f;
  int checked = 0;
  for (auto [x, grad] : {std::pair{&q, &dq}, {&k, &dk}, {&v, &dv}}) {
    for (size_t i = 0; i < x->size(); ++i) {
      Floats plus = *x, minus = *x;
      plus[i] += eps;
      minus[i] -= eps;
      double numeric = (x == &q   ? loss(plus, k, v) - loss(minus, k, v)
                        : x == &k ? loss(q, plus, v) - loss(q, minus, v)
                                  : loss(q, k, plus) - loss(q, k, minus)) /
                       (2.0 * eps);
      EXPECT_NEAR((*grad)[i], numeric, 2e-3 + 2e-3 * std::fabs(numeric)) << i;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 30 + 15 + 15);
}

TEST(Attention, ReportsARowWithoutAFiniteScore) {
  AttentionShape s;
  s.queries = s.keys = 4;
  s.headDim = 2;
  s.causal = true;
  Floats q(8, 0.0f), k(8, 0.0f), v(8, 1.0f), out(8), lse(4);
  q[2 * 2] = std::numeric_limits<float>::infinity(); // row 2: inf · 0 = NaN scores
  EXPECT_EQ(attentionForward(q.data(), k.data(), v.data(), out.data(), lse.data(), s), 2);
}

} // namespace
