//===- GPTBatches.h - Batches of GPT samples, epoch after epoch -*- C++ -*-===//
//
// The sample stream a run consumes: sample n of the run is sample n mod E of epoch n / E
// (E samples per epoch), and epoch e visits its samples in the order drawn from seed + e
// (shuffled) or in file order (sequential, as evaluation reads). A batch is rows of seq_len
// input tokens and their labels. The stream position is a pure function of the sample index,
// so a resumed run reads exactly what an uninterrupted one would.
//
// Two kinds of dataset (docs/runtime.md, "Datasets"):
//  - pretraining, PREFIX.bin/.idx alone: GPTSamples windows over the concatenated documents,
//    the labels are the next tokens;
//  - rows with labels, PREFIX.bin/.idx and PREFIX.labels.bin/.idx (mlperf-prepare-data from a
//    Parquet table such as GovReport's): document i of each is sample i, exactly seq_len
//    tokens and the labels at the same positions (-100: no loss there).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_DATA_GPTBATCHES_H
#define MLPERFC_RUNTIME_DATA_GPTBATCHES_H

#include "runtime/data/GPTSamples.h"

#include <memory>

namespace mlperf::rt {

/// The labels stream beside a dataset PREFIX: PREFIX.labels (its .bin and .idx).
std::string labelsPrefix(const std::string &prefix);

class GPTBatches {
public:
  /// Opens PREFIX.bin/.idx (and PREFIX.labels.bin/.idx when they exist); errors name the file
  /// and the problem.
  static Status open(const std::string &prefix, int64_t seqLen, SampleOrder order, uint64_t seed,
                     GPTBatches &batches);

  int64_t samplesPerEpoch() const;
  /// Whether the dataset has its own labels stream (rows with labels).
  bool hasLabels() const { return labels != nullptr; }

  /// Samples [first, first + rows) of the stream: `tokens` and `labels` become rows x seq_len.
  Status fill(int64_t first, int64_t rows, std::vector<int64_t> &tokens,
              std::vector<int64_t> &labels);

private:
  Status openRows();
  Status startEpoch(int64_t epoch);

  std::string prefix;
  std::unique_ptr<IndexedDataset> dataset; // GPTSamples points into it: never moved
  std::unique_ptr<IndexedDataset> labels;  // rows with labels; null for pretraining data
  GPTSamples samples;
  std::vector<int64_t> rowOrder; // rows with labels: this epoch's visiting order
  int64_t seqLen = 0, epoch = 0;
  SampleOrder order = SampleOrder::kShuffled;
  uint64_t seed = 0;
  std::vector<int64_t> window;
};

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_DATA_GPTBATCHES_H
