//===- Backend.cpp - Backend selection -------------------------*- C++ -*-===//

#include "runtime/exec/Backend.h"

namespace mlperf::rt {

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

Status createBackend(const std::string &name, std::unique_ptr<Backend> &backend) {
  if (name == "cpu") {
    backend = createCpuBackend();
    return Status::ok();
  }
  if (name == "cuda") {
    return Status(StatusCode::kUnavailable,
                  "the cuda backend is not built yet (runtime/cuda has the device query only); "
                  "use --backend cpu");
  }
  return Status(StatusCode::kInvalidArgument, "unknown backend '" + name + "' (available: cpu)");
}

} // namespace mlperf::rt
