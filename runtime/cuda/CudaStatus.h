//===- CudaStatus.h - CUDA runtime errors as Status -----------*- C++ -*-===//
//
// Every CUDA runtime call in the backend goes through MLPERF_CUDA_RETURN_IF_ERROR, every
// cuBLASLt call through MLPERF_CUBLAS_RETURN_IF_ERROR, so that a failure becomes a Status
// naming the call, the library's error and the file:line.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CUDA_CUDASTATUS_H
#define MLPERFC_RUNTIME_CUDA_CUDASTATUS_H

#include "runtime/support/Status.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace mlperf::rt::cuda {

/// OK for cudaSuccess; otherwise an INTERNAL status (UNAVAILABLE when the machine has no usable
/// GPU or driver) whose message is "<expr> failed: <cudaErrorName>: <description>".
Status statusFromCudaError(cudaError_t error, const char *expr, const char *file, int line);

/// OK for CUBLAS_STATUS_SUCCESS; otherwise INTERNAL: "<expr> failed: <status name>".
Status statusFromCublasStatus(cublasStatus_t status, const char *expr, const char *file, int line);

} // namespace mlperf::rt::cuda

#define MLPERF_CUBLAS_RETURN_IF_ERROR(expr)                                                        \
  MLPERF_RETURN_IF_ERROR(                                                                          \
      ::mlperf::rt::cuda::statusFromCublasStatus((expr), #expr, __FILE__, __LINE__))

#define MLPERF_CUDA_RETURN_IF_ERROR(expr)                                                          \
  MLPERF_RETURN_IF_ERROR(::mlperf::rt::cuda::statusFromCudaError((expr), #expr, __FILE__, __LINE__))

#endif // MLPERFC_RUNTIME_CUDA_CUDASTATUS_H
