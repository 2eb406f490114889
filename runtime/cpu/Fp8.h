//===- Fp8.h - fp8 scaling math on the CPU ----------------------*- C++ -*-===//
//
// The amax and delayed-scaling update of Transformer Engine's fp8 recipes (tg.amax,
// tg.fp8_scale_update; docs/dialects/tg.md), shared by the reference interpreter and the CPU
// backend. The scaled cast itself is quantizeFp8 (Numerics.h).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_FP8_H
#define MLPERFC_RUNTIME_CPU_FP8_H

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
/// `newHistory` (which may alias `history`).
void fp8ScaleUpdate(const float *history, int64_t length, float amax, float scale, double fp8Max,
                    double margin, AmaxAlgo algo, float *newHistory, float &newScale);

/// TE's compute_scale_from_amax for current scaling (epsilon 0, no power-of-two rounding):
/// 1 when `amax` is 0 or infinite, else f32(fp8Max) / amax, the largest float on overflow.
float fp8CurrentScale(float amax, double fp8Max);

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_FP8_H
