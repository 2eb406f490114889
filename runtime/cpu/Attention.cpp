//===- Attention.cpp - Fused attention on the CPU --------------*- C++ -*-===//

#include "runtime/cpu/Attention.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

namespace mlperf::rt::cpu {
namespace {

/// Query rows per block: a multiple of kGemmSliceK, so that the key and value gradients,
/// contractions over query rows, add the same f32 partial sums in the same order as one
/// matmul over all rows.
constexpr int64_t kRows = kGemmSliceK;

/// One block of query rows of one (batch, head), and the keys it reads.
struct Block {
  int64_t batch = 0, head = 0, kvHead = 0, firstRow = 0, rows = 0, keys = 0;
};

class Attention {
public:
  Attention(const float *q, const float *k, const float *v, const AttentionShape &shape)
      : q(q), k(k), v(v), s(shape) {}

  int64_t rowBlocks() const { return (s.queries + kRows - 1) / kRows; }

  /// The `index`-th block of (batch, head) `head` (batch · heads + head).
  Block block(int64_t head, int64_t index) const {
    Block block{head / s.heads,
                head % s.heads,
                head % s.heads / (s.heads / s.kvHeads),
                index * kRows,
                std::min(kRows, s.queries - index * kRows),
                s.keys};
    if (s.causal) {
      block.keys = block.firstRow + block.rows; // later keys are masked for every row here
    }
    return block;
  }

  /// Calls `body(head)` for every (batch, head) pair on the thread pool, where body returns
  /// -1 or the first bad row of that head; returns -1 or the first bad row overall (as an
  /// index into [batch, heads, queries]).
  template <typename Body> int64_t forEachHead(const Body &body) const {
    std::atomic<int64_t> first{std::numeric_limits<int64_t>::max()};
    parallelFor(s.batch * s.heads, [&](int64_t head) {
      if (int64_t bad = body(head); bad >= 0) {
        int64_t row = head * s.queries + bad, seen = first.load();
        while (row < seen && !first.compare_exchange_weak(seen, row)) {
        }
      }
    });
    return first.load() == std::numeric_limits<int64_t>::max() ? -1 : first.load();
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
      maskOutside(block, scores.data(), -std::numeric_limits<float>::infinity());
    }
  }

  /// Writes `fill` at the keys each row of the block does not see: after the query and, with
  /// a window, more than `window` before it (tg.causal_mask). Every key stays in the sums,
  /// masked ones as exact zeros, so the sums are the unfused graph's.
  void maskOutside(const Block &block, float *rows, float fill) const {
    for (int64_t i = 0; i < block.rows; ++i) {
      float *row = rows + i * block.keys;
      const int64_t query = block.firstRow + i;
      std::fill(row + std::min(query + 1, block.keys), row + block.keys, fill);
      if (s.window >= 0 && query - s.window > 0) {
        std::fill(row, row + std::min(query - s.window, block.keys), fill);
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
  return attention.forEachHead([&](int64_t head) -> int64_t {
    thread_local std::vector<float> p;
    for (int64_t index = 0; index < attention.rowBlocks(); ++index) {
      Block block = attention.block(head, index);
      attention.scores(block, p);
      float *lseRows = lse + head * s.queries + block.firstRow;
      if (int64_t bad = softmax(p.data(), p.data(), block.rows, block.keys, 1, lseRows); bad >= 0) {
        return block.firstRow + bad;
      }
      roundBuffer(s.valueType, p.data(), block.rows * block.keys); // tg.convert
      matmul(p.data(), attention.valueHead(block), out + attention.rowOffset(block),
             matmulShape(block.rows, s.headDim, block.keys));
    }
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
  // Heads in parallel; a head's blocks in order, so its sums are always added the same way.
  int64_t bad = attention.forEachHead([&](int64_t head) -> int64_t {
    thread_local std::vector<double> keySums, valueSums;
    thread_local std::vector<float> p, rounded, dp, piece;
    piece.resize(headElements);
    keySums.assign(headElements, 0.0);
    valueSums.assign(headElements, 0.0);
    for (int64_t index = 0; index < attention.rowBlocks(); ++index) {
      Block block = attention.block(head, index);
      attention.scores(block, p);
      if (int64_t badRow = softmax(p.data(), p.data(), block.rows, block.keys, 1); badRow >= 0) {
        return block.firstRow + badRow;
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
        attention.maskOutside(block, dp.data(), 0.0f);
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
