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
#include <cstdint>

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

/// The value of an 8-bit code with `mantissaBits` fraction bits and exponent `bias`; with
/// `ieeeSpecials` the top exponent holds infinities and NaNs (E5M2), else only S.1111.111 is
/// NaN (E4M3FN).
MLPERF_HD inline double decodeFp8Code(uint32_t bits, int mantissaBits, int bias,
                                      bool ieeeSpecials) {
  int exponentBits = 7 - mantissaBits;
  uint32_t sign = (bits >> 7) & 1;
  uint32_t exponent = (bits >> mantissaBits) & ((1u << exponentBits) - 1);
  uint32_t mantissa = bits & ((1u << mantissaBits) - 1);
  double magnitude;
  if (ieeeSpecials && exponent == (1u << exponentBits) - 1) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else if (!ieeeSpecials && exponent == (1u << exponentBits) - 1 &&
             mantissa == (1u << mantissaBits) - 1) {
    magnitude = NAN;
  } else if (exponent == 0) {
    magnitude = ldexp(static_cast<double>(mantissa), 1 - bias - mantissaBits);
  } else {
    magnitude = ldexp(1.0 + ldexp(static_cast<double>(mantissa), -mantissaBits),
                      static_cast<int>(exponent) - bias);
  }
  return sign ? -magnitude : magnitude;
}

/// The code of a value representable in E4M3FN (`e4m3`) or E5M2 (callers round first): the
/// exponent rebiased and the mantissa's leading bits, or the subnormal's multiple of the
/// smallest quantum; NaN 0x7f, infinity 0x7c (E4M3FN: NaN).
MLPERF_HD inline uint32_t encodeFp8Code(bool e4m3, double value) {
  if (value != value) {
    return 0x7f;
  }
  const int mantissaBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const uint32_t sign = copysign(1.0, value) < 0 ? 0x80u : 0u;
  const double magnitude = fabs(value);
  if (magnitude - magnitude != 0.0) {
    return sign | (e4m3 ? 0x7fu : 0x7cu);
  }
  if (magnitude == 0.0) {
    return sign;
  }
  int exponent;
  frexp(magnitude, &exponent); // magnitude = m · 2^exponent, 0.5 <= m < 1
  const int unbiased = exponent - 1;
  if (unbiased < 1 - bias) { // subnormal: a multiple of 2^(1 - bias - mantissaBits)
    return sign | static_cast<uint32_t>(ldexp(magnitude, bias - 1 + mantissaBits));
  }
  const auto mantissa =
      static_cast<uint32_t>(ldexp(ldexp(magnitude, -unbiased) - 1.0, mantissaBits));
  return sign | (static_cast<uint32_t>(unbiased + bias) << mantissaBits) | mantissa;
}

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_CPU_ROUNDING_H
