//===- Numerics.h - Element types, rounding and Philox ----------*- C++ -*-===//
//
// The CPU backend stores every tensor as float or double and emulates narrower types by
// rounding each op's result to the declared element type with round-to-nearest-even, so CPU
// runs predict GPU numerics bit for bit where the GPU also rounds once (shared/DESIGN.md).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_NUMERICS_H
#define MLPERFC_RUNTIME_CPU_NUMERICS_H

#include "runtime/plan/DTypes.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlperf::rt {

/// Rounds `value` to the nearest value representable in `type` (ties to even). f32 rounds a
/// double to float; bf16 and f8E5M2 overflow to ±infinity; f8E4M3FN has no infinity and
/// overflows to NaN (as ml_dtypes and the OCP fp8 spec do). NaN stays NaN.
double roundTo(DType type, double value);

/// roundTo for a float and an fp8 format, from the float's bits (what roundBuffer uses):
/// the same result for every float (NumericsTest compares them).
float roundFloatToFp8(DType type, float value);

/// The largest finite value of an fp8 format (448 for f8E4M3FN, 57344 for f8E5M2); 0 for
/// other types.
double fp8MaxFinite(DType type);

/// tg.fp8_quantize of one element: `value * scale` rounded to f32, then to `type` (an fp8
/// format) ties to even, saturating magnitudes beyond its largest finite value (infinities
/// included) to that value with their sign; NaN stays NaN.
float quantizeFp8(DType type, float value, float scale);

/// Storage encoding of a value already representable in `type` (bf16: the upper half of the
/// float bits; fp8: the OCP encodings) and its inverse. For f32 the float bits.
uint32_t encodeBits(DType type, double value);
double decodeBits(DType type, uint32_t bits);

/// In-place rounding of a buffer holding values of `type`.
void roundBuffer(DType type, float *data, int64_t count);

/// Philox4x32-10 (Salmon et al., SC'11): a counter-based generator, so the value for a given
/// (key, counter) is the same on every backend, rank and sharding.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

/// A standard normal draw for element `index` of the parameter identified by `streamId`,
/// under `seed` (Box-Muller on the first two Philox words of counter (index, index >> 32,
/// streamId, 0)).
double philoxNormal(uint64_t seed, uint32_t streamId, uint64_t index);

/// A uniform draw in (0, 1) for element `index` of stream `streamId` under `seed`: (w + 0.5) /
/// 2^32 of the first Philox word w of philoxNormal's counter.
double philoxUniform(uint64_t seed, uint32_t streamId, uint64_t index);

/// Whether dropout keeps element `index` (of the full tensor) of stream `streamId` in
/// micro-batch `counter` under `seed`: the first Philox word of counter (index, index >> 32,
/// streamId, counter), key (seed, seed >> 32), is at least floor(rate · 2^32).
bool dropoutKeeps(uint64_t seed, uint32_t counter, uint32_t streamId, uint64_t index,
                  uint64_t threshold);

/// floor(rate · 2^32): the threshold dropoutKeeps compares with.
uint64_t dropoutThreshold(double rate);

/// The flat index in the full tensor of element `index` of part `part` of a tensor split
/// into `parts` equal parts along `dim` (`local` is the part's shape). With `blocks` (full
/// sizes adding up to the dim, each a multiple of `parts`), the dim is the concatenation of
/// those blocks and each block is split on its own: the part holds the `part`-th slice of
/// every block, in block order (a fused q|k|v projection over tensor-parallel ranks).
int64_t fullIndexOfPart(const std::vector<int64_t> &local, int64_t dim, int64_t parts, int64_t part,
                        int64_t index, const std::vector<int64_t> &blocks = {});

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_CPU_NUMERICS_H
