//===- MemoryPlan.cpp - Static arena offsets for a function ----*- C++ -*-===//

#include "compiler/Analysis/MemoryPlan.h"

#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace mlir;

namespace mlperf {
namespace {

int64_t storageBytes(Type type, int64_t alignment) {
  auto tensor = cast<RankedTensorType>(type);
  int64_t elementBits = tensor.getElementType().getIntOrFloatBitWidth();
  int64_t bytes = (tensor.getNumElements() * elementBits + 7) / 8;
  return (bytes + alignment - 1) / alignment * alignment;
}

/// First-fit placement in the given order: each buffer goes to the lowest offset that does
/// not overlap a placed buffer whose lifetime intersects its own. The placed buffers are kept
/// sorted by address, so finding the gap is one scan that stops at the first gap that fits
/// (no per-buffer sort of the busy intervals, which made compile time grow with the square
/// of the layers times a log).
int64_t place(std::vector<LiveRange> &buffers, const std::vector<size_t> &order) {
  std::vector<size_t> byAddress; // placed buffers by (offset, end)
  byAddress.reserve(order.size());
  auto addressLess = [&](size_t x, size_t y) {
    const LiveRange &a = buffers[x], &b = buffers[y];
    return a.offset != b.offset ? a.offset < b.offset : a.offset + a.bytes < b.offset + b.bytes;
  };
  int64_t arena = 0;
  for (size_t index : order) {
    LiveRange &buffer = buffers[index];
    int64_t offset = 0;
    for (size_t other : byAddress) {
      const LiveRange &b = buffers[other];
      if (b.firstUse > buffer.lastUse || buffer.firstUse > b.lastUse) {
        continue; // never live at the same time
      }
      if (offset + buffer.bytes <= b.offset) {
        break;
      }
      offset = std::max(offset, b.offset + b.bytes);
    }
    buffer.offset = offset;
    arena = std::max(arena, offset + buffer.bytes);
    byAddress.insert(std::upper_bound(byAddress.begin(), byAddress.end(), index, addressLess),
                     index);
  }
  return arena;
}

} // namespace

int64_t assignOffsets(std::vector<LiveRange> &ranges, int64_t &lowerBoundBytes) {
  lowerBoundBytes = 0;
  if (ranges.empty()) {
    return 0;
  }
  // Lower bound: the largest sum of sizes live at one position.
  int64_t positions = 0;
  for (const LiveRange &range : ranges) {
    positions = std::max(positions, range.lastUse + 1);
  }
  // A difference array: linear in ranges and positions, not in their product.
  std::vector<int64_t> change(positions + 1, 0);
  for (const LiveRange &range : ranges) {
    change[range.firstUse] += range.bytes;
    change[range.lastUse + 1] -= range.bytes;
  }
  int64_t live = 0;
  for (int64_t i = 0; i < positions; ++i) {
    live += change[i];
    lowerBoundBytes = std::max(lowerBoundBytes, live);
  }

  // Two greedy orders (largest first; longest-lived first), keeping the smaller arena.
  std::vector<size_t> bySize(ranges.size()), byLifetime;
  for (size_t i = 0; i < bySize.size(); ++i) {
    bySize[i] = i;
  }
  byLifetime = bySize;
  const auto &b = ranges;
  std::stable_sort(bySize.begin(), bySize.end(), [&](size_t x, size_t y) {
    return b[x].bytes != b[y].bytes ? b[x].bytes > b[y].bytes : b[x].firstUse < b[y].firstUse;
  });
  std::stable_sort(byLifetime.begin(), byLifetime.end(), [&](size_t x, size_t y) {
    int64_t lx = b[x].lastUse - b[x].firstUse, ly = b[y].lastUse - b[y].firstUse;
    return lx != ly ? lx > ly : b[x].bytes > b[y].bytes;
  });
  std::vector<LiveRange> first = ranges, second = ranges;
  int64_t arenaBySize = place(first, bySize);
  int64_t arenaByLifetime = place(second, byLifetime);
  ranges = arenaBySize <= arenaByLifetime ? std::move(first) : std::move(second);
  return std::min(arenaBySize, arenaByLifetime);
}

MemoryPlan planFunctionMemory(func::FuncOp func, int64_t alignment) {
  MemoryPlan plan;
  llvm::DenseMap<Value, size_t> bufferOf; // value -> index of its buffer
  Block &body = func.getBody().front();
  int64_t index = 0;
  for (Operation &op : body) {
    for (Value operand : op.getOperands()) {
      auto it = bufferOf.find(operand);
      if (it != bufferOf.end()) {
        plan.buffers[it->second].lastUse = index;
      }
    }
    if (isa<tg::ParamRefOp>(op)) {
      ++index;
      continue; // persistent parameter memory, not the activation arena
    }
    for (Value result : op.getResults()) {
      if (!isa<RankedTensorType>(result.getType())) {
        continue;
      }
      if (isa<tg::ReshapeOp>(op)) {
        auto it = bufferOf.find(op.getOperand(0));
        if (it != bufferOf.end()) {
          bufferOf[result] = it->second; // a view: same bytes
          continue;
        }
      }
      bufferOf[result] = plan.buffers.size();
      plan.buffers.push_back({result, storageBytes(result.getType(), alignment), index, index, 0});
    }
    ++index;
  }
  // What the function returns (gradients, new parameters and optimizer state) lives in the
  // caller's buffers, like its arguments: not in the activation arena.
  std::vector<bool> isOutput(plan.buffers.size(), false);
  for (Value returned : body.getTerminator()->getOperands()) {
    auto it = bufferOf.find(returned);
    if (it != bufferOf.end()) {
      isOutput[it->second] = true;
    }
  }
  std::vector<PlannedBuffer> temporaries;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    if (!isOutput[i]) {
      temporaries.push_back(plan.buffers[i]);
    }
  }
  plan.buffers = std::move(temporaries);
  if (plan.buffers.empty()) {
    return plan;
  }

  std::vector<LiveRange> ranges;
  for (const PlannedBuffer &buffer : plan.buffers) {
    ranges.push_back({buffer.bytes, buffer.firstUse, buffer.lastUse, 0});
  }
  plan.arenaBytes = assignOffsets(ranges, plan.lowerBoundBytes);
  for (size_t i = 0; i < ranges.size(); ++i) {
    plan.buffers[i].offset = ranges[i].offset;
  }
  return plan;
}

} // namespace mlperf
