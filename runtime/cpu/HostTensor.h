//===- HostTensor.h - A tensor in host memory ------------------*- C++ -*-===//
//
// Floating-point tensors hold float values already rounded to their element type (a bf16
// tensor holds bf16 values widened to float), f64 tensors doubles; integer tensors hold int64
// values.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_HOSTTENSOR_H
#define MLPERFC_RUNTIME_CPU_HOSTTENSOR_H

#include "runtime/cpu/Numerics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlperf::rt {

struct HostTensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<float> values; // floating-point types but f64
  std::vector<double> wide;  // f64
  std::vector<int64_t> ints; // integer types
  /// Float values kept elsewhere instead of in `values` (the CPU backend points operands and
  /// results at its arenas, so a kernel reads and writes them in place). Kernels reach float
  /// values through data(), which sees either.
  float *external = nullptr;

  float *data() { return external ? external : values.data(); }
  const float *data() const { return external ? external : values.data(); }

  static HostTensor zeros(DType dtype, std::vector<int64_t> shape);
  int64_t numElements() const;
  /// "bf16[2x32x64]".
  std::string describe() const;
};

int64_t numElements(const std::vector<int64_t> &shape);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_CPU_HOSTTENSOR_H
