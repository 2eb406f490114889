//===- ChromeTrace.h - Timelines as Chrome trace / Perfetto JSON -*- C++ -*-===//
//
// One writer for the planned timeline (mlperfc predict --trace) and the measured one
// (mlperf-run --trace), so the two open side by side in chrome://tracing or ui.perfetto.dev
// with the same tracks: one process per rank (a pipeline stage's first rank in a
// prediction), one thread per stream, each command a complete ("X") event named by its op
// and the declaration line it came from.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_SUPPORT_CHROMETRACE_H
#define MLPERFC_RUNTIME_SUPPORT_CHROMETRACE_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlperf::rt {

struct TraceSpan {
  std::string name;
  int64_t process = 0; // the rank
  int64_t thread = 0;  // the stream
  double startSeconds = 0, seconds = 0;
  std::map<std::string, std::string> args; // shown when the span is selected
};

struct Trace {
  std::map<int64_t, std::string> processNames;                    // "rank 0 (stage 0)"
  std::map<std::pair<int64_t, int64_t>, std::string> threadNames; // "stream 0: compute"
  std::vector<TraceSpan> spans;
  /// Written as the trace's metadata ("otherData"): device, command line, step time.
  std::map<std::string, std::string> metadata;
};

/// The trace as JSON text (times in microseconds, as the format wants).
std::string chromeTraceJson(const Trace &trace);

/// Writes it to `path` atomically.
Status writeChromeTrace(const std::string &path, const Trace &trace);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_SUPPORT_CHROMETRACE_H
