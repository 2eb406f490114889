//===- GridLoop.cuh - Grid-stride loops of the CUDA kernels ------*- C++ -*-===//
//
// Every kernel of runtime/cuda is a grid-stride loop: `blocksFor(count)` blocks of kThreads,
// each thread starting at firstIndex() and striding by gridStride(), so any count runs on a
// capped grid.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CUDA_GRIDLOOP_CUH
#define MLPERFC_RUNTIME_CUDA_GRIDLOOP_CUH

#include <algorithm>
#include <cstdint>

namespace mlperf::rt::cuda {

constexpr int kThreads = 256;

/// Blocks for `count` work items, one per thread, capped (the loops stride over the rest).
inline unsigned blocksFor(int64_t count) {
  int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks, int64_t{1} << 20)));
}

__device__ inline int64_t firstIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ inline int64_t gridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_GRIDLOOP_CUH
