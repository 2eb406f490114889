//===- Numerics.cpp - Element types, rounding and Philox --------*- C++ -*-===//

#include "runtime/cpu/Numerics.h"

#include "runtime/cpu/Philox.h"
#include "runtime/cpu/Rounding.h"

#include "runtime/cpu/ThreadPool.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace mlperf::rt {

double roundTo(DType type, double value) {
  switch (type) {
  case DType::kF32:
    return static_cast<double>(static_cast<float>(value));
  case DType::kBF16:
    // Round to float first only if exact; rounding twice (double -> float -> bf16) could
    // double-round, so round the double directly.
    return roundToFormat(value, bf16Format());
  case DType::kF8E4M3FN:
    return roundToFormat(value, e4m3fnFormat());
  case DType::kF8E5M2:
    return roundToFormat(value, e5m2Format());
  case DType::kI32:
  case DType::kI64:
  case DType::kF64:
    return value;
  }
  return value;
}

double fp8MaxFinite(DType type) {
  switch (type) {
  case DType::kF8E4M3FN:
    return e4m3fnFormat().maxFinite;
  case DType::kF8E5M2:
    return e5m2Format().maxFinite;
  default:
    return 0.0;
  }
}

float quantizeFp8(DType type, float value, float scale) {
  float product = value * scale; // rounded once to f32, as the GPU computes it
  if (std::isnan(product)) {
    return product;
  }
  // Clamping before rounding saturates: every value beyond the largest finite one (which is
  // a format value) rounds to it or overflows, and the clamp picks it.
  auto limit = static_cast<float>(fp8MaxFinite(type));
  product = std::min(std::max(product, -limit), limit);
  return roundFloatToFp8(type, product);
}

namespace {

/// Every code's value, per format: decoding is a table lookup.
const std::array<double, 256> &fp8Values(DType type) {
  static const auto tables = [] {
    std::array<std::array<double, 256>, 2> t;
    for (uint32_t bits = 0; bits < 256; ++bits) {
      t[0][bits] = decodeFp8Code(bits, 3, 7, /*ieeeSpecials=*/false);
      t[1][bits] = decodeFp8Code(bits, 2, 15, /*ieeeSpecials=*/true);
    }
    return t;
  }();
  return tables[type == DType::kF8E4M3FN ? 0 : 1];
}

} // namespace

uint32_t encodeBits(DType type, double value) {
  switch (type) {
  case DType::kF32:
  case DType::kBF16: {
    float f = static_cast<float>(value);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    return type == DType::kF32 ? bits : bits >> 16;
  }
  case DType::kF8E4M3FN:
  case DType::kF8E5M2:
    return encodeFp8Code(type == DType::kF8E4M3FN, value);
  case DType::kI32:
  case DType::kI64:
    return static_cast<uint32_t>(static_cast<int64_t>(value));
  case DType::kF64: // eight bytes: not a 32-bit code (BufferCodec copies them)
    break;
  }
  return 0;
}

double decodeBits(DType type, uint32_t bits) {
  switch (type) {
  case DType::kF32:
  case DType::kBF16: {
    uint32_t full = type == DType::kF32 ? bits : bits << 16;
    float f;
    std::memcpy(&f, &full, sizeof(f));
    return f;
  }
  case DType::kF8E4M3FN:
  case DType::kF8E5M2:
    return fp8Values(type)[bits & 0xff];
  case DType::kI32:
  case DType::kI64:
    return static_cast<double>(static_cast<int32_t>(bits));
  case DType::kF64:
    break;
  }
  return 0;
}

namespace {
using AliasedU32 = uint32_t __attribute__((may_alias));

/// bf16 rounding of float words [begin, end), branch-free (NaN stays NaN by a select) so the
/// loop vectorizes; compiled for AVX2 and baseline x86-64, chosen at load time.
__attribute__((target_clones("avx2", "default"))) void roundBf16Range(AliasedU32 *words,
                                                                      int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    uint32_t bits = words[i];
    uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
    words[i] = (bits & 0x7FFFFFFFu) > 0x7F800000u ? bits : rounded;
  }
}
} // namespace

float roundFloatToFp8(DType type, float value) {
  bool e4m3 = type == DType::kF8E4M3FN;
  float magnitude = std::fabs(value);
  if (!(magnitude <= std::numeric_limits<float>::max())) { // NaN or infinity
    return std::isnan(value) || e4m3 ? std::numeric_limits<float>::quiet_NaN() : value;
  }
  // Below the smallest normal the quantum is fixed (2^-9, 2^-16): adding 2^(quantum + 23)
  // rounds to a multiple of it, ties to even, exactly (the sum's ulp is the quantum).
  float minNormal = e4m3 ? 0x1p-6f : 0x1p-14f;
  float rounded;
  if (magnitude < minNormal) {
    float shifter = e4m3 ? 0x1p14f : 0x1p7f;
    rounded = (magnitude + shifter) - shifter;
  } else {
    // Normal: round the float's mantissa to 3 (2) bits, ties to even; a carry moves into the
    // exponent as it should.
    uint32_t bits;
    std::memcpy(&bits, &magnitude, sizeof(bits));
    int shift = e4m3 ? 20 : 21;
    bits += ((1u << (shift - 1)) - 1) + ((bits >> shift) & 1u);
    bits &= ~((1u << shift) - 1);
    std::memcpy(&rounded, &bits, sizeof(rounded));
    if (rounded > (e4m3 ? 448.0f : 57344.0f)) {
      return e4m3 ? std::numeric_limits<float>::quiet_NaN()
                  : std::copysign(std::numeric_limits<float>::infinity(), value);
    }
  }
  return std::copysign(rounded, value);
}

void roundBuffer(DType type, float *data, int64_t count) {
  if (type == DType::kF32 || type == DType::kF64 || !isFloat(type)) {
    return; // f64 tensors keep their doubles elsewhere (HostTensor::wide)
  }
  if (type == DType::kBF16) {
    // A float holds its value exactly, and bf16 is its upper half: round to nearest even at
    // bit 16 of the encoding. The same result as roundTo for every float (subnormals and
    // overflow to infinity included: NumericsTest compares them), at a fraction of the cost.
    auto *words = reinterpret_cast<AliasedU32 *>(data);
    cpu::parallelChunks(count, int64_t{1} << 16,
                        [&](int64_t begin, int64_t end) { roundBf16Range(words, begin, end); });
    return;
  }
  if (type == DType::kF8E4M3FN || type == DType::kF8E5M2) {
    cpu::parallelChunks(count, int64_t{1} << 15, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        data[i] = roundFloatToFp8(type, data[i]);
      }
    });
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    data[i] = static_cast<float>(roundTo(type, data[i]));
  }
}

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key) {
  PhiloxWords words =
      philox4x32Rounds({{counter[0], counter[1], counter[2], counter[3]}}, key[0], key[1]);
  return {words.w[0], words.w[1], words.w[2], words.w[3]};
}

double philoxNormal(uint64_t seed, uint32_t streamId, uint64_t index) {
  return philoxNormalDraw(seed, streamId, index);
}

double philoxUniform(uint64_t seed, uint32_t streamId, uint64_t index) {
  return philoxUnit(philoxDraw(seed, streamId, index, 0).w[0]);
}

bool dropoutKeeps(uint64_t seed, uint32_t counter, uint32_t streamId, uint64_t index,
                  uint64_t threshold) {
  return philoxDraw(seed, streamId, index, counter).w[0] >= threshold;
}

uint64_t dropoutThreshold(double rate) {
  return static_cast<uint64_t>(std::floor(rate * 4294967296.0));
}

int64_t fullIndexOfPart(const std::vector<int64_t> &local, int64_t dim, int64_t parts, int64_t part,
                        int64_t index, const std::vector<int64_t> &blocks) {
  if (parts <= 1) {
    return index;
  }
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(dim) + 1; d < local.size(); ++d) {
    inner *= local[d];
  }
  int64_t rows = local[dim];
  int64_t outer = index / (rows * inner), row = (index / inner) % rows, column = index % inner;
  // The row of the full dim: the block this local row falls in, then its slice of the block.
  int64_t fullRow = part * rows + row;
  int64_t blockStart = 0, localStart = 0;
  for (int64_t block : blocks) {
    int64_t localRows = block / parts;
    if (row < localStart + localRows) {
      fullRow = blockStart + part * localRows + (row - localStart);
      break;
    }
    blockStart += block;
    localStart += localRows;
  }
  return (outer * rows * parts + fullRow) * inner + column;
}

} // namespace mlperf::rt
