//===- Backend.h - Where a plan's programs run -----------------*- C++ -*-===//
//
// The executor drives a plan through this interface; the CPU backend (runtime/cpu) implements
// it now and the CUDA backend slots in behind the same calls. A backend owns the arenas and
// moves tensors in and out of plan buffers by id; the plan must be validated (PlanLoader) and
// outlive the backend.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_EXEC_BACKEND_H
#define MLPERFC_RUNTIME_EXEC_BACKEND_H

#include "runtime/cpu/HostTensor.h"
#include "runtime/cpu/OpKernels.h"
#include "runtime/dist/Communicator.h"
#include "runtime/plan.pb.h"
#include "runtime/support/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace mlperf::rt {

class Backend {
public:
  virtual ~Backend() = default;
  virtual const char *name() const = 0;
  /// Prepare stage: allocates the plan's arenas (zero-filled); collective commands run through
  /// `communicator`, which must outlive the backend.
  virtual Status prepare(const plan::Plan &plan, Communicator &communicator) = 0;
  /// Runs program `index` of the plan, its commands in order (a `call` runs the callee
  /// inline), and returns once its sends have completed.
  virtual Status execute(int index) = 0;
  /// Copies `value` into buffer `id` (rounded to the buffer's dtype); dtype class and shape
  /// must match the buffer's.
  virtual Status write(uint32_t id, const HostTensor &value) = 0;
  /// Copies buffer `id` out.
  virtual Status read(uint32_t id, HostTensor &value) const = 0;

  /// Where the time of the programs run since the last reset went, in seconds: commands of
  /// the compute stream, commands of the communication stream (collectives, transfers), and
  /// the exposed communication: time the compute stream waited for the communication stream
  /// (an event, or the end of its commands before a call). A backend that does not measure
  /// reports zeros.
  struct StreamTimes {
    double compute = 0, communication = 0, exposedCommunication = 0;
  };
  virtual StreamTimes streamTimes() const { return {}; }
  virtual void resetStreamTimes() {}

  /// With tracing on, every command run since the last resetStreamTimes, timed from that
  /// reset (mlperf-run --trace): program and command index, stream, start and duration.
  struct CommandSpan {
    int program = 0, command = 0;
    uint32_t stream = 0;
    double start = 0, seconds = 0;
  };
  virtual void traceCommands(bool on) {}
  virtual std::vector<CommandSpan> commandSpans() const { return {}; }
};

/// The runtime element type of a plan dtype.
DType fromPlanDType(plan::DType dtype);

/// What a backend may be told besides the plan.
struct BackendOptions {
  /// cuda: time cuBLASLt's candidates for each GEMM at prepare and keep the choices in this
  /// file, reused by later runs (runtime/cuda/GemmAlgorithmCache.h); empty: cuBLASLt's first
  /// heuristic choice, untimed.
  std::string gemmAlgorithmCache;
  /// cuda: run tg.attention and its gradient through cuDNN's fused SDPA where cuDNN takes them
  /// (bf16, libcudnn.so.9 loadable); false: always the backend's own kernel.
  bool cudnnAttention = true;
};

/// "cpu" (the reference backend) or "cuda" (runtime/cuda, when this build has it; without a
/// usable GPU it says why). Options a backend does not use are refused by name.
Status createBackend(const std::string &name, std::unique_ptr<Backend> &backend,
                     const BackendOptions &options = {});

/// The CPU reference backend: every command through runtime/cpu/OpKernels.
std::unique_ptr<Backend> createCpuBackend();

/// Whether this build has the CUDA backend (configured with a CUDA toolkit).
bool cudaBackendBuilt();

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_EXEC_BACKEND_H
