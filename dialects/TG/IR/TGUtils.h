//===- TGUtils.h - Small helpers shared by tg and its clients --*- C++ -*-===//

#ifndef MLPERFC_DIALECTS_TG_IR_TGUTILS_H
#define MLPERFC_DIALECTS_TG_IR_TGUTILS_H

#include "runtime/support/NumberFormat.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace mlperf::tg {

/// The shortest decimal that reads back as exactly `value` ("0.001", "-0.1", "1e-05",
/// "0.00080000001"). With `mlirLiteral`, always contains a '.' so MLIR parses it as a float
/// ("1.0e-05", "3.0").
inline std::string formatNumber(double value, bool mlirLiteral = false) {
  std::string text = rt::shortestDecimal(value);
  if (mlirLiteral && std::isfinite(value) && text.find('.') == std::string::npos) {
    size_t exponent = text.find_first_of("eE");
    text.insert(exponent == std::string::npos ? text.size() : exponent, ".0");
  }
  return text;
}

inline bool isFinitePositive(double value) { return std::isfinite(value) && value > 0.0; }

/// The number of elements of `shape`, or nullopt if it does not fit in int64.
inline std::optional<int64_t> checkedNumElements(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    std::optional<int64_t> next = llvm::checkedMul(count, dim);
    if (!next) {
      return std::nullopt;
    }
    count = *next;
  }
  return count;
}

} // namespace mlperf::tg

#endif // MLPERFC_DIALECTS_TG_IR_TGUTILS_H
