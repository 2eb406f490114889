//===- OpKernels.cpp - One tg/plan op on host tensors ----------*- C++ -*-===//

#include "runtime/cpu/OpKernels.h"
#include "runtime/plan/PlanOps.h"

#include "runtime/cpu/ThreadPool.h"

#include "runtime/cpu/Attention.h"
#include "runtime/cpu/Fp8.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/LinearCrossEntropy.h"
#include "runtime/cpu/Moe.h"
#include "runtime/cpu/Numerics.h"
#include "runtime/cpu/Optimizer.h"
#include "runtime/cpu/VocabLoss.h"
#include "runtime/plan/ElementwiseProgram.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace mlperf::rt {

namespace {

/// A required attribute that is absent or of the wrong kind; turned into a Status below.
struct BadAttribute : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i) {
    result *= shape[i];
  }
  return result;
}

class Dispatch {
public:
  Dispatch(const OpAttributes &attributes, const std::vector<const HostTensor *> &operands,
           std::vector<HostTensor> &results)
      : attributes(attributes), operands(operands), results(results) {}

  Status run(std::string_view op);

private:
  // One kernel per op family (`op` tells the variants apart), found by run() in its registry.
  Status matmulKernel(std::string_view op);
  Status fp8QuantizeKernel(std::string_view op);
  Status amaxKernel(std::string_view op);
  Status fp8CurrentScaleKernel(std::string_view op);
  Status fp8ScaleUpdateKernel(std::string_view op);
  Status addKernel(std::string_view op);
  Status mulKernel(std::string_view op);
  Status scaleKernel(std::string_view op);
  Status siluKernel(std::string_view op);
  Status swigluKernel(std::string_view op);
  Status convertKernel(std::string_view op);
  Status addRmsNormKernel(std::string_view op);
  Status rmsNormKernel(std::string_view op);
  Status embeddingKernel(std::string_view op);
  Status ropeKernel(std::string_view op);
  Status causalMaskKernel(std::string_view op);
  Status softmaxKernel(std::string_view op);
  Status softmaxGradKernel(std::string_view op);
  Status attentionKernel(std::string_view op);
  Status repeatKernel(std::string_view op);
  Status repeatGradKernel(std::string_view op);
  Status transposeKernel(std::string_view op);
  Status crossEntropyKernel(std::string_view op);
  Status linearCrossEntropyKernel(std::string_view op);
  Status crossEntropyGradKernel(std::string_view op);
  Status vocabMaxKernel(std::string_view op);
  Status vocabStatsKernel(std::string_view op);
  Status vocabLossKernel(std::string_view op);
  Status vocabCrossEntropyGradKernel(std::string_view op);
  Status splitKernel(std::string_view op);
  Status concatKernel(std::string_view op);
  Status randomUniformKernel(std::string_view op);
  Status dropoutKernel(std::string_view op);
  Status dropoutKeyKernel(std::string_view op);
  Status evalDropoutKeyKernel(std::string_view op);
  Status randomNormalKernel(std::string_view op);
  Status localShardKernel(std::string_view op);
  Status fillKernel(std::string_view op);
  Status meanAccumulateKernel(std::string_view op);
  Status meanFinishKernel(std::string_view op);
  Status siluGradKernel(std::string_view op);
  Status embeddingGradKernel(std::string_view op);
  Status rmsNormGradKernel(std::string_view op);
  Status lrValueKernel(std::string_view op);
  Status globalNormKernel(std::string_view op);
  Status sqrtKernel(std::string_view op);
  Status clipCoefficientKernel(std::string_view op);
  Status elementwiseKernel(std::string_view op);
  Status moeRouteKernel(std::string_view op);
  Status moeSortKernel(std::string_view op);
  Status moePermuteKernel(std::string_view op);
  Status groupedMatmulKernel(std::string_view op);
  Status scaleRowsKernel(std::string_view op);
  Status tokenMaskKernel(std::string_view op);

  cpu::LinearCrossEntropyShape linearLogitsShape() const;
  const HostTensor &in(size_t i) const { return *operands[i]; }
  const float *f(size_t i) const { return operands[i]->data(); }
  HostTensor &out(size_t i = 0) { return results[i]; }

  int64_t integer(const char *name) const {
    if (const int64_t *value = attributes.getInt(name)) {
      return *value;
    }
    throw BadAttribute(std::string("missing integer attribute '") + name + "'");
  }
  bool flag(const char *name) const {
    const int64_t *value = attributes.getInt(name);
    return value && *value != 0; // unit attributes are present or absent
  }
  double real(const char *name) const {
    if (const double *value = attributes.getFloat(name)) {
      return *value;
    }
    throw BadAttribute(std::string("missing float attribute '") + name + "'");
  }
  const std::string &text(const char *name) const {
    if (const std::string *value = attributes.getString(name)) {
      return *value;
    }
    throw BadAttribute(std::string("missing string attribute '") + name + "'");
  }
  const std::vector<int64_t> &ints(const char *name) const {
    if (const std::vector<int64_t> *value = attributes.getInts(name)) {
      return *value;
    }
    throw BadAttribute(std::string("missing integer-list attribute '") + name + "'");
  }

  /// random_uniform and random_normal: each element `draw(seed, stream, index)` in f64 from its
  /// index in the full tensor (this rank may hold a part of it), rounded once to the element
  /// type, as the reference draws bf16 values. Each draw depends only on its index: chunks in
  /// parallel.
  template <typename Draw> void fillDrawn(Draw draw) {
    int64_t parts = attributes.getInt("parts") ? integer("parts") : 1;
    int64_t dim = attributes.getInt("part_dim") ? integer("part_dim") : 0;
    int64_t part = parts > 1 ? integer("part_index") : 0;
    const std::vector<int64_t> *blocks = attributes.getInts("part_blocks");
    uint64_t seed = static_cast<uint64_t>(in(0).ints[0]);
    auto stream = static_cast<uint32_t>(integer("stream"));
    HostTensor &result = out();
    const std::vector<int64_t> noBlocks;
    cpu::parallelChunks(result.numElements(), int64_t{1} << 13, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        auto index = static_cast<uint64_t>(
            fullIndexOfPart(result.shape, dim, parts, part, i, blocks ? *blocks : noBlocks));
        result.data()[i] = static_cast<float>(roundTo(result.dtype, draw(seed, stream, index)));
      }
    });
  }

  const OpAttributes &attributes;
  const std::vector<const HostTensor *> &operands;
  std::vector<HostTensor> &results;
};

Status invalidInput(const std::string &message) {
  return Status(StatusCode::kInvalidArgument, message);
}

Status Dispatch::matmulKernel(std::string_view op) {
  const HostTensor &a = in(0), &b = in(1);
  cpu::MatmulShape s = cpu::matmulShapeOf(a.shape, b.shape, out().shape, flag("transpose_lhs"),
                                          flag("transpose_rhs"));
  cpu::matmul(a.data(), b.data(), out().data(), s);
  if (op == "fp8_matmul") {
    // The scaled GEMM's epilogue: the f32 sum times both inverse scales, in f32.
    float factor = (1.0f / in(2).data()[0]) * (1.0f / in(3).data()[0]);
    float *data = out().data();
    for (int64_t i = 0, n = out().numElements(); i < n; ++i) {
      data[i] *= factor;
    }
  }
  return Status::ok();
}

Status Dispatch::fp8QuantizeKernel(std::string_view op) {
  float scale = in(1).data()[0];
  const float *x = f(0);
  float *y = out().data();
  DType type = out().dtype;
  cpu::parallelChunks(out().numElements(), int64_t{1} << 14, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      y[i] = quantizeFp8(type, x[i], scale);
    }
  });
  return Status::ok();
}

Status Dispatch::amaxKernel(std::string_view op) {
  float result = 0.0f;
  for (const HostTensor *operand : operands) {
    result = cpu::amax(operand->data(), operand->numElements(), result);
  }
  out().data()[0] = result;
  return Status::ok();
}

Status Dispatch::fp8CurrentScaleKernel(std::string_view op) {
  out().data()[0] = cpu::fp8CurrentScale(in(0).data()[0], real("fp8_max"));
  return Status::ok();
}

Status Dispatch::fp8ScaleUpdateKernel(std::string_view op) {
  cpu::AmaxAlgo algo;
  if (!cpu::parseAmaxAlgo(text("amax_compute_algo"), algo)) {
    return invalidInput("fp8_scale_update: amax_compute_algo must be \"most_recent\" or "
                        "\"max\", got \"" +
                        text("amax_compute_algo") + "\"");
  }
  cpu::fp8ScaleUpdate(f(0), in(0).numElements(), in(1).data()[0], in(2).data()[0], real("fp8_max"),
                      real("margin"), algo, out(0).data(), out(1).data()[0]);
  return Status::ok();
}

Status Dispatch::addKernel(std::string_view op) {
  cpu::add(f(0), f(1), out().data(), out().numElements());
  return Status::ok();
}

Status Dispatch::mulKernel(std::string_view op) {
  cpu::mul(f(0), f(1), out().data(), out().numElements());
  return Status::ok();
}

Status Dispatch::scaleKernel(std::string_view op) {
  cpu::scale(f(0), out().data(), out().numElements(), real("factor"));
  return Status::ok();
}

Status Dispatch::siluKernel(std::string_view op) {
  cpu::silu(f(0), out().data(), out().numElements());
  return Status::ok();
}

Status Dispatch::swigluKernel(std::string_view op) {
  // Chunk by chunk through the unfused graph's kernels with its roundings (tg.swiglu is
  // exactly mul(silu(gate), up) and its autodiff): a few KiB of workspace, not a tensor.
  // Chunks in parallel on the thread pool (each element's math is its own).
  constexpr int64_t kChunk = 4096;
  DType type = in(0).dtype;
  const int64_t count = out(0).numElements();
  const bool forward = op == "swiglu";
  cpu::parallelFor((count + kChunk - 1) / kChunk, [&](int64_t chunk) {
    float act[kChunk], scratch[kChunk];
    int64_t start = chunk * kChunk, n = std::min(kChunk, count - start);
    const float *gate = f(0) + start, *up = f(1) + start;
    if (forward) {
      cpu::silu(gate, act, n);
      roundBuffer(type, act, n);
      cpu::mul(act, up, out().data() + start, n);
      return;
    }
    double sigmoid[kChunk]; // one exp per element for silu and its gradient
    cpu::siluAndSigmoid(gate, act, sigmoid, n);
    roundBuffer(type, act, n);
    const float *grad = f(2) + start;
    cpu::mul(grad, act, out(1).data() + start, n); // up_grad = grad · a
    cpu::mul(grad, up, scratch, n);                // the gradient of a
    roundBuffer(type, scratch, n);
    cpu::siluGradFromSigmoid(gate, sigmoid, scratch, out(0).data() + start, n);
  });
  return Status::ok();
}

Status Dispatch::convertKernel(std::string_view op) {
  if (isFloat(out().dtype)) { // rounded to the result type below
    std::copy_n(in(0).data(), out().numElements(), out().data());
  } else {
    out().ints = in(0).ints;
  }
  return Status::ok();
}

Status Dispatch::addRmsNormKernel(std::string_view op) {
  // The pair's kernels, the sum rounded to its type before the norm reads it.
  int64_t dim = out(0).shape.back();
  cpu::add(f(0), f(1), out(0).data(), out(0).numElements());
  roundBuffer(out(0).dtype, out(0).data(), out(0).numElements());
  cpu::rmsNorm(out(0).data(), f(2), out(1).data(), out(0).numElements() / dim, dim,
               real("epsilon"));
  return Status::ok();
}

Status Dispatch::rmsNormKernel(std::string_view op) {
  int64_t dim = out().shape.back();
  cpu::rmsNorm(f(0), f(1), out().data(), out().numElements() / dim, dim, real("epsilon"));
  return Status::ok();
}

Status Dispatch::embeddingKernel(std::string_view op) {
  if (attributes.has("shard_index")) {
    // This rank's rows [k·rows, (k+1)·rows) of a vocabulary split `shard_count` ways; other
    // ids give zero rows (their owners fill them).
    const HostTensor &table = in(0), &ids = in(1);
    int64_t rows = table.shape[0], dim = table.shape[1];
    int64_t first = integer("shard_index") * rows, vocab = rows * integer("shard_count");
    for (int64_t t = 0; t < ids.numElements(); ++t) {
      int64_t id = ids.ints[t];
      if (id < 0 || id >= vocab) {
        return invalidInput("token id " + std::to_string(id) + " at position " + std::to_string(t) +
                            " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
      }
      if (id >= first && id < first + rows) {
        std::copy_n(table.data() + (id - first) * dim, dim, out().data() + t * dim);
      }
    }
    return Status::ok();
  }
  const HostTensor &table = in(0), &ids = in(1);
  int64_t bad = cpu::embedding(table.data(), ids.ints.data(), out().data(), ids.numElements(),
                               table.shape[0], table.shape[1]);
  if (bad >= 0) {
    return invalidInput("token id " + std::to_string(ids.ints[bad]) + " at position " +
                        std::to_string(bad) + " is outside the vocabulary [0, " +
                        std::to_string(table.shape[0]) + ")");
  }
  return Status::ok();
}

Status Dispatch::ropeKernel(std::string_view op) {
  // rope_qk: the same rotation of both operands, the angles computed once.
  const std::vector<int64_t> &s = out().shape;
  bool scaled = attributes.has("scaling_factor");
  std::vector<double> frequencies = cpu::ropeFrequencies(
      s[3], real("theta"), scaled, scaled ? real("scaling_factor") : 0.0,
      scaled ? real("low_freq_factor") : 0.0, scaled ? real("high_freq_factor") : 0.0,
      scaled ? integer("original_max_position") : 0);
  for (size_t i = 0; i < results.size(); ++i) {
    const std::vector<int64_t> &shape = out(i).shape;
    cpu::rope(f(i), out(i).data(), shape[0], shape[1], shape[2], shape[3], frequencies,
              flag("inverse"));
  }
  return Status::ok();
}

Status Dispatch::causalMaskKernel(std::string_view op) {
  int64_t n = out().shape.back();
  const int64_t *window = attributes.getInt("window");
  cpu::causalMask(f(0), out().data(), out().numElements() / (n * n), n, flag("gradient"),
                  window ? *window : -1);
  return Status::ok();
}

Status Dispatch::softmaxKernel(std::string_view op) {
  const std::vector<int64_t> &s = out().shape;
  size_t dim = integer("dim");
  int64_t bad =
      cpu::softmax(f(0), out().data(), product(s, 0, dim), s[dim], product(s, dim + 1, s.size()));
  if (bad >= 0) {
    return invalidInput("softmax row " + std::to_string(bad) +
                        " has no finite entry (every score masked or infinite/NaN inputs)");
  }
  return Status::ok();
}

Status Dispatch::softmaxGradKernel(std::string_view op) {
  const std::vector<int64_t> &s = out().shape;
  size_t dim = integer("dim");
  cpu::softmaxGrad(f(0), f(1), out().data(), product(s, 0, dim), s[dim],
                   product(s, dim + 1, s.size()));
  return Status::ok();
}

Status Dispatch::attentionKernel(std::string_view op) {
  const std::vector<int64_t> &q = in(0).shape, &k = in(1).shape;
  cpu::AttentionShape shape;
  shape.batch = q[0];
  shape.heads = q[1];
  shape.queries = q[2];
  shape.headDim = q[3];
  shape.kvHeads = k[1];
  shape.keys = k[2];
  shape.causal = flag("causal");
  if (const int64_t *window = attributes.getInt("window")) {
    shape.window = *window;
  }
  shape.scale = real("scale");
  shape.valueType = in(2).dtype;
  int64_t bad = op == "attention"
                    ? cpu::attentionForward(f(0), f(1), f(2), out(0).data(), out(1).data(), shape)
                    : cpu::attentionBackward(f(0), f(1), f(2), f(5), out(0).data(), out(1).data(),
                                             out(2).data(), shape, in(0).dtype);
  if (bad >= 0) {
    return invalidInput("attention row " + std::to_string(bad) +
                        " has no finite score (infinite or NaN inputs)");
  }
  return Status::ok();
}

Status Dispatch::repeatKernel(std::string_view op) {
  const std::vector<int64_t> &s = in(0).shape;
  size_t dim = integer("dim");
  cpu::repeat(f(0), out().data(), product(s, 0, dim), s[dim], product(s, dim + 1, s.size()),
              integer("times"));
  return Status::ok();
}

Status Dispatch::repeatGradKernel(std::string_view op) {
  const std::vector<int64_t> &s = out().shape;
  size_t dim = integer("dim");
  cpu::repeatGrad(f(0), out().data(), product(s, 0, dim), s[dim], product(s, dim + 1, s.size()),
                  integer("times"));
  return Status::ok();
}

Status Dispatch::transposeKernel(std::string_view op) {
  cpu::transpose(f(0), out().data(), in(0).shape, ints("permutation"));
  return Status::ok();
}

Status Dispatch::crossEntropyKernel(std::string_view op) {
  const HostTensor &logits = in(0), &labels = in(1);
  LossInputs loss_;
  lossInputs(attributes, labels, operands.size() > 2 ? f(2) : nullptr, loss_);
  int64_t vocab = logits.shape.back(), bad = -1;
  double loss =
      cpu::crossEntropy(logits.data(), loss_.labels, loss_.mask, labels.numElements(), vocab, &bad);
  if (bad >= 0) {
    return invalidInput("label " + std::to_string(labels.ints[bad]) + " at position " +
                        std::to_string(bad) + " is outside the vocabulary [0, " +
                        std::to_string(vocab) + ")");
  }
  out().data()[0] = static_cast<float>(loss);
  return Status::ok();
}

Status Dispatch::linearCrossEntropyKernel(std::string_view op) {
  // (hidden, weight, labels[, dloss][, mask]): the logits exist one chunk at a time.
  bool gradient = op == "linear_cross_entropy_grad";
  const HostTensor &hidden = in(0), &weight = in(1), &labels = in(2);
  size_t maskIndex = gradient ? 4 : 3;
  LossInputs loss_;
  lossInputs(attributes, labels, operands.size() > maskIndex ? f(maskIndex) : nullptr, loss_);
  const float *mask = loss_.mask;
  cpu::LinearCrossEntropyShape shape;
  shape.hidden = hidden.shape.back();
  shape.tokens = hidden.numElements() / shape.hidden;
  shape.vocab = weight.shape[0];
  if (!dtypeFromName(text("logits_type"), shape.logitsType)) {
    return invalidInput("linear_cross_entropy: unknown logits_type '" + text("logits_type") + "'");
  }
  if (gradient) {
    cpu::linearCrossEntropyGrad(hidden.data(), weight.data(), loss_.labels, mask, in(3).data()[0],
                                out(0).data(), out(1).data(), shape);
  } else {
    double loss = 0.0;
    int64_t bad =
        cpu::linearCrossEntropy(hidden.data(), weight.data(), loss_.labels, mask, shape, loss);
    if (bad >= 0) {
      return invalidInput("label " + std::to_string(labels.ints[bad]) + " at position " +
                          std::to_string(bad) + " is outside the vocabulary [0, " +
                          std::to_string(shape.vocab) + ")");
    }
    out().data()[0] = static_cast<float>(loss);
  }
  return Status::ok();
}

Status Dispatch::crossEntropyGradKernel(std::string_view op) {
  const HostTensor &logits = in(0), &labels = in(1);
  LossInputs loss_;
  lossInputs(attributes, labels, operands.size() > 3 ? f(3) : nullptr, loss_);
  cpu::crossEntropyGrad(logits.data(), loss_.labels, loss_.mask, in(2).data()[0], out().data(),
                        labels.numElements(), logits.shape.back());
  return Status::ok();
}

// The vocabulary-split loss's pieces (runtime/cpu/VocabLoss.h): a linear_ form takes
// (hidden, weight) where the plain one takes logits, and visits the logits 256 tokens at a
// time. Ops on this rank's columns learn them from shard_index / shard_count.

/// The logits' shape for a linear_ form's (hidden, weight) operands.
cpu::LinearCrossEntropyShape Dispatch::linearLogitsShape() const {
  cpu::LinearCrossEntropyShape shape;
  shape.hidden = in(0).shape.back();
  shape.tokens = in(0).numElements() / shape.hidden;
  shape.vocab = in(1).shape[0];
  if (!dtypeFromName(text("logits_type"), shape.logitsType)) {
    throw BadAttribute("unknown logits_type '" + text("logits_type") + "'");
  }
  return shape;
}

Status Dispatch::vocabMaxKernel(std::string_view op) {
  float *maxima = out().data();
  if (op == "vocab_max") {
    int64_t columns = in(0).shape.back();
    cpu::vocabRowMaxima(f(0), in(0).numElements() / columns, columns, maxima);
    return Status::ok();
  }
  cpu::LinearCrossEntropyShape shape = linearLogitsShape();
  return cpu::forEachLogitsChunk(f(0), f(1), shape,
                                 [&](int64_t first, int64_t count, const float *logits) {
                                   cpu::vocabRowMaxima(logits, count, shape.vocab, maxima + first);
                                   return Status::ok();
                                 });
}

Status Dispatch::vocabStatsKernel(std::string_view op) {
  const bool linear = op == "linear_vocab_stats";
  const HostTensor &labels = in(linear ? 2 : 1);
  const float *maxima = f(linear ? 3 : 2);
  LossInputs loss_;
  lossInputs(attributes, labels, nullptr, loss_);
  const int64_t tokens = labels.numElements();
  const int64_t columns = linear ? in(1).shape[0] : in(0).shape.back();
  const int64_t first = integer("shard_index") * columns;
  const int64_t vocab = integer("shard_count") * columns;
  double *sums = out().wide.data(), *labelLogits = sums + tokens;
  auto rows = [&](const float *logits, int64_t begin, int64_t count) -> Status {
    int64_t bad = cpu::vocabRowStats(logits, loss_.labels + begin, maxima + begin, count, columns,
                                     first, vocab, sums + begin, labelLogits + begin);
    if (bad < 0) {
      return Status::ok();
    }
    return invalidInput("label " + std::to_string(loss_.labels[begin + bad]) + " at position " +
                        std::to_string(begin + bad) + " is outside the vocabulary [0, " +
                        std::to_string(vocab) + ")");
  };
  if (!linear) {
    return rows(f(0), 0, tokens);
  }
  return cpu::forEachLogitsChunk(f(0), f(1), linearLogitsShape(),
                                 [&](int64_t begin, int64_t count, const float *logits) {
                                   return rows(logits, begin, count);
                                 });
}

Status Dispatch::vocabLossKernel(std::string_view op) {
  const HostTensor &labels = in(2);
  LossInputs loss_;
  lossInputs(attributes, labels, operands.size() > 3 ? f(3) : nullptr, loss_);
  const int64_t tokens = labels.numElements();
  const double *sums = in(1).wide.data();
  out().data()[0] =
      static_cast<float>(cpu::vocabLoss(f(0), sums, sums + tokens, loss_.mask, tokens));
  return Status::ok();
}

Status Dispatch::vocabCrossEntropyGradKernel(std::string_view op) {
  // (logits | hidden, weight), labels, dloss, maxima, statistics[, mask].
  const size_t at = op == "linear_vocab_cross_entropy_grad" ? 1 : 0;
  const HostTensor &labels = in(at + 1);
  LossInputs loss_;
  lossInputs(attributes, labels, operands.size() > at + 5 ? f(at + 5) : nullptr, loss_);
  const int64_t tokens = labels.numElements();
  const double dloss = f(at + 2)[0];
  const float *maxima = f(at + 3);
  const double *sums = in(at + 4).wide.data();
  const double weight = cpu::crossEntropyWeight(loss_.mask, tokens);
  const int64_t columns = at ? in(1).shape[0] : in(0).shape.back();
  const int64_t first = integer("shard_index") * columns;
  auto rows = [&](int64_t begin, int64_t count, const float *logits, float *dlogits) {
    cpu::vocabLossGradRows(logits, loss_.labels + begin, loss_.mask ? loss_.mask + begin : nullptr,
                           maxima + begin, sums + begin, dloss, weight, count, columns, first,
                           dlogits);
    return Status::ok();
  };
  if (!at) {
    return rows(0, tokens, f(0), out().data());
  }
  return cpu::linearCrossEntropyGradChunks(f(0), f(1), linearLogitsShape(), rows, out(0).data(),
                                           out(1).data());
}

Status Dispatch::splitKernel(std::string_view op) {
  const std::vector<int64_t> &s = in(0).shape;
  size_t dim = integer("dim");
  int64_t outer = product(s, 0, dim), inner = product(s, dim + 1, s.size()), offset = 0;
  for (HostTensor &piece : results) {
    int64_t size = piece.shape[dim];
    if (isFloat(in(0).dtype)) {
      cpu::copySlice(f(0), piece.data(), outer, inner, s[dim], size, offset, 0, size);
    } else { // token ids: the train step's micro-batches
      for (int64_t o = 0; o < outer; ++o) {
        std::copy_n(in(0).ints.begin() + (o * s[dim] + offset) * inner, size * inner,
                    piece.ints.begin() + o * size * inner);
      }
    }
    offset += size;
  }
  return Status::ok();
}

Status Dispatch::concatKernel(std::string_view op) {
  const std::vector<int64_t> &s = out().shape;
  size_t dim = integer("dim");
  int64_t outer = product(s, 0, dim), inner = product(s, dim + 1, s.size()), offset = 0;
  for (const HostTensor *piece : operands) {
    cpu::copySlice(piece->data(), out().data(), outer, inner, piece->shape[dim], s[dim], 0, offset,
                   piece->shape[dim]);
    offset += piece->shape[dim];
  }
  return Status::ok();
}

Status Dispatch::randomUniformKernel(std::string_view op) {
  double bound = real("bound"); // bound · (2u − 1)
  fillDrawn([&](uint64_t seed, uint32_t stream, uint64_t index) {
    return bound * (2.0 * philoxUniform(seed, stream, index) - 1.0);
  });
  return Status::ok();
}

Status Dispatch::dropoutKernel(std::string_view op) {
  // Inverted dropout: kept elements scaled by 1/(1 − rate) in f32, rounded to the type; the
  // identity under an evaluation key (a negative counter).
  if (operands.size() < 2) {
    return invalidInput("dropout without its key [seed, micro-batch counter]: the training "
                        "step (tg-train-step) gives each micro-batch's dropouts their key");
  }
  const HostTensor &input = in(0);
  int64_t counter = in(1).ints[1];
  HostTensor &result = out();
  if (counter < 0) {
    std::copy_n(input.data(), input.numElements(), result.data());
    return Status::ok();
  }
  if (counter > static_cast<int64_t>(UINT32_MAX)) {
    return invalidInput("dropout micro-batch counter " + std::to_string(counter) +
                        " exceeds 2^32 - 1");
  }
  int64_t parts = attributes.getInt("parts") ? integer("parts") : 1;
  int64_t dim = attributes.getInt("part_dim") ? integer("part_dim") : 0;
  int64_t part = parts > 1 ? integer("part_index") : 0;
  uint64_t seed = static_cast<uint64_t>(in(1).ints[0]);
  uint32_t stream = parameterStreamId(text("name"));
  double rate = real("rate");
  uint64_t threshold = dropoutThreshold(rate);
  float scale = static_cast<float>(1.0 / (1.0 - rate));
  const std::vector<int64_t> noBlocks;
  cpu::parallelChunks(result.numElements(), int64_t{1} << 13, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      auto full =
          static_cast<uint64_t>(fullIndexOfPart(result.shape, dim, parts, part, i, noBlocks));
      bool keep = dropoutKeeps(seed, static_cast<uint32_t>(counter), stream, full, threshold);
      result.data()[i] =
          keep ? static_cast<float>(roundTo(result.dtype, input.data()[i] * scale)) : 0.0f;
    }
  });
  return Status::ok();
}

Status Dispatch::dropoutKeyKernel(std::string_view op) {
  // [seed, step · micro_batches · dp + micro_batch · dp + dp rank]
  int64_t dp = integer("data_parallel");
  int64_t rank = dp > 1 ? integer("part_index") : 0;
  int64_t step = in(1).ints[0];
  if (step < 0) {
    return invalidInput("dropout_key of a negative step " + std::to_string(step));
  }
  out().ints[0] = in(0).ints[0];
  out().ints[1] = (step * integer("micro_batches") + integer("micro_batch")) * dp + rank;
  return Status::ok();
}

Status Dispatch::evalDropoutKeyKernel(std::string_view op) {
  out().ints[0] = 0;
  out().ints[1] = -1;
  return Status::ok();
}

Status Dispatch::randomNormalKernel(std::string_view op) {
  double stddev = real("std");
  fillDrawn([&](uint64_t seed, uint32_t stream, uint64_t index) {
    return stddev * philoxNormal(seed, stream, index);
  });
  return Status::ok();
}

Status Dispatch::localShardKernel(std::string_view op) {
  // This rank's 1/parts of a 1-D tensor.
  int64_t size = out().numElements();
  std::copy_n(in(0).data() + integer("part_index") * size, size, out().data());
  return Status::ok();
}

Status Dispatch::fillKernel(std::string_view op) {
  std::fill_n(out().data(), out().numElements(), static_cast<float>(real("value")));
  return Status::ok();
}

Status Dispatch::meanAccumulateKernel(std::string_view op) {
  // [sum, count] + [value, 1] in f64 (the f32 value widens exactly), or + [value · w, w] with
  // w the sum of the weights (the micro-batch's counted tokens).
  const std::vector<double> &running = in(0).wide;
  double weight = 1.0;
  if (operands.size() == 3) {
    weight = 0.0;
    const float *weights = f(2);
    for (int64_t i = 0, n = in(2).numElements(); i < n; ++i) {
      weight += weights[i];
    }
  }
  out().wide = {running[0] + static_cast<double>(f(1)[0]) * weight, running[1] + weight};
  return Status::ok();
}

Status Dispatch::meanFinishKernel(std::string_view op) {
  const std::vector<double> &running = in(0).wide;
  out(0).wide = {running[0] / running[1]};
  out(1).wide = {0.0, 0.0};
  return Status::ok();
}

Status Dispatch::siluGradKernel(std::string_view op) {
  cpu::siluGrad(f(0), f(1), out().data(), out().numElements());
  return Status::ok();
}

Status Dispatch::embeddingGradKernel(std::string_view op) {
  if (attributes.has("shard_index")) {
    const HostTensor &ids = in(0);
    int64_t rows = out().shape[0], dim = out().shape[1];
    int64_t first = integer("shard_index") * rows;
    std::vector<double> sums(rows * dim, 0.0); // accumulated in f64 as embeddingGrad does
    for (int64_t t = 0; t < ids.numElements(); ++t) {
      int64_t row = ids.ints[t] - first;
      if (row >= 0 && row < rows) {
        for (int64_t d = 0; d < dim; ++d) {
          sums[row * dim + d] += f(1)[t * dim + d];
        }
      }
    }
    std::copy(sums.begin(), sums.end(), out().data());
    return Status::ok();
  }
  const HostTensor &ids = in(0);
  int64_t bad = cpu::embeddingGrad(ids.ints.data(), f(1), out().data(), ids.numElements(),
                                   out().shape[0], out().shape[1]);
  if (bad >= 0) {
    return invalidInput("token id " + std::to_string(ids.ints[bad]) + " at position " +
                        std::to_string(bad) + " is outside the vocabulary [0, " +
                        std::to_string(out().shape[0]) + ")");
  }
  return Status::ok();
}

Status Dispatch::rmsNormGradKernel(std::string_view op) {
  int64_t dim = out(0).shape.back();
  cpu::rmsNormGrad(f(0), f(1), f(2), out(0).data(), out(1).data(), out(0).numElements() / dim, dim,
                   real("epsilon"));
  return Status::ok();
}

Status Dispatch::lrValueKernel(std::string_view op) {
  cpu::LRSchedule schedule{real("base_lr"), real("end_lr"), integer("warmup_steps"),
                           integer("max_steps")};
  out().data()[0] = static_cast<float>(cpu::learningRate(schedule, in(0).ints[0]));
  return Status::ok();
}

Status Dispatch::globalNormKernel(std::string_view op) {
  // Each tensor's sum of squares in parallel, added in operand order.
  std::vector<double> sums(operands.size());
  cpu::parallelFor(static_cast<int64_t>(operands.size()), [&](int64_t i) {
    sums[i] = cpu::sumOfSquares(operands[i]->data(), operands[i]->numElements());
  });
  double sum = 0.0;
  for (double tensorSum : sums) {
    sum += tensorSum;
  }
  out().data()[0] = static_cast<float>(op == "global_norm" ? std::sqrt(sum) : sum);
  return Status::ok();
}

Status Dispatch::sqrtKernel(std::string_view op) {
  out().data()[0] = static_cast<float>(std::sqrt(static_cast<double>(in(0).data()[0])));
  return Status::ok();
}

Status Dispatch::clipCoefficientKernel(std::string_view op) {
  out().data()[0] = static_cast<float>(cpu::clipCoefficient(in(0).data()[0], real("max_norm")));
  return Status::ok();
}

Status Dispatch::elementwiseKernel(std::string_view op) {
  ElementwiseProgram program;
  const std::string *arithmetic = attributes.getString("arithmetic");
  std::string error = compileElementwiseProgram(text("program"), static_cast<int>(operands.size()),
                                                static_cast<int>(results.size()),
                                                arithmetic ? *arithmetic : "f32", program);
  if (!error.empty()) {
    return invalidInput("elementwise program " + error);
  }
  // One-element operands broadcast: their stride is 0.
  const int64_t count = out(0).numElements();
  int64_t strides[ElementwiseProgram::kMaxOperands];
  for (size_t n = 0; n < operands.size(); ++n) {
    if (in(n).numElements() != 1 && in(n).numElements() != count) {
      return invalidInput("elementwise operand " + std::to_string(n) + " has " +
                          std::to_string(in(n).numElements()) + " elements, not 1 or " +
                          std::to_string(count));
    }
    if (!isFloat(in(n).dtype) && !program.f64) {
      return invalidInput("elementwise operand " + std::to_string(n) +
                          " holds integers: only f64 arithmetic reads them");
    }
    strides[n] = in(n).numElements() == 1 ? 0 : 1;
  }
  for (const HostTensor &result : results) {
    if (result.numElements() != count) {
      return invalidInput("elementwise results differ in size");
    }
  }
  // Blocks of elements in T (evaluateElementwiseBlock); f32 operands are read in place,
  // bf16 ones are f32 here too, integer operands (f64 only) are converted per block.
  auto run = [&](auto zero) {
    using T = decltype(zero);
    cpu::parallelChunks(count, int64_t{1} << 13, [&](int64_t begin, int64_t end) {
      constexpr int64_t B = kElementwiseBlock;
      // Staging only for f64 arithmetic; f32 reads operands and writes results in place.
      const size_t staging = std::is_same_v<T, float> ? 0 : B;
      std::vector<T> staged(operands.size() * staging), computed(results.size() * staging);
      const T *sources[ElementwiseProgram::kMaxOperands];
      T *targets[ElementwiseProgram::kMaxResults];
      bool broadcast[ElementwiseProgram::kMaxOperands];
      for (int64_t first = begin; first < end; first += B) {
        const int64_t n = std::min(B, end - first);
        for (size_t o = 0; o < operands.size(); ++o) {
          const HostTensor &operand = in(o);
          broadcast[o] = strides[o] == 0;
          const int64_t at = broadcast[o] ? 0 : first, take = broadcast[o] ? 1 : n;
          if constexpr (std::is_same_v<T, float>) {
            sources[o] = operand.data() + at; // f32 arithmetic reads floats only
          } else {
            T *stage = staged.data() + o * B;
            for (int64_t i = 0; i < take; ++i) {
              stage[i] = isFloat(operand.dtype) ? static_cast<T>(operand.data()[at + i])
                                                : static_cast<T>(operand.ints[at + i]);
            }
            sources[o] = stage;
          }
        }
        for (size_t k = 0; k < results.size(); ++k) {
          targets[k] = std::is_same_v<T, float> ? reinterpret_cast<T *>(results[k].data() + first)
                                                : computed.data() + k * B;
        }
        evaluateElementwiseBlock(program, sources, broadcast, n, targets);
        if constexpr (!std::is_same_v<T, float>) {
          for (size_t k = 0; k < results.size(); ++k) {
            for (int64_t i = 0; i < n; ++i) {
              results[k].data()[first + i] = static_cast<float>(targets[k][i]);
            }
          }
        }
      }
    });
  };
  if (program.f64) {
    run(0.0);
  } else {
    run(0.0f);
  }
  return Status::ok();
}

Status Dispatch::moeRouteKernel(std::string_view op) {
  if (op == "moe_route") {
    const HostTensor &logits = in(0);
    cpu::moeRoute(logits.data(), logits.shape[0], logits.shape[1], integer("top_k"), out(0).data(),
                  out(1).ints.data());
  } else {
    const HostTensor &probs = in(0);
    cpu::moeRouteGrad(probs.data(), in(1).ints.data(), f(2), probs.shape[0], probs.shape[1],
                      out().shape[1], out().data());
  }
  return Status::ok();
}

Status Dispatch::moeSortKernel(std::string_view op) {
  std::string problem = cpu::moeSort(in(0).ints.data(), in(0).numElements(), out(1).shape[0],
                                     out(0).ints.data(), out(1).ints.data());
  return problem.empty() ? Status::ok() : invalidInput("moe_sort: " + problem);
}

Status Dispatch::moePermuteKernel(std::string_view op) {
  const int64_t *order = in(1).ints.data();
  int64_t rows = in(1).numElements(), dim = out().shape[1];
  std::string problem =
      op == "moe_permute" ? cpu::moePermute(f(0), order, rows, in(0).shape[0], dim, out().data())
                          : cpu::moeUnpermute(f(0), order, rows, out().shape[0], dim, out().data());
  return problem.empty() ? Status::ok() : invalidInput(std::string(op) + ": " + problem);
}

Status Dispatch::groupedMatmulKernel(std::string_view op) {
  // The forward [N, K] x weights -> [N, M]; the weight gradient [N, K], [N, M] -> weights.
  const bool forward = op == "grouped_matmul";
  const HostTensor &weights = forward ? in(1) : out();
  cpu::GroupedMatmulShape shape;
  shape.rows = in(0).shape[0];
  shape.k = in(0).shape[1];
  shape.m = forward ? out().shape[1] : in(1).shape[1];
  shape.experts = weights.shape[0];
  shape.weightsTransposed = flag("transpose_rhs");
  const int64_t *sizes = in(2).ints.data();
  std::string problem = cpu::checkGroupSizes(sizes, shape);
  if (!problem.empty()) {
    return invalidInput(std::string(op) + ": " + problem);
  }
  if (forward) {
    cpu::groupedMatmul(f(0), f(1), sizes, shape, out().data());
  } else {
    cpu::groupedMatmulWeightGrad(f(0), f(1), sizes, shape, out().data());
  }
  return Status::ok();
}

Status Dispatch::scaleRowsKernel(std::string_view op) {
  int64_t dim = in(0).shape.empty() ? 1 : in(0).shape.back();
  int64_t rows = dim == 0 ? 0 : in(0).numElements() / dim;
  if (op == "scale_rows") {
    cpu::scaleRows(f(0), f(1), rows, dim, out().data());
  } else {
    cpu::rowDot(f(0), f(1), rows, dim, out().data());
  }
  return Status::ok();
}

Status Dispatch::tokenMaskKernel(std::string_view op) {
  const int64_t masked = integer("masked_token");
  const std::vector<int64_t> &tokens = in(0).ints;
  float *mask = out().data();
  for (size_t i = 0; i < tokens.size(); ++i) {
    mask[i] = tokens[i] == masked ? 0.0f : 1.0f;
  }
  return Status::ok();
}

Status Dispatch::run(std::string_view op) {
  using Kernel = Status (Dispatch::*)(std::string_view);
  // The registry: each op the CPU backend executes and its kernel.
  static const std::unordered_map<std::string_view, Kernel> kKernels = {
      {"matmul", &Dispatch::matmulKernel},
      {"fp8_matmul", &Dispatch::matmulKernel},
      {"fp8_quantize", &Dispatch::fp8QuantizeKernel},
      {"amax", &Dispatch::amaxKernel},
      {"fp8_current_scale", &Dispatch::fp8CurrentScaleKernel},
      {"fp8_scale_update", &Dispatch::fp8ScaleUpdateKernel},
      {"add", &Dispatch::addKernel},
      {"mul", &Dispatch::mulKernel},
      {"scale", &Dispatch::scaleKernel},
      {"silu", &Dispatch::siluKernel},
      {"swiglu", &Dispatch::swigluKernel},
      {"swiglu_grad", &Dispatch::swigluKernel},
      {"convert", &Dispatch::convertKernel},
      {"reshape", &Dispatch::convertKernel},
      {"copy", &Dispatch::convertKernel},
      {"add_rms_norm", &Dispatch::addRmsNormKernel},
      {"rms_norm", &Dispatch::rmsNormKernel},
      {"embedding", &Dispatch::embeddingKernel},
      {"rope", &Dispatch::ropeKernel},
      {"rope_qk", &Dispatch::ropeKernel},
      {"causal_mask", &Dispatch::causalMaskKernel},
      {"softmax", &Dispatch::softmaxKernel},
      {"softmax_grad", &Dispatch::softmaxGradKernel},
      {"attention", &Dispatch::attentionKernel},
      {"attention_grad", &Dispatch::attentionKernel},
      {"repeat", &Dispatch::repeatKernel},
      {"repeat_grad", &Dispatch::repeatGradKernel},
      {"transpose", &Dispatch::transposeKernel},
      {"cross_entropy", &Dispatch::crossEntropyKernel},
      {"linear_cross_entropy", &Dispatch::linearCrossEntropyKernel},
      {"linear_cross_entropy_grad", &Dispatch::linearCrossEntropyKernel},
      {"cross_entropy_grad", &Dispatch::crossEntropyGradKernel},
      {"vocab_max", &Dispatch::vocabMaxKernel},
      {"linear_vocab_max", &Dispatch::vocabMaxKernel},
      {"vocab_stats", &Dispatch::vocabStatsKernel},
      {"linear_vocab_stats", &Dispatch::vocabStatsKernel},
      {"vocab_loss", &Dispatch::vocabLossKernel},
      {"vocab_cross_entropy_grad", &Dispatch::vocabCrossEntropyGradKernel},
      {"linear_vocab_cross_entropy_grad", &Dispatch::vocabCrossEntropyGradKernel},
      {"split", &Dispatch::splitKernel},
      {"concat", &Dispatch::concatKernel},
      {"random_uniform", &Dispatch::randomUniformKernel},
      {"dropout", &Dispatch::dropoutKernel},
      {"dropout_key", &Dispatch::dropoutKeyKernel},
      {"eval_dropout_key", &Dispatch::evalDropoutKeyKernel},
      {"random_normal", &Dispatch::randomNormalKernel},
      {"local_shard", &Dispatch::localShardKernel},
      {"fill", &Dispatch::fillKernel},
      {"mean_accumulate", &Dispatch::meanAccumulateKernel},
      {"mean_finish", &Dispatch::meanFinishKernel},
      {"silu_grad", &Dispatch::siluGradKernel},
      {"embedding_grad", &Dispatch::embeddingGradKernel},
      {"rms_norm_grad", &Dispatch::rmsNormGradKernel},
      {"lr_value", &Dispatch::lrValueKernel},
      {"global_norm", &Dispatch::globalNormKernel},
      {"sum_squares", &Dispatch::globalNormKernel},
      {"sqrt", &Dispatch::sqrtKernel},
      {"clip_coefficient", &Dispatch::clipCoefficientKernel},
      {"elementwise", &Dispatch::elementwiseKernel},
      {"moe_route", &Dispatch::moeRouteKernel},
      {"moe_route_grad", &Dispatch::moeRouteKernel},
      {"moe_sort", &Dispatch::moeSortKernel},
      {"moe_permute", &Dispatch::moePermuteKernel},
      {"moe_unpermute", &Dispatch::moePermuteKernel},
      {"grouped_matmul", &Dispatch::groupedMatmulKernel},
      {"grouped_matmul_weight_grad", &Dispatch::groupedMatmulKernel},
      {"scale_rows", &Dispatch::scaleRowsKernel},
      {"row_dot", &Dispatch::scaleRowsKernel},
      {"token_mask", &Dispatch::tokenMaskKernel}};
  auto kernel = kKernels.find(op);
  if (kernel == kKernels.end()) {
    return Status(StatusCode::kInvalidArgument,
                  "the CPU kernels cannot execute '" + std::string(op) + "'");
  }
  MLPERF_RETURN_IF_ERROR((this->*kernel->second)(op));
  for (HostTensor &result : results) {
    if (isFloat(result.dtype)) {
      roundBuffer(result.dtype, result.data(), result.numElements());
    }
  }
  return Status::ok();
}

} // namespace

void lossInputs(const OpAttributes &attributes, const HostTensor &labels, const float *mask,
                LossInputs &out) {
  out.labels = labels.ints.data();
  out.mask = mask;
  const int64_t *ignore = attributes.getInt("ignore_index");
  if (!ignore) {
    return;
  }
  int64_t tokens = labels.numElements();
  out.ownLabels.assign(labels.ints.begin(), labels.ints.begin() + tokens);
  out.ownMask.assign(tokens, 1.0f);
  for (int64_t t = 0; t < tokens; ++t) {
    if (out.ownLabels[t] == *ignore) {
      out.ownLabels[t] = 0;
      out.ownMask[t] = 0.0f;
    } else if (mask) {
      out.ownMask[t] = mask[t];
    }
  }
  out.labels = out.ownLabels.data();
  out.mask = out.ownMask.data();
}

Status runHostOp(std::string_view op, const OpAttributes &attributes,
                 const std::vector<const HostTensor *> &operands,
                 std::vector<HostTensor> &results) {
  try {
    return Dispatch(attributes, operands, results).run(op);
  } catch (const BadAttribute &error) {
    return Status(StatusCode::kInvalidArgument, std::string(op) + ": " + error.what());
  }
}

} // namespace mlperf::rt
