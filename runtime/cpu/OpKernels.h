//===- OpKernels.h - One tg/plan op on host tensors ------------*- C++ -*-===//
//
// The single dispatch from an op name and its attributes to the CPU kernels. The tg
// interpreter (compiler side) and the CPU plan backend (runtime side) both run ops through
// `runHostOp`, so the reference numbers and the backend's numbers come from one code path.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_OPKERNELS_H
#define MLPERFC_RUNTIME_CPU_OPKERNELS_H

#include "runtime/cpu/HostTensor.h"
#include "runtime/plan/OpAttributes.h"
#include "runtime/support/Status.h"

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mlperf::rt {

/// The labels and loss mask a loss op (cross_entropy, linear_cross_entropy and their
/// gradients) computes with: as given, or, with the `ignore_index` attribute, with every token
/// whose label equals it given label 0 and mask 0 (multiplied into `mask` when there is one).
struct LossInputs {
  const int64_t *labels = nullptr;
  const float *mask = nullptr;
  std::vector<int64_t> ownLabels; // the storage when ignore_index applies
  std::vector<float> ownMask;
};
void lossInputs(const OpAttributes &attributes, const HostTensor &labels, const float *mask,
                LossInputs &out);

/// Runs `op` on `operands`, writing `results`, which arrive as zero tensors of the result
/// dtypes and shapes; every floating-point result is rounded to its dtype. Fails with a
/// message naming the problem on a bad token/label id, an all-masked softmax row, an unknown
/// op or a missing attribute. Shapes are trusted: callers check them (verifier, plan loader).
Status runHostOp(std::string_view op, const OpAttributes &attributes,
                 const std::vector<const HostTensor *> &operands, std::vector<HostTensor> &results);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_CPU_OPKERNELS_H
