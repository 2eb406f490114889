//===- OptimizerPrograms.h - Element programs of optimizer updates -*- C++ -*-===//
//
// The `elementwise` programs (runtime/plan/ElementwiseProgram.h) tg-optimizer writes for the
// optimizers that have no op of their own. One place: tg-optimizer writes them and the audit
// checks a plan's updates against them, so an edited update does not pass as the declared one.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_SUPPORT_OPTIMIZERPROGRAMS_H
#define MLPERFC_COMPILER_SUPPORT_OPTIMIZERPROGRAMS_H

#include <cstdio>
#include <string>

namespace mlperf {

/// Operand positions of an Adagrad update: (master, sum, grad, lr[, clip]) -> (sum', master').
namespace adagrad_operand {
constexpr int kMaster = 0, kSum = 1, kGrad = 2, kLr = 3, kClip = 4;
} // namespace adagrad_operand

/// One parameter's Adagrad update as torch.optim.Adagrad's single-tensor loop computes it in
/// f32: g = grad [· clip] [+ wd · master]; sum' = sum + g·g (addcmul_); master' = master +
/// (−lr · g) / (sqrt(sum') + ε) (addcdiv_ with value −lr, evaluated in that order).
inline std::string adagradProgram(bool clipped, double weightDecay, double epsilon) {
  auto constant = [](double value) { // 17 digits: the double itself, rounded to f32 once
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    return std::string(text);
  };
  std::string grad = clipped ? "a2 a4 *" : "a2";
  if (weightDecay != 0.0) {
    grad += " a0 " + constant(weightDecay) + " * +";
  }
  return "g = " + grad + "; s = a1 g g * +; r0 = s; r1 = a0 a3 neg g * s sqrt " +
         constant(epsilon) + " + / +";
}

} // namespace mlperf

#endif // MLPERFC_COMPILER_SUPPORT_OPTIMIZERPROGRAMS_H
