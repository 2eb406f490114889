//===- GPTBatches.cpp - Batches of GPT samples, epoch after epoch -*- C++ -*-===//

#include "runtime/data/GPTBatches.h"

#include "runtime/support/FileInput.h"

#include <algorithm>
#include <numeric>

namespace mlperf::rt {
namespace {

// The Philox stream of the row shuffle (independent of GPTSamples' streams).
constexpr uint32_t kRowStream = 0x726f7773; // "rows"

} // namespace

std::string labelsPrefix(const std::string &prefix) { return prefix + ".labels"; }

Status GPTBatches::open(const std::string &prefix, int64_t seqLen, SampleOrder order, uint64_t seed,
                        GPTBatches &batches) {
  batches.prefix = prefix;
  batches.seqLen = seqLen;
  batches.order = order;
  batches.seed = seed;
  batches.epoch = 0;
  batches.labels.reset();
  batches.dataset = std::make_unique<IndexedDataset>();
  MLPERF_RETURN_IF_ERROR(IndexedDataset::open(prefix, *batches.dataset));
  if (isRegularFile(labelsPrefix(prefix) + ".idx") ||
      isRegularFile(labelsPrefix(prefix) + ".bin")) {
    return batches.openRows();
  }
  Status status = GPTSamples::create(*batches.dataset, seqLen, order, seed, batches.samples);
  if (!status.isOk()) {
    return Status(status.code(), prefix + ": " + status.message());
  }
  return Status::ok();
}

Status GPTBatches::openRows() {
  labels = std::make_unique<IndexedDataset>();
  MLPERF_RETURN_IF_ERROR(IndexedDataset::open(labelsPrefix(prefix), *labels));
  auto dataLoss = [](const std::string &message) { return Status(StatusCode::kDataLoss, message); };
  if (labels->numDocuments() != dataset->numDocuments()) {
    return dataLoss(prefix + ": " + std::to_string(dataset->numDocuments()) +
                    " rows of tokens but " + std::to_string(labels->numDocuments()) +
                    " of labels in " + labelsPrefix(prefix));
  }
  if (dataset->numDocuments() == 0) {
    return Status(StatusCode::kInvalidArgument, prefix + ": the dataset has no rows");
  }
  for (int64_t row = 0; row < dataset->numDocuments(); ++row) {
    int64_t length = dataset->documentLength(row);
    if (length != seqLen || labels->documentLength(row) != length) {
      return Status(StatusCode::kInvalidArgument,
                    prefix + ": row " + std::to_string(row) + " has " + std::to_string(length) +
                        " tokens and " + std::to_string(labels->documentLength(row)) +
                        " labels; the plan's sequence length is " + std::to_string(seqLen) +
                        " (rows with labels are samples as they are: prepare them at that length)");
    }
  }
  return startEpoch(0);
}

int64_t GPTBatches::samplesPerEpoch() const {
  return labels ? dataset->numDocuments() : samples.numSamples();
}

Status GPTBatches::startEpoch(int64_t e) {
  epoch = e;
  if (labels) {
    if (order == SampleOrder::kShuffled) {
      rowOrder = seededPermutation(dataset->numDocuments(), seed + e, kRowStream);
    } else {
      rowOrder.resize(dataset->numDocuments());
      std::iota(rowOrder.begin(), rowOrder.end(), 0);
    }
    return Status::ok();
  }
  Status status = GPTSamples::create(*dataset, seqLen, order, seed + e, samples);
  return status.isOk() ? status : Status(status.code(), prefix + ": " + status.message());
}

Status GPTBatches::fill(int64_t first, int64_t rows, std::vector<int64_t> &tokens,
                        std::vector<int64_t> &labelsOut) {
  tokens.assign(rows * seqLen, 0);
  labelsOut.assign(rows * seqLen, 0);
  int64_t perEpoch = samplesPerEpoch();
  for (int64_t row = 0; row < rows; ++row) {
    int64_t index = first + row;
    if (index / perEpoch != epoch) {
      MLPERF_RETURN_IF_ERROR(startEpoch(index / perEpoch));
    }
    if (labels) {
      int64_t sample = rowOrder[index % perEpoch];
      window.clear();
      MLPERF_RETURN_IF_ERROR(dataset->readDocument(sample, 0, seqLen, window));
      std::copy_n(window.begin(), seqLen, tokens.begin() + row * seqLen);
      window.clear();
      MLPERF_RETURN_IF_ERROR(labels->readDocument(sample, 0, seqLen, window));
      std::copy_n(window.begin(), seqLen, labelsOut.begin() + row * seqLen);
      continue;
    }
    Status status = samples.get(index % perEpoch, window);
    if (!status.isOk()) {
      return Status(status.code(), prefix + ": " + status.message());
    }
    std::copy_n(window.begin(), seqLen, tokens.begin() + row * seqLen);
    std::copy_n(window.begin() + 1, seqLen, labelsOut.begin() + row * seqLen);
  }
  return Status::ok();
}

} // namespace mlperf::rt
