//===- VocabParallel.cpp - Cross-entropy over a vocabulary split over ranks -*- C++ -*-===//

#include "runtime/cpu/VocabParallel.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/LinearCrossEntropy.h"
#include "runtime/cpu/Numerics.h"

#include <algorithm>
#include <cmath>

namespace mlperf::rt {
namespace {

/// Megatron-LM's vocab-parallel cross-entropy, for `tokens` rows of this rank's logits
/// slice [tokens, columns]: row maxima, sums of exponentials (f64) and label logits
/// combined over the axis, so the loss and the gradient of this rank's slice equal the
/// unsplit op's up to the summation order of the exponentials. Every token is independent:
/// a caller may visit them in chunks and gets the same values.
struct VocabSlices {
  std::vector<float> maxima;
  std::vector<double> sums, labelLogits;
};
Status combineVocabSlices(Communicator &communicator, MeshAxis axis, const float *logits,
                          const int64_t *labels, int64_t tokens, int64_t columns,
                          VocabSlices &slices) {
  int64_t first = communicator.coordinates().along(axis) * columns;
  int64_t vocab = columns * communicator.mesh().axisSize(axis);
  slices.maxima.assign(tokens, 0.0f);
  slices.sums.assign(tokens, 0.0);
  slices.labelLogits.assign(tokens, 0.0);
  for (int64_t t = 0; t < tokens; ++t) {
    if (labels[t] < 0 || labels[t] >= vocab) {
      return Status(StatusCode::kInvalidArgument,
                    "label " + std::to_string(labels[t]) + " at position " + std::to_string(t) +
                        " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
    const float *row = logits + t * columns;
    slices.maxima[t] = *std::max_element(row, row + columns);
  }
  MLPERF_RETURN_IF_ERROR(communicator.allReduceMax(axis, slices.maxima));
  for (int64_t t = 0; t < tokens; ++t) {
    const float *row = logits + t * columns;
    for (int64_t v = 0; v < columns; ++v) {
      slices.sums[t] += std::exp(static_cast<double>(row[v]) - slices.maxima[t]);
    }
    int64_t local = labels[t] - first;
    if (local >= 0 && local < columns) {
      slices.labelLogits[t] = row[local];
    }
  }
  MLPERF_RETURN_IF_ERROR(communicator.allReduceSum(axis, slices.sums));
  return communicator.allReduceSum(axis, slices.labelLogits);
}
/// Adds the weighted loss of each token to `total`, in token order.
void addSplitLoss(const VocabSlices &slices, const float *mask, int64_t tokens, double &total) {
  for (int64_t t = 0; t < tokens; ++t) {
    double w = mask ? static_cast<double>(mask[t]) : 1.0;
    total += w * (slices.maxima[t] + std::log(slices.sums[t]) - slices.labelLogits[t]);
  }
}
/// This rank's slice of the logits' gradient for `tokens` rows.
void splitLossGradRows(Communicator &communicator, MeshAxis axis, const VocabSlices &slices,
                       const float *logits, const int64_t *labels, const float *mask, double dloss,
                       double weight, int64_t tokens, int64_t columns, float *dlogits) {
  int64_t first = communicator.coordinates().along(axis) * columns;
  for (int64_t t = 0; t < tokens; ++t) {
    // No counted token (every label ignored): loss 0, gradient 0.
    double coefficient =
        weight > 0 ? dloss * (mask ? static_cast<double>(mask[t]) : 1.0) / weight : 0.0;
    const float *row = logits + t * columns;
    for (int64_t v = 0; v < columns; ++v) {
      double probability =
          std::exp(static_cast<double>(row[v]) - slices.maxima[t]) / slices.sums[t];
      dlogits[t * columns + v] =
          static_cast<float>(coefficient * (probability - (first + v == labels[t] ? 1.0 : 0.0)));
    }
  }
}
/// cross_entropy and cross_entropy_grad on this rank's slice of the vocabulary.
Status runSplitCrossEntropyImpl(Communicator &communicator, const std::string &op, MeshAxis axis,
                                const OpAttributes &attributes,
                                const std::vector<const HostTensor *> &operands,
                                HostTensor &result) {
  const HostTensor &logits = *operands[0], &labels = *operands[1];
  bool gradient = op == "cross_entropy_grad";
  const HostTensor *mask = operands.size() > (gradient ? 3u : 2u) ? operands.back() : nullptr;
  LossInputs loss;
  lossInputs(attributes, labels, mask ? mask->values.data() : nullptr, loss);
  const float *maskValues = loss.mask;
  int64_t tokens = labels.numElements(), columns = logits.shape.back();
  VocabSlices slices;
  MLPERF_RETURN_IF_ERROR(combineVocabSlices(communicator, axis, logits.values.data(), loss.labels,
                                            tokens, columns, slices));
  double weight = cpu::crossEntropyWeight(maskValues, tokens);
  if (!gradient) {
    double total = 0.0;
    addSplitLoss(slices, maskValues, tokens, total);
    result.values[0] = static_cast<float>(weight > 0 ? total / weight : 0.0);
    return Status::ok();
  }
  splitLossGradRows(communicator, axis, slices, logits.values.data(), loss.labels, maskValues,
                    operands[2]->values[0], weight, tokens, columns, result.values.data());
  return Status::ok();
}

/// linear_cross_entropy(_grad) with the weight's rows (the vocabulary) split over `axis`: the
/// logits of this rank's slice 256 tokens at a time (as runtime/cpu/LinearCrossEntropy.h),
/// each chunk's rows combined over the axis as above. Every rank visits the same chunks, so
/// the collectives pair up; the hidden states' gradient is this rank's partial sum, which
/// the region's all-reduce completes, as for the unfused matmul.
Status runSplitLinearCrossEntropyImpl(Communicator &communicator, const std::string &op,
                                      MeshAxis axis, const OpAttributes &attributes,
                                      const std::vector<const HostTensor *> &operands,
                                      std::vector<HostTensor> &results) {
  bool gradient = op == "linear_cross_entropy_grad";
  const HostTensor &hidden = *operands[0], &weight = *operands[1], &labels = *operands[2];
  size_t maskIndex = gradient ? 4 : 3;
  LossInputs loss;
  lossInputs(attributes, labels,
             operands.size() > maskIndex ? operands[maskIndex]->values.data() : nullptr, loss);
  const float *mask = loss.mask;
  const int64_t width = hidden.shape.back(), tokens = hidden.numElements() / width;
  const int64_t columns = weight.shape[0];
  DType logitsType = DType::kF32;
  const std::string *typeName = attributes.getString("logits_type");
  if (!typeName || !dtypeFromName(*typeName, logitsType)) {
    return Status(StatusCode::kInvalidArgument, "missing or unknown 'logits_type'");
  }
  cpu::LinearCrossEntropyShape shape{tokens, width, columns, logitsType};
  const int64_t *labelIds = loss.labels;
  double weightSum = cpu::crossEntropyWeight(mask, tokens);
  VocabSlices slices;
  if (!gradient) {
    double total = 0.0;
    MLPERF_RETURN_IF_ERROR(cpu::forEachLogitsChunk(
        hidden.values.data(), weight.values.data(), shape,
        [&](int64_t first, int64_t count, const float *logits) {
          MLPERF_RETURN_IF_ERROR(combineVocabSlices(communicator, axis, logits, labelIds + first,
                                                    count, columns, slices));
          addSplitLoss(slices, mask ? mask + first : nullptr, count, total);
          return Status::ok();
        }));
    results[0].values[0] = static_cast<float>(weightSum > 0 ? total / weightSum : 0.0);
    return Status::ok();
  }
  double dloss = operands[3]->values[0];
  MLPERF_RETURN_IF_ERROR(cpu::linearCrossEntropyGradChunks(
      hidden.values.data(), weight.values.data(), shape,
      [&](int64_t first, int64_t count, const float *logits, float *dlogits) {
        MLPERF_RETURN_IF_ERROR(combineVocabSlices(communicator, axis, logits, labelIds + first,
                                                  count, columns, slices));
        splitLossGradRows(communicator, axis, slices, logits, labelIds + first,
                          mask ? mask + first : nullptr, dloss, weightSum, count, columns, dlogits);
        return Status::ok();
      },
      results[0].values.data(), results[1].values.data()));
  for (HostTensor &result : results) {
    roundBuffer(result.dtype, result.values.data(), result.numElements());
  }
  return Status::ok();
}

} // namespace

bool isVocabParallelLoss(const std::string &op) {
  return op == "cross_entropy" || op == "cross_entropy_grad" || op == "linear_cross_entropy" ||
         op == "linear_cross_entropy_grad";
}

Status runVocabParallelLoss(Communicator &communicator, MeshAxis axis, const std::string &op,
                            const OpAttributes &attributes,
                            const std::vector<const HostTensor *> &operands,
                            std::vector<HostTensor> &results) {
  if (op == "cross_entropy" || op == "cross_entropy_grad") {
    MLPERF_RETURN_IF_ERROR(
        runSplitCrossEntropyImpl(communicator, op, axis, attributes, operands, results[0]));
    roundBuffer(results[0].dtype, results[0].values.data(), results[0].numElements());
    return Status::ok();
  }
  return runSplitLinearCrossEntropyImpl(communicator, op, axis, attributes, operands, results);
}

} // namespace mlperf::rt
