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
// Device figures live in one table (StepTime.cpp) with their sources; `--calibrate FILE`
// replaces them by measured microbenchmarks (docs/cost-model.md: the file format).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_ANALYSIS_STEPTIME_H
#define MLPERFC_COMPILER_ANALYSIS_STEPTIME_H

#include "runtime/dist/Mesh.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mlperf {

namespace plan {
class Plan;
class Command;
} // namespace plan

/// A measured speed: `work` (FLOPs, or bytes moved) done in `seconds`.
struct SpeedPoint {
  double work = 0, seconds = 0;
};

struct DeviceSpeed {
  std::string name;   // "h100", "cpu"
  std::string source; // where the figures come from (printed with every prediction)
  /// Dense peak FLOP/s by element type of the GEMM operands.
  double peakBf16 = 0, peakFp8 = 0, peakF32 = 0;
  /// The fraction of peak a large GEMM reaches, and the dim size below which a GEMM loses
  /// efficiency as d / (d + knee) per dim (tile quantization, too few waves).
  double gemmEfficiency = 0, gemmKnee = 0;
  double fp8GemmEfficiency = 0; // the same for fp8 operands
  /// Fused attention forward and backward: fraction of the bf16 peak.
  double attentionEfficiency = 0;
  /// Bytes per second memory-bound kernels reach, and each command's fixed cost (a kernel
  /// launch inside a CUDA graph; a command's dispatch on the CPU backend).
  double memoryBandwidth = 0, commandSeconds = 0;
  /// Collective bus bandwidth per GPU (bytes/s) inside a node (NVLink) and across nodes
  /// (the GPU's share of InfiniBand), the latency of one ring or tree step on each, and the
  /// fixed cost of a collective (launch, synchronization).
  double intraNodeBandwidth = 0, interNodeBandwidth = 0;
  double intraNodeLatency = 0, interNodeLatency = 0, collectiveSeconds = 0;
  /// Measured points that replace the curves above when given (--calibrate): GEMM FLOPs
  /// by operand type, fused attention FLOPs, bytes of memory-bound commands; sorted by work.
  std::vector<SpeedPoint> gemmBf16, gemmF32, gemmFp8, attention, memory;
  /// Per op (kind "op" in the file): the bytes of a command's distinct buffers against its
  /// measured seconds, used for that op instead of the memory-bound curve.
  std::map<std::string, std::vector<SpeedPoint>> ops;
};

/// The built-in devices: h100, h200, b200 (datasheets and published measurements) and
/// cpu (this project's CPU backend on a 2-core machine). `names` lists them for errors.
rt::Status builtinDeviceSpeed(std::string_view name, DeviceSpeed &speed);
std::string builtinDeviceNames();

/// Replaces `speed`'s figures by the measurements in a calibration file (JSON: the format
/// in docs/cost-model.md, written by `mlperf-run --calibrate-out` and the device check).
rt::Status loadCalibration(const std::string &path, DeviceSpeed &speed);
/// The same from the file's text (tests, fuzzing).
rt::Status parseCalibration(std::string_view json, DeviceSpeed &speed);

/// What a command is, for the breakdown.
enum class CostKind { kNone, kGemm, kAttention, kMemory, kCollective, kTransfer };

struct CommandCost {
  CostKind kind = CostKind::kNone;
  double seconds = 0;
  double flops = 0; // GEMM and attention FLOPs
  double bytes = 0; // bytes moved (memory-bound commands, collectives and transfers)
  rt::MeshAxis axis = rt::MeshAxis::kDP; // collectives and transfers
};

/// The cost of one command of `plan` (not a call) on one rank of pipeline stage `stage`.
CommandCost commandCost(const plan::Plan &plan, const plan::Command &command,
                        const DeviceSpeed &speed, const rt::MeshShape &mesh, int64_t stage);

/// The time of one collective of `bytes` (the full tensor: what all-reduce reduces,
/// reduce-scatter reads, all-gather writes) over the group along `axis` of a rank of stage
/// `stage`: the faster of ring and (all-reduce across nodes) tree, as NCCL chooses.
struct CollectiveTime {
  double seconds = 0;
  const char *algorithm = "ring";
  int64_t ranks = 1, nodes = 1;
};
CollectiveTime collectiveTime(std::string_view op, double bytes, rt::MeshAxis axis,
                              const rt::MeshShape &mesh, int64_t stage, const DeviceSpeed &speed);

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
  double step = 0;               // the stage's train_step, start to end
  double compute = 0;            // compute-stream commands that are not recomputation
  double recompute = 0;          // tg-recompute's copies
  double exposed[3] = {0, 0, 0}; // per rt::MeshAxis: compute stream waiting for collectives
  double bubble = 0;             // waiting for pipeline transfers (the schedule's bubble)
  double communication = 0;      // busy time of the communication stream (overlapped or not)
  double flops = 0;              // GEMM and attention FLOPs the rank executes (recompute included)
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
