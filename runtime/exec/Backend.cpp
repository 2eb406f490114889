//===- Backend.cpp - Backend selection -------------------------*- C++ -*-===//

#include "runtime/exec/Backend.h"

#ifdef MLPERFC_HAVE_CUDA
#include "runtime/cuda/CudaBackend.h"
#endif

namespace mlperf::rt {

bool cudaBackendBuilt() {
#ifdef MLPERFC_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

DType fromPlanDType(plan::DType dtype) {
  switch (dtype) {
  case plan::BF16:
    return DType::kBF16;
  case plan::F8E4M3FN:
    return DType::kF8E4M3FN;
  case plan::F8E5M2:
    return DType::kF8E5M2;
  case plan::I32:
    return DType::kI32;
  case plan::I64:
    return DType::kI64;
  default:
    return DType::kF32; // the loader rejects DTYPE_UNSPECIFIED and unknown values
  }
}

OpAttributes commandAttributes(const plan::Command &command) {
  OpAttributes attributes;
  for (const plan::Attribute &attr : command.attributes()) {
    switch (attr.value_case()) {
    case plan::Attribute::kI:
      attributes.set(attr.name(), attr.i());
      break;
    case plan::Attribute::kF:
      attributes.set(attr.name(), attr.f());
      break;
    case plan::Attribute::kS:
      attributes.set(attr.name(), attr.s());
      break;
    case plan::Attribute::kInts:
      attributes.set(attr.name(), std::vector<int64_t>(attr.ints().values().begin(),
                                                       attr.ints().values().end()));
      break;
    default:
      break;
    }
  }
  return attributes;
}

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
