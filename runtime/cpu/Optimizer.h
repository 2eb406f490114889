//===- Optimizer.h - LR schedule and clipping on the CPU --------*- C++ -*-===//
//
// The schedule and clipping math of the MLPerf LLM references (NeMo 2.1 / Megatron-Core),
// shared by the reference interpreter and both backends. The optimizers' updates are element
// programs the compiler writes (compiler/Support/OptimizerPrograms.h), not runtime code.
// docs/train-step.md states each formula and where it comes from.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_OPTIMIZER_H
#define MLPERFC_RUNTIME_CPU_OPTIMIZER_H

#include "runtime/support/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace mlperf::rt::cpu {

struct LRSchedule {
  double baseLr = 0, endLr = 0;
  int64_t warmupSteps = 0, maxSteps = 0;
};

/// Cosine with linear warmup at 0-based optimizer step `step`: step <= W: base (step+1)/(W+1);
/// W < step <= T: end + (base - end)(1 + cos(pi (step - W)/(T - W)))/2; after T: end.
MLPERF_HD inline double learningRate(const LRSchedule &s, int64_t step) {
  if (step <= s.warmupSteps) {
    return s.baseLr * static_cast<double>(step + 1) / static_cast<double>(s.warmupSteps + 1);
  }
  if (step > s.maxSteps) {
    return s.endLr;
  }
  double progress =
      static_cast<double>(step - s.warmupSteps) / static_cast<double>(s.maxSteps - s.warmupSteps);
  return s.endLr + (s.baseLr - s.endLr) * 0.5 * (1.0 + cos(3.14159265358979323846 * progress));
}

/// Σ g_i² of one gradient tensor, in double (for the global norm).
double sumOfSquares(const float *grad, int64_t count);

/// min(1, maxNorm / (norm + 1e-6)), the factor clip_grad_norm_ applies.
MLPERF_HD inline double clipCoefficient(double norm, double maxNorm) {
  double coefficient = maxNorm / (norm + 1e-6);
  return coefficient < 1.0 ? coefficient : 1.0;
}

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_OPTIMIZER_H
