//===- Optimizer.h - LR schedule, clipping and AdamW on the CPU -*- C++ -*-===//
//
// The optimizer math of the MLPerf LLM references (NeMo 2.1 / Megatron-Core / Transformer
// Engine), shared by the reference interpreter and the CPU backend. docs/train-step.md states
// each formula and where it comes from.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_OPTIMIZER_H
#define MLPERFC_RUNTIME_CPU_OPTIMIZER_H

#include <cstdint>

namespace mlperf::rt::cpu {

struct LRSchedule {
  double baseLr = 0, endLr = 0;
  int64_t warmupSteps = 0, maxSteps = 0;
};

/// Cosine with linear warmup at 0-based optimizer step `step`: step <= W: base (step+1)/(W+1);
/// W < step <= T: end + (base - end)(1 + cos(pi (step - W)/(T - W)))/2; after T: end.
double learningRate(const LRSchedule &schedule, int64_t step);

/// Σ g_i² of one gradient tensor, in double (for the global norm).
double sumOfSquares(const float *grad, int64_t count);

/// min(1, maxNorm / (norm + 1e-6)), the factor clip_grad_norm_ applies.
double clipCoefficient(double norm, double maxNorm);

struct AdamWHyper {
  double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8, weightDecay = 0;
};

/// One AdamW update in f32 arithmetic (FusedAdam adam_w_mode): g = grad · clip, t = step + 1,
/// m = β1 m + (1−β1) g, v = β2 v + (1−β2) g², master -= lr (m/(1−β1^t) / (sqrt(v/(1−β2^t)) + ε)
/// + wd · master). Updates master, m, v in place.
void adamwUpdate(float *master, float *m, float *v, const float *grad, int64_t count, float lr,
                 float clip, int64_t step, const AdamWHyper &hyper);

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_OPTIMIZER_H
