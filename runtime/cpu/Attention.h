//===- Attention.h - Fused attention on the CPU ----------------*- C++ -*-===//
//
// tg.attention and tg.attention_grad (docs/dialects/tg.md): grouped-query, optionally causal
// scaled-dot-product attention, forward and backward, one block of 256 query rows at a time,
// so that memory grows with the sequence, not with its square. Every value is the one the
// unfused graph (matmul, scale, causal_mask, softmax, convert, matmul, repeat, and what
// tg-autodiff builds from them) computes, to the bit: the blocks call the same kernels on
// the same operands, contractions over query rows are cut at multiples of kGemmSliceK, and
// the masked keys a causal block skips contribute exact zeros there. Causal blocks read only
// the keys up to their last query: half the work of the unfused graph.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_ATTENTION_H
#define MLPERFC_RUNTIME_CPU_ATTENTION_H

#include "runtime/cpu/Numerics.h"

#include <cstdint>

namespace mlperf::rt::cpu {

struct AttentionShape {
  int64_t batch = 1, heads = 1, kvHeads = 1, queries = 0, keys = 0, headDim = 0;
  bool causal = false;
  /// With causal: a query sees itself and the `window` keys before it (-1: every earlier key).
  int64_t window = -1;
  double scale = 1.0;
  DType valueType = DType::kF32; // the probabilities are rounded to it before p · value
};

/// out [batch, heads, queries, headDim] (rounded by the caller to its type), lse [batch,
/// heads, queries]. Returns the first row (over batch, heads, queries) with no finite score,
/// whose softmax is undefined, or -1.
int64_t attentionForward(const float *q, const float *k, const float *v, float *out, float *lse,
                         const AttentionShape &shape);

/// dq like q, dk and dv like k and v (rounded by the caller to their types) for the
/// cotangent `dout` of out; `queryType` is q's element type (what the score gradient is
/// rounded to before its matmuls). Returns as attentionForward.
int64_t attentionBackward(const float *q, const float *k, const float *v, const float *dout,
                          float *dq, float *dk, float *dv, const AttentionShape &shape,
                          DType queryType);

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_ATTENTION_H
