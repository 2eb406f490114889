//===- DTypes.cpp - The element types of the plan ABI ---------------------===//

#include "runtime/plan/DTypes.h"

#include <iterator>

namespace mlperf::rt {
namespace {

// In DType's order (dtypeInfo indexes it).
constexpr DTypeInfo kDTypes[] = {
    {DType::kF32, 1, "f32", "F32", 4, true},
    {DType::kBF16, 2, "bf16", "BF16", 2, true},
    {DType::kF8E4M3FN, 3, "f8E4M3FN", "F8_E4M3", 1, true},
    {DType::kF8E5M2, 4, "f8E5M2", "F8_E5M2", 1, true},
    {DType::kI32, 5, "i32", "I32", 4, false},
    {DType::kI64, 6, "i64", "I64", 8, false},
    {DType::kF64, 7, "f64", "F64", 8, true},
};

constexpr bool inEnumOrder() {
  for (size_t i = 0; i < std::size(kDTypes); ++i) {
    if (static_cast<size_t>(kDTypes[i].type) != i) {
      return false;
    }
  }
  return true;
}
static_assert(inEnumOrder(), "kDTypes rows must follow DType's order");

template <typename Matches> const DTypeInfo *find(Matches matches) {
  for (const DTypeInfo &info : kDTypes) {
    if (matches(info)) {
      return &info;
    }
  }
  return nullptr;
}

} // namespace

const DTypeInfo &dtypeInfo(DType type) { return kDTypes[static_cast<size_t>(type)]; }

const DTypeInfo *dtypeNamed(std::string_view name) {
  return find([&](const DTypeInfo &info) { return name == info.name; });
}

const DTypeInfo *dtypeWithPlanCode(int planCode) {
  return find([&](const DTypeInfo &info) { return planCode == info.planCode; });
}

const DTypeInfo *dtypeWithSafetensorsName(std::string_view name) {
  return find([&](const DTypeInfo &info) { return name == info.safetensorsName; });
}

std::string dtypeNameList() {
  std::string list;
  for (size_t i = 0; i < std::size(kDTypes); ++i) {
    list += (i == 0 ? "" : i + 1 == std::size(kDTypes) ? " or " : ", ");
    list += kDTypes[i].name;
  }
  return list;
}

bool dtypeFromName(std::string_view name, DType &type) {
  const DTypeInfo *info = dtypeNamed(name);
  if (info) {
    type = info->type;
  }
  return info != nullptr;
}

} // namespace mlperf::rt
