//===- KernelsTest.cpp - Backward kernels against finite differences ----===//
//
// Every backward kernel is checked in f64 against central differences of its forward kernel
// on tiny random shapes: for a random cotangent g, <g, f'(x) e_i> ≈ (L(x + h e_i) − L(x − h e_i))
// / 2h with L(x) = <g, f(x)>.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

using namespace mlperf::rt::cpu;

namespace {

using Vec = std::vector<double>;

Vec randomVector(size_t n, std::mt19937 &rng, double scale = 1.0) {
  std::normal_distribution<double> normal(0.0, scale);
  Vec v(n);
  for (double &x : v) {
    x = normal(rng);
  }
  return v;
}

double dot(const Vec &a, const Vec &b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sum += a[i] * b[i];
  }
  return sum;
}

/// Checks `analytic` (the gradient of L(x) = <g, forward(x)>) against central differences.
void expectGradient(const std::function<Vec(const Vec &)> &forward, const Vec &x, const Vec &g,
                    const Vec &analytic, double tolerance = 1e-7) {
  ASSERT_EQ(analytic.size(), x.size());
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    Vec plus = x, minus = x;
    plus[i] += h;
    minus[i] -= h;
    double numeric = (dot(g, forward(plus)) - dot(g, forward(minus))) / (2 * h);
    EXPECT_NEAR(analytic[i], numeric, tolerance * (1 + std::fabs(numeric))) << "element " << i;
  }
}

class KernelsTest : public ::testing::Test {
protected:
  std::mt19937 rng{42};
};

TEST_F(KernelsTest, MatmulMatchesNaiveProductInEveryLayout) {
  const int64_t batch = 2, m = 3, n = 4, k = 5;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (bool broadcast : {false, true}) {
        Vec a = randomVector(batch * m * k, rng);
        Vec b = randomVector((broadcast ? 1 : batch) * k * n, rng);
        Vec c(batch * m * n);
        matmul(a.data(), b.data(), c.data(), {batch, m, n, k, ta, tb, broadcast});
        for (int64_t bi = 0; bi < batch; ++bi) {
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              double expected = 0;
              for (int64_t p = 0; p < k; ++p) {
                double av = ta ? a[bi * m * k + p * m + i] : a[bi * m * k + i * k + p];
                const double *B = b.data() + (broadcast ? 0 : bi * k * n);
                double bv = tb ? B[j * k + p] : B[p * n + j];
                expected += av * bv;
              }
              EXPECT_NEAR(c[bi * m * n + i * n + j], expected, 1e-12);
            }
          }
        }
      }
    }
  }
}

TEST_F(KernelsTest, RmsNormGradient) {
  const int64_t rows = 3, dim = 5;
  const double eps = 1e-5;
  Vec x = randomVector(rows * dim, rng), w = randomVector(dim, rng),
      g = randomVector(rows * dim, rng);
  Vec dx(rows * dim), dw(dim);
  rmsNormGrad(x.data(), w.data(), g.data(), dx.data(), dw.data(), rows, dim, eps);
  expectGradient(
      [&](const Vec &xv) {
        Vec y(rows * dim);
        rmsNorm(xv.data(), w.data(), y.data(), rows, dim, eps);
        return y;
      },
      x, g, dx);
  expectGradient(
      [&](const Vec &wv) {
        Vec y(rows * dim);
        rmsNorm(x.data(), wv.data(), y.data(), rows, dim, eps);
        return y;
      },
      w, g, dw);
}

TEST_F(KernelsTest, SiluGradient) {
  Vec x = randomVector(7, rng, 3.0), g = randomVector(7, rng), dx(7);
  siluGrad(x.data(), g.data(), dx.data(), 7);
  expectGradient(
      [](const Vec &xv) {
        Vec y(xv.size());
        silu(xv.data(), y.data(), xv.size());
        return y;
      },
      x, g, dx);
}

TEST_F(KernelsTest, SoftmaxGradientAlongInnerAndOuterDimensions) {
  for (auto [outer, n, inner] : {std::tuple<int64_t, int64_t, int64_t>{2, 5, 1}, {2, 4, 3}}) {
    Vec x = randomVector(outer * n * inner, rng), g = randomVector(x.size(), rng);
    Vec y(x.size()), dx(x.size());
    softmax(x.data(), y.data(), outer, n, inner);
    softmaxGrad(y.data(), g.data(), dx.data(), outer, n, inner);
    expectGradient(
        [&, outer = outer, n = n, inner = inner](const Vec &xv) {
          Vec out(xv.size());
          softmax(xv.data(), out.data(), outer, n, inner);
          return out;
        },
        x, g, dx);
  }
}

TEST_F(KernelsTest, CrossEntropyGradientWithAndWithoutMask) {
  const int64_t tokens = 4, vocab = 6;
  std::vector<int64_t> labels = {0, 5, 2, 2};
  Vec logits = randomVector(tokens * vocab, rng, 2.0), mask = {1.0, 0.0, 1.0, 1.0};
  const double *masks[] = {nullptr, mask.data()};
  for (const double *m : masks) {
    Vec dlogits(logits.size());
    crossEntropyGrad(logits.data(), labels.data(), m, 1.0, dlogits.data(), tokens, vocab);
    expectGradient(
        [&](const Vec &lv) {
          int64_t bad;
          return Vec{crossEntropy(lv.data(), labels.data(), m, tokens, vocab, &bad)};
        },
        logits, Vec{1.0}, dlogits);
  }
}

TEST_F(KernelsTest, SoftmaxNamesAFullyMaskedRow) {
  const double inf = std::numeric_limits<double>::infinity();
  Vec x = {0.0, 1.0, -inf, -inf}, y(4);
  EXPECT_EQ(softmax(x.data(), y.data(), 2, 2, 1), 1);
  EXPECT_NEAR(y[0] + y[1], 1.0, 1e-15);
  Vec ok = {0.0, -inf, 2.0, 1.0};
  EXPECT_EQ(softmax(ok.data(), y.data(), 2, 2, 1), -1);
  EXPECT_EQ(y[1], 0.0);
}

TEST_F(KernelsTest, CrossEntropyNamesBadLabel) {
  Vec logits(2 * 3, 0.0);
  std::vector<int64_t> labels = {1, 3};
  int64_t bad = -1;
  EXPECT_TRUE(std::isnan(crossEntropy(logits.data(), labels.data(),
                                      static_cast<const double *>(nullptr), 2, 3, &bad)));
  EXPECT_EQ(bad, 1);
}

TEST_F(KernelsTest, EmbeddingGradientAccumulatesRepeatedIds) {
  const int64_t vocab = 5, dim = 3, tokens = 4;
  std::vector<int64_t> ids = {1, 3, 1, 0};
  Vec table = randomVector(vocab * dim, rng), g = randomVector(tokens * dim, rng);
  Vec dtable(vocab * dim);
  embeddingGrad(ids.data(), g.data(), dtable.data(), tokens, vocab, dim);
  expectGradient(
      [&](const Vec &tv) {
        Vec y(tokens * dim);
        EXPECT_EQ(embedding(tv.data(), ids.data(), y.data(), tokens, vocab, dim), -1);
        return y;
      },
      table, g, dtable);
  std::vector<int64_t> badIds = {0, 5};
  Vec y(2 * dim);
  EXPECT_EQ(embedding(table.data(), badIds.data(), y.data(), 2, vocab, dim), 1);
}

TEST_F(KernelsTest, RopeInverseIsTheGradient) {
  const int64_t batch = 1, seq = 5, heads = 2, headDim = 8;
  std::vector<double> frequencies = ropeFrequencies(headDim, 500000.0, true, 8.0, 1.0, 4.0, 8);
  Vec x = randomVector(batch * seq * heads * headDim, rng), g = randomVector(x.size(), rng);
  Vec dx(x.size());
  rope(g.data(), dx.data(), batch, seq, heads, headDim, frequencies, /*inverse=*/true);
  expectGradient(
      [&](const Vec &xv) {
        Vec y(xv.size());
        rope(xv.data(), y.data(), batch, seq, heads, headDim, frequencies, false);
        return y;
      },
      x, g, dx);
}

TEST_F(KernelsTest, RepeatGradientSumsGroups) {
  const int64_t outer = 2, n = 3, inner = 2, times = 2;
  Vec x = randomVector(outer * n * inner, rng), g = randomVector(outer * n * times * inner, rng);
  Vec dx(x.size());
  repeatGrad(g.data(), dx.data(), outer, n, inner, times);
  expectGradient(
      [&](const Vec &xv) {
        Vec y(outer * n * times * inner);
        repeat(xv.data(), y.data(), outer, n, inner, times);
        return y;
      },
      x, g, dx);
}

TEST_F(KernelsTest, CausalMaskAndItsGradient) {
  Vec x = {1, 2, 3, 4}, y(4), dy = {5, 6, 7, 8}, dx(4);
  causalMask(x.data(), y.data(), 1, 2, false);
  EXPECT_EQ(y[0], 1);
  EXPECT_TRUE(std::isinf(y[1]) && y[1] < 0);
  EXPECT_EQ(y[2], 3);
  EXPECT_EQ(y[3], 4);
  causalMask(dy.data(), dx.data(), 1, 2, true);
  EXPECT_EQ(dx, (Vec{5, 0, 7, 8}));
}

TEST_F(KernelsTest, TransposeMatchesIndexFormula) {
  std::vector<int64_t> shape = {2, 3, 4}, perm = {2, 0, 1};
  Vec x(24), y(24);
  for (int i = 0; i < 24; ++i) {
    x[i] = i;
  }
  transpose(x.data(), y.data(), shape, perm);
  // y[c][a][b] = x[a][b][c]
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 3; ++b) {
      for (int c = 0; c < 4; ++c) {
        EXPECT_EQ(y[(c * 2 + a) * 3 + b], x[(a * 3 + b) * 4 + c]);
      }
    }
  }
}

TEST_F(KernelsTest, TransposeKeepingTheLastDimensionMatchesIndexFormula) {
  // [b, s, h, d] -> [b, h, s, d] (rows of d copied whole), large enough for the thread pool.
  const int64_t B = 3, S = 70, H = 5, D = 40;
  std::vector<int64_t> shape = {B, S, H, D}, perm = {0, 2, 1, 3};
  Vec x(B * S * H * D), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<double>(i);
  }
  transpose(x.data(), y.data(), shape, perm);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t s = 0; s < S; ++s) {
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t d = 0; d < D; ++d) {
          ASSERT_EQ(y[((b * H + h) * S + s) * D + d], x[((b * S + s) * H + h) * D + d]);
        }
      }
    }
  }
}

TEST_F(KernelsTest, Llama31FrequencyScalingBands) {
  // head_dim 128, theta 500000: high frequencies unchanged, low ones divided by 8, the band
  // between interpolated (Llama 3.1 / Hugging Face `_compute_llama3_parameters`).
  std::vector<double> plain = ropeFrequencies(128, 500000.0, false, 0, 0, 0, 0);
  std::vector<double> scaled = ropeFrequencies(128, 500000.0, true, 8.0, 1.0, 4.0, 8192);
  EXPECT_EQ(scaled[0], plain[0]);
  EXPECT_NEAR(scaled[63], plain[63] / 8.0, 1e-6 * plain[63]);
  int interpolated = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    double wavelength = 2 * M_PI / plain[i];
    if (wavelength >= 8192 / 4.0 && wavelength <= 8192 / 1.0) {
      EXPECT_LT(scaled[i], plain[i]);
      EXPECT_GT(scaled[i], plain[i] / 8.0);
      ++interpolated;
    }
  }
  EXPECT_GT(interpolated, 0);
}

} // namespace
