//===- CudaOps.h - Which plan ops the CUDA backend runs --------*- C++ -*-===//
//
// The CUDA backend's kernel table over every op of runtime/plan/PlanOps (a unit test fails
// when an op is added there without an entry here), and the checks its prepare step makes on
// each command before any kernel runs: an op without a CUDA kernel yet, a buffer type its
// kernel does not handle, or a result that shares bytes with an operand where the kernel would
// read what it already overwrote is refused by name, never run on the host inside a step.
// Plain C++: the tests run on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CUDA_CUDAOPS_H
#define MLPERFC_RUNTIME_CUDA_CUDAOPS_H

#include "runtime/plan.pb.h"

#include <string>
#include <string_view>
#include <vector>

namespace mlperf::rt::cuda {

/// One op of the plan format: whether the CUDA backend has its kernel, and otherwise which
/// part of the CUDA work brings it (named in the refusal).
struct CudaOpEntry {
  std::string_view op;
  bool hasKernel;
  std::string_view comesWith; // empty when hasKernel
};

/// The entry of `op`, or null for an op the table does not know.
const CudaOpEntry *findCudaOp(std::string_view op);
/// Every entry, in the plan op table's order.
std::vector<CudaOpEntry> cudaOpTable();

/// Why the CUDA backend cannot run command `command` of `plan`, or an empty string when it
/// can: the op has no kernel yet, a buffer's type is not one the kernel handles, or a result
/// overlaps an operand in a way the kernel does not allow.
std::string unsupportedReason(const plan::Plan &plan, const plan::Command &command);

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_CUDAOPS_H
