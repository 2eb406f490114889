//===- AttributeCodec.cpp - Plan attributes to kernel attributes -*- C++ -*-===//

#include "runtime/plan/AttributeCodec.h"

namespace mlperf::rt {

bool decodeAttribute(const plan::Attribute &attribute, OpAttributes &into) {
  switch (attribute.value_case()) {
  case plan::Attribute::kI:
    into.set(attribute.name(), attribute.i());
    return true;
  case plan::Attribute::kF:
    into.set(attribute.name(), attribute.f());
    return true;
  case plan::Attribute::kS:
    into.set(attribute.name(), attribute.s());
    return true;
  case plan::Attribute::kInts:
    into.set(attribute.name(), std::vector<int64_t>(attribute.ints().values().begin(),
                                                    attribute.ints().values().end()));
    return true;
  default:
    return false;
  }
}

OpAttributes commandAttributes(const plan::Command &command) {
  OpAttributes attributes;
  for (const plan::Attribute &attribute : command.attributes()) {
    decodeAttribute(attribute, attributes);
  }
  return attributes;
}

} // namespace mlperf::rt
