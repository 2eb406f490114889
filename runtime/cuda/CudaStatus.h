//===- CudaStatus.h - CUDA runtime errors as Status -----------*- C++ -*-===//
//
// Every CUDA runtime call in the backend goes through MLPERF_CUDA_RETURN_IF_ERROR so that a
// failure becomes a Status naming the call, the CUDA error and the file:line.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CUDA_CUDASTATUS_H
#define MLPERFC_RUNTIME_CUDA_CUDASTATUS_H

#include "runtime/support/Status.h"

#include <cuda_runtime_api.h>

namespace mlperf::rt::cuda {

/// OK for cudaSuccess; otherwise an INTERNAL status (UNAVAILABLE when the machine has no usable
/// GPU or driver) whose message is "<expr> failed: <cudaErrorName>: <description>".
Status statusFromCudaError(cudaError_t error, const char *expr, const char *file, int line);

} // namespace mlperf::rt::cuda

#define MLPERF_CUDA_RETURN_IF_ERROR(expr)                                                          \
  MLPERF_RETURN_IF_ERROR(::mlperf::rt::cuda::statusFromCudaError((expr), #expr, __FILE__, __LINE__))

#endif // MLPERFC_RUNTIME_CUDA_CUDASTATUS_H
