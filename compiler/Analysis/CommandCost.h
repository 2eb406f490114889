//===- CommandCost.h - What one command of a plan costs ----------*- C++ -*-===//
//
// The time of one plan command on a device (DeviceSpeed.h): GEMMs and fused attention by
// their FLOPs at the device's rate for the shape, memory-bound commands by the bytes they
// touch, collectives by an alpha-beta model per algorithm (ring, NCCL's tree) over the
// group's layout across nodes, pipeline transfers over NVLink or InfiniBand. The simulator
// (StepTime.h) adds streams, events and calls.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_ANALYSIS_COMMANDCOST_H
#define MLPERFC_COMPILER_ANALYSIS_COMMANDCOST_H

#include "compiler/Analysis/DeviceSpeed.h"

#include "runtime/dist/Mesh.h"

#include <cstdint>
#include <string_view>

namespace mlperf {

namespace plan {
class Plan;
class Command;
} // namespace plan

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

} // namespace mlperf

#endif // MLPERFC_COMPILER_ANALYSIS_COMMANDCOST_H
