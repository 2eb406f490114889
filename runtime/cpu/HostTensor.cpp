//===- HostTensor.cpp - A tensor in host memory ----------------*- C++ -*-===//

#include "runtime/cpu/HostTensor.h"

namespace mlperf::rt {

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    count *= dim;
  }
  return count;
}

HostTensor HostTensor::zeros(DType dtype, std::vector<int64_t> shape) {
  HostTensor tensor;
  tensor.dtype = dtype;
  tensor.shape = std::move(shape);
  if (dtype == DType::kF64) {
    tensor.wide.assign(rt::numElements(tensor.shape), 0.0);
  } else if (isFloat(dtype)) {
    tensor.values.assign(rt::numElements(tensor.shape), 0.0f);
  } else {
    tensor.ints.assign(rt::numElements(tensor.shape), 0);
  }
  return tensor;
}

int64_t HostTensor::numElements() const { return rt::numElements(shape); }

std::string HostTensor::describe() const {
  std::string out = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += (i ? "x" : "") + std::to_string(shape[i]);
  }
  return out + "]";
}

} // namespace mlperf::rt
