//===- ElementMath.cuh - The CUDA kernels' element math, host-testable -*- C++ -*-===//
//
// Every CUDA kernel of the element-wise, layout and normalisation ops is a thin grid loop
// around the functions here. They are `__host__ __device__` so that a host unit test
// (CudaElementMathTest) runs the very code the GPU runs and compares it with runtime/cpu bit
// for bit on this GPU-less machine. They mirror the CPU kernels operation for operation: the
// same f64 intermediates, the same summation order, one rounding into the result's type. The
// CUDA sources build with --fmad=false, so no multiply-add is contracted where the CPU (GCC,
// -std=c++17: -ffp-contract=off) does not fuse either. Transcendentals (exp, sin, cos) are the
// one place the device may differ from glibc, by an ulp of f64 before the rounding to f32:
// the op checker bounds those ops in ulps instead of requiring equality.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CUDA_ELEMENTMATH_CUH
#define MLPERFC_RUNTIME_CUDA_ELEMENTMATH_CUH

#include "runtime/cpu/Numerics.h" // DType
#include "runtime/cpu/Rounding.h"
#include "runtime/support/HostDevice.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mlperf::rt::cuda {

MLPERF_HD inline uint32_t floatBits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
#endif
}

MLPERF_HD inline float floatFromBits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
#endif
}

/// bf16 storage of a float rounded to nearest even, NaN kept a quiet NaN: the CPU backend's
/// encoding (CpuBackend's bf16FromBits, Numerics' roundTo), so both store the same bits.
MLPERF_HD inline uint16_t bf16Bits(float value) {
  uint32_t bits = floatBits(value);
  uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  uint32_t quietNan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quietNan : rounded);
}

MLPERF_HD inline float bf16Value(uint16_t bits) {
  return floatFromBits(static_cast<uint32_t>(bits) << 16);
}

/// `value` rounded to a floating-point storage type this code stores (f32 or bf16).
MLPERF_HD inline float roundToStorage(DType type, float value) {
  return type == DType::kBF16 ? bf16Value(bf16Bits(value)) : value;
}

/// A tensor in device (or, in host tests, host) memory in its storage type: f32, bf16 or an
/// fp8 format, elements read as floats and written rounded to nearest even (Numerics' roundTo
/// and encodings).
struct TypedPointer {
  void *data = nullptr;
  DType type = DType::kF32;

  MLPERF_HD float load(int64_t i) const {
    switch (type) {
    case DType::kBF16:
      return bf16Value(static_cast<const uint16_t *>(data)[i]);
    case DType::kF8E4M3FN:
      return static_cast<float>(decodeFp8Code(static_cast<const uint8_t *>(data)[i], 3, 7, false));
    case DType::kF8E5M2:
      return static_cast<float>(decodeFp8Code(static_cast<const uint8_t *>(data)[i], 2, 15, true));
    default:
      return static_cast<const float *>(data)[i];
    }
  }
  MLPERF_HD void store(int64_t i, float value) const {
    switch (type) {
    case DType::kBF16:
      static_cast<uint16_t *>(data)[i] = bf16Bits(value);
      break;
    case DType::kF8E4M3FN:
      static_cast<uint8_t *>(data)[i] =
          static_cast<uint8_t>(encodeFp8Code(true, roundToFormat(value, e4m3fnFormat())));
      break;
    case DType::kF8E5M2:
      static_cast<uint8_t *>(data)[i] =
          static_cast<uint8_t>(encodeFp8Code(false, roundToFormat(value, e5m2Format())));
      break;
    default:
      static_cast<float *>(data)[i] = value;
      break;
    }
  }
  /// A value computed in f64 rounded once to the storage type (Numerics' roundTo), never
  /// through f32 first: the random draws.
  MLPERF_HD void storeDouble(int64_t i, double value) const {
    switch (type) {
    case DType::kBF16:
      store(i, static_cast<float>(roundToFormat(value, bf16Format())));
      break;
    case DType::kF8E4M3FN:
      store(i, static_cast<float>(roundToFormat(value, e4m3fnFormat())));
      break;
    case DType::kF8E5M2:
      store(i, static_cast<float>(roundToFormat(value, e5m2Format())));
      break;
    default:
      store(i, static_cast<float>(value));
      break;
    }
  }
};

/// An integer tensor (token ids, labels, seeds, the step) in i32 or i64 storage, read as int64.
struct IntPointer {
  void *data = nullptr;
  bool wide = true; // i64

  MLPERF_HD int64_t load(int64_t i) const {
    return wide ? static_cast<const int64_t *>(data)[i]
                : static_cast<int64_t>(static_cast<const int32_t *>(data)[i]);
  }
  /// The plan's checks keep i32 results in range (dropout keys of a run's steps).
  MLPERF_HD void store(int64_t i, int64_t value) const {
    if (wide) {
      static_cast<int64_t *>(data)[i] = value;
    } else {
      static_cast<int32_t *>(data)[i] = static_cast<int32_t>(value);
    }
  }
};

// Element-wise ops: cpu::add, mul, scale, silu, siluGrad (runtime/cpu/Kernels.cpp).

MLPERF_HD inline float addElement(float a, float b) {
  return static_cast<float>(static_cast<double>(a) + b);
}
MLPERF_HD inline float mulElement(float a, float b) {
  return static_cast<float>(static_cast<double>(a) * b);
}
MLPERF_HD inline float scaleElement(float x, double factor) {
  return static_cast<float>(x * factor);
}
MLPERF_HD inline float siluElement(float x) {
  double v = x;
  return static_cast<float>(v / (1.0 + exp(-v)));
}
MLPERF_HD inline float siluGradElement(float x, float dy) {
  double v = x;
  double sigmoid = 1.0 / (1.0 + exp(-v));
  return static_cast<float>(dy * sigmoid * (1.0 + v * (1.0 - sigmoid)));
}

/// Fused SwiGLU as the CPU runs it (OpKernels' "swiglu"): silu(gate) rounded to the gate's
/// type, times up.
MLPERF_HD inline float swigluElement(float gate, float up, DType gateType) {
  float act = roundToStorage(gateType, siluElement(gate));
  return mulElement(act, up);
}

/// Its gradient with the unfused graph's roundings: up_grad = grad · a, and the gradient of a
/// (grad · up, rounded) through silu.
MLPERF_HD inline void swigluGradElement(float gate, float up, float grad, DType gateType,
                                        float &gateGrad, float &upGrad) {
  double v = gate, e = exp(-v);
  float act = roundToStorage(gateType, static_cast<float>(v / (1.0 + e)));
  double sigmoid = 1.0 / (1.0 + e);
  upGrad = mulElement(grad, act);
  float actGrad = roundToStorage(gateType, mulElement(grad, up));
  gateGrad = static_cast<float>(actGrad * sigmoid * (1.0 + v * (1.0 - sigmoid)));
}

/// One rotary pair (cpu::rope): the angle position·frequency in f32, cos and sin in f64.
MLPERF_HD inline void ropePair(float x1, float x2, int64_t position, float frequency, bool inverse,
                               float &y1, float &y2) {
  float angle = static_cast<float>(position) * frequency;
  double c = cos(static_cast<double>(angle));
  double s = sin(static_cast<double>(angle)) * (inverse ? -1.0 : 1.0);
  double a = x1, b = x2;
  y1 = static_cast<float>(a * c - b * s);
  y2 = static_cast<float>(b * c + a * s);
}

// Row kernels: one call per row, elements `stride` apart (cpu::rmsNorm, softmax, ...).

/// y = x / sqrt(mean(x²) + eps) · w over one row.
MLPERF_HD inline void rmsNormRow(TypedPointer x, TypedPointer w, TypedPointer y, int64_t row,
                                 int64_t dim, double eps) {
  double sumSquares = 0.0;
  for (int64_t i = 0; i < dim; ++i) {
    double v = x.load(row * dim + i);
    sumSquares += v * v;
  }
  double inverseRms = 1.0 / sqrt(sumSquares / dim + eps);
  for (int64_t i = 0; i < dim; ++i) {
    float v = x.load(row * dim + i);
    y.store(row * dim + i, static_cast<float>(v * inverseRms * w.load(i)));
  }
}

/// dx of one row; returns the row's inverse RMS (rmsNormGradColumn needs it for dw).
MLPERF_HD inline double rmsNormGradRow(TypedPointer x, TypedPointer w, TypedPointer dy,
                                       TypedPointer dx, int64_t row, int64_t dim, double eps) {
  double sumSquares = 0.0, dot = 0.0;
  for (int64_t i = 0; i < dim; ++i) {
    float v = x.load(row * dim + i);
    sumSquares += static_cast<double>(v) * v;
    dot += static_cast<double>(dy.load(row * dim + i)) * w.load(i) * v;
  }
  double r1 = 1.0 / sqrt(sumSquares / dim + eps);
  double correction = dot * r1 * r1 * r1 / dim;
  for (int64_t i = 0; i < dim; ++i) {
    float v = x.load(row * dim + i);
    float g = dy.load(row * dim + i);
    dx.store(row * dim + i, static_cast<float>(g * w.load(i) * r1 - v * correction));
  }
  return r1;
}

/// dw[column]: Σ over rows in order of dy·x·inverseRms(row).
MLPERF_HD inline float rmsNormGradColumn(TypedPointer x, TypedPointer dy, const double *inverseRms,
                                         int64_t column, int64_t rows, int64_t dim) {
  double sum = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    sum +=
        static_cast<double>(dy.load(r * dim + column)) * x.load(r * dim + column) * inverseRms[r];
  }
  return static_cast<float>(sum);
}

/// Softmax of the row starting at `base` with `n` entries `stride` apart; false (writing
/// nothing) when the row has no finite entry.
MLPERF_HD inline bool softmaxRow(TypedPointer x, TypedPointer y, int64_t base, int64_t n,
                                 int64_t stride, float *logSumExp = nullptr) {
  double maximum = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    double v = x.load(base + j * stride);
    maximum = v > maximum ? v : maximum; // std::max keeps the first of equal (and NaN-free) values
  }
  if (!(maximum - maximum == 0.0)) { // -inf (every entry masked) or NaN: no finite entry
    return false;
  }
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    double v = x.load(base + j * stride);
    sum += v == -INFINITY ? 0.0 : exp(v - maximum);
  }
  // The row may be y itself: each entry is read before it is written.
  for (int64_t j = 0; j < n; ++j) {
    double v = x.load(base + j * stride);
    double e = v == -INFINITY ? 0.0 : exp(v - maximum);
    y.store(base + j * stride, static_cast<float>(e / sum));
  }
  if (logSumExp) {
    *logSumExp = static_cast<float>(maximum + log(sum));
  }
  return true;
}

/// dx = y · (dy − Σ dy·y) along one row.
MLPERF_HD inline void softmaxGradRow(TypedPointer y, TypedPointer dy, TypedPointer dx, int64_t base,
                                     int64_t n, int64_t stride) {
  double dot = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    dot += static_cast<double>(y.load(base + j * stride)) * dy.load(base + j * stride);
  }
  for (int64_t j = 0; j < n; ++j) {
    float yj = y.load(base + j * stride), gj = dy.load(base + j * stride);
    dx.store(base + j * stride, static_cast<float>(yj * (gj - dot)));
  }
}

/// dx[o, j, i] = Σ_r dy[o, j·times + r, i], summed in r order in f64.
MLPERF_HD inline float repeatGradElement(TypedPointer dy, int64_t o, int64_t j, int64_t i,
                                         int64_t n, int64_t inner, int64_t times) {
  double sum = 0.0;
  for (int64_t r = 0; r < times; ++r) {
    sum += dy.load((o * n * times + j * times + r) * inner + i);
  }
  return static_cast<float>(sum);
}

/// A loss op's label and weight of token t (OpKernels' lossInputs): with `ignoreIndex`, a token
/// whose label equals it has label 0 and weight 0; otherwise its mask entry (1 without a mask).
struct LossToken {
  int64_t label;
  double weight;
};
MLPERF_HD inline LossToken lossToken(IntPointer labels, TypedPointer mask, bool hasIgnore,
                                     int64_t ignoreIndex, int64_t t) {
  int64_t label = labels.load(t);
  double weight = mask.data ? static_cast<double>(mask.load(t)) : 1.0;
  if (hasIgnore && label == ignoreIndex) {
    return {0, 0.0};
  }
  return {label, weight};
}

/// max and Σ exp(x − max) of one row of logits (cpu::rowMaxAndExpSum).
struct RowStats {
  double maximum, sum;
};
MLPERF_HD inline RowStats rowMaxAndExpSum(TypedPointer logits, int64_t row, int64_t vocab) {
  double maximum = -INFINITY;
  for (int64_t v = 0; v < vocab; ++v) {
    double x = logits.load(row * vocab + v);
    maximum = maximum < x ? x : maximum;
  }
  double sum = 0.0;
  for (int64_t v = 0; v < vocab; ++v) {
    sum += exp(logits.load(row * vocab + v) - maximum);
  }
  return {maximum, sum};
}

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_ELEMENTMATH_CUH
