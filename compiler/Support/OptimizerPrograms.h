//===- OptimizerPrograms.h - Element programs of optimizer updates -*- C++ -*-===//
//
// The `elementwise` programs (runtime/plan/ElementwiseProgram.h) tg-optimizer writes for the
// optimizers' updates: the runtime has no optimizer of its own. One place: tg-optimizer writes them
// and the audit checks a plan's updates against them, so an edited update does not pass as the
// declared one.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_SUPPORT_OPTIMIZERPROGRAMS_H
#define MLPERFC_COMPILER_SUPPORT_OPTIMIZERPROGRAMS_H

#include <cstdio>
#include <string>

namespace mlperf {

/// `value` as a constant of a program: 17 significant digits, the double itself, so the
/// runtime's parse gives it back exactly (and f32 arithmetic rounds it once).
inline std::string programConstant(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return std::string(text);
}

/// Operand positions of an AdamW update: (master, m, v, grad, lr, clip, 1 − β1^t, 1 − β2^t)
/// -> (master', m', v').
namespace adamw_operand {
constexpr int kMaster = 0, kExpAvg = 1, kExpAvgSq = 2, kGrad = 3, kLr = 4, kClip = 5,
              kCorrection1 = 6, kCorrection2 = 7;
} // namespace adamw_operand

/// AdamW's bias corrections of optimizer step `a0` (0-based, i64), in f64 arithmetic and
/// rounded once to f32, as Transformer Engine's FusedAdam computes them: t = step + 1,
/// (1 − β1^t, 1 − β2^t).
inline std::string adamwCorrectionsProgram(double beta1, double beta2) {
  return "t = a0 1 +; r0 = 1 " + programConstant(beta1) + " t pow -; r1 = 1 " +
         programConstant(beta2) + " t pow -";
}

/// One parameter's AdamW update in f32 arithmetic (FusedAdam adam_w_mode, no contraction):
/// g = grad · clip, m = β1 m + (1−β1) g, v = β2 v + ((1−β2) g) g,
/// master' = master − lr · ((m / c1) / (sqrt(v / c2) + ε) + wd · master), with β1, β2, ε, wd
/// and 1 − β rounded to f32 as the reference's kernel holds them.
inline std::string adamwProgram(double beta1, double beta2, double epsilon, double weightDecay) {
  auto f32 = [](double value) { return programConstant(static_cast<float>(value)); };
  std::string oneMinusBeta1 = programConstant(1.0f - static_cast<float>(beta1));
  std::string oneMinusBeta2 = programConstant(1.0f - static_cast<float>(beta2));
  return "g = a3 a5 *; m = " + f32(beta1) + " a1 * " + oneMinusBeta1 + " g * +; v = " + f32(beta2) +
         " a2 * " + oneMinusBeta2 + " g * g * +; r0 = a0 a4 m a6 / v a7 / sqrt " + f32(epsilon) +
         " + / " + f32(weightDecay) + " a0 * + * -; r1 = m; r2 = v";
}

/// Operand positions of an Adagrad update: (master, sum, grad, lr[, clip]) -> (sum', master').
namespace adagrad_operand {
constexpr int kMaster = 0, kSum = 1, kGrad = 2, kLr = 3, kClip = 4;
} // namespace adagrad_operand

/// One parameter's Adagrad update as torch.optim.Adagrad's single-tensor loop computes it in
/// f32: g = grad [· clip] [+ wd · master]; sum' = sum + g·g (addcmul_); master' = master +
/// (−lr · g) / (sqrt(sum') + ε) (addcdiv_ with value −lr, evaluated in that order).
inline std::string adagradProgram(bool clipped, double weightDecay, double epsilon) {
  auto constant = programConstant;
  std::string grad = clipped ? "a2 a4 *" : "a2";
  if (weightDecay != 0.0) {
    grad += " a0 " + constant(weightDecay) + " * +";
  }
  return "g = " + grad + "; s = a1 g g * +; r0 = s; r1 = a0 a3 neg g * s sqrt " +
         constant(epsilon) + " + / +";
}

} // namespace mlperf

#endif // MLPERFC_COMPILER_SUPPORT_OPTIMIZERPROGRAMS_H
