//===- LinearCrossEntropy.h - Output layer and loss, fused -----*- C++ -*-===//
//
// tg.linear_cross_entropy and its VJP (docs/dialects/tg.md): the logits of a linear output
// layer and their mean cross-entropy, 256 tokens at a time, so that neither the logits
// [tokens, vocab] nor their gradient exist for the whole micro-batch (Liger-Kernel's and
// llm.c's fused classifier). Every value is the unfused graph's (tg.matmul, tg.cross_entropy
// and what tg-autodiff builds from them), to the bit: the chunks call the same kernels, the
// loss adds token by token in order, and the weight gradient, a contraction over tokens, is cut
// at multiples of kGemmSliceK.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_LINEARCROSSENTROPY_H
#define MLPERFC_RUNTIME_CPU_LINEARCROSSENTROPY_H

#include "runtime/cpu/Numerics.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <functional>

namespace mlperf::rt::cpu {

struct LinearCrossEntropyShape {
  int64_t tokens = 0, hidden = 0, vocab = 0;
  DType logitsType = DType::kF32; // what the logits are rounded to, as tg.matmul's result
};

/// The chunk loops, shared by the kernels below and the CPU backend's vocab-parallel form
/// (whose weight is this rank's rows and whose loss pieces are combined over a mesh axis):
/// `loss` sees tokens [first, first + count) and their logits [count, vocab], rounded to
/// logitsType; `gradient` also fills their logits' gradient, which is then rounded, multiplied
/// into hiddenGrad's rows and, summed over chunks in f64, into weightGrad. The first error a
/// callback returns ends the loop.
using LogitsChunkLoss = std::function<Status(int64_t first, int64_t count, const float *logits)>;
using LogitsChunkGradient =
    std::function<Status(int64_t first, int64_t count, const float *logits, float *dlogits)>;
Status forEachLogitsChunk(const float *hidden, const float *weight,
                          const LinearCrossEntropyShape &shape, const LogitsChunkLoss &loss);
Status linearCrossEntropyGradChunks(const float *hidden, const float *weight,
                                    const LinearCrossEntropyShape &shape,
                                    const LogitsChunkGradient &gradient, float *hiddenGrad,
                                    float *weightGrad);

/// The loss of hidden [tokens, hidden] through weight [vocab, hidden] (logits = hidden ·
/// weightᵀ) against labels, weighted by `mask` when given. Returns -1, or the first token
/// whose label is outside [0, vocab).
int64_t linearCrossEntropy(const float *hidden, const float *weight, const int64_t *labels,
                           const float *mask, const LinearCrossEntropyShape &shape, double &loss);

/// The gradients of `dloss` times that loss: hiddenGrad like hidden, weightGrad like weight
/// (the caller rounds them to their types).
void linearCrossEntropyGrad(const float *hidden, const float *weight, const int64_t *labels,
                            const float *mask, double dloss, float *hiddenGrad, float *weightGrad,
                            const LinearCrossEntropyShape &shape);

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_LINEARCROSSENTROPY_H
