//===- VocabLoss.cpp - Cross-entropy over a vocabulary split over ranks ---===//

#include "runtime/cpu/VocabLoss.h"

#include <algorithm>
#include <cmath>

namespace mlperf::rt::cpu {

void vocabRowMaxima(const float *logits, int64_t tokens, int64_t columns, float *maxima) {
  for (int64_t t = 0; t < tokens; ++t) {
    const float *row = logits + t * columns;
    maxima[t] = *std::max_element(row, row + columns);
  }
}

int64_t vocabRowStats(const float *logits, const int64_t *labels, const float *maxima,
                      int64_t tokens, int64_t columns, int64_t first, int64_t vocab, double *sums,
                      double *labelLogits) {
  for (int64_t t = 0; t < tokens; ++t) {
    if (labels[t] < 0 || labels[t] >= vocab) {
      return t;
    }
    const float *row = logits + t * columns;
    double sum = 0.0;
    for (int64_t v = 0; v < columns; ++v) {
      sum += std::exp(static_cast<double>(row[v]) - maxima[t]);
    }
    sums[t] = sum;
    int64_t local = labels[t] - first;
    labelLogits[t] = local >= 0 && local < columns ? row[local] : 0.0;
  }
  return -1;
}

double vocabLoss(const float *maxima, const double *sums, const double *labelLogits,
                 const float *mask, int64_t tokens) {
  double total = 0.0, weight = 0.0;
  for (int64_t t = 0; t < tokens; ++t) {
    double w = mask ? static_cast<double>(mask[t]) : 1.0;
    weight += w;
    total += w * (maxima[t] + std::log(sums[t]) - labelLogits[t]);
  }
  return weight > 0 ? total / weight : 0.0;
}

void vocabLossGradRows(const float *logits, const int64_t *labels, const float *mask,
                       const float *maxima, const double *sums, double dloss, double weight,
                       int64_t tokens, int64_t columns, int64_t first, float *dlogits) {
  for (int64_t t = 0; t < tokens; ++t) {
    // No counted token (every label ignored): loss 0, gradient 0.
    double coefficient =
        weight > 0 ? dloss * (mask ? static_cast<double>(mask[t]) : 1.0) / weight : 0.0;
    const float *row = logits + t * columns;
    for (int64_t v = 0; v < columns; ++v) {
      double probability = std::exp(static_cast<double>(row[v]) - maxima[t]) / sums[t];
      dlogits[t * columns + v] =
          static_cast<float>(coefficient * (probability - (first + v == labels[t] ? 1.0 : 0.0)));
    }
  }
}

} // namespace mlperf::rt::cpu
