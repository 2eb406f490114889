//===- Calibration.h - Measure a backend for the step-time model -*- C++ -*-===//
//
// `mlperf-run --calibrate-out FILE` times the backend's own commands on small synthetic plans
// (GEMMs of several shapes in bf16 and f32, fused attention forward and backward, memory-bound
// adds, an empty command) and writes what it measured as a calibration file (JSON, format
// mlperfc-calibration-1, docs/cost-model.md) that `mlperfc predict --calibrate` reads. The
// runtime knows no model: these are plan commands like any other.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_EXEC_CALIBRATION_H
#define MLPERFC_RUNTIME_EXEC_CALIBRATION_H

#include "runtime/support/Status.h"

#include <functional>
#include <string>
#include <vector>

namespace mlperf::plan {
class Plan;
} // namespace mlperf::plan

namespace mlperf::rt {

/// Measures `backend` ("cpu") and returns the calibration file's text; `progress` is told
/// each measurement as it finishes. With `samplePlans`, also the commands those plans run:
/// for every op, up to four of its commands of different sizes, each timed alone on fresh
/// zero-filled buffers of its shapes and with its attributes (entries of kind "op": the op,
/// the bytes of its distinct buffers, the seconds; matmuls as "gemm").
Status calibrateBackend(const std::string &backend,
                        const std::vector<const plan::Plan *> &samplePlans, std::string &json,
                        const std::function<void(const std::string &)> &progress = nullptr);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_EXEC_CALIBRATION_H
