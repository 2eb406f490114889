//===- DTypes.h - The element types of the plan ABI -----------------*- C++ -*-===//
//
// One table of element types for the compiler, the plan and every backend: the name each
// spells it with (MLIR's, the plan dialect's, logs'), the value plan.proto gives it, its
// safetensors name, its storage bytes and whether it is a floating-point type. Everything
// that maps a type to another spelling reads this table (runtime/plan/DTypes.cpp), so a new
// type is one row.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_PLAN_DTYPES_H
#define MLPERFC_RUNTIME_PLAN_DTYPES_H

#include <cstdint>
#include <string>
#include <string_view>

namespace mlperf::rt {

/// kF64 holds the few values whose sums must not round to f32 (a vocabulary-split loss's
/// per-token sums of exponentials, reduced over ranks as the unsplit kernel sums them).
enum class DType : uint8_t { kF32, kBF16, kF8E4M3FN, kF8E5M2, kI32, kI64, kF64 };

struct DTypeInfo {
  DType type;
  /// plan.proto's `DType` value (PlanLoader.cpp checks the two agree at compile time).
  int planCode;
  /// MLIR's spelling ("f32", "bf16", "f8E4M3FN", ...).
  const char *name;
  /// The safetensors header's ("F32", "BF16", "F8_E4M3", ...).
  const char *safetensorsName;
  /// Bytes per element in storage (what a plan or GPU buffer of this type occupies).
  int64_t bytes;
  bool isFloat;
};

const DTypeInfo &dtypeInfo(DType type);
/// The row whose `name` / `planCode` / `safetensorsName` is the given one, or nullptr.
const DTypeInfo *dtypeNamed(std::string_view name);
const DTypeInfo *dtypeWithPlanCode(int planCode);
const DTypeInfo *dtypeWithSafetensorsName(std::string_view name);

/// Every name of the table, for messages: "f32, bf16, ..., i64 or f64".
std::string dtypeNameList();

inline const char *dtypeName(DType type) { return dtypeInfo(type).name; }
/// The type dtypeName names, or false.
bool dtypeFromName(std::string_view name, DType &type);
inline int64_t dtypeBytes(DType type) { return dtypeInfo(type).bytes; }
inline bool isFloat(DType type) { return dtypeInfo(type).isFloat; }

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_PLAN_DTYPES_H
