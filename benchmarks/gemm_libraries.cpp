// Benchmark: single-precision GEMM from two field libraries, OpenBLAS and BLIS (Debian's
// libopenblas-pthread-dev and libblis-pthread-dev, both installed by scripts/setup.sh), on the
// matrix shapes of the "mid" model's training step, the measurement behind the CPU backend's
// choice of library (docs/runtime.md).
//
// Built once per library (the two export the same BLAS symbols, so they are not linked into
// one binary), after `cmake --build --preset default`:
//   g++ -O2 -std=c++17 -DGEMM_OPENBLAS -I/usr/include/x86_64-linux-gnu/openblas-pthread \
//       benchmarks/gemm_libraries.cpp -o /tmp/gemm-openblas \
//       /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so -lpthread
//   g++ -O2 -std=c++17 -DGEMM_BLIS -I. -I/usr/include/x86_64-linux-gnu/blis-pthread \
//       benchmarks/gemm_libraries.cpp build/lib/libmlperf_rt_cpu.a \
//       build/lib/libmlperf_rt_support.a /usr/lib/x86_64-linux-gnu/blis-pthread/libblis.a \
//       -o /tmp/gemm-blis -lpthread -lz
//   /tmp/gemm-openblas; /tmp/gemm-blis
//
// For each shape it reports GFLOP/s of two summations, each on 1 and on 2 threads, with the
// library single-threaded inside and the rows of C split between our threads (as the backend
// does):
//   full:    one call over all of K, f32 accumulation throughout;
//   blocked: one call per 256 products, each f32 partial sum added into an f64 accumulator
//            (the CPU backend's documented summation).
//   backend: the CPU backend's gemmF32 (runtime/cpu/Gemm.h), BLIS's micro-kernel on our packing
//            with the blocked summation, on MLPERF_CPU_THREADS threads (default all);
// and whether a library's element depends on the thread split or on the rows computed with it
// (what rules out calling a library's sgemm: fused kernels must reproduce one matmul's bits).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#if defined(GEMM_OPENBLAS)
#include <cblas.h>
static const char *kLibrary = "OpenBLAS";
static void setLibraryThreads(int n) { openblas_set_num_threads(n); }
static void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}
#elif defined(GEMM_BLIS)
#include <blis.h>
static const char *kLibrary = "BLIS";
static void setLibraryThreads(int n) { bli_thread_set_num_threads(n); }
static void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float *c, int64_t ldc) {
  float one = 1.0f, zero = 0.0f;
  // Row-major: row stride = leading dimension, column stride 1; a transposed operand is
  // described by swapping its strides.
  bli_sgemm(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n,
            k, &one, const_cast<float *>(a), lda, 1, const_cast<float *>(b), ldb, 1, &zero, c, ldc,
            1);
}
#else
#error "define GEMM_OPENBLAS or GEMM_BLIS"
#endif

#if defined(GEMM_BLIS)
#include "runtime/cpu/Gemm.h" // the CPU backend's product: BLIS's micro-kernel, f64 slices
#endif

struct Shape {
  const char *what;
  int64_t m, n, k;
  bool ta, tb;
};

// Operand element (row, col) of op(X) where X is stored row-major [rows, cols] or transposed.
static const float *rowsOf(const float *x, bool transposed, int64_t row, int64_t ld) {
  return transposed ? x + row : x + row * ld;
}

static void gemmRows(const Shape &s, const float *a, const float *b, float *c, int64_t begin,
                     int64_t end, bool blocked, std::vector<float> &partial,
                     std::vector<double> &acc) {
  int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n, rows = end - begin;
  const float *aRows = rowsOf(a, s.ta, begin, lda);
  if (!blocked) {
    sgemm(s.ta, s.tb, rows, s.n, s.k, aRows, lda, b, ldb, c + begin * s.n, s.n);
    return;
  }
  partial.resize(rows * s.n);
  acc.assign(rows * s.n, 0.0);
  for (int64_t p0 = 0; p0 < s.k; p0 += 256) {
    int64_t kb = std::min<int64_t>(256, s.k - p0);
    const float *aBlock = s.ta ? aRows + p0 * lda : aRows + p0;
    const float *bBlock = s.tb ? b + p0 : b + p0 * ldb;
    sgemm(s.ta, s.tb, rows, s.n, kb, aBlock, lda, bBlock, ldb, partial.data(), s.n);
    for (int64_t i = 0; i < rows * s.n; ++i) {
      acc[i] += partial[i];
    }
  }
  for (int64_t i = 0; i < rows * s.n; ++i) {
    c[begin * s.n + i] = static_cast<float>(acc[i]);
  }
}

// C in 256 x 256 tiles at fixed positions, each tile the f64 sum of one call per 256 products.
static void gemmTile(const Shape &s, const float *a, const float *b, float *c, int64_t i0,
                     int64_t j0, std::vector<float> &partial, std::vector<double> &acc) {
  int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  int64_t mb = std::min<int64_t>(256, s.m - i0), nb = std::min<int64_t>(256, s.n - j0);
  partial.resize(mb * nb);
  acc.assign(mb * nb, 0.0);
  for (int64_t p0 = 0; p0 < s.k; p0 += 256) {
    int64_t kb = std::min<int64_t>(256, s.k - p0);
    const float *aBlock = s.ta ? a + p0 * lda + i0 : a + i0 * lda + p0;
    const float *bBlock = s.tb ? b + j0 * ldb + p0 : b + p0 * ldb + j0;
    sgemm(s.ta, s.tb, mb, nb, kb, aBlock, lda, bBlock, ldb, partial.data(), nb);
    for (int64_t i = 0; i < mb * nb; ++i) {
      acc[i] += partial[i];
    }
  }
  for (int64_t i = 0; i < mb; ++i) {
    for (int64_t j = 0; j < nb; ++j) {
      c[(i0 + i) * s.n + j0 + j] = static_cast<float>(acc[i * nb + j]);
    }
  }
}

static void gemmTiles(const Shape &s, const float *a, const float *b, float *c, int thread,
                      int threads, std::vector<float> &partial, std::vector<double> &acc) {
  int64_t tilesN = (s.n + 255) / 256, tiles = (s.m + 255) / 256 * tilesN;
  for (int64_t t = thread; t < tiles; t += threads) {
    gemmTile(s, a, b, c, t / tilesN * 256, t % tilesN * 256, partial, acc);
  }
}

static void gemmTiled(const Shape &s, const float *a, const float *b, float *c, int threads) {
  static std::vector<float> partials[2];
  static std::vector<double> accs[2];
  if (threads == 1) {
    gemmTiles(s, a, b, c, 0, 1, partials[0], accs[0]);
    return;
  }
  std::thread other(gemmTiles, std::cref(s), a, b, c, 1, 2, std::ref(partials[1]),
                    std::ref(accs[1]));
  gemmTiles(s, a, b, c, 0, 2, partials[0], accs[0]);
  other.join();
}

static void gemm(const Shape &s, const float *a, const float *b, float *c, int threads, int mode) {
#if defined(GEMM_BLIS)
  if (mode == 3) { // on the backend's thread pool (MLPERF_CPU_THREADS), whatever `threads`
    return mlperf::rt::cpu::gemmF32(a, b, c, s.m, s.n, s.k, s.ta, s.tb);
  }
#endif
  if (mode == 2) {
    return gemmTiled(s, a, b, c, threads);
  }
  bool blocked = mode == 1;
  static std::vector<float> partials[2];
  static std::vector<double> accs[2];
  if (threads == 1) {
    gemmRows(s, a, b, c, 0, s.m, blocked, partials[0], accs[0]);
    return;
  }
  int64_t half = (s.m / 2 + 7) / 8 * 8;
  std::thread other(gemmRows, std::cref(s), a, b, c, half, s.m, blocked, std::ref(partials[1]),
                    std::ref(accs[1]));
  gemmRows(s, a, b, c, 0, half, blocked, partials[0], accs[0]);
  other.join();
}

int main() {
  setLibraryThreads(1);
  const int64_t tokens = 2048, d = 512, kv = 128, ffn = 1408;
  const Shape shapes[] = {
      {"q/o proj  x·Wᵀ", tokens, d, d, false, true},
      {"k/v proj  x·Wᵀ", tokens, kv, d, false, true},
      {"gate/up   x·Wᵀ", tokens, ffn, d, false, true},
      {"down      x·Wᵀ", tokens, d, ffn, false, true},
      {"dx gate   dy·W", tokens, d, ffn, false, false},
      {"dW gate   dyᵀ·x", ffn, d, tokens, true, false},
      {"dW down   dyᵀ·x", d, ffn, tokens, true, false},
      {"scores    q·kᵀ", 256, 256, 64, false, true},
      {"p·v", 256, 64, 256, false, false},
  };
  std::printf("%s, library single-threaded, rows of C split across our threads; GFLOP/s, best "
              "of 5\n",
              kLibrary);
  std::printf("%-16s %5s %5s %5s %8s %8s %9s %9s %8s %8s %8s\n", "shape", "m", "n", "k", "full 1t",
              "full 2t", "blocked1t", "blocked2t", "tiled 1t", "tiled 2t", "backend");
  std::mt19937 rng(0);
  std::normal_distribution<float> normal;
  for (const Shape &s : shapes) {
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n), other(s.m * s.n);
    for (float &x : a) {
      x = normal(rng);
    }
    for (float &x : b) {
      x = normal(rng);
    }
    double rates[4][2] = {};
#if defined(GEMM_BLIS)
    const int modes = 4;
#else
    const int modes = 3;
#endif
    for (int mode = 0; mode < modes; ++mode) {
      for (int threads = 1; threads <= (mode == 3 ? 1 : 2); ++threads) {
        double best = 1e30;
        int repeats = s.m * s.n * s.k < (1 << 22) ? 40 : 1;
        for (int r = 0; r < 5; ++r) {
          auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < repeats; ++i) {
            gemm(s, a.data(), b.data(), c.data(), threads, mode);
          }
          std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
          best = std::min(best, elapsed.count() / repeats);
        }
        rates[mode][threads - 1] = 2.0 * s.m * s.n * s.k / best / 1e9;
      }
    }
    std::printf("%-16s %5ld %5ld %5ld %8.1f %8.1f %9.1f %9.1f %8.1f %8.1f %8.1f\n", s.what, s.m,
                s.n, s.k, rates[0][0], rates[0][1], rates[1][0], rates[1][1], rates[2][0],
                rates[2][1], rates[3][0]);
    // Bits: does an element depend on the thread split or on the rows computed with it?
    gemm(s, a.data(), b.data(), c.data(), 1, 1);
    gemm(s, a.data(), b.data(), other.data(), 2, 1);
    bool sameThreads = std::memcmp(c.data(), other.data(), c.size() * 4) == 0;
    std::vector<float> few(8 * s.n);
    std::vector<float> partial;
    std::vector<double> acc;
    gemmRows(s, a.data(), b.data(), few.data(), 0, 8, true, partial, acc);
    bool sameRows = std::memcmp(c.data(), few.data(), few.size() * 4) == 0;
    std::printf("%-16s library sgemm per 256 products: rows split 2 ways %s, first 8 rows alone "
                "%s\n",
                "", sameThreads ? "same bits" : "OTHER BITS",
                sameRows ? "same bits" : "OTHER BITS");
  }
}
