//===- BufferCodec.cpp - Host tensors in and out of plan buffer bytes -----===//

#include "runtime/exec/BufferCodec.h"

#include "runtime/cpu/Numerics.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/exec/Backend.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace mlperf::rt {
namespace {

// Arena bytes seen as 16- and 32-bit words (GCC and clang: may_alias keeps the accesses
// defined; arena offsets are 256-byte aligned).
using AliasedU16 = uint16_t __attribute__((may_alias));
using AliasedU32 = uint32_t __attribute__((may_alias));

/// bf16 storage of a float (its bits) rounded to nearest even, NaN kept a quiet NaN: the hot
/// path of every bf16 buffer write (Numerics' roundTo/encodeBits go through double);
/// NumericsTest's golden data and the CpuBackend tests pin it to the same results. Without
/// branches, so that the loops below vectorize.
inline uint16_t bf16FromBits(uint32_t bits) {
  uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  uint32_t quietNan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quietNan : rounded);
}

/// The loops of encodeBf16 / decodeBf16, compiled for AVX2 as well as baseline x86-64 and
/// chosen at load time (bit operations: the same results either way).
__attribute__((target_clones("avx2", "default"))) void
encodeBf16Range(const AliasedU32 *source, AliasedU16 *target, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    target[i] = bf16FromBits(source[i]);
  }
}
__attribute__((target_clones("avx2", "default"))) void
decodeBf16Range(const AliasedU16 *source, AliasedU32 *target, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    target[i] = static_cast<uint32_t>(source[i]) << 16;
  }
}

/// Encodes floats to bf16 storage / decodes it (bf16 is the upper half of f32), on the pool
/// for large buffers.
void encodeBf16(const float *from, uint8_t *to, int64_t count) {
  const auto *source = reinterpret_cast<const AliasedU32 *>(from);
  auto *target = reinterpret_cast<AliasedU16 *>(to);
  cpu::parallelChunks(count, int64_t{1} << 16, [&](int64_t begin, int64_t end) {
    encodeBf16Range(source, target, begin, end);
  });
}
void decodeBf16(const uint8_t *from, float *to, int64_t count) {
  const auto *source = reinterpret_cast<const AliasedU16 *>(from);
  auto *target = reinterpret_cast<AliasedU32 *>(to);
  cpu::parallelChunks(count, int64_t{1} << 16, [&](int64_t begin, int64_t end) {
    decodeBf16Range(source, target, begin, end);
  });
}

} // namespace

Status encodeBuffer(const plan::Buffer &buffer, const HostTensor &value, uint8_t *bytes) {
  DType dtype = fromPlanDType(buffer.dtype());
  size_t stored = value.dtype == DType::kF64 ? value.wide.size()
                  : isFloat(value.dtype)     ? value.values.size()
                                             : value.ints.size();
  if (isFloat(dtype) != isFloat(value.dtype) ||
      (dtype == DType::kF64) != (value.dtype == DType::kF64) ||
      !std::equal(value.shape.begin(), value.shape.end(), buffer.shape().begin(),
                  buffer.shape().end()) ||
      stored != static_cast<size_t>(value.numElements())) {
    return Status(StatusCode::kInvalidArgument,
                  "buffer '" + buffer.name() + "' cannot hold " + value.describe());
  }
  int64_t count = value.numElements();
  switch (dtype) {
  case DType::kF32:
    cpu::copyInParallel(bytes, value.values.data(), 4 * count);
    break;
  case DType::kBF16:
    encodeBf16(value.values.data(), bytes, count);
    break;
  case DType::kF8E4M3FN:
  case DType::kF8E5M2:
    for (int64_t i = 0; i < count; ++i) {
      bytes[i] = static_cast<uint8_t>(encodeBits(dtype, roundTo(dtype, value.values[i])));
    }
    break;
  case DType::kI32:
    for (int64_t i = 0; i < count; ++i) {
      if (value.ints[i] < INT32_MIN || value.ints[i] > INT32_MAX) {
        return Status(StatusCode::kInvalidArgument,
                      "value " + std::to_string(value.ints[i]) + " at position " +
                          std::to_string(i) + " does not fit i32 buffer '" + buffer.name() + "'");
      }
      auto narrow = static_cast<int32_t>(value.ints[i]);
      std::memcpy(bytes + 4 * i, &narrow, 4);
    }
    break;
  case DType::kI64:
    std::memcpy(bytes, value.ints.data(), 8 * count);
    break;
  case DType::kF64:
    std::memcpy(bytes, value.wide.data(), 8 * count);
    break;
  }
  return Status::ok();
}

void decodeBuffer(const plan::Buffer &buffer, const uint8_t *bytes, HostTensor &value) {
  DType dtype = fromPlanDType(buffer.dtype());
  value.dtype = dtype;
  value.shape.assign(buffer.shape().begin(), buffer.shape().end());
  value.external = nullptr; // read into the tensor's own storage
  // Every element is overwritten below: keep storage of the right size (SpareStorage).
  if (dtype == DType::kF64) {
    value.wide.resize(value.numElements());
    value.values.clear();
    value.ints.clear();
  } else if (isFloat(dtype)) {
    value.values.resize(value.numElements());
    value.ints.clear();
  } else {
    value.ints.assign(value.numElements(), 0);
    value.values.clear();
  }
  int64_t count = value.numElements();
  switch (dtype) {
  case DType::kF32:
    cpu::copyInParallel(value.values.data(), bytes, 4 * count);
    break;
  case DType::kBF16:
    decodeBf16(bytes, value.values.data(), count);
    break;
  case DType::kF8E4M3FN:
  case DType::kF8E5M2:
    for (int64_t i = 0; i < count; ++i) {
      value.values[i] = static_cast<float>(decodeBits(dtype, bytes[i]));
    }
    break;
  case DType::kI32:
    for (int64_t i = 0; i < count; ++i) {
      int32_t narrow;
      std::memcpy(&narrow, bytes + 4 * i, 4);
      value.ints[i] = narrow;
    }
    break;
  case DType::kI64:
    std::memcpy(value.ints.data(), bytes, 8 * count);
    break;
  case DType::kF64:
    std::memcpy(value.wide.data(), bytes, 8 * count);
    break;
  }
}

} // namespace mlperf::rt
