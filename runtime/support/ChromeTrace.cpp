//===- ChromeTrace.cpp - Timelines as Chrome trace / Perfetto JSON -*- C++ -*-===//

#include "runtime/support/ChromeTrace.h"

#include "runtime/support/FileOutput.h"

#include <cstdio>

namespace mlperf::rt {

namespace {

std::string microseconds(double seconds) {
  char text[40];
  std::snprintf(text, sizeof text, "%.3f", seconds * 1e6);
  return text;
}

} // namespace

std::string chromeTraceJson(const Trace &trace) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{";
  bool first = true;
  for (const auto &[key, value] : trace.metadata) {
    out += (first ? "" : ",") + jsonQuote(key) + ":" + jsonQuote(value);
    first = false;
  }
  out += "},\"traceEvents\":[";
  first = true;
  auto separator = [&] {
    out += first ? "\n" : ",\n";
    first = false;
  };
  for (const auto &[process, name] : trace.processNames) {
    separator();
    out += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(process) +
           ",\"tid\":0,\"args\":{\"name\":" + jsonQuote(name) + "}}";
    separator();
    out += "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(process) +
           ",\"tid\":0,\"args\":{\"sort_index\":" + std::to_string(process) + "}}";
  }
  for (const auto &[key, name] : trace.threadNames) {
    separator();
    out += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(key.first) +
           ",\"tid\":" + std::to_string(key.second) + ",\"args\":{\"name\":" + jsonQuote(name) +
           "}}";
  }
  for (const TraceSpan &span : trace.spans) {
    separator();
    out += "{\"ph\":\"X\",\"name\":" + jsonQuote(span.name) +
           ",\"pid\":" + std::to_string(span.process) + ",\"tid\":" + std::to_string(span.thread) +
           ",\"ts\":" + microseconds(span.startSeconds) + ",\"dur\":" + microseconds(span.seconds);
    if (!span.args.empty()) {
      out += ",\"args\":{";
      bool firstArg = true;
      for (const auto &[key, value] : span.args) {
        out += (firstArg ? "" : ",") + jsonQuote(key) + ":" + jsonQuote(value);
        firstArg = false;
      }
      out += "}";
    }
    out += "}";
  }
  out += "\n]}\n";
  return out;
}

Status writeChromeTrace(const std::string &path, const Trace &trace) {
  std::string text = chromeTraceJson(trace);
  return writeFileAtomically(path, {text});
}

} // namespace mlperf::rt
