//===- Kernels.cpp - CPU reference kernels ----------------------*- C++ -*-===//

#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

namespace mlperf::rt::cpu {

namespace {

/// Elements per task of element-wise kernels: below 2·kGrain a kernel runs in the caller.
constexpr int64_t kGrain = int64_t{1} << 15;

/// Rows per task for row-wise kernels over rows of `width` elements.
int64_t rowGrain(int64_t width) {
  return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, width));
}

void matmulFloat(const float *a, const float *b, float *c, const MatmulShape &s) {
  for (int64_t batch = 0; batch < s.batch; ++batch) {
    gemmF32(a + batch * s.m * s.k, s.broadcastB ? b : b + batch * s.k * s.n, c + batch * s.m * s.n,
            s.m, s.n, s.k, s.transposeA, s.transposeB);
  }
}

} // namespace

MatmulShape matmulShapeOf(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                          const std::vector<int64_t> &c, bool transposeA, bool transposeB) {
  const size_t rank = a.size();
  MatmulShape s;
  s.transposeA = transposeA;
  s.transposeB = transposeB;
  s.batch = 1;
  for (size_t d = 0; d + 2 < rank; ++d) {
    s.batch *= a[d];
  }
  s.m = c[c.size() - 2];
  s.n = c.back();
  s.k = a[rank - (transposeA ? 2 : 1)];
  s.broadcastB = b.size() == 2 && rank > 2;
  return s;
}

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
  parallelChunks(rows, rowGrain(dim), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
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
  });
}

template <typename T>
void rmsNormGrad(const T *x, const T *w, const T *dy, T *dx, T *dw, int64_t rows, int64_t dim,
                 double eps) {
  // Rows in parallel for dx; then columns in parallel for dw, each column summed over the rows
  // in order (the same sum for any thread count).
  std::vector<double> inverseRms(rows);
  parallelChunks(rows, rowGrain(dim), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T *row = x + r * dim;
      const T *grad = dy + r * dim;
      double sumSquares = 0.0, dot = 0.0;
      for (int64_t i = 0; i < dim; ++i) {
        sumSquares += static_cast<double>(row[i]) * row[i];
        dot += static_cast<double>(grad[i]) * w[i] * row[i];
      }
      double r1 = 1.0 / std::sqrt(sumSquares / dim + eps);
      inverseRms[r] = r1;
      // y_i = x_i r w_i with r = (mean(x²) + eps)^-1/2, dr/dx_j = -r³ x_j / dim.
      double correction = dot * r1 * r1 * r1 / dim;
      for (int64_t i = 0; i < dim; ++i) {
        dx[r * dim + i] = static_cast<T>(grad[i] * w[i] * r1 - row[i] * correction);
      }
    }
  });
  parallelChunks(dim, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, rows)),
                 [&](int64_t begin, int64_t end) {
                   std::vector<double> dwAcc(end - begin, 0.0);
                   for (int64_t r = 0; r < rows; ++r) {
                     const T *row = x + r * dim, *grad = dy + r * dim;
                     for (int64_t i = begin; i < end; ++i) {
                       dwAcc[i - begin] += static_cast<double>(grad[i]) * row[i] * inverseRms[r];
                     }
                   }
                   for (int64_t i = begin; i < end; ++i) {
                     dw[i] = static_cast<T>(dwAcc[i - begin]);
                   }
                 });
}

template <typename T> void add(const T *a, const T *b, T *y, int64_t count) {
  parallelChunks(count, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      y[i] = static_cast<T>(static_cast<double>(a[i]) + b[i]);
    }
  });
}

template <typename T> void mul(const T *a, const T *b, T *y, int64_t count) {
  parallelChunks(count, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      y[i] = static_cast<T>(static_cast<double>(a[i]) * b[i]);
    }
  });
}

template <typename T> void scale(const T *x, T *y, int64_t count, double factor) {
  parallelChunks(count, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      y[i] = static_cast<T>(x[i] * factor);
    }
  });
}

template <typename T> void silu(const T *x, T *y, int64_t count) {
  parallelChunks(count, kGrain / 8, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      double v = x[i];
      y[i] = static_cast<T>(v / (1.0 + std::exp(-v)));
    }
  });
}

template <typename T> void siluGrad(const T *x, const T *dy, T *dx, int64_t count) {
  parallelChunks(count, kGrain / 8, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      double v = x[i];
      double sigmoid = 1.0 / (1.0 + std::exp(-v));
      dx[i] = static_cast<T>(dy[i] * sigmoid * (1.0 + v * (1.0 - sigmoid)));
    }
  });
}

void siluAndSigmoid(const float *x, float *y, double *sigmoid, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    double v = x[i], e = std::exp(-v);
    y[i] = static_cast<float>(v / (1.0 + e));
    sigmoid[i] = 1.0 / (1.0 + e);
  }
}

void siluGradFromSigmoid(const float *x, const double *sigmoid, const float *dy, float *dx,
                         int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    double v = x[i];
    dx[i] = static_cast<float>(dy[i] * sigmoid[i] * (1.0 + v * (1.0 - sigmoid[i])));
  }
}

template <typename T>
int64_t embedding(const T *table, const int64_t *ids, T *y, int64_t tokens, int64_t vocab,
                  int64_t dim) {
  for (int64_t t = 0; t < tokens; ++t) {
    if (ids[t] < 0 || ids[t] >= vocab) {
      return t;
    }
  }
  parallelChunks(tokens, rowGrain(dim), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      std::copy_n(table + ids[t] * dim, dim, y + t * dim);
    }
  });
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
  // Columns in parallel, each summed over the tokens in order.
  std::vector<double> acc(vocab * dim, 0.0);
  parallelChunks(dim, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, tokens)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t t = 0; t < tokens; ++t) {
                     for (int64_t i = begin; i < end; ++i) {
                       acc[ids[t] * dim + i] += dy[t * dim + i];
                     }
                   }
                 });
  parallelChunks(vocab * dim, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      dtable[i] = static_cast<T>(acc[i]);
    }
  });
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
  parallelChunks(seq, rowGrain(batch * heads * headDim), [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
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
  });
}

template <typename T>
void causalMask(const T *x, T *y, int64_t matrices, int64_t n, bool forGradient, int64_t window) {
  const T fill = forGradient ? T(0) : -std::numeric_limits<T>::infinity();
  parallelChunks(matrices * n, rowGrain(n), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) { // row = m * n + q
      int64_t q = row % n;
      int64_t first = window < 0 ? 0 : q - window; // the earliest key the query sees
      for (int64_t k = 0; k < n; ++k) {
        int64_t index = row * n + k;
        y[index] = k > q || k < first ? fill : x[index];
      }
    }
  });
}

template <typename T>
int64_t softmax(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, T *logSumExp) {
  // Rows (o, i) in parallel; the first bad row is the smallest index any task saw.
  std::atomic<int64_t> badRow{std::numeric_limits<int64_t>::max()};
  parallelChunks(outer * inner, rowGrain(n) / 4 + 1, [&](int64_t begin, int64_t end) {
    // Each exp once, kept in f64 for the division (the row may be y itself).
    thread_local std::vector<double> exps;
    exps.resize(n);
    for (int64_t row = begin; row < end; ++row) {
      int64_t o = row / inner, i = row % inner;
      const T *in = x + o * n * inner + i;
      T *out = y + o * n * inner + i;
      double maximum = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        maximum = std::max(maximum, static_cast<double>(in[j * inner]));
      }
      if (!std::isfinite(maximum)) {
        int64_t seen = badRow.load();
        while (row < seen && !badRow.compare_exchange_weak(seen, row)) {
        }
        continue;
      }
      double sum = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        double value = in[j * inner];
        // exp(−inf) is 0: masked entries (half of causal scores) skip the call.
        exps[j] =
            value == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(value - maximum);
        sum += exps[j];
      }
      for (int64_t j = 0; j < n; ++j) {
        out[j * inner] = static_cast<T>(exps[j] / sum);
      }
      if (logSumExp) {
        logSumExp[row] = static_cast<T>(maximum + std::log(sum));
      }
    }
  });
  return badRow.load() == std::numeric_limits<int64_t>::max() ? -1 : badRow.load();
}

template <typename T>
void softmaxGrad(const T *y, const T *dy, T *dx, int64_t outer, int64_t n, int64_t inner) {
  parallelChunks(outer * inner, rowGrain(n), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t base = row / inner * n * inner + row % inner;
      double dot = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        dot += static_cast<double>(y[base + j * inner]) * dy[base + j * inner];
      }
      for (int64_t j = 0; j < n; ++j) {
        dx[base + j * inner] = static_cast<T>(y[base + j * inner] * (dy[base + j * inner] - dot));
      }
    }
  });
}

template <typename T>
void repeat(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, int64_t times) {
  parallelChunks(outer * n * times, rowGrain(inner), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) { // row = o * n * times + j
      int64_t o = row / (n * times), j = row % (n * times);
      std::copy_n(x + (o * n + j / times) * inner, inner, y + row * inner);
    }
  });
}

template <typename T>
void repeatGrad(const T *dy, T *dx, int64_t outer, int64_t n, int64_t inner, int64_t times) {
  parallelChunks(outer * n, rowGrain(inner * times), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) { // row = o * n + j
      int64_t o = row / n, j = row % n;
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0.0;
        for (int64_t r = 0; r < times; ++r) {
          sum += dy[(o * n * times + j * times + r) * inner + i];
        }
        dx[row * inner + i] = static_cast<T>(sum);
      }
    }
  });
}

template <typename T>
void transpose(const T *x, T *y, const std::vector<int64_t> &shape,
               const std::vector<int64_t> &perm) {
  const size_t rank = shape.size();
  std::vector<int64_t> inStrides(rank, 1), outShape(rank);
  for (size_t d = rank; d-- > 1;) {
    inStrides[d - 1] = inStrides[d] * shape[d];
  }
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    outShape[d] = shape[perm[d]];
    count *= shape[d];
  }
  if (rank >= 2 && perm[rank - 1] == static_cast<int64_t>(rank) - 1) {
    // The last dimension stays: copy whole rows of it (attention's [b, s, h, d] <-> [b, h, s, d]).
    const int64_t row = shape[rank - 1], rows = count / std::max<int64_t>(row, 1);
    parallelChunks(rows, rowGrain(row), [&](int64_t begin, int64_t end) {
      std::vector<int64_t> index(rank - 1, 0);
      for (size_t d = rank - 1, rest = begin; d-- > 0;) {
        index[d] = static_cast<int64_t>(rest) % outShape[d];
        rest /= outShape[d];
      }
      for (int64_t r = begin; r < end; ++r) {
        int64_t source = 0;
        for (size_t d = 0; d + 1 < rank; ++d) {
          source += index[d] * inStrides[perm[d]];
        }
        std::copy_n(x + source, row, y + r * row);
        for (size_t d = rank - 1; d-- > 0;) {
          if (++index[d] < outShape[d]) {
            break;
          }
          index[d] = 0;
        }
      }
    });
    return;
  }
  // Chunks of the output, each walked in order; `index` is the output multi-index.
  parallelChunks(count, kGrain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> index(rank, 0);
    for (size_t d = rank, rest = begin; d-- > 0;) {
      index[d] = static_cast<int64_t>(rest) % outShape[d];
      rest /= outShape[d];
    }
    for (int64_t linear = begin; linear < end; ++linear) {
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
  });
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
  }
  // Tokens' losses in parallel, added in token order.
  std::vector<double> losses(tokens);
  parallelChunks(tokens, rowGrain(vocab), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const T *row = logits + t * vocab;
      auto [maximum, sum] = rowMaxAndExpSum(row, vocab);
      losses[t] = maximum + std::log(sum) - row[labels[t]];
    }
  });
  for (int64_t t = 0; t < tokens; ++t) {
    double w = mask ? static_cast<double>(mask[t]) : 1.0;
    total += w * losses[t];
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
  return weight > 0 ? total / weight : 0.0; // no counted token: loss 0 (and gradient 0)
}

template <typename T>
void crossEntropyGradRows(const T *logits, const int64_t *labels, const T *mask, double dloss,
                          double normalizer, T *dlogits, int64_t tokens, int64_t vocab) {
  parallelChunks(tokens, rowGrain(vocab), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const T *row = logits + t * vocab;
      auto [maximum, sum] = rowMaxAndExpSum(row, vocab);
      double coefficient =
          normalizer > 0 ? dloss * (mask ? static_cast<double>(mask[t]) : 1.0) / normalizer : 0.0;
      for (int64_t v = 0; v < vocab; ++v) {
        double probability = std::exp(row[v] - maximum) / sum;
        dlogits[t * vocab + v] =
            static_cast<T>(coefficient * (probability - (v == labels[t] ? 1.0 : 0.0)));
      }
    }
  });
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
  template void causalMask<T>(const T *, T *, int64_t, int64_t, bool, int64_t);                    \
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
