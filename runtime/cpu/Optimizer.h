//===- Optimizer.h - LR schedule, clipping and AdamW on the CPU -*- C++ -*-===//
//
// The optimizer math of the MLPerf LLM references (NeMo 2.1 / Megatron-Core / Transformer
// Engine), shared by the reference interpreter and the CPU backend. docs/train-step.md states
// each formula and where it comes from.
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

struct AdamWHyper {
  double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8, weightDecay = 0;
};

/// AdamW's per-step constants in f32: the hyperparameters and the bias corrections 1 − β^t,
/// computed in double and rounded once, as Transformer Engine's FusedAdam does.
struct AdamWStep {
  float beta1, beta2, epsilon, weightDecay, correction1, correction2;
};
MLPERF_HD inline AdamWStep adamwStep(double beta1, double beta2, double epsilon, double weightDecay,
                                     int64_t step) {
  const double t = static_cast<double>(step + 1);
  return {static_cast<float>(beta1),
          static_cast<float>(beta2),
          static_cast<float>(epsilon),
          static_cast<float>(weightDecay),
          static_cast<float>(1.0 - pow(beta1, t)),
          static_cast<float>(1.0 - pow(beta2, t))};
}

/// One element's AdamW update (f32 arithmetic, no contraction): the CPU's loop and the CUDA
/// kernel call this one function.
MLPERF_HD inline void adamwElement(float &master, float &m, float &v, float grad, float lr,
                                   float clip, const AdamWStep &s) {
  float g = grad * clip;
  m = s.beta1 * m + (1.0f - s.beta1) * g;
  v = s.beta2 * v + (1.0f - s.beta2) * g * g;
  float mHat = m / s.correction1;
  float vHat = v / s.correction2;
  master -= lr * (mHat / (sqrtf(vHat) + s.epsilon) + s.weightDecay * master);
}

/// One AdamW update in f32 arithmetic (FusedAdam adam_w_mode): g = grad · clip, t = step + 1,
/// m = β1 m + (1−β1) g, v = β2 v + (1−β2) g², master -= lr (m/(1−β1^t) / (sqrt(v/(1−β2^t)) + ε)
/// + wd · master). Updates master, m, v in place.
void adamwUpdate(float *master, float *m, float *v, const float *grad, int64_t count, float lr,
                 float clip, int64_t step, const AdamWHyper &hyper);

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_OPTIMIZER_H
