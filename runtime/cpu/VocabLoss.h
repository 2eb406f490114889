//===- VocabLoss.h - Cross-entropy over a vocabulary split over ranks -*- C++ -*-===//
//
// Megatron-LM's vocab-parallel cross-entropy as local pieces (tg.vocab_max, tg.vocab_stats,
// tg.vocab_loss, tg.vocab_cross_entropy_grad and their linear_ forms, which
// dist-lower-vocab-loss places around two all-reduces): each rank holds `columns` of the
// vocabulary starting at `first`; the row maxima are combined by a maximum, the sums of
// exponentials and label logits (f64) by a sum over the ranks. The loss and gradient then
// equal the unsplit op's up to the summation order of the exponentials.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_VOCABLOSS_H
#define MLPERFC_RUNTIME_CPU_VOCABLOSS_H

#include <cstdint>

namespace mlperf::rt::cpu {

/// maxima[t] = the largest of row t's `columns` logits, for `tokens` rows.
void vocabRowMaxima(const float *logits, int64_t tokens, int64_t columns, float *maxima);

/// For each row: sums[t] = Σ_v exp(logits − maxima[t]) in f64 (column order), and
/// labelLogits[t] = the label's logit where this rank's columns [first, first + columns) hold
/// the label, else 0. Returns -1, or the first row whose label is outside [0, vocab).
int64_t vocabRowStats(const float *logits, const int64_t *labels, const float *maxima,
                      int64_t tokens, int64_t columns, int64_t first, int64_t vocab, double *sums,
                      double *labelLogits);

/// Σ_t m_t·(maxima[t] + log(sums[t]) − labelLogits[t]) / Σ_t m_t in f64, token by token (m:
/// `mask`, ones without one); 0 when no token counts.
double vocabLoss(const float *maxima, const double *sums, const double *labelLogits,
                 const float *mask, int64_t tokens);

/// This rank's columns of the loss gradient for `tokens` rows: dloss·m_t/weight ·
/// (exp(logit − maxima[t])/sums[t] − [first + v == label]), with `weight` = Σ m over every
/// token of the loss (not only these rows); zero when it is 0.
void vocabLossGradRows(const float *logits, const int64_t *labels, const float *mask,
                       const float *maxima, const double *sums, double dloss, double weight,
                       int64_t tokens, int64_t columns, int64_t first, float *dlogits);

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_VOCABLOSS_H
