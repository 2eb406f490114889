//===- StepTime.h - What one training step of a plan costs ------*- C++ -*-===//
//
// The step-time model: a time for every command of a placed plan from a device model
// (peak FLOP/s per precision with an achievable fraction per GEMM shape and kernel class,
// memory bandwidth, per-command overhead; an alpha-beta model per collective algorithm over
// NVLink or InfiniBand by the group's layout over nodes), and a simulation of the plan's
// streams, events, calls and pipeline transfers across its stages. It gives the step time,
// where it went (compute, recompute, exposed communication per mesh axis, pipeline bubble)
// and, on request, the simulated timeline. The plan is what the runtime replays, so the
// prediction sees exactly the overlap plan-schedule created and the order the pipeline runs.
//
// Device figures: DeviceSpeed.h (one table with their sources, calibration files); each
// command's time: CommandCost.h; this file simulates the plan's streams with them.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_ANALYSIS_STEPTIME_H
#define MLPERFC_COMPILER_ANALYSIS_STEPTIME_H

#include "compiler/Analysis/CommandCost.h"
#include "compiler/Analysis/DeviceSpeed.h"

#include "runtime/dist/Mesh.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mlperf {

/// One simulated command, for timelines.
struct TimelineEvent {
  int64_t stage = 0;
  uint32_t stream = 0;
  double start = 0, seconds = 0;
  std::string name;    // the op, with its origin: "matmul llama31_8b.mlir:41"
  std::string program; // the program it belongs to
  int64_t microBatch = -1;
};

/// Where one pipeline stage's step went, as seen from its compute stream: the parts add up
/// to the step time.
struct StageTime {
  double step = 0;      // the stage's train_step, start to end
  double compute = 0;   // compute-stream commands that are not recomputation
  double recompute = 0; // tg-recompute's copies
  // Per rt::MeshAxis (indexed by its value): the compute stream waiting for its collectives.
  double exposed[std::size(rt::kMeshAxes)] = {};
  double bubble = 0;        // waiting for pipeline transfers (the schedule's bubble)
  double communication = 0; // busy time of the communication stream (overlapped or not)
  double flops = 0;         // GEMM and attention FLOPs the rank executes (recompute included)
  /// The part of `compute` spent in GEMMs and attention: a function of the shapes alone, the
  /// same for every strategy with the rank's tensor parallelism and micro-batch.
  double gemm = 0;

  double exposedOn(rt::MeshAxis axis) const { return exposed[static_cast<int>(axis)]; }
  /// Over the data-parallel ranks: dp, and hybrid sharding's dp_shard and dp_replicate.
  double exposedDataParallel() const {
    return exposedOn(rt::MeshAxis::kDP) + exposedOn(rt::MeshAxis::kDPShard) +
           exposedOn(rt::MeshAxis::kDPReplicate);
  }
  double exposedTotal() const {
    return exposedDataParallel() + exposedOn(rt::MeshAxis::kTP) + exposedOn(rt::MeshAxis::kPP);
  }
};

struct StepPrediction {
  double stepSeconds = 0; // the slowest stage
  std::vector<StageTime> stages;
  size_t criticalStage = 0;
  std::vector<TimelineEvent> timeline; // with `withTimeline`
};

/// Simulates `train_step` (or `program`) of every stage's plan together (one plan per
/// pipeline stage, in stage order; one plan without pipelining). Receives wait for the
/// matching send of the neighbouring stage; a plan whose transfers cannot complete is an
/// error naming the stuck command.
rt::Status predictStep(const std::vector<const plan::Plan *> &stages, const DeviceSpeed &speed,
                       StepPrediction &prediction, bool withTimeline = false,
                       std::string_view program = "train_step");

} // namespace mlperf

#endif // MLPERFC_COMPILER_ANALYSIS_STEPTIME_H
