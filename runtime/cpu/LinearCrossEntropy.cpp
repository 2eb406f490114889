//===- LinearCrossEntropy.cpp - Output layer and loss, fused ---*- C++ -*-===//

#include "runtime/cpu/LinearCrossEntropy.h"

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <vector>

namespace mlperf::rt::cpu {
namespace {

/// Tokens per chunk: a multiple of kMatmulBlockK (the weight gradient sums over tokens).
constexpr int64_t kTokens = kMatmulBlockK;

/// logits [count, vocab] of tokens [first, first + count), rounded as tg.matmul's result.
void chunkLogits(const float *hidden, const float *weight, const LinearCrossEntropyShape &s,
                 int64_t first, int64_t count, std::vector<float> &logits) {
  logits.resize(count * s.vocab);
  MatmulShape shape;
  shape.m = count;
  shape.n = s.vocab;
  shape.k = s.hidden;
  shape.transposeB = true;
  matmul(hidden + first * s.hidden, weight, logits.data(), shape);
  roundBuffer(s.logitsType, logits.data(), count * s.vocab);
}

} // namespace

int64_t linearCrossEntropy(const float *hidden, const float *weight, const int64_t *labels,
                           const float *mask, const LinearCrossEntropyShape &s, double &loss) {
  std::vector<float> logits;
  double total = 0.0, weightSum = 0.0;
  for (int64_t first = 0; first < s.tokens; first += kTokens) {
    int64_t count = std::min(kTokens, s.tokens - first), bad = -1;
    chunkLogits(hidden, weight, s, first, count, logits);
    if (!addCrossEntropy(logits.data(), labels + first, mask ? mask + first : nullptr, count,
                         s.vocab, total, weightSum, &bad)) {
      return first + bad;
    }
  }
  loss = total / weightSum;
  return -1;
}

void linearCrossEntropyGrad(const float *hidden, const float *weight, const int64_t *labels,
                            const float *mask, double dloss, float *hiddenGrad, float *weightGrad,
                            const LinearCrossEntropyShape &s) {
  double normalizer = 0.0; // as crossEntropyGrad sums it
  for (int64_t t = 0; t < s.tokens; ++t) {
    normalizer += mask ? static_cast<double>(mask[t]) : 1.0;
  }
  std::vector<float> logits, dlogits, piece(s.vocab * s.hidden);
  std::vector<double> weightSums(s.vocab * s.hidden, 0.0);
  for (int64_t first = 0; first < s.tokens; first += kTokens) {
    int64_t count = std::min(kTokens, s.tokens - first);
    chunkLogits(hidden, weight, s, first, count, logits);
    dlogits.resize(count * s.vocab);
    crossEntropyGradRows(logits.data(), labels + first, mask ? mask + first : nullptr, dloss,
                         normalizer, dlogits.data(), count, s.vocab);
    roundBuffer(s.logitsType, dlogits.data(), count * s.vocab); // of the logits' type
    // hidden_grad = dlogits · weight, this chunk's rows.
    MatmulShape rows;
    rows.m = count;
    rows.n = s.hidden;
    rows.k = s.vocab;
    matmul(dlogits.data(), weight, hiddenGrad + first * s.hidden, rows);
    // This chunk's share of weight_grad = dlogitsᵀ · hidden.
    MatmulShape share;
    share.m = s.vocab;
    share.n = s.hidden;
    share.k = count;
    share.transposeA = true;
    matmul(dlogits.data(), hidden + first * s.hidden, piece.data(), share);
    for (size_t i = 0; i < piece.size(); ++i) {
      weightSums[i] += piece[i];
    }
  }
  for (size_t i = 0; i < weightSums.size(); ++i) {
    weightGrad[i] = static_cast<float>(weightSums[i]);
  }
}

} // namespace mlperf::rt::cpu
