//===- PlanLiveness.h - Live bytes of a plan program ------------*- C++ -*-===//
//
// When each activation buffer of a plan program is alive, from its commands in one order:
// plan-memory places buffers by these ranges, and plan-schedule bounds the bytes alive at once
// while it reorders commands. No MLIR: commands are runtime/plan/StreamOrder.h's, whose byte
// ranges name the buffer (the root of a view) they touch.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_TRANSFORMS_PLANLIVENESS_H
#define MLPERFC_COMPILER_TRANSFORMS_PLANLIVENESS_H

#include "compiler/Analysis/MemoryPlan.h"
#include "runtime/plan/StreamOrder.h"

#include <cstdint>
#include <vector>

namespace mlperf {

/// Plan buffers start at multiples of 256 bytes (docs/plan-format.md): `bytes` rounded up.
constexpr int64_t kPlanBufferAlignment = 256;
inline int64_t alignedPlanBytes(int64_t bytes) {
  return (bytes + kPlanBufferAlignment - 1) / kPlanBufferAlignment * kPlanBufferAlignment;
}

/// One activation buffer's range over command positions.
struct BufferLife {
  uint32_t buffer = 0;
  LiveRange range;
};

/// The live range of every buffer with `bytes[buffer] > 0` that `commands` (in program order,
/// `order` their StreamOrder analysis) touch: from the first command using it to the last.
/// A command on the communication stream keeps its buffers alive over every compute-stream
/// command that may run meanwhile (its window); the compute-stream command's own buffers
/// need no such extension, since the communication command's range then covers it.
std::vector<BufferLife> liveRanges(rt::StreamCommands commands, const rt::StreamOrder &order,
                                   const std::vector<int64_t> &bytes);

/// The most bytes alive at one command; a command with `calleeBytes[i] > 0` (a call) adds
/// its callee's most.
int64_t peakLiveBytes(const std::vector<BufferLife> &lives,
                      const std::vector<int64_t> &calleeBytes);

/// Bytes alive at each command, not counting callees.
std::vector<int64_t> liveBytesAt(const std::vector<BufferLife> &lives, size_t commands);

} // namespace mlperf

#endif // MLPERFC_COMPILER_TRANSFORMS_PLANLIVENESS_H
