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
#include "runtime/support/Status.h"

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mlperf::rt {

/// An op attribute: integer (and unit/bool as 1), float, string or integer list.
using OpAttributeValue = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

class OpAttributes {
public:
  void set(std::string name, OpAttributeValue value) {
    entries.emplace_back(std::move(name), std::move(value));
  }
  bool has(std::string_view name) const { return find(name) != nullptr; }
  /// Typed lookups; a missing or mistyped attribute is reported by `runHostOp`.
  const int64_t *getInt(std::string_view name) const;
  const double *getFloat(std::string_view name) const;
  const std::vector<int64_t> *getInts(std::string_view name) const;
  const std::string *getString(std::string_view name) const;

private:
  const OpAttributeValue *find(std::string_view name) const;
  std::vector<std::pair<std::string, OpAttributeValue>> entries;
};

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
