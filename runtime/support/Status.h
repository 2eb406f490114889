//===- Status.h - Error values for the runtime ----------------*- C++ -*-===//
//
// The runtime reports every failure as a Status carrying a code, a message and the source
// location that detected it, so that a failed CUDA/NCCL/MPI call on rank 37 of a cluster still
// says where it happened. Library code never exits or aborts; tools decide.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_SUPPORT_STATUS_H
#define MLPERFC_RUNTIME_SUPPORT_STATUS_H

#include <string>
#include <utility>

namespace mlperf::rt {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument, // the caller passed something malformed (a plan, an option, a file)
  kNotFound,        // a file, device or symbol that should exist does not
  kUnavailable,     // a resource that may exist elsewhere is missing here (e.g. no GPU)
  kInternal,        // a library call failed (CUDA, NCCL, MPI, ...)
  kDataLoss,        // a file is truncated or corrupt
};

const char *statusCodeName(StatusCode code);

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message, const char *file = nullptr, int line = 0);

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }
  /// "file:line" of the check that produced the error, or empty.
  const std::string &where() const { return where_; }

  /// "INTERNAL: cudaMalloc(&p, n) failed: cudaErrorMemoryAllocation: out of memory
  /// [runtime/cuda/x.cpp:42]".
  std::string toString() const;

private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string where_;
};

} // namespace mlperf::rt

/// Propagates a non-ok Status to the caller.
#define MLPERF_RETURN_IF_ERROR(expr)                                                               \
  do {                                                                                             \
    ::mlperf::rt::Status mlperfStatus_ = (expr);                                                   \
    if (!mlperfStatus_.isOk()) {                                                                   \
      return mlperfStatus_;                                                                        \
    }                                                                                              \
  } while (false)

#endif // MLPERFC_RUNTIME_SUPPORT_STATUS_H
