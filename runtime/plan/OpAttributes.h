//===- OpAttributes.h - A command's attributes as kernels read them -*- C++ -*-===//
//
// The one decoded form of an op's attributes: the CPU kernels (runHostOp), the CUDA backend
// and the tg interpreter read these. Every producer goes through the plan's encoding
// (runtime/plan/AttributeCodec.h decodes a plan::Attribute; compiler/Plan/PlanEmit.h encodes
// an MLIR attribute), so a kernel sees the same values from a plan and from the IR.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_PLAN_OPATTRIBUTES_H
#define MLPERFC_RUNTIME_PLAN_OPATTRIBUTES_H

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace mlperf::rt {

/// An op attribute: integer (and unit/bool as 1), float, string or integer list.
using OpAttributeValue = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

class OpAttributes {
public:
  /// Appends; a lookup finds the first of a name (the plan loader refuses a command that
  /// names an attribute twice).
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

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_PLAN_OPATTRIBUTES_H
