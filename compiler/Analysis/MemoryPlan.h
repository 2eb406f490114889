//===- MemoryPlan.h - Static arena offsets for a function ------*- C++ -*-===//
//
// Liveness of every value a function computes, and a static offset for each in one arena such
// that values live at the same time never overlap. This is the core of plan-memory: the plan's
// activation buffers are these values.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_ANALYSIS_MEMORYPLAN_H
#define MLPERFC_COMPILER_ANALYSIS_MEMORYPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <vector>

namespace mlperf {

/// Bytes of a ranked tensor's storage (elements packed, bf16 = 2 bytes) rounded up to
/// `alignment`: a buffer's size as memory planning places it.
int64_t storageBytes(mlir::Type type, int64_t alignment = 256);

struct PlannedBuffer {
  mlir::Value value;    // the value that owns the buffer (aliases share it)
  int64_t bytes = 0;    // storage size, rounded up to the alignment
  int64_t firstUse = 0; // index of the defining op
  int64_t lastUse = 0;  // index of the last op reading it (or of the return)
  int64_t offset = 0;   // byte offset in the arena
};

struct MemoryPlan {
  std::vector<PlannedBuffer> buffers;
  int64_t arenaBytes = 0;
  /// The most bytes live at any point of the op order: no assignment can use less.
  int64_t lowerBoundBytes = 0;
};

/// A buffer's size and the positions (op or command indices) from its definition to its last
/// use; `offset` is what `assignOffsets` chose.
struct LiveRange {
  int64_t bytes = 0, firstUse = 0, lastUse = 0, offset = 0;
};

/// First fit in a global order costs the number of pairs of ranges alive together, which grows
/// with the square of the layers in a backward pass (saved activations overlap everything
/// after them). Up to this many pairs assignOffsets tries it as well as time order.
constexpr size_t kFirstFitPairLimit = size_t{1} << 20;

/// Static offsets such that ranges alive at the same position never overlap: best fit in time
/// order (O(n log n)) and, up to kFirstFitPairLimit overlapping pairs, first fit in two orders
/// (largest first, longest-lived first), keeping the smallest arena, whose size is returned.
/// `lowerBoundBytes` becomes the most bytes alive at one position, which no assignment can beat.
/// Shared by planFunctionMemory and the plan-memory pass.
int64_t assignOffsets(std::vector<LiveRange> &ranges, int64_t &lowerBoundBytes);

/// Bytes per buffer are the storage size of the value's type (bf16 = 2 bytes), aligned to
/// `alignment`. Excluded: function arguments and results (the caller's buffers: batch inputs,
/// gradients, parameters and optimizer state) and parameter reads (persistent memory). A reshape is
/// a view of its input: it shares the input's buffer, whose life extends to the view's last use.
MemoryPlan planFunctionMemory(mlir::func::FuncOp func, int64_t alignment = 256);

/// The activations a backward pass keeps from its forward: in a @forward_backward, the bytes
/// of the values computed up to the loss and read after it (parameters and inputs are not
/// activations; a view counts as its source). Each is charged to the layer of the last
/// per-layer parameter read before it was computed (the `layer` tg-inline-layers sets), or
/// to `otherBytes` (embedding, final norm, logits).
struct SavedActivations {
  int64_t layers = 0;        // layers with saved values
  int64_t bytesPerLayer = 0; // their mean
  int64_t otherBytes = 0;    // outside any layer
};

/// Empty (layers = 0) when `func` has no loss (tg.cross_entropy or tg.linear_cross_entropy).
SavedActivations savedForBackward(mlir::func::FuncOp func);

} // namespace mlperf

#endif // MLPERFC_COMPILER_ANALYSIS_MEMORYPLAN_H
