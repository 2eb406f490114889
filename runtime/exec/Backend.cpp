//===- Backend.cpp - What every backend shares -----------------*- C++ -*-===//

#include "runtime/exec/Backend.h"

namespace mlperf::rt {

bool cudaBackendBuilt() {
#ifdef MLPERFC_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

DType fromPlanDType(plan::DType dtype) {
  const DTypeInfo *info = dtypeWithPlanCode(dtype);
  return info ? info->type : DType::kF32; // the loader rejects DTYPE_UNSPECIFIED and unknown values
}

} // namespace mlperf::rt
