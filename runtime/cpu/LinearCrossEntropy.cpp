//===- LinearCrossEntropy.cpp - Output layer and loss, fused ---*- C++ -*-===//

#include "runtime/cpu/LinearCrossEntropy.h"

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <vector>

namespace mlperf::rt::cpu {
namespace {

/// Tokens per chunk: a multiple of kGemmSliceK (the weight gradient sums over tokens).
constexpr int64_t kTokens = kGemmSliceK;

/// logits [count, vocab] of tokens [first, first + count), rounded as tg.matmul's result.
void chunkLogits(const float *hidden, const float *weight, const LinearCrossEntropyShape &s,
                 int64_t first, int64_t count, std::vector<float> &logits) {
  logits.resize(count * s.vocab);
  matmul(hidden + first * s.hidden, weight, logits.data(),
         matmulShape(count, s.vocab, s.hidden, false, true));
  roundBuffer(s.logitsType, logits.data(), count * s.vocab);
}

} // namespace

Status forEachLogitsChunk(const float *hidden, const float *weight,
                          const LinearCrossEntropyShape &s, const LogitsChunkLoss &loss) {
  std::vector<float> logits;
  for (int64_t first = 0; first < s.tokens; first += kTokens) {
    int64_t count = std::min(kTokens, s.tokens - first);
    chunkLogits(hidden, weight, s, first, count, logits);
    MLPERF_RETURN_IF_ERROR(loss(first, count, logits.data()));
  }
  return Status::ok();
}

Status linearCrossEntropyGradChunks(const float *hidden, const float *weight,
                                    const LinearCrossEntropyShape &s,
                                    const LogitsChunkGradient &gradient, float *hiddenGrad,
                                    float *weightGrad) {
  std::vector<float> logits, dlogits, piece(s.vocab * s.hidden);
  std::vector<double> weightSums(s.vocab * s.hidden, 0.0);
  for (int64_t first = 0; first < s.tokens; first += kTokens) {
    int64_t count = std::min(kTokens, s.tokens - first);
    chunkLogits(hidden, weight, s, first, count, logits);
    dlogits.resize(count * s.vocab);
    MLPERF_RETURN_IF_ERROR(gradient(first, count, logits.data(), dlogits.data()));
    roundBuffer(s.logitsType, dlogits.data(), count * s.vocab); // of the logits' type
    // hidden_grad = dlogits · weight, this chunk's rows.
    matmul(dlogits.data(), weight, hiddenGrad + first * s.hidden,
           matmulShape(count, s.hidden, s.vocab));
    // This chunk's share of weight_grad = dlogitsᵀ · hidden.
    matmul(dlogits.data(), hidden + first * s.hidden, piece.data(),
           matmulShape(s.vocab, s.hidden, count, true));
    for (size_t i = 0; i < piece.size(); ++i) {
      weightSums[i] += piece[i];
    }
  }
  for (size_t i = 0; i < weightSums.size(); ++i) {
    weightGrad[i] = static_cast<float>(weightSums[i]);
  }
  return Status::ok();
}

int64_t linearCrossEntropy(const float *hidden, const float *weight, const int64_t *labels,
                           const float *mask, const LinearCrossEntropyShape &s, double &loss) {
  double total = 0.0, weightSum = 0.0;
  int64_t badToken = -1;
  Status status =
      forEachLogitsChunk(hidden, weight, s, [&](int64_t first, int64_t count, const float *logits) {
        int64_t bad = -1;
        if (!addCrossEntropy(logits, labels + first, mask ? mask + first : nullptr, count, s.vocab,
                             total, weightSum, &bad)) {
          badToken = first + bad;
          return Status(StatusCode::kInvalidArgument, "bad label");
        }
        return Status::ok();
      });
  if (!status.isOk()) {
    return badToken;
  }
  loss = weightSum > 0 ? total / weightSum : 0.0; // no counted token: loss 0
  return -1;
}

void linearCrossEntropyGrad(const float *hidden, const float *weight, const int64_t *labels,
                            const float *mask, double dloss, float *hiddenGrad, float *weightGrad,
                            const LinearCrossEntropyShape &s) {
  double normalizer = crossEntropyWeight(mask, s.tokens);
  // The chunks fail only when the visitor does, and this one cannot (the labels were checked
  // by the forward that ran first).
  (void)linearCrossEntropyGradChunks(
      hidden, weight, s,
      [&](int64_t first, int64_t count, const float *logits, float *dlogits) {
        crossEntropyGradRows(logits, labels + first, mask ? mask + first : nullptr, dloss,
                             normalizer, dlogits, count, s.vocab);
        return Status::ok();
      },
      hiddenGrad, weightGrad);
}

} // namespace mlperf::rt::cpu
