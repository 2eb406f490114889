//===- GPTSamples.cpp - GPT training samples over a dataset ----*- C++ -*-===//

#include "runtime/data/GPTSamples.h"

#include "runtime/cpu/Numerics.h"

#include <algorithm>
#include <numeric>

namespace mlperf::rt {
namespace {

// Philox streams of the two shuffles, so they are independent.
constexpr uint32_t kDocumentStream = 0x646f6373; // "docs"
constexpr uint32_t kSampleStream = 0x736d706c;   // "smpl"

} // namespace

std::vector<int64_t> seededPermutation(int64_t n, uint64_t seed, uint32_t stream) {
  std::vector<int64_t> permutation(n);
  std::iota(permutation.begin(), permutation.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) {
    std::array<uint32_t, 4> bits =
        philox4x32({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), stream, 0},
                   {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
    uint64_t draw = (static_cast<uint64_t>(bits[0]) << 32) | bits[1];
    std::swap(permutation[i], permutation[draw % static_cast<uint64_t>(i + 1)]);
  }
  return permutation;
}

Status GPTSamples::create(const IndexedDataset &dataset, int64_t seqLen, SampleOrder order,
                          uint64_t seed, GPTSamples &samples) {
  if (seqLen < 1) {
    return Status(StatusCode::kInvalidArgument, "sequence length must be positive");
  }
  if (dataset.numTokens() - 1 < seqLen) {
    return Status(
        StatusCode::kInvalidArgument,
        "the dataset holds " + std::to_string(dataset.numTokens()) +
            " tokens, fewer than one sample of seq_len + 1 = " + std::to_string(seqLen + 1));
  }
  GPTSamples out;
  out.dataset = &dataset;
  out.seqLen = seqLen;
  if (order == SampleOrder::kShuffled) {
    out.documents = seededPermutation(dataset.numDocuments(), seed, kDocumentStream);
  } else {
    out.documents.resize(dataset.numDocuments());
    std::iota(out.documents.begin(), out.documents.end(), 0);
  }
  int64_t position = 0;
  for (int64_t document : out.documents) {
    out.documentStart.push_back(position);
    position += dataset.documentLength(document);
  }
  int64_t count = (dataset.numTokens() - 1) / seqLen;
  if (order == SampleOrder::kShuffled) {
    out.sampleOrder = seededPermutation(count, seed, kSampleStream);
  } else {
    out.sampleOrder.resize(count);
    std::iota(out.sampleOrder.begin(), out.sampleOrder.end(), 0);
  }
  samples = std::move(out);
  return Status::ok();
}

Status GPTSamples::get(int64_t k, std::vector<int64_t> &tokens) const {
  if (k < 0 || k >= numSamples()) {
    return Status(StatusCode::kInvalidArgument, "sample " + std::to_string(k) +
                                                    " is outside the epoch of " +
                                                    std::to_string(numSamples()));
  }
  tokens.clear();
  int64_t start = sampleOrder[k] * seqLen, remaining = seqLen + 1;
  // The document holding `start`, then as many following ones as the window needs.
  size_t position = std::upper_bound(documentStart.begin(), documentStart.end(), start) -
                    documentStart.begin() - 1;
  int64_t offset = start - documentStart[position];
  while (remaining > 0) {
    int64_t document = documents[position];
    int64_t take = std::min(remaining, dataset->documentLength(document) - offset);
    MLPERF_RETURN_IF_ERROR(dataset->readDocument(document, offset, take, tokens));
    remaining -= take;
    offset = 0;
    ++position;
  }
  return Status::ok();
}

} // namespace mlperf::rt
