//===- MLLog.cpp - MLPerf compliance logs ----------------------*- C++ -*-===//

#include "runtime/mllog/MLLog.h"

#include "runtime/support/FileOutput.h"
#include "runtime/support/NumberFormat.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string_view>
#include <unistd.h>

namespace mlperf::rt {
namespace {} // namespace

MLLogger::~MLLogger() {
  if (ownsStream && stream) {
    std::fclose(stream);
  }
}

Status MLLogger::open(const std::string &path) {
  if (ownsStream && stream) {
    std::fclose(stream);
  }
  stream = nullptr;
  ownsStream = false;
  writeFailed = false;
  if (path == "-") {
    stream = stdout;
    return Status::ok();
  }
  stream = std::fopen(path.c_str(), "w");
  if (!stream) {
    return Status(StatusCode::kNotFound,
                  "cannot create MLPerf log " + path + ": " + std::strerror(errno));
  }
  ownsStream = true;
  return Status::ok();
}

std::string MLLogger::encode(const MLLogValue &value) {
  if (std::holds_alternative<std::monostate>(value)) {
    return "null";
  }
  if (const bool *b = std::get_if<bool>(&value)) {
    return *b ? "true" : "false";
  }
  if (const int64_t *i = std::get_if<int64_t>(&value)) {
    return std::to_string(*i);
  }
  if (const double *d = std::get_if<double>(&value)) {
    if (std::isnan(*d)) {
      return "NaN"; // what Python's json module reads back
    }
    if (std::isinf(*d)) {
      return *d > 0 ? "Infinity" : "-Infinity";
    }
    std::string text = shortestDecimal(*d);
    if (text.find_first_of(".eE") == std::string::npos) {
      text += ".0"; // stays a float in Python
    }
    return text;
  }
  return jsonQuote(std::get<std::string>(value));
}

/// `file` (a __FILE__) relative to the source tree, or its last component when it is not
/// under it: a log names no directory of the machine that built the tool.
static std::string_view sourceRelative(std::string_view file) {
#ifdef MLPERFC_SOURCE_DIR
  constexpr std::string_view kSourceDir = MLPERFC_SOURCE_DIR;
  if (file.substr(0, kSourceDir.size()) == kSourceDir) {
    return file.substr(kSourceDir.size());
  }
#endif
  size_t slash = file.find_last_of('/');
  return slash == std::string_view::npos ? file : file.substr(slash + 1);
}

void MLLogger::log(MLLogEvent event, const std::string &key, const MLLogValue &value,
                   const MLLogMetadata &metadata, const char *file, int line) {
  if (!stream) {
    return;
  }
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  const char *type = event == MLLogEvent::kPoint           ? "POINT_IN_TIME"
                     : event == MLLogEvent::kIntervalStart ? "INTERVAL_START"
                                                           : "INTERVAL_END";
  std::string text = ":::MLLOG {\"namespace\": \"\", \"time_ms\": " + std::to_string(now) +
                     ", \"event_type\": \"" + type + "\", \"key\": " + jsonQuote(key) +
                     ", \"value\": " + encode(value) +
                     ", \"metadata\": {\"file\": " + jsonQuote(std::string(sourceRelative(file))) +
                     ", \"lineno\": " + std::to_string(line);
  for (const auto &[name, entry] : metadata) {
    text += ", " + jsonQuote(name) + ": " + encode(entry);
  }
  text += "}}\n";
  if (writeFailed) {
    return; // the log is already invalid; keep it ending with its last whole line
  }
  long whole = ownsStream ? std::ftell(stream) : -1; // where the last complete line ends
  if (std::fputs(text.c_str(), stream) < 0 || std::fflush(stream) != 0) {
    writeFailed = true; // a lost compliance line invalidates the run: callers check status()
    writeError = std::strerror(errno);
    // A full disk may have taken part of the line: cut the file back to whole lines, so a
    // checker reads every line as JSON.
    if (whole >= 0) {
      std::clearerr(stream);
      if (::ftruncate(::fileno(stream), whole) != 0) {
        writeError += " (and the partial line could not be removed)";
      }
    }
  }
}

} // namespace mlperf::rt
