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

void fp8ScaleUpdate(const float *history, int64_t length, float amax, float scale, double fp8Max,
                    double margin, AmaxAlgo algo, float *newHistory, float &newScale) {
  // The history with this amax recorded where the cast kernels record it (row 0).
  std::vector<float> recorded(history, history + length);
  recorded[0] = std::fmax(recorded[0], amax);
  float chosen = recorded[0];
  if (algo == AmaxAlgo::kMax) {
    for (float value : recorded) {
      chosen = std::fmax(chosen, value);
    }
  }
  // In f32 as TE's kernel: scaled_max = fp8_max · 2^-margin, then one division.
  float scaledMax = static_cast<float>(fp8Max) * std::pow(2.0f, -static_cast<float>(margin));
  newScale = std::isfinite(chosen) && chosen > 0.0f ? scaledMax / chosen : scale;
  if (std::isinf(newScale)) {
    // An amax so small that the scale overflows f32: the largest float, as TE's
    // compute_scale_from_amax (a cast would otherwise give 0 · inf = NaN).
    newScale = std::numeric_limits<float>::max();
  }
  for (int64_t i = 0; i < length; ++i) {
    float rolled = i < length - 1 ? recorded[i + 1] : recorded[0];
    newHistory[i] = i > 0 ? rolled : 0.0f;
  }
}

float fp8CurrentScale(float amax, double fp8Max) {
  if (std::isinf(amax) || amax == 0.0f || std::isnan(amax)) {
    return 1.0f;
  }
  float scale = static_cast<float>(fp8Max) / amax;
  if (std::isinf(scale)) {
    return std::numeric_limits<float>::max();
  }
  return std::isnan(scale) ? 1.0f : scale;
}

} // namespace mlperf::rt::cpu
