//===- OpAttributes.cpp - A command's attributes as kernels read them -*- C++ -*-===//

#include "runtime/plan/OpAttributes.h"

namespace mlperf::rt {

const OpAttributeValue *OpAttributes::find(std::string_view name) const {
  for (const auto &[key, value] : entries) {
    if (key == name) {
      return &value;
    }
  }
  return nullptr;
}

const int64_t *OpAttributes::getInt(std::string_view name) const {
  const OpAttributeValue *value = find(name);
  return value ? std::get_if<int64_t>(value) : nullptr;
}

const double *OpAttributes::getFloat(std::string_view name) const {
  const OpAttributeValue *value = find(name);
  return value ? std::get_if<double>(value) : nullptr;
}

const std::vector<int64_t> *OpAttributes::getInts(std::string_view name) const {
  const OpAttributeValue *value = find(name);
  return value ? std::get_if<std::vector<int64_t>>(value) : nullptr;
}

const std::string *OpAttributes::getString(std::string_view name) const {
  const OpAttributeValue *value = find(name);
  return value ? std::get_if<std::string>(value) : nullptr;
}

} // namespace mlperf::rt
