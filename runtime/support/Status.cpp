//===- Status.cpp - Error values for the runtime --------------*- C++ -*-===//

#include "runtime/support/Status.h"

namespace mlperf::rt {

const char *statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::kOk:
    return "OK";
  case StatusCode::kInvalidArgument:
    return "INVALID_ARGUMENT";
  case StatusCode::kNotFound:
    return "NOT_FOUND";
  case StatusCode::kUnavailable:
    return "UNAVAILABLE";
  case StatusCode::kInternal:
    return "INTERNAL";
  case StatusCode::kDataLoss:
    return "DATA_LOSS";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message, const char *file, int line)
    : code_(code), message_(std::move(message)) {
  if (file != nullptr) {
    where_ = std::string(file) + ":" + std::to_string(line);
  }
}

std::string Status::toString() const {
  if (isOk()) {
    return "OK";
  }
  std::string out = std::string(statusCodeName(code_)) + ": " + message_;
  if (!where_.empty()) {
    out += " [" + where_ + "]";
  }
  return out;
}

} // namespace mlperf::rt
