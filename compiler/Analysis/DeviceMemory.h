//===- DeviceMemory.h - What one rank's plan needs of its device -*- C++ -*-===//
//
// The compile-time memory model: a device's capacity, the memory a rank needs besides the
// plan's arenas (CUDA context, library workspaces, NCCL buffers, slack), each a named number
// in one table with its source, and a placed plan's per-rank peak against it.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_ANALYSIS_DEVICEMEMORY_H
#define MLPERFC_COMPILER_ANALYSIS_DEVICEMEMORY_H

#include "runtime/dist/Mesh.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlperf {

namespace plan_ir {
class PlanOp;
} // namespace plan_ir

struct DeviceMemory {
  std::string name;          // "h100", or the NAME of NAME=SIZE
  int64_t capacityBytes = 0; // device memory as the CUDA runtime reports its total
  /// What a fit should leave free (--memory-headroom): auto recompute aims for a peak of at
  /// most capacity - headroom; a plan within capacity but with less free still compiles, with a
  /// warning. The reserves are estimates: this is their margin of error.
  int64_t headroomBytes = 0;
  int64_t targetBytes() const { return capacityBytes - headroomBytes; }
};

/// The default --memory-headroom: 1 GiB, the spread of what the reserves estimate (the CUDA
/// context is 0.5-1 GiB by driver and module loading; NCCL sizes its buffers at run time by
/// channels and NCCL_BUFFSIZE; cuDNN versions other than 9.19 may ask for another workspace).
constexpr int64_t kDefaultMemoryHeadroomBytes = int64_t{1} << 30;

/// `--memory-headroom`: SIZE with a unit (as parseByteSize), `N%` of `capacityBytes`, or `0`.
rt::Status parseMemoryHeadroom(std::string_view text, int64_t capacityBytes,
                               int64_t &headroomBytes);

/// `h100`, `h200`, `b200`, or `NAME=SIZE` with SIZE a positive number and a unit: B, KiB,
/// MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000), e.g. `mygpu=80GiB`.
rt::Status parseDevice(std::string_view text, DeviceMemory &device);

/// A positive SIZE with one of those units ("40GiB"); none if it is not one.
std::optional<int64_t> parseByteSize(std::string_view size);

/// Device memory a rank uses outside the plan's arenas.
struct MemoryReserve {
  std::string what;
  int64_t bytes = 0;
};

/// The CUDA backend's scratch for `plan`: as much as its largest user needs (cuDNN's attention
/// backward workspace, the own attention kernel, the fused loss, fp8_matmul's f32 copies; the
/// formulas of runtime/cuda/Reserves.h), named after that command's kernel.
MemoryReserve backendScratch(plan_ir::PlanOp plan);

/// The reserves of one rank of `mesh` running `plan` (one NCCL communicator per mesh axis
/// longer than 1; the backend's scratch).
std::vector<MemoryReserve> rankReserves(plan_ir::PlanOp plan, const rt::MeshShape &mesh);

/// One rank's memory in a placed plan.
struct RankMemory {
  int64_t parameters = 0, gradients = 0, optimizerState = 0; // inside the persistent arena
  int64_t persistentArena = 0, activationArena = 0;
  int64_t reserves = 0;                   // rankReserves' sum
  std::vector<MemoryReserve> reserveList; // rankReserves, by name
  int64_t peak() const { return persistentArena + activationArena + reserves; }
};

/// The arenas of a plan placed by plan-memory and the reserves of a rank of `mesh`.
RankMemory rankMemory(plan_ir::PlanOp plan, const rt::MeshShape &mesh);

} // namespace mlperf

#endif // MLPERFC_COMPILER_ANALYSIS_DEVICEMEMORY_H
