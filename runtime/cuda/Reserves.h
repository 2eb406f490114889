//===- Reserves.h - Device memory the CUDA backend takes besides the arenas -*- C++ -*-===//
//
// One number in one place: compiler/Analysis/DeviceMemory reserves these in its fit check and
// the CUDA backend allocates them, so a plan that "fits" has room for them.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CUDA_RESERVES_H
#define MLPERFC_RUNTIME_CUDA_RESERVES_H

#include <cstdint>

namespace mlperf::rt::cuda {

/// cuBLASLt workspace of the compute stream: NVIDIA's guidance of 32 MiB per stream on Hopper
/// (Transformer Engine uses 32 MiB + 1 KiB).
constexpr int64_t kCublasLtWorkspaceBytes = (int64_t{32} << 20) + 1024;

// The backend's scratch: one region, as large as the largest command needs (commands on the
// compute stream take turns). Its biggest users are below; the backend checks at prepare that
// its layouts take exactly these bytes.

constexpr int64_t scratchAligned(int64_t bytes) { return (bytes + 255) / 256 * 256; }

/// cuDNN's deterministic fused-attention backward (runtime/cuda/CudnnAttention.h) on Hopper with
/// cuDNN 9.19: a bf16 dP of [b, h, sq rounded up to 64, skv rounded up to 128], an f32 dQ
/// accumulator [b, h, sq, d] and f32 row sums [b, h, sq], plus 256 bytes. What cuDNN asked
/// for on an H200 equals it at every shape measured: (b, h, s, d) = (1, 32, 8192, 128):
/// 4,430,233,856 bytes; (2, 4, 80, 64): 428,800; (4, 4, 32, 16): 297,216; (1, 4, 32, 16):
/// 74,496. Quadratic in the sequence: the price of a deterministic dQ on cuDNN < 9.25.
constexpr int64_t cudnnSdpaBackwardWorkspaceBytes(int64_t batch, int64_t heads, int64_t queries,
                                                  int64_t keys, int64_t headDim) {
  const int64_t paddedQueries = (queries + 63) / 64 * 64, paddedKeys = (keys + 127) / 128 * 128;
  return batch * heads * (paddedQueries * paddedKeys * 2 + queries * headDim * 4 + queries * 4) +
         256;
}

/// The backend's own (unfused) attention, per (batch, KV head) over its `group` query heads:
/// f32 scores and probabilities of the value's type, [group · queries, keys]; the backward adds
/// f32 dp, ds of the query's type and two f32 [group, keys, headDim] per-head sums.
constexpr int64_t ownAttentionScratchBytes(int64_t group, int64_t queries, int64_t keys,
                                           int64_t headDim, int64_t queryBytes, int64_t valueBytes,
                                           bool backward) {
  const int64_t scores = group * queries * keys;
  int64_t bytes = scratchAligned(scores * 4) + scratchAligned(scores * valueBytes);
  if (backward) {
    bytes += scratchAligned(scores * 4) + scratchAligned(scores * queryBytes) +
             2 * scratchAligned(group * keys * headDim * 4);
  }
  return bytes;
}

/// fp8_matmul: both operands and the result decoded to f32 (the fp8 GEMM runs in f32 until
/// fp8 tensor-core GEMMs, part 3).
constexpr int64_t fp8MatmulScratchBytes(int64_t lhsElements, int64_t rhsElements,
                                        int64_t resultElements) {
  return scratchAligned(lhsElements * 4) + scratchAligned(rhsElements * 4) +
         scratchAligned(resultElements * 4);
}

/// Tokens per chunk of the fused output layer and loss: one GEMM's logits at a time.
constexpr int64_t kLossChunkTokens = 4096;

/// The fused output layer and loss (linear_cross_entropy): one chunk's logits of the logits
/// type and each token's loss and weight in f64; the backward adds the chunk's logit
/// gradients, 16-byte row statistics, the f64 normalizer and the f32 weight-gradient sum
/// [vocab, hidden] (the largest part for a large vocabulary).
constexpr int64_t linearCrossEntropyScratchBytes(int64_t tokens, int64_t hidden, int64_t vocab,
                                                 int64_t logitBytes, bool backward) {
  const int64_t chunk = tokens < kLossChunkTokens ? (tokens > 0 ? tokens : 1) : kLossChunkTokens;
  int64_t bytes = scratchAligned(chunk * vocab * logitBytes) + 2 * scratchAligned(tokens * 8);
  if (backward) {
    bytes += scratchAligned(chunk * vocab * logitBytes) + scratchAligned(chunk * 16) +
             scratchAligned(8) + scratchAligned(vocab * hidden * 4);
  }
  return bytes;
}

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_RESERVES_H
