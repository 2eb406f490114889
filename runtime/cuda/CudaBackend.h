//===- CudaBackend.h - Plans on one NVIDIA GPU ------------------*- C++ -*-===//

#ifndef MLPERFC_RUNTIME_CUDA_CUDABACKEND_H
#define MLPERFC_RUNTIME_CUDA_CUDABACKEND_H

#include "runtime/exec/Backend.h"

#include <memory>

namespace mlperf::rt::cuda {

/// OK when GPU 0 can run this build's device code; otherwise UNAVAILABLE with one line saying
/// why (no device visible, a driver older than this build's CUDA runtime, an architecture
/// other than sm_90 or sm_100).
Status checkUsableDevice();

/// The CUDA backend (runtime/cuda): arenas in device memory, plan streams as CUDA streams, GEMMs
/// through cuBLASLt, the other ops through runtime/cuda/Kernels. Its prepare refuses, before
/// any kernel runs, a plan holding a command it has no kernel for and one that does not fit
/// the device's free memory.
std::unique_ptr<Backend> createCudaBackend(const BackendOptions &options = {});

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_CUDABACKEND_H
