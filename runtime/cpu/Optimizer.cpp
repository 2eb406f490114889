//===- Optimizer.cpp - LR schedule, clipping and AdamW on the CPU -*- C++ -*-===//

#include "runtime/cpu/Optimizer.h"

#include "runtime/cpu/ThreadPool.h"

#include <cmath>

namespace mlperf::rt::cpu {

double learningRate(const LRSchedule &s, int64_t step) {
  if (step <= s.warmupSteps) {
    return s.baseLr * static_cast<double>(step + 1) / static_cast<double>(s.warmupSteps + 1);
  }
  if (step > s.maxSteps) {
    return s.endLr;
  }
  double progress =
      static_cast<double>(step - s.warmupSteps) / static_cast<double>(s.maxSteps - s.warmupSteps);
  return s.endLr + (s.baseLr - s.endLr) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

double sumOfSquares(const float *grad, int64_t count) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    sum += static_cast<double>(grad[i]) * grad[i];
  }
  return sum;
}

double clipCoefficient(double norm, double maxNorm) {
  double coefficient = maxNorm / (norm + 1e-6);
  return coefficient < 1.0 ? coefficient : 1.0;
}

void adamwUpdate(float *master, float *m, float *v, const float *grad, int64_t count, float lr,
                 float clip, int64_t step, const AdamWHyper &h) {
  const float beta1 = static_cast<float>(h.beta1), beta2 = static_cast<float>(h.beta2);
  const float epsilon = static_cast<float>(h.epsilon);
  const float weightDecay = static_cast<float>(h.weightDecay);
  // Bias corrections in double, rounded once, as Transformer Engine's FusedAdam computes them.
  const double t = static_cast<double>(step + 1);
  const float correction1 = static_cast<float>(1.0 - std::pow(h.beta1, t));
  const float correction2 = static_cast<float>(1.0 - std::pow(h.beta2, t));
  parallelChunks(count, int64_t{1} << 15, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float g = grad[i] * clip;
      m[i] = beta1 * m[i] + (1.0f - beta1) * g;
      v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
      float mHat = m[i] / correction1;
      float vHat = v[i] / correction2;
      master[i] -= lr * (mHat / (std::sqrt(vHat) + epsilon) + weightDecay * master[i]);
    }
  });
}

} // namespace mlperf::rt::cpu
