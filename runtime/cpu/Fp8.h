//===- Fp8.h - fp8 scaling math on the CPU ----------------------*- C++ -*-===//
//
// The amax and delayed-scaling update of Transformer Engine's fp8 recipes (tg.amax,
// tg.fp8_scale_update; docs/dialects/tg.md), shared by the reference interpreter and the CPU
// backend. The scaled cast itself is quantizeFp8 (Numerics.h).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_FP8_H
#define MLPERFC_RUNTIME_CPU_FP8_H

#include "runtime/cpu/Rounding.h"
#include "runtime/support/HostDevice.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace mlperf::rt::cpu {

/// max |x| over `count` values with fmaxf (NaN skipped, infinities kept), starting from
/// `initial`.
float amax(const float *values, int64_t count, float initial = 0.0f);

enum class AmaxAlgo { kMostRecent, kMax };
/// "most_recent" or "max"; false otherwise.
bool parseAmaxAlgo(std::string_view name, AmaxAlgo &algo);

/// TE's amax_and_scale_update on one tensor's state: records `amax` in history[0] (fmaxf),
/// takes the most recent or the largest amax, sets `newScale` to
/// f32(fp8Max · 2^-margin) / amax when that is finite and positive (else `scale`; the largest
/// float when the division overflows), and writes
/// the rolled history (row 0 cleared, row i ← row i+1, the last row ← the recorded amax) to
/// `newHistory` (which may alias `history`). One implementation for the CPU and the GPU.
MLPERF_HD inline void fp8ScaleUpdate(const float *history, int64_t length, float amax, float scale,
                                     double fp8Max, double margin, AmaxAlgo algo, float *newHistory,
                                     float &newScale) {
  // The history with this amax recorded where the cast kernels record it (row 0).
  const float recorded = fmaxf(history[0], amax);
  float chosen = recorded;
  if (algo == AmaxAlgo::kMax) {
    for (int64_t i = 1; i < length; ++i) {
      chosen = fmaxf(chosen, history[i]);
    }
  }
  // In f32 as TE's kernel: scaled_max = fp8_max · 2^-margin, then one division.
  float scaledMax = static_cast<float>(fp8Max) * powf(2.0f, -static_cast<float>(margin));
  newScale = chosen - chosen == 0.0f && chosen > 0.0f ? scaledMax / chosen : scale;
  if (newScale - newScale != 0.0f && newScale == newScale) {
    // An amax so small that the scale overflows f32: the largest float, as TE's
    // compute_scale_from_amax (a cast would otherwise give 0 · inf = NaN).
    newScale = FLT_MAX;
  }
  // Rows in increasing order: row i reads row i + 1 of the old history before it is written.
  for (int64_t i = 0; i < length; ++i) {
    newHistory[i] = i == 0 ? 0.0f : i < length - 1 ? history[i + 1] : recorded;
  }
}

/// TE's compute_scale_from_amax for current scaling (epsilon 0, no power-of-two rounding):
/// 1 when `amax` is 0 or infinite, else f32(fp8Max) / amax, the largest float on overflow.
MLPERF_HD inline float fp8CurrentScale(float amax, double fp8Max) {
  if (amax - amax != 0.0f || amax == 0.0f) { // infinite, NaN or zero
    return 1.0f;
  }
  float scale = static_cast<float>(fp8Max) / amax;
  if (scale - scale != 0.0f && scale == scale) {
    return FLT_MAX;
  }
  return scale != scale ? 1.0f : scale;
}

/// One element of tg.fp8_quantize (Numerics.h quantizeFp8): value · scale in f32, saturated to
/// ±fp8Max, rounded to the format ties to even; NaN stays NaN. The CUDA kernel's form, through
/// roundToFormat (CudaHostTest compares it with quantizeFp8 on every float class).
MLPERF_HD inline float quantizeFp8Value(bool e4m3, float value, float scale) {
  float product = value * scale;
  if (product != product) {
    return product;
  }
  const FloatFormat format = e4m3 ? e4m3fnFormat() : e5m2Format();
  const auto limit = static_cast<float>(format.maxFinite);
  product = fminf(fmaxf(product, -limit), limit);
  return static_cast<float>(roundToFormat(product, format));
}

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_FP8_H
