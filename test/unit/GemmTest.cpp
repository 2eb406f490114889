//===- GemmTest.cpp - The f32 GEMM and the thread pool ---------*- C++ -*-===//
//
// gemmF32's documented summation: each element the f64 sum, in order, of the f32 partial
// sums of its 256-product slices, rounded once; the bits of an element independent of the
// shape it is computed in (fused kernels rely on that); close to an f64 product. And the
// thread pool: every task once, nested and concurrent calls.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <random>
#include <thread>
#include <vector>

using namespace mlperf::rt::cpu;

namespace {

std::vector<float> randomValues(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float &value : values) {
    value = normal(rng);
  }
  return values;
}

/// op(X)[i, j] for X stored row-major [rows, cols] of op(X), or transposed.
float at(const std::vector<float> &x, int64_t rows, int64_t cols, bool transposed, int64_t i,
         int64_t j) {
  return transposed ? x[j * rows + i] : x[i * cols + j];
}

struct Case {
  int64_t m, n, k;
  bool transposeA, transposeB;
};

class GemmShapes : public ::testing::TestWithParam<Case> {};

TEST_P(GemmShapes, SlicesAddInF64AndElementsDoNotDependOnTheShape) {
  const Case c = GetParam();
  std::vector<float> a = randomValues(c.m * c.k, 1), b = randomValues(c.k * c.n, 2);
  // C's previous contents are never read (the backend hands kernels arena bytes as they are).
  std::vector<float> product(c.m * c.n, std::numeric_limits<float>::quiet_NaN());
  gemmF32(a.data(), b.data(), product.data(), c.m, c.n, c.k, c.transposeA, c.transposeB);

  // Each slice on its own (operands copied out as plain row-major [m, slice] and [slice, n]):
  // the whole product is their f64 sum, rounded once.
  std::vector<double> sums(c.m * c.n, 0.0);
  for (int64_t p0 = 0; p0 < c.k; p0 += kGemmSliceK) {
    int64_t slice = std::min(kGemmSliceK, c.k - p0);
    std::vector<float> aSlice(c.m * slice), bSlice(slice * c.n), partial(c.m * c.n);
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t p = 0; p < slice; ++p) {
        aSlice[i * slice + p] = at(a, c.m, c.k, c.transposeA, i, p0 + p);
      }
    }
    for (int64_t p = 0; p < slice; ++p) {
      for (int64_t j = 0; j < c.n; ++j) {
        bSlice[p * c.n + j] = at(b, c.k, c.n, c.transposeB, p0 + p, j);
      }
    }
    gemmF32(aSlice.data(), bSlice.data(), partial.data(), c.m, c.n, slice, false, false);
    for (int64_t i = 0; i < c.m * c.n; ++i) {
      sums[i] += partial[i];
    }
  }
  for (int64_t i = 0; i < c.m * c.n; ++i) {
    ASSERT_EQ(product[i], static_cast<float>(sums[i])) << "element " << i;
  }

  // A corner of the product computed alone: rows [r0, m), columns [0, n1).
  const int64_t r0 = c.m / 3, n1 = (c.n + 1) / 2;
  std::vector<float> aRows, bCols;
  for (int64_t i = r0; i < c.m; ++i) {
    for (int64_t p = 0; p < c.k; ++p) {
      aRows.push_back(at(a, c.m, c.k, c.transposeA, i, p));
    }
  }
  for (int64_t p = 0; p < c.k; ++p) {
    for (int64_t j = 0; j < n1; ++j) {
      bCols.push_back(at(b, c.k, c.n, c.transposeB, p, j));
    }
  }
  std::vector<float> corner((c.m - r0) * n1);
  gemmF32(aRows.data(), bCols.data(), corner.data(), c.m - r0, n1, c.k, false, false);
  for (int64_t i = r0; i < c.m; ++i) {
    for (int64_t j = 0; j < n1; ++j) {
      ASSERT_EQ(corner[(i - r0) * n1 + j], product[i * c.n + j]) << "row " << i << " col " << j;
    }
  }

  // Against an f64 product: f32 partial sums of at most 256 products.
  for (int64_t i = 0; i < c.m; i += 7) {
    for (int64_t j = 0; j < c.n; j += 5) {
      double exact = 0.0, magnitude = 0.0;
      for (int64_t p = 0; p < c.k; ++p) {
        double term = static_cast<double>(at(a, c.m, c.k, c.transposeA, i, p)) *
                      at(b, c.k, c.n, c.transposeB, p, j);
        exact += term;
        magnitude += std::abs(term);
      }
      EXPECT_NEAR(product[i * c.n + j], exact, 1e-6 * magnitude + 1e-30);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmShapes,
    ::testing::Values(Case{1, 1, 1, false, false}, Case{7, 5, 3, false, true},
                      Case{37, 70, 300, false, true}, Case{100, 33, 513, true, false},
                      Case{130, 260, 257, true, true}, Case{300, 130, 600, false, false},
                      Case{96, 256, 256, false, true}, Case{190, 300, 64, true, false},
                      // Large enough for the thread pool (2^20 multiply-adds and up).
                      Case{260, 300, 700, false, true}));

TEST(Gemm, EmptyContractionIsZero) {
  std::vector<float> c(6, 1.0f);
  gemmF32(nullptr, nullptr, c.data(), 2, 3, 0, false, false);
  for (float value : c) {
    EXPECT_EQ(value, 0.0f);
  }
  EXPECT_FALSE(gemmDescription().empty());
}

TEST(ThreadPool, RunsEveryTaskOnceNestedAndFromTwoThreads) {
  constexpr int64_t kTasks = 1000;
  auto check = [](int64_t tasks) {
    std::vector<std::atomic<int>> seen(tasks);
    parallelFor(tasks, [&](int64_t task) {
      // A nested parallelFor runs in this task's thread.
      std::atomic<int> inner{0};
      parallelFor(3, [&](int64_t) { inner.fetch_add(1); });
      seen[task].fetch_add(inner.load() == 3 ? 1 : 100);
    });
    for (int64_t t = 0; t < tasks; ++t) {
      ASSERT_EQ(seen[t].load(), 1) << "task " << t;
    }
  };
  // Two threads at once (the CPU backend's two streams): one gets the pool, the other runs
  // its tasks itself; both complete.
  std::thread other([&] {
    for (int round = 0; round < 20; ++round) {
      check(kTasks);
    }
  });
  for (int round = 0; round < 20; ++round) {
    check(kTasks);
  }
  other.join();
  std::atomic<int64_t> covered{0};
  parallelChunks(100003, 1000, [&](int64_t begin, int64_t end) { covered += end - begin; });
  EXPECT_EQ(covered.load(), 100003);
}

TEST(ThreadPool, AThrowingTaskReachesTheCallerAndThePoolGoesOn) {
  for (int round = 0; round < 3; ++round) {
    std::atomic<int> ran{0};
    EXPECT_THROW(parallelFor(64,
                             [&](int64_t task) {
                               ran.fetch_add(1);
                               if (task == 17) {
                                 throw std::bad_alloc();
                               }
                             }),
                 std::bad_alloc);
    EXPECT_EQ(ran.load(), 64); // every other task still ran to its end
  }
  std::atomic<int64_t> sum{0};
  parallelFor(100, [&](int64_t task) { sum += task; });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ThreadPool, BadThreadSettingIsAnError) {
  const char *saved = std::getenv("MLPERF_CPU_THREADS");
  std::string restore = saved ? saved : "";
  for (const char *bad : {"0", "-2", "two", "3x", "100000"}) {
    setenv("MLPERF_CPU_THREADS", bad, 1);
    mlperf::rt::Status status = checkCpuThreadsSetting();
    EXPECT_FALSE(status.isOk()) << bad;
    EXPECT_NE(status.message().find("MLPERF_CPU_THREADS"), std::string::npos);
  }
  setenv("MLPERF_CPU_THREADS", "3", 1);
  EXPECT_TRUE(checkCpuThreadsSetting().isOk());
  if (saved) {
    setenv("MLPERF_CPU_THREADS", restore.c_str(), 1);
  } else {
    unsetenv("MLPERF_CPU_THREADS");
  }
  EXPECT_GE(cpuThreads(), 1);
}

} // namespace
