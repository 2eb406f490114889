//===- Moe.cpp - Mixture-of-experts CPU kernels -----------------*- C++ -*-===//

#include "runtime/cpu/Moe.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace mlperf::rt::cpu {

namespace {

/// Rows per parallel chunk of the row-wise kernels.
constexpr int64_t kRowGrain = 64;

} // namespace

void moeRoute(const float *logits, int64_t tokens, int64_t experts, int64_t k, float *probs,
              int64_t *chosen) {
  parallelChunks(tokens, kRowGrain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> index(experts);
    for (int64_t t = begin; t < end; ++t) {
      const float *row = logits + t * experts;
      std::iota(index.begin(), index.end(), int64_t{0});
      // Largest first, the lower index first among equals; a NaN logit ranks above every
      // number (as torch.topk orders it), so a diverged router is visible, not hidden.
      auto before = [row](int64_t a, int64_t b) {
        bool nanA = std::isnan(row[a]), nanB = std::isnan(row[b]);
        if (nanA != nanB) {
          return nanA;
        }
        if (!nanA && row[a] != row[b]) {
          return row[a] > row[b];
        }
        return a < b;
      };
      std::partial_sort(index.begin(), index.begin() + k, index.end(), before);
      // Softmax over the k selected logits, in f64 from the largest.
      double largest = row[index[0]], sum = 0.0;
      std::vector<double> exps(k);
      for (int64_t j = 0; j < k; ++j) {
        exps[j] = std::exp(static_cast<double>(row[index[j]]) - largest);
        sum += exps[j];
      }
      for (int64_t j = 0; j < k; ++j) {
        chosen[t * k + j] = index[j];
        probs[t * k + j] = static_cast<float>(exps[j] / sum);
      }
    }
  });
}

void moeRouteGrad(const float *probs, const int64_t *chosen, const float *grad, int64_t tokens,
                  int64_t k, int64_t experts, float *dlogits) {
  parallelChunks(tokens, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const float *p = probs + t * k, *g = grad + t * k;
      float *row = dlogits + t * experts;
      std::fill(row, row + experts, 0.0f);
      double dot = 0.0;
      for (int64_t j = 0; j < k; ++j) {
        dot += static_cast<double>(p[j]) * g[j];
      }
      for (int64_t j = 0; j < k; ++j) {
        int64_t e = chosen[t * k + j];
        if (e >= 0 && e < experts) { // the forward's own output: always in range
          row[e] = static_cast<float>(p[j] * (g[j] - dot));
        }
      }
    }
  });
}

std::string moeSort(const int64_t *chosen, int64_t pairs, int64_t experts, int64_t *order,
                    int64_t *groupSizes) {
  std::fill(groupSizes, groupSizes + experts, int64_t{0});
  for (int64_t i = 0; i < pairs; ++i) {
    if (chosen[i] < 0 || chosen[i] >= experts) {
      return "routed pair " + std::to_string(i) + " names expert " + std::to_string(chosen[i]) +
             ", outside [0, " + std::to_string(experts) + ")";
    }
    ++groupSizes[chosen[i]];
  }
  // A counting sort: stable, so each expert's pairs stay in (token, slot) order.
  std::vector<int64_t> next(experts, 0);
  for (int64_t e = 1; e < experts; ++e) {
    next[e] = next[e - 1] + groupSizes[e - 1];
  }
  for (int64_t i = 0; i < pairs; ++i) {
    order[next[chosen[i]]++] = i;
  }
  return "";
}

std::string moePermute(const float *source, const int64_t *order, int64_t rows, int64_t sourceRows,
                       int64_t dim, float *routed) {
  const int64_t fanout = rows / sourceRows;
  for (int64_t r = 0; r < rows; ++r) {
    if (order[r] < 0 || order[r] >= rows) {
      return "order[" + std::to_string(r) + "] = " + std::to_string(order[r]) + " is outside [0, " +
             std::to_string(rows) + ")";
    }
  }
  parallelChunks(rows, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *from = source + (order[r] / fanout) * dim;
      std::copy(from, from + dim, routed + r * dim);
    }
  });
  return "";
}

std::string moeUnpermute(const float *routed, const int64_t *order, int64_t rows, int64_t tokenRows,
                         int64_t dim, float *tokens) {
  const int64_t fanout = rows / tokenRows;
  std::vector<int64_t> rowOfPair(rows, -1);
  for (int64_t r = 0; r < rows; ++r) {
    if (order[r] < 0 || order[r] >= rows || rowOfPair[order[r]] >= 0) {
      return "order[" + std::to_string(r) + "] = " + std::to_string(order[r]) +
             (order[r] < 0 || order[r] >= rows ? " is outside [0, " + std::to_string(rows) + ")"
                                               : " repeats an earlier entry") +
             ": not a permutation";
    }
    rowOfPair[order[r]] = r;
  }
  parallelChunks(tokenRows, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      float *out = tokens + s * dim;
      const float *first = routed + rowOfPair[s * fanout] * dim;
      std::copy(first, first + dim, out);
      for (int64_t j = 1; j < fanout; ++j) {
        const float *row = routed + rowOfPair[s * fanout + j] * dim;
        for (int64_t c = 0; c < dim; ++c) {
          out[c] += row[c];
        }
      }
    }
  });
  return "";
}

std::string checkGroupSizes(const int64_t *groupSizes, const GroupedMatmulShape &shape) {
  int64_t total = 0;
  for (int64_t e = 0; e < shape.experts; ++e) {
    if (groupSizes[e] < 0) {
      return "group size of expert " + std::to_string(e) + " is negative (" +
             std::to_string(groupSizes[e]) + ")";
    }
    total += groupSizes[e];
    if (total > shape.rows) {
      return "group sizes add up to more than the " + std::to_string(shape.rows) + " rows";
    }
  }
  return "";
}

void groupedMatmul(const float *x, const float *weights, const int64_t *groupSizes,
                   const GroupedMatmulShape &shape, float *y) {
  int64_t offset = 0;
  for (int64_t e = 0; e < shape.experts; ++e) {
    int64_t rows = groupSizes[e];
    if (rows > 0) {
      matmul(x + offset * shape.k, weights + e * shape.k * shape.m, y + offset * shape.m,
             matmulShape(rows, shape.m, shape.k, false, shape.weightsTransposed));
    }
    offset += rows;
  }
  std::fill(y + offset * shape.m, y + shape.rows * shape.m, 0.0f);
}

void groupedMatmulWeightGrad(const float *x, const float *dy, const int64_t *groupSizes,
                             const GroupedMatmulShape &shape, float *dweights) {
  int64_t offset = 0;
  const int64_t perExpert = shape.k * shape.m;
  for (int64_t e = 0; e < shape.experts; ++e) {
    int64_t rows = groupSizes[e];
    float *out = dweights + e * perExpert;
    if (rows == 0) {
      std::fill(out, out + perExpert, 0.0f);
    } else if (shape.weightsTransposed) { // [m, k] = dyᵀ · x
      matmul(dy + offset * shape.m, x + offset * shape.k, out,
             matmulShape(shape.m, shape.k, rows, true, false));
    } else { // [k, m] = xᵀ · dy
      matmul(x + offset * shape.k, dy + offset * shape.m, out,
             matmulShape(shape.k, shape.m, rows, true, false));
    }
    offset += rows;
  }
}

void scaleRows(const float *x, const float *scales, int64_t rows, int64_t dim, float *y) {
  parallelChunks(rows, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      for (int64_t c = 0; c < dim; ++c) {
        y[r * dim + c] = x[r * dim + c] * scales[r];
      }
    }
  });
}

void rowDot(const float *a, const float *b, int64_t rows, int64_t dim, float *y) {
  parallelChunks(rows, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      double sum = 0.0;
      for (int64_t c = 0; c < dim; ++c) {
        sum += static_cast<double>(a[r * dim + c]) * b[r * dim + c];
      }
      y[r] = static_cast<float>(sum);
    }
  });
}

} // namespace mlperf::rt::cpu
