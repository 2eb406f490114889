//===- NumberFormat.h - Numbers as text that reads back exactly -*- C++ -*-===//

#ifndef MLPERFC_RUNTIME_SUPPORT_NUMBERFORMAT_H
#define MLPERFC_RUNTIME_SUPPORT_NUMBERFORMAT_H

#include <cstdio>
#include <cstdlib>
#include <string>

namespace mlperf::rt {

/// The shortest decimal that parses back to exactly `value` ("0.001", "1e-05",
/// "0.00080000001"): what users wrote, and what Python's float() reads as the same double.
inline std::string shortestDecimal(double value) {
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) {
      break;
    }
  }
  return buffer;
}

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_SUPPORT_NUMBERFORMAT_H
