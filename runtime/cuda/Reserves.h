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

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_RESERVES_H
