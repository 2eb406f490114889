//===- CudaStatus.cpp - CUDA runtime errors as Status ---------*- C++ -*-===//

#include "runtime/cuda/CudaStatus.h"

namespace mlperf::rt::cuda {

Status statusFromCudaError(cudaError_t error, const char *expr, const char *file, int line) {
  if (error == cudaSuccess) {
    return Status::ok();
  }
  // A machine without a GPU or driver is a configuration fact, not a library failure.
  bool unavailable = error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver;
  std::string message =
      std::string(expr) + " failed: " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error);
  return Status(unavailable ? StatusCode::kUnavailable : StatusCode::kInternal, std::move(message),
                file, line);
}

Status statusFromCublasStatus(cublasStatus_t status, const char *expr, const char *file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) {
    return Status::ok();
  }
  return Status(StatusCode::kInternal,
                std::string(expr) + " failed: " + cublasLtGetStatusName(status) + ": " +
                    cublasLtGetStatusString(status),
                file, line);
}

} // namespace mlperf::rt::cuda
