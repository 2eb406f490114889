//===- Philox.h - Philox4x32-10, one implementation for CPU and GPU -*- C++ -*-===//
//
// Salmon et al., SC'11: a counter-based generator, so the value for a given (key, counter) is
// the same on every backend, rank and sharding. The CPU's draws (Numerics.h: philoxNormal,
// philoxUniform, dropoutKeeps) and the CUDA kernels' call these functions.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_PHILOX_H
#define MLPERFC_RUNTIME_CPU_PHILOX_H

#include "runtime/support/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace mlperf::rt {

struct PhiloxWords {
  uint32_t w[4];
};

/// The ten rounds on `counter` under `key`.
MLPERF_HD inline PhiloxWords philox4x32Rounds(PhiloxWords counter, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t product0 = static_cast<uint64_t>(kMul0) * counter.w[0];
    uint64_t product1 = static_cast<uint64_t>(kMul1) * counter.w[2];
    uint32_t hi0 = static_cast<uint32_t>(product0 >> 32), lo0 = static_cast<uint32_t>(product0);
    uint32_t hi1 = static_cast<uint32_t>(product1 >> 32), lo1 = static_cast<uint32_t>(product1);
    counter = {{hi1 ^ counter.w[1] ^ key0, lo1, hi0 ^ counter.w[3] ^ key1, lo0}};
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return counter;
}

/// The words of element `index` of stream `streamId` in draw `counter` under `seed`: counter
/// (index, index >> 32, streamId, counter), key (seed, seed >> 32).
MLPERF_HD inline PhiloxWords philoxDraw(uint64_t seed, uint32_t streamId, uint64_t index,
                                        uint32_t counter) {
  return philox4x32Rounds(
      {{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), streamId, counter}},
      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

/// A word as a uniform in (0, 1): (w + 0.5) / 2^32, never 0 or 1.
MLPERF_HD inline double philoxUnit(uint32_t word) {
  return (static_cast<double>(word) + 0.5) / 4294967296.0;
}

/// Box-Muller on the first two words of counter 0 (Numerics.h, philoxNormal).
MLPERF_HD inline double philoxNormalDraw(uint64_t seed, uint32_t streamId, uint64_t index) {
  PhiloxWords bits = philoxDraw(seed, streamId, index, 0);
  double u1 = philoxUnit(bits.w[0]), u2 = philoxUnit(bits.w[1]);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_CPU_PHILOX_H
