//===- GPTBatches.cpp - Batches of GPT samples, epoch after epoch -*- C++ -*-===//

#include "runtime/data/GPTBatches.h"

#include <algorithm>

namespace mlperf::rt {

Status GPTBatches::open(const std::string &prefix, int64_t seqLen, SampleOrder order, uint64_t seed,
                        GPTBatches &batches) {
  batches.prefix = prefix;
  batches.seqLen = seqLen;
  batches.order = order;
  batches.seed = seed;
  batches.epoch = 0;
  batches.dataset = std::make_unique<IndexedDataset>();
  Status status = IndexedDataset::open(prefix, *batches.dataset);
  if (!status.isOk()) {
    return status;
  }
  status = GPTSamples::create(*batches.dataset, seqLen, order, seed, batches.samples);
  if (!status.isOk()) {
    return Status(status.code(), prefix + ": " + status.message());
  }
  return Status::ok();
}

Status GPTBatches::fill(int64_t first, int64_t rows, std::vector<int64_t> &tokens,
                        std::vector<int64_t> &labels) {
  tokens.assign(rows * seqLen, 0);
  labels.assign(rows * seqLen, 0);
  int64_t perEpoch = samples.numSamples();
  for (int64_t row = 0; row < rows; ++row) {
    int64_t index = first + row;
    if (index / perEpoch != epoch) {
      epoch = index / perEpoch;
      Status status = GPTSamples::create(*dataset, seqLen, order, seed + epoch, samples);
      if (!status.isOk()) {
        return Status(status.code(), prefix + ": " + status.message());
      }
    }
    Status status = samples.get(index % perEpoch, window);
    if (!status.isOk()) {
      return Status(status.code(), prefix + ": " + status.message());
    }
    std::copy_n(window.begin(), seqLen, tokens.begin() + row * seqLen);
    std::copy_n(window.begin() + 1, seqLen, labels.begin() + row * seqLen);
  }
  return Status::ok();
}

} // namespace mlperf::rt
