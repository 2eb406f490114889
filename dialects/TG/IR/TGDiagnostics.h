//===- TGDiagnostics.h - Helpers for tg verifier messages ------*- C++ -*-===//

#ifndef MLPERFC_DIALECTS_TG_IR_TGDIAGNOSTICS_H
#define MLPERFC_DIALECTS_TG_IR_TGDIAGNOSTICS_H

#include <cstdio>
#include <string>

namespace mlperf::tg {

/// A number as a user wrote it ("0.001", "-0.1", "1e-05"), not as "%e" prints it: verifier
/// messages quote declared values back to the user.
inline std::string formatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

} // namespace mlperf::tg

#endif // MLPERFC_DIALECTS_TG_IR_TGDIAGNOSTICS_H
