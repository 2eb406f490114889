//===- GPTSamples.h - GPT training samples over a dataset ------*- C++ -*-===//
//
// Megatron GPTDataset semantics, with documents as the shuffled unit (Megatron shuffles the
// index's sequences; for the MLPerf C4 `*_text_document` files, one sequence per document, the
// two are the same): the documents are concatenated (in a seeded random order for
// training, in file order for evaluation) and sample i is the window of seq_len + 1 tokens
// starting at token i · seq_len, so consecutive samples overlap by one token (the last input
// token's label is the next sample's first token). Training visits the samples in a seeded
// random order; each sample of the epoch appears exactly once (MLPerf's "same conceptual
// order"). Shuffles use Philox, so every rank and platform agrees on the order.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_DATA_GPTSAMPLES_H
#define MLPERFC_RUNTIME_DATA_GPTSAMPLES_H

#include "runtime/data/IndexedDataset.h"

namespace mlperf::rt {

enum class SampleOrder { kShuffled, kSequential };

/// Refers to its dataset, which must outlive it and not be moved.
class GPTSamples {
public:
  /// Fails (INVALID_ARGUMENT) when the dataset holds fewer than seq_len + 1 tokens.
  static Status create(const IndexedDataset &dataset, int64_t seqLen, SampleOrder order,
                       uint64_t seed, GPTSamples &samples);

  /// Samples in one epoch: (tokens − 1) / seq_len.
  int64_t numSamples() const { return static_cast<int64_t>(sampleOrder.size()); }

  /// Replaces `tokens` with the seq_len + 1 tokens of the k-th sample in visiting order.
  Status get(int64_t k, std::vector<int64_t> &tokens) const;

  /// The documents in concatenation order (for tests and logs).
  const std::vector<int64_t> &documentOrder() const { return documents; }

private:
  const IndexedDataset *dataset = nullptr;
  int64_t seqLen = 0;
  std::vector<int64_t> documents;     // concatenation order
  std::vector<int64_t> documentStart; // first token of each, in the concatenation
  std::vector<int64_t> sampleOrder;   // visiting order of sample indices
};

/// A random permutation of 0..n-1: Fisher-Yates on 64-bit Philox draws (key: seed; counter:
/// position and `stream`), so the modulo bias is below 2^-32.
std::vector<int64_t> seededPermutation(int64_t n, uint64_t seed, uint32_t stream);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_DATA_GPTSAMPLES_H
