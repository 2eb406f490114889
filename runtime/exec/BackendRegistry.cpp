//===- BackendRegistry.cpp - Backend selection by name ---------*- C++ -*-===//
//
// Apart from Backend.cpp so that a tool that only runs the CPU backend (mlperfc's audit)
// does not link, and load at every start, the CUDA backend and its libraries.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Backend.h"

#ifdef MLPERFC_HAVE_CUDA
#include "runtime/cuda/CudaBackend.h"
#endif

namespace mlperf::rt {

Status createBackend(const std::string &name, std::unique_ptr<Backend> &backend,
                     const BackendOptions &options) {
  if (name == "cpu" && !options.gemmAlgorithmCache.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "--gemm-cache chooses cuBLASLt algorithms: it applies to --backend cuda");
  }
  if (name == "cpu" && !options.cudnnAttention) {
    return Status(StatusCode::kInvalidArgument,
                  "--no-cudnn-attention chooses the CUDA attention kernel: it applies to "
                  "--backend cuda");
  }
  if (name == "cpu") {
    backend = createCpuBackend();
    return Status::ok();
  }
  if (name == "cuda") {
#ifdef MLPERFC_HAVE_CUDA
    Status usable = cuda::checkUsableDevice();
    if (!usable.isOk()) {
      return Status(usable.code(), "--backend cuda: no usable GPU: " + usable.message());
    }
    backend = cuda::createCudaBackend(options);
    return Status::ok();
#else
    return Status(StatusCode::kUnavailable,
                  "this mlperf-run was built without the CUDA backend (no CUDA toolkit at "
                  "configure time); rebuild with CUDA 12.8+ or use --backend cpu");
#endif
  }
  return Status(StatusCode::kInvalidArgument,
                "unknown backend '" + name + "' (available: cpu" +
                    std::string(cudaBackendBuilt() ? ", cuda)" : ")"));
}

} // namespace mlperf::rt
