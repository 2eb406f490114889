//===- Fp8.cpp - fp8 scaling math on the CPU --------------------*- C++ -*-===//

#include "runtime/cpu/Fp8.h"

#include <cmath>
#include <limits>
#include <vector>

namespace mlperf::rt::cpu {

float amax(const float *values, int64_t count, float initial) {
  float result = initial;
  for (int64_t i = 0; i < count; ++i) {
    result = std::fmax(result, std::fabs(values[i]));
  }
  return result;
}

bool parseAmaxAlgo(std::string_view name, AmaxAlgo &algo) {
  if (name == "most_recent") {
    algo = AmaxAlgo::kMostRecent;
    return true;
  }
  if (name == "max") {
    algo = AmaxAlgo::kMax;
    return true;
  }
  return false;
}

} // namespace mlperf::rt::cpu
