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

} // namespace mlperf::rt
