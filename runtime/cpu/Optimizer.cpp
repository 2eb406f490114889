//===- Optimizer.cpp - LR schedule, clipping and AdamW on the CPU -*- C++ -*-===//

#include "runtime/cpu/Optimizer.h"

#include "runtime/cpu/ThreadPool.h"

#include <cmath>

namespace mlperf::rt::cpu {

double sumOfSquares(const float *grad, int64_t count) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    sum += static_cast<double>(grad[i]) * grad[i];
  }
  return sum;
}

void adamwUpdate(float *master, float *m, float *v, const float *grad, int64_t count, float lr,
                 float clip, int64_t step, const AdamWHyper &h) {
  const AdamWStep constants = adamwStep(h.beta1, h.beta2, h.epsilon, h.weightDecay, step);
  parallelChunks(count, int64_t{1} << 15, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      adamwElement(master[i], m[i], v[i], grad[i], lr, clip, constants);
    }
  });
}

} // namespace mlperf::rt::cpu
