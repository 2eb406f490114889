//===- Rounding.h - Rounding a double to a narrow float format, CPU and GPU -*- C++ -*-===//
//
// Numerics.h's roundTo for the formats narrower than f32 (bf16, the fp8 formats), written once
// for both backends: a value drawn or computed in f64 is rounded to its storage type directly,
// never through f32 (which could round twice).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_ROUNDING_H
#define MLPERFC_RUNTIME_CPU_ROUNDING_H

#include "runtime/support/HostDevice.h"

#include <cmath>

namespace mlperf::rt {

/// A binary floating-point format: `mantissaBits` explicit fraction bits, the exponent of its
/// smallest normal (unbiased), its largest finite value, and whether overflow gives infinity
/// (else NaN).
struct FloatFormat {
  int mantissaBits;
  int minNormalExponent;
  double maxFinite;
  bool overflowToInfinity;
};

// Functions, not constants: device code can call them.
MLPERF_HD constexpr FloatFormat bf16Format() {
  return {7, -126, 3.38953138925153547590470800371487866880e+38, true};
}
MLPERF_HD constexpr FloatFormat e4m3fnFormat() { return {3, -6, 448.0, false}; }
MLPERF_HD constexpr FloatFormat e5m2Format() { return {2, -14, 57344.0, true}; }

/// Rounds to `format` (ties to even) by scaling to an integer grid: exact in double for every
/// format narrower than float (at most 24 significant bits, exponents in range).
MLPERF_HD inline double roundToFormat(double value, const FloatFormat &format) {
  if (value != value || value == 0.0 || value - value != 0.0) { // NaN, zero, infinity
    if (value - value != 0.0 && value == value && !format.overflowToInfinity) {
      return NAN;
    }
    return value;
  }
  int exponent;
  frexp(value, &exponent);     // value = m * 2^exponent, 0.5 <= |m| < 1
  int unbiased = exponent - 1; // value = 1.f * 2^unbiased
  if (unbiased < format.minNormalExponent) {
    unbiased = format.minNormalExponent; // subnormal: fixed quantum
  }
  double quantum = ldexp(1.0, unbiased - format.mantissaBits);
  double rounded = nearbyint(value / quantum) * quantum; // default mode: ties to even
  if (fabs(rounded) > format.maxFinite) {
    if (!format.overflowToInfinity) {
      return NAN;
    }
    return copysign(INFINITY, value);
  }
  return rounded;
}

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_CPU_ROUNDING_H
