//===- Attention.cpp - Fused attention on the CPU --------------*- C++ -*-===//

#include "runtime/cpu/Attention.h"

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace mlperf::rt::cpu {
namespace {

/// Query rows per block: a multiple of kMatmulBlockK, so that the key and value gradients,
/// contractions over query rows, add the same f32 partial sums in the same order as one
/// matmul over all rows.
constexpr int64_t kRows = kMatmulBlockK;

/// One block of query rows of one (batch, head), and the keys it reads.
struct Block {
  int64_t batch = 0, head = 0, kvHead = 0, firstRow = 0, rows = 0, keys = 0;
};

class Attention {
public:
  Attention(const float *q, const float *k, const float *v, const AttentionShape &shape)
      : q(q), k(k), v(v), s(shape) {}

  /// Calls `body(block)` for every block, in (batch, head, rows) order.
  template <typename Body> int64_t forEachBlock(Body body) const {
    int64_t group = s.heads / s.kvHeads;
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t h = 0; h < s.heads; ++h) {
        for (int64_t first = 0; first < s.queries; first += kRows) {
          Block block{b, h, h / group, first, std::min(kRows, s.queries - first), s.keys};
          if (s.causal) {
            block.keys = first + block.rows; // later keys are masked for every row here
          }
          if (int64_t bad = body(block); bad >= 0) {
            return ((b * s.heads + h) * s.queries) + first + bad;
          }
        }
      }
    }
    return -1;
  }

  const float *queryRows(const Block &block) const {
    return q + ((block.batch * s.heads + block.head) * s.queries + block.firstRow) * s.headDim;
  }
  const float *keyHead(const Block &block) const {
    return k + (block.batch * s.kvHeads + block.kvHead) * s.keys * s.headDim;
  }
  const float *valueHead(const Block &block) const {
    return v + (block.batch * s.kvHeads + block.kvHead) * s.keys * s.headDim;
  }
  int64_t rowOffset(const Block &block) const {
    return ((block.batch * s.heads + block.head) * s.queries + block.firstRow) * s.headDim;
  }

  /// The block's masked, scaled scores [rows, keys] in `scores` (matmul to f32, scale,
  /// causal_mask of the unfused graph).
  void scores(const Block &block, std::vector<float> &scores) const {
    scores.resize(block.rows * block.keys);
    matmul(queryRows(block), keyHead(block), scores.data(),
           matmulShape(block.rows, block.keys, s.headDim, false, true));
    scale(scores.data(), scores.data(), block.rows * block.keys, s.scale);
    if (s.causal) {
      for (int64_t i = 0; i < block.rows; ++i) {
        std::fill(scores.begin() + i * block.keys + block.firstRow + i + 1,
                  scores.begin() + (i + 1) * block.keys, -std::numeric_limits<float>::infinity());
      }
    }
  }

  const float *q, *k, *v;
  const AttentionShape &s;
};

} // namespace

int64_t attentionForward(const float *q, const float *k, const float *v, float *out, float *lse,
                         const AttentionShape &s) {
  Attention attention(q, k, v, s);
  std::vector<float> p;
  return attention.forEachBlock([&](const Block &block) -> int64_t {
    attention.scores(block, p);
    float *lseRows = lse + (block.batch * s.heads + block.head) * s.queries + block.firstRow;
    if (int64_t bad = softmax(p.data(), p.data(), block.rows, block.keys, 1, lseRows); bad >= 0) {
      return bad;
    }
    roundBuffer(s.valueType, p.data(), block.rows * block.keys); // tg.convert
    matmul(p.data(), attention.valueHead(block), out + attention.rowOffset(block),
           matmulShape(block.rows, s.headDim, block.keys));
    return -1;
  });
}

int64_t attentionBackward(const float *q, const float *k, const float *v, const float *dout,
                          float *dq, float *dk, float *dv, const AttentionShape &s,
                          DType queryType) {
  Attention attention(q, k, v, s);
  const int64_t headElements = s.keys * s.headDim, group = s.heads / s.kvHeads;
  // Per query head its key and value gradients (the unfused graph's repeated k and v), summed
  // in f64 over blocks of query rows as one matmul sums its blocks of 256 products.
  std::vector<float> keyGrads(s.batch * s.heads * headElements),
      valueGrads(s.batch * s.heads * headElements);
  std::vector<double> keySums, valueSums;
  std::vector<float> p, rounded, dp, piece(headElements);
  int64_t bad = attention.forEachBlock([&](const Block &block) -> int64_t {
    if (block.firstRow == 0) {
      keySums.assign(headElements, 0.0);
      valueSums.assign(headElements, 0.0);
    }
    attention.scores(block, p);
    if (int64_t badRow = softmax(p.data(), p.data(), block.rows, block.keys, 1); badRow >= 0) {
      return badRow;
    }
    const int64_t n = block.rows * block.keys;
    rounded.assign(p.begin(), p.end());
    roundBuffer(s.valueType, rounded.data(), n);
    const float *doutRows = dout + attention.rowOffset(block);
    // dp = dout · valueᵀ, of the probabilities' type.
    dp.resize(n);
    matmul(doutRows, attention.valueHead(block), dp.data(),
           matmulShape(block.rows, block.keys, s.headDim, false, true));
    roundBuffer(s.valueType, dp.data(), n);
    // ds = softmax_grad, masked, scaled, of the query's type (in dp's storage).
    softmaxGrad(p.data(), dp.data(), dp.data(), block.rows, block.keys, 1);
    if (s.causal) {
      for (int64_t i = 0; i < block.rows; ++i) {
        std::fill(dp.begin() + i * block.keys + block.firstRow + i + 1,
                  dp.begin() + (i + 1) * block.keys, 0.0f);
      }
    }
    scale(dp.data(), dp.data(), n, s.scale);
    roundBuffer(queryType, dp.data(), n);
    // dq = ds · key over this block's keys (the masked rest contributes zeros).
    matmul(dp.data(), attention.keyHead(block), dq + attention.rowOffset(block),
           matmulShape(block.rows, s.headDim, block.keys));
    // This block's share of dk = dsᵀ · query and dv = pᵀ · dout.
    matmul(dp.data(), attention.queryRows(block), piece.data(),
           matmulShape(block.keys, s.headDim, block.rows, true));
    for (int64_t i = 0; i < block.keys * s.headDim; ++i) {
      keySums[i] += piece[i];
    }
    matmul(rounded.data(), doutRows, piece.data(),
           matmulShape(block.keys, s.headDim, block.rows, true));
    for (int64_t i = 0; i < block.keys * s.headDim; ++i) {
      valueSums[i] += piece[i];
    }
    if (block.firstRow + block.rows == s.queries) { // the head's last block
      float *keyGrad = keyGrads.data() + (block.batch * s.heads + block.head) * headElements;
      float *valueGrad = valueGrads.data() + (block.batch * s.heads + block.head) * headElements;
      for (int64_t i = 0; i < headElements; ++i) {
        keyGrad[i] = static_cast<float>(keySums[i]);
        valueGrad[i] = static_cast<float>(valueSums[i]);
      }
      roundBuffer(queryType, keyGrad, headElements); // the key's type is the query's
      roundBuffer(s.valueType, valueGrad, headElements);
    }
    return -1;
  });
  if (bad >= 0) {
    return bad;
  }
  // Each KV head's gradient is the sum over its group of query heads (tg.repeat_grad).
  repeatGrad(keyGrads.data(), dk, s.batch, s.kvHeads, headElements, group);
  repeatGrad(valueGrads.data(), dv, s.batch, s.kvHeads, headElements, group);
  return -1;
}

} // namespace mlperf::rt::cpu
