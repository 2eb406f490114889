//===- Optimizer.cpp - Clipping on the CPU ----------------------*- C++ -*-===//

#include "runtime/cpu/Optimizer.h"

#include <cmath>

namespace mlperf::rt::cpu {

double sumOfSquares(const float *grad, int64_t count) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    sum += static_cast<double>(grad[i]) * grad[i];
  }
  return sum;
}

} // namespace mlperf::rt::cpu
