//===- VocabLossTest.cpp - The vocabulary-split loss's pieces against the loss ---===//
//
// dist-lower-vocab-loss replaces a cross-entropy over a vocabulary split over G ranks by
// local pieces around a maximum and an f64 sum over the ranks. Here the ranks are slices of
// one tensor and the two reductions are loops: the pieces, run through the CPU dispatch every
// backend uses, must give the unsplit kernels' loss and gradients (up to the summation order
// of the exponentials), with ignore_index, for the plain and the fused (linear_) forms.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/OpKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace mlperf::rt;

namespace {

constexpr int64_t kTokens = 37, kVocab = 24, kRanks = 3, kColumns = kVocab / kRanks, kWidth = 16;
constexpr int64_t kIgnore = -100;

HostTensor randomFloats(std::vector<int64_t> shape, unsigned seed) {
  HostTensor tensor = HostTensor::zeros(DType::kF32, std::move(shape));
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float &value : tensor.values) {
    value = normal(random);
  }
  return tensor;
}

HostTensor labelsWithIgnored() {
  HostTensor labels = HostTensor::zeros(DType::kI64, {kTokens});
  std::mt19937 random(7);
  for (int64_t &label : labels.ints) {
    label = static_cast<int64_t>(random() % kVocab);
  }
  labels.ints[3] = labels.ints[20] = kIgnore;
  return labels;
}

std::vector<HostTensor> run(const std::string &op, const OpAttributes &attributes,
                            const std::vector<const HostTensor *> &operands,
                            std::vector<HostTensor> results) {
  Status status = runHostOp(op, attributes, operands, results);
  EXPECT_TRUE(status.isOk()) << op << ": " << status.message();
  return results;
}

/// Columns [first, first + count) of a [rows, width] tensor (rows of a [count, width] one
/// when `byRows`).
HostTensor slice(const HostTensor &whole, int64_t first, int64_t count, bool byRows) {
  int64_t rows = whole.shape[0], width = whole.shape[1];
  if (byRows) {
    HostTensor part = HostTensor::zeros(whole.dtype, {count, width});
    std::copy_n(whole.values.begin() + first * width, count * width, part.values.begin());
    return part;
  }
  HostTensor part = HostTensor::zeros(whole.dtype, {rows, count});
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(whole.values.begin() + r * width + first, count, part.values.begin() + r * count);
  }
  return part;
}

/// The loss and gradients of the pieces over kRanks slices (columns of the logits, or rows
/// of the weight with `linear`), the ranks' maxima and statistics combined in rank order.
struct SplitRun {
  float loss = 0;
  std::vector<HostTensor> gradients; // per rank: dlogits, or (hidden part, weight rows)
};
SplitRun runSplit(bool linear, const HostTensor &input, const HostTensor &weight,
                  const HostTensor &labels, const HostTensor &dloss) {
  // OpAttributes::set appends (the first of a name wins): a fresh set per rank.
  auto onRank = [](int64_t k) {
    OpAttributes attributes;
    attributes.set("ignore_index", kIgnore);
    attributes.set("logits_type", std::string("f32"));
    attributes.set("vocab_shard_axis", std::string("tp"));
    attributes.set("shard_index", k);
    attributes.set("shard_count", kRanks);
    return attributes;
  };
  std::vector<HostTensor> parts;
  for (int64_t k = 0; k < kRanks; ++k) {
    parts.push_back(linear ? slice(weight, k * kColumns, kColumns, true)
                           : slice(input, k * kColumns, kColumns, false));
  }
  auto logitsOf = [&](int64_t k) {
    return linear ? std::vector<const HostTensor *>{&input, &parts[k]}
                  : std::vector<const HostTensor *>{&parts[k]};
  };
  const std::string prefix = linear ? "linear_" : "";
  HostTensor maxima = HostTensor::zeros(DType::kF32, {kTokens});
  std::fill(maxima.values.begin(), maxima.values.end(), -INFINITY);
  for (int64_t k = 0; k < kRanks; ++k) {
    HostTensor local = run(prefix + "vocab_max", onRank(k), logitsOf(k),
                           {HostTensor::zeros(DType::kF32, {kTokens})})[0];
    for (int64_t t = 0; t < kTokens; ++t) {
      maxima.values[t] = std::max(maxima.values[t], local.values[t]);
    }
  }
  HostTensor stats = HostTensor::zeros(DType::kF64, {2, kTokens});
  for (int64_t k = 0; k < kRanks; ++k) {
    std::vector<const HostTensor *> operands = logitsOf(k);
    operands.insert(operands.end(), {&labels, &maxima});
    HostTensor local = run(prefix + "vocab_stats", onRank(k), operands,
                           {HostTensor::zeros(DType::kF64, {2, kTokens})})[0];
    for (int64_t i = 0; i < 2 * kTokens; ++i) {
      stats.wide[i] += local.wide[i];
    }
  }
  SplitRun out;
  out.loss = run("vocab_loss", onRank(0), {&maxima, &stats, &labels},
                 {HostTensor::zeros(DType::kF32, {})})[0]
                 .values[0];
  for (int64_t k = 0; k < kRanks; ++k) {
    std::vector<const HostTensor *> operands = logitsOf(k);
    operands.insert(operands.end(), {&labels, &dloss, &maxima, &stats});
    std::vector<HostTensor> results;
    for (const HostTensor *shaped : logitsOf(k)) {
      results.push_back(HostTensor::zeros(DType::kF32, shaped->shape));
    }
    for (HostTensor &gradient :
         run(prefix + "vocab_cross_entropy_grad", onRank(k), operands, std::move(results))) {
      out.gradients.push_back(std::move(gradient));
    }
  }
  return out;
}

OpAttributes ignoring() {
  OpAttributes attributes;
  attributes.set("ignore_index", kIgnore);
  attributes.set("logits_type", std::string("f32"));
  return attributes;
}

} // namespace

TEST(VocabLoss, PiecesOverSplitLogitsGiveTheLossAndItsGradient) {
  HostTensor logits = randomFloats({kTokens, kVocab}, 1), labels = labelsWithIgnored();
  HostTensor dloss = HostTensor::zeros(DType::kF32, {});
  dloss.values[0] = 0.5f;
  float loss =
      run("cross_entropy", ignoring(), {&logits, &labels}, {HostTensor::zeros(DType::kF32, {})})[0]
          .values[0];
  HostTensor dlogits = run("cross_entropy_grad", ignoring(), {&logits, &labels, &dloss},
                           {HostTensor::zeros(DType::kF32, logits.shape)})[0];
  SplitRun split = runSplit(false, logits, HostTensor(), labels, dloss);
  EXPECT_NEAR(split.loss, loss, 1e-6 * std::abs(loss));
  for (int64_t k = 0; k < kRanks; ++k) {
    HostTensor expected = slice(dlogits, k * kColumns, kColumns, false);
    for (size_t i = 0; i < expected.values.size(); ++i) {
      EXPECT_NEAR(split.gradients[k].values[i], expected.values[i], 1e-7) << k << ", " << i;
    }
  }
  // Ignored tokens contribute no gradient on any rank.
  for (int64_t v = 0; v < kColumns; ++v) {
    EXPECT_EQ(split.gradients[1].values[3 * kColumns + v], 0.0f);
  }
}

TEST(VocabLoss, LinearPiecesOverSplitWeightRowsGiveTheFusedLossAndGradients) {
  HostTensor hidden = randomFloats({kTokens, kWidth}, 2),
             weight = randomFloats({kVocab, kWidth}, 3);
  HostTensor labels = labelsWithIgnored();
  HostTensor dloss = HostTensor::zeros(DType::kF32, {});
  dloss.values[0] = 1.0f;
  float loss = run("linear_cross_entropy", ignoring(), {&hidden, &weight, &labels},
                   {HostTensor::zeros(DType::kF32, {})})[0]
                   .values[0];
  std::vector<HostTensor> grads = run(
      "linear_cross_entropy_grad", ignoring(), {&hidden, &weight, &labels, &dloss},
      {HostTensor::zeros(DType::kF32, hidden.shape), HostTensor::zeros(DType::kF32, weight.shape)});
  SplitRun split = runSplit(true, hidden, weight, labels, dloss);
  EXPECT_NEAR(split.loss, loss, 1e-6 * std::abs(loss));
  // The hidden states' gradient is the sum of the ranks' partial ones (the region's
  // all-reduce); the weight's is each rank's rows.
  for (int64_t i = 0; i < kTokens * kWidth; ++i) {
    double sum = 0;
    for (int64_t k = 0; k < kRanks; ++k) {
      sum += split.gradients[2 * k].values[i];
    }
    EXPECT_NEAR(sum, grads[0].values[i], 1e-5) << i;
  }
  for (int64_t k = 0; k < kRanks; ++k) {
    HostTensor expected = slice(grads[1], k * kColumns, kColumns, true);
    for (size_t i = 0; i < expected.values.size(); ++i) {
      EXPECT_NEAR(split.gradients[2 * k + 1].values[i], expected.values[i], 1e-5) << k << ", " << i;
    }
  }
}

TEST(VocabLoss, StatsReportALabelOutsideTheWholeVocabulary) {
  HostTensor logits = randomFloats({kTokens, kColumns}, 4), labels = labelsWithIgnored();
  labels.ints[5] = kVocab; // one past the last id of the whole vocabulary
  HostTensor maxima = HostTensor::zeros(DType::kF32, {kTokens});
  OpAttributes attributes = ignoring();
  attributes.set("shard_index", int64_t{0});
  attributes.set("shard_count", kRanks);
  std::vector<HostTensor> results{HostTensor::zeros(DType::kF64, {2, kTokens})};
  Status status = runHostOp("vocab_stats", attributes, {&logits, &labels, &maxima}, results);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("label 24 at position 5 is outside the vocabulary [0, 24)"),
            std::string::npos)
      << status.message();
  // Without its rank's place on the axis the kernel cannot know its columns.
  Status unplaced = runHostOp("vocab_stats", ignoring(), {&logits, &labels, &maxima}, results);
  EXPECT_FALSE(unplaced.isOk());
}
