//===- FileOutput.h - Files written whole, and JSON text ---------*- C++ -*-===//
//
// Every file the project writes appears under its final name complete or not at all: it is
// written to "<path>.tmp.<pid>", flushed and fsync'ed, then renamed over `path`. And the one
// JSON string quoting the writers share (mllog lines, safetensors headers, traces).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_SUPPORT_FILEOUTPUT_H
#define MLPERFC_RUNTIME_SUPPORT_FILEOUTPUT_H

#include "runtime/support/Status.h"

#include <string>
#include <string_view>
#include <vector>

namespace mlperf::rt {

/// Writes the concatenation of `chunks` to `path` atomically; on failure nothing is left
/// under either name and the error names the path and the reason.
Status writeFileAtomically(const std::string &path, const std::vector<std::string_view> &chunks);

/// `text` as a JSON string: quotes, backslash, \n, \t and other control characters escaped.
std::string jsonQuote(std::string_view text);

/// A JSON number with round-trip precision; non-finite values as null.
std::string jsonNumber(double value);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_SUPPORT_FILEOUTPUT_H
