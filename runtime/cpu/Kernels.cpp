//===- Kernels.cpp - CPU reference kernels ----------------------*- C++ -*-===//

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <thread>
#include <type_traits>
#include <utility>

namespace mlperf::rt::cpu {

namespace {

// Products per float partial sum before it is added to the f64 accumulator: float sums of
// 256 products keep the error near a GPU's f32 accumulation, the f64 sum keeps long
// contractions (K = 14336) from drifting.
constexpr int64_t kBlockK = kMatmulBlockK;
// Columns of C computed together: 4 rows x 128 floats of partial sums stay in L1.
constexpr int64_t kBlockN = 128;

/// C[rowBegin:rowEnd, :] += A · B for row-major packed A [m, k] and B [k, n], C in f64.
/// Compiled twice: with AVX2/FMA and for baseline x86-64, chosen at load time.
__attribute__((target_clones("avx2", "default"))) void sgemmRows(const float *A, const float *B,
                                                                 double *C, int64_t rowBegin,
                                                                 int64_t rowEnd, int64_t n,
                                                                 int64_t k) {
  alignas(64) float partial[4][kBlockN];
  for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    int64_t nb = std::min(kBlockN, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kBlockK) {
      int64_t kb = std::min(kBlockK, k - p0);
      int64_t i = rowBegin;
      for (; i + 4 <= rowEnd; i += 4) {
        for (auto &row : partial) {
          std::fill_n(row, nb, 0.0f);
        }
        for (int64_t p = p0; p < p0 + kb; ++p) {
          const float *brow = B + p * n + j0;
          float a0 = A[i * k + p], a1 = A[(i + 1) * k + p];
          float a2 = A[(i + 2) * k + p], a3 = A[(i + 3) * k + p];
          for (int64_t j = 0; j < nb; ++j) {
            float bj = brow[j];
            partial[0][j] += a0 * bj;
            partial[1][j] += a1 * bj;
            partial[2][j] += a2 * bj;
            partial[3][j] += a3 * bj;
          }
        }
        for (int64_t r = 0; r < 4; ++r) {
          double *crow = C + (i + r) * n + j0;
          for (int64_t j = 0; j < nb; ++j) {
            crow[j] += partial[r][j];
          }
        }
      }
      for (; i < rowEnd; ++i) {
        std::fill_n(partial[0], nb, 0.0f);
        for (int64_t p = p0; p < p0 + kb; ++p) {
          const float *brow = B + p * n + j0;
          float a0 = A[i * k + p];
          for (int64_t j = 0; j < nb; ++j) {
            partial[0][j] += a0 * brow[j];
          }
        }
        double *crow = C + i * n + j0;
        for (int64_t j = 0; j < nb; ++j) {
          crow[j] += partial[0][j];
        }
      }
    }
  }
}

/// Worker threads for large GEMMs: MLPERF_CPU_THREADS, else every hardware thread.
int64_t cpuThreads() {
  static const int64_t threads = [] {
    if (const char *env = std::getenv("MLPERF_CPU_THREADS")) {
      long value = std::strtol(env, nullptr, 10);
      if (value >= 1) {
        return static_cast<int64_t>(value);
      }
    }
    return static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return threads;
}

/// Row-major copy of op(X) where X is stored [rows, cols] (or [cols, rows] when transposed).
void packRowMajor(const float *x, float *out, int64_t rows, int64_t cols, bool transposed) {
  if (!transposed) {
    std::copy_n(x, rows * cols, out);
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      out[r * cols + c] = x[c * rows + r];
    }
  }
}

void matmulFloat(const float *a, const float *b, float *c, const MatmulShape &s) {
  const int64_t m = s.m, n = s.n, k = s.k;
  // Reused across calls: fresh allocations of this size cost more in page faults than the
  // packing itself.
  thread_local std::vector<float> packedA, packedB;
  thread_local std::vector<double> acc;
  packedA.resize(m * k);
  packedB.resize(k * n);
  acc.resize(m * n);
  int64_t threads = std::min<int64_t>(cpuThreads(), std::max<int64_t>(1, m / 8));
  if (m * n * k < (int64_t{1} << 21)) {
    threads = 1; // starting threads costs more than they save on small products
  }
  for (int64_t batch = 0; batch < s.batch; ++batch) {
    packRowMajor(a + batch * m * k, packedA.data(), m, k, s.transposeA);
    if (batch == 0 || !s.broadcastB) {
      packRowMajor(s.broadcastB ? b : b + batch * k * n, packedB.data(), k, n, s.transposeB);
    }
    std::fill(acc.begin(), acc.end(), 0.0);
    if (threads == 1) {
      sgemmRows(packedA.data(), packedB.data(), acc.data(), 0, m, n, k);
    } else {
      std::vector<std::thread> workers;
      int64_t rowsPerThread = (m + threads - 1) / threads;
      for (int64_t t = 0; t < threads; ++t) {
        int64_t begin = t * rowsPerThread, end = std::min(m, begin + rowsPerThread);
        if (begin < end) {
          workers.emplace_back(sgemmRows, packedA.data(), packedB.data(), acc.data(), begin, end, n,
                               k);
        }
      }
      for (std::thread &worker : workers) {
        worker.join();
      }
    }
    float *C = c + batch * m * n;
    for (int64_t i = 0; i < m * n; ++i) {
      C[i] = static_cast<float>(acc[i]);
    }
  }
}

} // namespace

template <typename T> void matmul(const T *a, const T *b, T *c, const MatmulShape &s) {
  if constexpr (std::is_same_v<T, float>) {
    return matmulFloat(a, b, c, s);
  }
  const int64_t m = s.m, n = s.n, k = s.k;
  std::vector<double> acc;
  for (int64_t batch = 0; batch < s.batch; ++batch) {
    const T *A = a + batch * m * k;
    const T *B = s.broadcastB ? b : b + batch * k * n;
    T *C = c + batch * m * n;
    if (!s.transposeA && s.transposeB) {
      // y = x · Wᵀ, the linear-layer case: both operands are read along rows.
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0.0;
          const T *row = A + i * k, *col = B + j * k;
          for (int64_t p = 0; p < k; ++p) {
            sum += static_cast<double>(row[p]) * static_cast<double>(col[p]);
          }
          C[i * n + j] = static_cast<T>(sum);
        }
      }
      continue;
    }
    acc.assign(m * n, 0.0);
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t i = 0; i < m; ++i) {
        double aip = s.transposeA ? A[p * m + i] : A[i * k + p];
        if (aip == 0.0) {
          continue;
        }
        double *out = acc.data() + i * n;
        if (s.transposeB) {
          for (int64_t j = 0; j < n; ++j) {
            out[j] += aip * static_cast<double>(B[j * k + p]);
          }
        } else {
          const T *brow = B + p * n;
          for (int64_t j = 0; j < n; ++j) {
            out[j] += aip * static_cast<double>(brow[j]);
          }
        }
      }
    }
    for (int64_t i = 0; i < m * n; ++i) {
      C[i] = static_cast<T>(acc[i]);
    }
  }
}

template <typename T>
void rmsNorm(const T *x, const T *w, T *y, int64_t rows, int64_t dim, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = x + r * dim;
    double sumSquares = 0.0;
    for (int64_t i = 0; i < dim; ++i) {
      sumSquares += static_cast<double>(row[i]) * row[i];
    }
    double inverseRms = 1.0 / std::sqrt(sumSquares / dim + eps);
    for (int64_t i = 0; i < dim; ++i) {
      y[r * dim + i] = static_cast<T>(row[i] * inverseRms * w[i]);
    }
  }
}

template <typename T>
void rmsNormGrad(const T *x, const T *w, const T *dy, T *dx, T *dw, int64_t rows, int64_t dim,
                 double eps) {
  std::vector<double> dwAcc(dim, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = x + r * dim;
    const T *grad = dy + r * dim;
    double sumSquares = 0.0, dot = 0.0;
    for (int64_t i = 0; i < dim; ++i) {
      sumSquares += static_cast<double>(row[i]) * row[i];
      dot += static_cast<double>(grad[i]) * w[i] * row[i];
    }
    double inverseRms = 1.0 / std::sqrt(sumSquares / dim + eps);
    // y_i = x_i r w_i with r = (mean(x²) + eps)^-1/2, dr/dx_j = -r³ x_j / dim.
    double correction = dot * inverseRms * inverseRms * inverseRms / dim;
    for (int64_t i = 0; i < dim; ++i) {
      dx[r * dim + i] = static_cast<T>(grad[i] * w[i] * inverseRms - row[i] * correction);
      dwAcc[i] += static_cast<double>(grad[i]) * row[i] * inverseRms;
    }
  }
  for (int64_t i = 0; i < dim; ++i) {
    dw[i] = static_cast<T>(dwAcc[i]);
  }
}

template <typename T> void add(const T *a, const T *b, T *y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    y[i] = static_cast<T>(static_cast<double>(a[i]) + b[i]);
  }
}

template <typename T> void mul(const T *a, const T *b, T *y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    y[i] = static_cast<T>(static_cast<double>(a[i]) * b[i]);
  }
}

template <typename T> void scale(const T *x, T *y, int64_t count, double factor) {
  for (int64_t i = 0; i < count; ++i) {
    y[i] = static_cast<T>(x[i] * factor);
  }
}

template <typename T> void silu(const T *x, T *y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    double v = x[i];
    y[i] = static_cast<T>(v / (1.0 + std::exp(-v)));
  }
}

template <typename T> void siluGrad(const T *x, const T *dy, T *dx, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    double v = x[i];
    double sigmoid = 1.0 / (1.0 + std::exp(-v));
    dx[i] = static_cast<T>(dy[i] * sigmoid * (1.0 + v * (1.0 - sigmoid)));
  }
}

template <typename T>
int64_t embedding(const T *table, const int64_t *ids, T *y, int64_t tokens, int64_t vocab,
                  int64_t dim) {
  for (int64_t t = 0; t < tokens; ++t) {
    if (ids[t] < 0 || ids[t] >= vocab) {
      return t;
    }
    std::copy_n(table + ids[t] * dim, dim, y + t * dim);
  }
  return -1;
}

template <typename T>
int64_t embeddingGrad(const int64_t *ids, const T *dy, T *dtable, int64_t tokens, int64_t vocab,
                      int64_t dim) {
  for (int64_t t = 0; t < tokens; ++t) {
    if (ids[t] < 0 || ids[t] >= vocab) {
      return t;
    }
  }
  std::vector<double> acc(vocab * dim, 0.0);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < dim; ++i) {
      acc[ids[t] * dim + i] += dy[t * dim + i];
    }
  }
  for (int64_t i = 0; i < vocab * dim; ++i) {
    dtable[i] = static_cast<T>(acc[i]);
  }
  return -1;
}

std::vector<double> ropeFrequencies(int64_t headDim, double theta, bool llama31Scaling,
                                    double factor, double lowFreqFactor, double highFreqFactor,
                                    int64_t originalMaxPosition) {
  std::vector<double> frequencies(headDim / 2);
  for (int64_t i = 0; i < headDim / 2; ++i) {
    // Computed in f32, as the reference's kernels do.
    float base = static_cast<float>(1.0 / std::pow(theta, 2.0 * i / headDim));
    double frequency = base;
    if (llama31Scaling) {
      double wavelength = 2.0 * M_PI / frequency;
      double lowFreqWavelength = originalMaxPosition / lowFreqFactor;
      double highFreqWavelength = originalMaxPosition / highFreqFactor;
      if (wavelength > lowFreqWavelength) {
        frequency /= factor;
      } else if (wavelength >= highFreqWavelength) {
        double smooth =
            (originalMaxPosition / wavelength - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
        frequency = (1.0 - smooth) * frequency / factor + smooth * frequency;
      }
    }
    frequencies[i] = static_cast<float>(frequency);
  }
  return frequencies;
}

template <typename T>
void rope(const T *x, T *y, int64_t batch, int64_t seq, int64_t heads, int64_t headDim,
          const std::vector<double> &frequencies, bool inverse) {
  const int64_t half = headDim / 2;
  for (int64_t s = 0; s < seq; ++s) {
    for (int64_t i = 0; i < half; ++i) {
      // Angle position·frequency in f32, then cos/sin.
      float angle = static_cast<float>(s) * static_cast<float>(frequencies[i]);
      double c = std::cos(static_cast<double>(angle));
      double sn = std::sin(static_cast<double>(angle)) * (inverse ? -1.0 : 1.0);
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t h = 0; h < heads; ++h) {
          int64_t base = ((b * seq + s) * heads + h) * headDim;
          double x1 = x[base + i], x2 = x[base + i + half];
          y[base + i] = static_cast<T>(x1 * c - x2 * sn);
          y[base + i + half] = static_cast<T>(x2 * c + x1 * sn);
        }
      }
    }
  }
}

template <typename T>
void causalMask(const T *x, T *y, int64_t matrices, int64_t n, bool forGradient) {
  const T fill = forGradient ? T(0) : -std::numeric_limits<T>::infinity();
  for (int64_t m = 0; m < matrices; ++m) {
    for (int64_t q = 0; q < n; ++q) {
      for (int64_t k = 0; k < n; ++k) {
        int64_t index = (m * n + q) * n + k;
        y[index] = k > q ? fill : x[index];
      }
    }
  }
}

template <typename T>
int64_t softmax(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, T *logSumExp) {
  int64_t badRow = -1;
  // Each exp once, kept in f64 for the division (the row may be y itself).
  thread_local std::vector<double> exps;
  exps.resize(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T *in = x + o * n * inner + i;
      T *out = y + o * n * inner + i;
      double maximum = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        maximum = std::max(maximum, static_cast<double>(in[j * inner]));
      }
      if (!std::isfinite(maximum)) {
        badRow = badRow < 0 ? o * inner + i : badRow;
        continue;
      }
      double sum = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        exps[j] = std::exp(in[j * inner] - maximum);
        sum += exps[j];
      }
      for (int64_t j = 0; j < n; ++j) {
        out[j * inner] = static_cast<T>(exps[j] / sum);
      }
      if (logSumExp) {
        logSumExp[o * inner + i] = static_cast<T>(maximum + std::log(sum));
      }
    }
  }
  return badRow;
}

template <typename T>
void softmaxGrad(const T *y, const T *dy, T *dx, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * n * inner + i;
      double dot = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        dot += static_cast<double>(y[base + j * inner]) * dy[base + j * inner];
      }
      for (int64_t j = 0; j < n; ++j) {
        dx[base + j * inner] = static_cast<T>(y[base + j * inner] * (dy[base + j * inner] - dot));
      }
    }
  }
}

template <typename T>
void repeat(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, int64_t times) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n * times; ++j) {
      std::copy_n(x + (o * n + j / times) * inner, inner, y + (o * n * times + j) * inner);
    }
  }
}

template <typename T>
void repeatGrad(const T *dy, T *dx, int64_t outer, int64_t n, int64_t inner, int64_t times) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0.0;
        for (int64_t r = 0; r < times; ++r) {
          sum += dy[(o * n * times + j * times + r) * inner + i];
        }
        dx[(o * n + j) * inner + i] = static_cast<T>(sum);
      }
    }
  }
}

template <typename T>
void transpose(const T *x, T *y, const std::vector<int64_t> &shape,
               const std::vector<int64_t> &perm) {
  const size_t rank = shape.size();
  std::vector<int64_t> inStrides(rank, 1), outShape(rank), index(rank, 0);
  for (size_t d = rank; d-- > 1;) {
    inStrides[d - 1] = inStrides[d] * shape[d];
  }
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    outShape[d] = shape[perm[d]];
    count *= shape[d];
  }
  // Walk the output in order; `index` is the output multi-index.
  for (int64_t linear = 0; linear < count; ++linear) {
    int64_t source = 0;
    for (size_t d = 0; d < rank; ++d) {
      source += index[d] * inStrides[perm[d]];
    }
    y[linear] = x[source];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < outShape[d]) {
        break;
      }
      index[d] = 0;
    }
  }
}

template <typename T>
void copySlice(const T *x, T *y, int64_t outer, int64_t inner, int64_t srcDim, int64_t dstDim,
               int64_t srcOffset, int64_t dstOffset, int64_t size) {
  for (int64_t o = 0; o < outer; ++o) {
    std::copy_n(x + (o * srcDim + srcOffset) * inner, size * inner,
                y + (o * dstDim + dstOffset) * inner);
  }
}

/// max and Σ exp(x − max) of one row of logits: log-sum-exp = max + log(sum), computed without
/// overflow.
template <typename T> std::pair<double, double> rowMaxAndExpSum(const T *row, int64_t vocab) {
  double maximum = -std::numeric_limits<double>::infinity();
  for (int64_t v = 0; v < vocab; ++v) {
    maximum = std::max(maximum, static_cast<double>(row[v]));
  }
  double sum = 0.0;
  for (int64_t v = 0; v < vocab; ++v) {
    sum += std::exp(row[v] - maximum);
  }
  return {maximum, sum};
}

template <typename T>
bool addCrossEntropy(const T *logits, const int64_t *labels, const T *mask, int64_t tokens,
                     int64_t vocab, double &total, double &weight, int64_t *badLabel) {
  for (int64_t t = 0; t < tokens; ++t) {
    if (labels[t] < 0 || labels[t] >= vocab) {
      *badLabel = t;
      return false;
    }
    const T *row = logits + t * vocab;
    auto [maximum, sum] = rowMaxAndExpSum(row, vocab);
    double w = mask ? static_cast<double>(mask[t]) : 1.0;
    total += w * (maximum + std::log(sum) - row[labels[t]]);
    weight += w;
  }
  *badLabel = -1;
  return true;
}

template <typename T>
double crossEntropy(const T *logits, const int64_t *labels, const T *mask, int64_t tokens,
                    int64_t vocab, int64_t *badLabel) {
  double total = 0.0, weight = 0.0;
  if (!addCrossEntropy(logits, labels, mask, tokens, vocab, total, weight, badLabel)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return total / weight;
}

template <typename T>
void crossEntropyGradRows(const T *logits, const int64_t *labels, const T *mask, double dloss,
                          double normalizer, T *dlogits, int64_t tokens, int64_t vocab) {
  for (int64_t t = 0; t < tokens; ++t) {
    const T *row = logits + t * vocab;
    auto [maximum, sum] = rowMaxAndExpSum(row, vocab);
    double coefficient = dloss * (mask ? static_cast<double>(mask[t]) : 1.0) / normalizer;
    for (int64_t v = 0; v < vocab; ++v) {
      double probability = std::exp(row[v] - maximum) / sum;
      dlogits[t * vocab + v] =
          static_cast<T>(coefficient * (probability - (v == labels[t] ? 1.0 : 0.0)));
    }
  }
}

template <typename T> double crossEntropyWeight(const T *mask, int64_t tokens) {
  double weight = 0.0;
  for (int64_t t = 0; t < tokens; ++t) {
    weight += mask ? static_cast<double>(mask[t]) : 1.0;
  }
  return weight;
}

template <typename T>
void crossEntropyGrad(const T *logits, const int64_t *labels, const T *mask, double dloss,
                      T *dlogits, int64_t tokens, int64_t vocab) {
  crossEntropyGradRows(logits, labels, mask, dloss, crossEntropyWeight(mask, tokens), dlogits,
                       tokens, vocab);
}

// The storage types the backend uses: float for runs, double for finite-difference checks.
#define MLPERF_INSTANTIATE_KERNELS(T)                                                              \
  template void matmul<T>(const T *, const T *, T *, const MatmulShape &);                         \
  template void rmsNorm<T>(const T *, const T *, T *, int64_t, int64_t, double);                   \
  template void rmsNormGrad<T>(const T *, const T *, const T *, T *, T *, int64_t, int64_t,        \
                               double);                                                            \
  template void add<T>(const T *, const T *, T *, int64_t);                                        \
  template void mul<T>(const T *, const T *, T *, int64_t);                                        \
  template void scale<T>(const T *, T *, int64_t, double);                                         \
  template void silu<T>(const T *, T *, int64_t);                                                  \
  template void siluGrad<T>(const T *, const T *, T *, int64_t);                                   \
  template int64_t embedding<T>(const T *, const int64_t *, T *, int64_t, int64_t, int64_t);       \
  template int64_t embeddingGrad<T>(const int64_t *, const T *, T *, int64_t, int64_t, int64_t);   \
  template void rope<T>(const T *, T *, int64_t, int64_t, int64_t, int64_t,                        \
                        const std::vector<double> &, bool);                                        \
  template void causalMask<T>(const T *, T *, int64_t, int64_t, bool);                             \
  template int64_t softmax<T>(const T *, T *, int64_t, int64_t, int64_t, T *);                     \
  template void softmaxGrad<T>(const T *, const T *, T *, int64_t, int64_t, int64_t);              \
  template void repeat<T>(const T *, T *, int64_t, int64_t, int64_t, int64_t);                     \
  template void repeatGrad<T>(const T *, T *, int64_t, int64_t, int64_t, int64_t);                 \
  template void transpose<T>(const T *, T *, const std::vector<int64_t> &,                         \
                             const std::vector<int64_t> &);                                        \
  template void copySlice<T>(const T *, T *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, \
                             int64_t);                                                             \
  template double crossEntropy<T>(const T *, const int64_t *, const T *, int64_t, int64_t,         \
                                  int64_t *);                                                      \
  template void crossEntropyGrad<T>(const T *, const int64_t *, const T *, double, T *, int64_t,   \
                                    int64_t);                                                      \
  template double crossEntropyWeight<T>(const T *, int64_t);                                       \
  template bool addCrossEntropy<T>(const T *, const int64_t *, const T *, int64_t, int64_t,        \
                                   double &, double &, int64_t *);                                 \
  template void crossEntropyGradRows<T>(const T *, const int64_t *, const T *, double, double,     \
                                        T *, int64_t, int64_t);

MLPERF_INSTANTIATE_KERNELS(float)
MLPERF_INSTANTIATE_KERNELS(double)
#undef MLPERF_INSTANTIATE_KERNELS

} // namespace mlperf::rt::cpu
