//===- MLLog.h - MLPerf compliance logs ------------------------*- C++ -*-===//
//
// Writes the `:::MLLOG {...}` lines the official checker (PyPI mlperf-logging) reads:
//   :::MLLOG {"namespace": "", "time_ms": <ms since epoch>, "event_type": "POINT_IN_TIME" |
//             "INTERVAL_START" | "INTERVAL_END", "key": ..., "value": ...,
//             "metadata": {"file": ..., "lineno": ..., ...}}
// Each line is flushed as it is written, so a crash leaves every event logged before it.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_MLLOG_MLLOG_H
#define MLPERFC_RUNTIME_MLLOG_MLLOG_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mlperf::rt {

/// A log value: null, bool, integer, float (written so Python reads the same double) or
/// string.
using MLLogValue = std::variant<std::monostate, bool, int64_t, double, std::string>;
using MLLogMetadata = std::vector<std::pair<std::string, MLLogValue>>;

enum class MLLogEvent { kPoint, kIntervalStart, kIntervalEnd };

class MLLogger {
public:
  MLLogger() = default;
  MLLogger(const MLLogger &) = delete;
  MLLogger &operator=(const MLLogger &) = delete;
  ~MLLogger();

  /// Creates (truncates) the log file; "-" writes to standard output.
  Status open(const std::string &path);

  /// One event. `file` and `line` name the code that logged it (MLPerf requires them for
  /// seeds and they help reviewers everywhere); use the MLLOG_* macros.
  void log(MLLogEvent event, const std::string &key, const MLLogValue &value,
           const MLLogMetadata &metadata, const char *file, int line);

  /// OK unless a line could not be written (full disk, closed pipe): a log missing lines is
  /// not a valid MLPerf log, so the run must report it.
  Status status() const {
    return writeFailed ? Status(StatusCode::kInternal,
                                "an MLPerf log line could not be written: " + writeError)
                       : Status::ok();
  }

  /// The JSON text of a value, as written in the log.
  static std::string encode(const MLLogValue &value);

private:
  std::FILE *stream = nullptr;
  bool ownsStream = false;
  bool writeFailed = false;
  std::string writeError; // the first failure's cause
};

} // namespace mlperf::rt

#define MLLOG_POINT(logger, key, value, ...)                                                       \
  (logger).log(::mlperf::rt::MLLogEvent::kPoint, (key), (value),                                   \
               ::mlperf::rt::MLLogMetadata{__VA_ARGS__}, __FILE__, __LINE__)
#define MLLOG_START(logger, key, value, ...)                                                       \
  (logger).log(::mlperf::rt::MLLogEvent::kIntervalStart, (key), (value),                           \
               ::mlperf::rt::MLLogMetadata{__VA_ARGS__}, __FILE__, __LINE__)
#define MLLOG_END(logger, key, value, ...)                                                         \
  (logger).log(::mlperf::rt::MLLogEvent::kIntervalEnd, (key), (value),                             \
               ::mlperf::rt::MLLogMetadata{__VA_ARGS__}, __FILE__, __LINE__)

#endif // MLPERFC_RUNTIME_MLLOG_MLLOG_H
