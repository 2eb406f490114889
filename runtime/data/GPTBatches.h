//===- GPTBatches.h - Batches of GPT samples, epoch after epoch -*- C++ -*-===//
//
// The sample stream a run consumes: sample n of the run is sample n mod E of epoch n / E
// (E samples per epoch), and epoch e visits its samples in the order drawn from seed + e
// (shuffled) or in file order (sequential, as evaluation reads). A batch is rows of seq_len
// input tokens and their next-token labels. The stream position is a pure function of the
// sample index, so a resumed run reads exactly what an uninterrupted one would.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_DATA_GPTBATCHES_H
#define MLPERFC_RUNTIME_DATA_GPTBATCHES_H

#include "runtime/data/GPTSamples.h"

#include <memory>

namespace mlperf::rt {

class GPTBatches {
public:
  /// Opens PREFIX.bin/.idx; errors name the file and the problem.
  static Status open(const std::string &prefix, int64_t seqLen, SampleOrder order, uint64_t seed,
                     GPTBatches &batches);

  int64_t samplesPerEpoch() const { return samples.numSamples(); }

  /// Samples [first, first + rows) of the stream: `tokens` and `labels` become rows x seq_len.
  Status fill(int64_t first, int64_t rows, std::vector<int64_t> &tokens,
              std::vector<int64_t> &labels);

private:
  std::string prefix;
  std::unique_ptr<IndexedDataset> dataset; // GPTSamples points into it: never moved
  GPTSamples samples;
  int64_t seqLen = 0, epoch = 0;
  SampleOrder order = SampleOrder::kShuffled;
  uint64_t seed = 0;
  std::vector<int64_t> window;
};

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_DATA_GPTBATCHES_H
