//===- GemmAlgorithmCache.h - cuBLASLt algorithms chosen by timing, kept in a file -*- C++ -*-===//
//
// `mlperf-run --backend cuda --gemm-cache FILE`: at prepare (MLPerf's untimed initialization)
// the CUDA backend times cuBLASLt's top heuristic candidates for every GEMM of the plan whose
// key is not in FILE, keeps the fastest, and writes FILE back; later runs read the choice
// instead of timing again (so they also compute the same bits). One line per GEMM:
//
//   <key> <16 hex digits> x 8        the key: GPU, shape, transposes, leading dimensions,
//                                     batch strides and types; then cublasLtMatmulAlgo_t's words
//
// Plain C++: a unit test reads and writes it without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CUDA_GEMMALGORITHMCACHE_H
#define MLPERFC_RUNTIME_CUDA_GEMMALGORITHMCACHE_H

#include "runtime/cuda/GemmLayout.h"
#include "runtime/support/Status.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace mlperf::rt::cuda {

/// cublasLtMatmulAlgo_t's opaque words (its `data` array).
using AlgorithmWords = std::array<uint64_t, 8>;

/// The cache key of a GEMM: the GPU's name (spaces as '_'), cuBLASLt's m, n, k and batch, the
/// transposes, each matrix's leading dimension and batch stride, and the storage types of the
/// plan's A, B and C (their names, e.g. "BF16").
std::string gemmCacheKey(const std::string &gpu, const GemmLayout &layout, const std::string &a,
                         const std::string &b, const std::string &c);

class GemmAlgorithmCache {
public:
  /// Reads `path`; a missing file is an empty cache. A line that is not a key and eight
  /// 16-digit hex words is DATA_LOSS naming the file and line (a cache is never half-read).
  static Status load(const std::string &path, GemmAlgorithmCache &cache);
  /// Writes every entry, sorted by key, atomically.
  Status save(const std::string &path) const;

  const AlgorithmWords *find(const std::string &key) const;
  void put(const std::string &key, const AlgorithmWords &words) { entries[key] = words; }
  size_t size() const { return entries.size(); }

private:
  std::map<std::string, AlgorithmWords> entries;
};

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_GEMMALGORITHMCACHE_H
