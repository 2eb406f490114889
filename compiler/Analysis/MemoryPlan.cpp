//===- MemoryPlan.cpp - Static arena offsets for a function ----*- C++ -*-===//

#include "compiler/Analysis/MemoryPlan.h"

#include "compiler/Analysis/ForwardBackward.h"

#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <queue>
#include <set>

using namespace mlir;

namespace mlperf {

int64_t storageBytes(Type type, int64_t alignment) {
  auto tensor = cast<RankedTensorType>(type);
  int64_t elementBits = tensor.getElementType().getIntOrFloatBitWidth();
  int64_t bytes = (tensor.getNumElements() * elementBits + 7) / 8;
  return (bytes + alignment - 1) / alignment * alignment;
}

namespace {

/// For each range, the ranges alive at a common position with it (adjacency lists in one
/// array). Empty when there are more than `pairLimit` such pairs.
struct Overlaps {
  std::vector<uint32_t> begin; // neighbours of range i: [begin[i], begin[i + 1])
  std::vector<uint32_t> neighbours;
};

bool findOverlaps(const std::vector<LiveRange> &ranges, size_t pairLimit, Overlaps &overlaps) {
  std::vector<uint32_t> byStart(ranges.size());
  for (size_t i = 0; i < byStart.size(); ++i) {
    byStart[i] = static_cast<uint32_t>(i);
  }
  std::stable_sort(byStart.begin(), byStart.end(),
                   [&](uint32_t x, uint32_t y) { return ranges[x].firstUse < ranges[y].firstUse; });
  // A sweep in start order: a range overlaps exactly the earlier-started ones still alive.
  // The live set as a min-heap on last use: the ones that end first come off first.
  using Live = std::pair<int64_t, uint32_t>; // (lastUse, range)
  std::vector<Live> alive;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t index : byStart) {
    while (!alive.empty() && alive.front().first < ranges[index].firstUse) {
      std::pop_heap(alive.begin(), alive.end(), std::greater<>());
      alive.pop_back();
    }
    if (pairs.size() + alive.size() > pairLimit) {
      return false;
    }
    for (const Live &other : alive) {
      pairs.push_back({index, other.second});
    }
    alive.push_back({ranges[index].lastUse, index});
    std::push_heap(alive.begin(), alive.end(), std::greater<>());
  }
  overlaps.begin.assign(ranges.size() + 1, 0);
  for (auto [x, y] : pairs) {
    ++overlaps.begin[x + 1];
    ++overlaps.begin[y + 1];
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    overlaps.begin[i + 1] += overlaps.begin[i];
  }
  overlaps.neighbours.resize(2 * pairs.size());
  std::vector<uint32_t> next(overlaps.begin.begin(), overlaps.begin.end() - 1);
  for (auto [x, y] : pairs) {
    overlaps.neighbours[next[x]++] = y;
    overlaps.neighbours[next[y]++] = x;
  }
  return true;
}

/// First-fit placement in the given order: each buffer goes to the lowest offset that does
/// not overlap a placed buffer whose lifetime intersects its own. The work is the sum over
/// buffers of their overlapping neighbours (sorted by address), bounded by findOverlaps.
int64_t placeFirstFit(std::vector<LiveRange> &buffers, const std::vector<size_t> &order,
                      const Overlaps &overlaps) {
  std::vector<bool> placed(buffers.size(), false);
  std::vector<std::pair<int64_t, int64_t>> busy; // [offset, end) of placed neighbours
  int64_t arena = 0;
  for (size_t index : order) {
    LiveRange &buffer = buffers[index];
    busy.clear();
    for (uint32_t k = overlaps.begin[index]; k < overlaps.begin[index + 1]; ++k) {
      const LiveRange &other = buffers[overlaps.neighbours[k]];
      if (placed[overlaps.neighbours[k]]) {
        busy.push_back({other.offset, other.offset + other.bytes});
      }
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (auto [start, end] : busy) {
      if (offset + buffer.bytes <= start) {
        break;
      }
      offset = std::max(offset, end);
    }
    buffer.offset = offset;
    placed[index] = true;
    arena = std::max(arena, offset + buffer.bytes);
  }
  return arena;
}

/// Placement in time order, as an allocator would do it while the program runs: at its first
/// use a buffer takes the smallest free gap it fits (best fit), else the top of the arena;
/// after its last use its bytes return to the free gaps, merged with free neighbours.
/// O(n log n): the free gaps are kept by address (to merge) and by size (to choose).
int64_t placeInTimeOrder(std::vector<LiveRange> &buffers) {
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return buffers[x].firstUse != buffers[y].firstUse ? buffers[x].firstUse < buffers[y].firstUse
                                                      : buffers[x].bytes > buffers[y].bytes;
  });
  std::map<int64_t, int64_t> gapsByOffset;          // offset -> bytes
  std::set<std::pair<int64_t, int64_t>> gapsBySize; // (bytes, offset)
  // Live buffers by last use, the one to free next on top.
  using Live = std::pair<int64_t, size_t>; // (lastUse, buffer)
  std::priority_queue<Live, std::vector<Live>, std::greater<Live>> live;
  int64_t top = 0, arena = 0; // top: the end of the highest byte in use or in a gap
  auto release = [&](const LiveRange &buffer) {
    int64_t offset = buffer.offset, bytes = buffer.bytes;
    auto next = gapsByOffset.lower_bound(offset);
    if (next != gapsByOffset.end() && next->first == offset + bytes) {
      bytes += next->second;
      gapsBySize.erase({next->second, next->first});
      next = gapsByOffset.erase(next);
    }
    if (next != gapsByOffset.begin()) {
      auto previous = std::prev(next);
      if (previous->first + previous->second == offset) {
        offset = previous->first;
        bytes += previous->second;
        gapsBySize.erase({previous->second, previous->first});
        gapsByOffset.erase(previous);
      }
    }
    if (offset + bytes == top) {
      top = offset; // the arena's top is free: it shrinks instead of keeping a gap
      return;
    }
    gapsByOffset[offset] = bytes;
    gapsBySize.insert({bytes, offset});
  };
  for (size_t index : order) {
    LiveRange &buffer = buffers[index];
    while (!live.empty() && live.top().first < buffer.firstUse) {
      release(buffers[live.top().second]);
      live.pop();
    }
    auto gap = gapsBySize.lower_bound({buffer.bytes, std::numeric_limits<int64_t>::min()});
    if (gap == gapsBySize.end()) {
      buffer.offset = top;
      top += buffer.bytes;
    } else {
      auto [bytes, offset] = *gap;
      gapsBySize.erase(gap);
      gapsByOffset.erase(offset);
      buffer.offset = offset;
      if (bytes > buffer.bytes) {
        gapsByOffset[offset + buffer.bytes] = bytes - buffer.bytes;
        gapsBySize.insert({bytes - buffer.bytes, offset + buffer.bytes});
      }
    }
    arena = std::max(arena, top);
    live.push({buffer.lastUse, index});
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

  // Time order always; when affordable also first fit in two orders (largest first,
  // longest-lived first), which packs better when sizes vary a lot. The smallest wins.
  std::vector<LiveRange> best = ranges;
  int64_t arena = placeInTimeOrder(best);
  Overlaps overlaps;
  if (ranges.size() < std::numeric_limits<uint32_t>::max() &&
      findOverlaps(ranges, kFirstFitPairLimit, overlaps)) {
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
    for (const std::vector<size_t> &order : {bySize, byLifetime}) {
      std::vector<LiveRange> candidate = ranges;
      int64_t candidateArena = placeFirstFit(candidate, order, overlaps);
      if (candidateArena < arena) {
        arena = candidateArena;
        best = std::move(candidate);
      }
    }
  }
  ranges = std::move(best);
  return arena;
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

SavedActivations savedForBackward(func::FuncOp func) {
  SavedActivations saved;
  int64_t lossIndex = isDifferentiated(func) ? forwardEnd(func) : -1;
  if (lossIndex < 0) {
    return saved;
  }
  struct Buffer {
    int64_t bytes = 0, layer = -1, lastUse = 0;
  };
  std::vector<int64_t> layerOf = layerOfOps(func);
  std::vector<Buffer> buffers;
  llvm::DenseMap<Value, size_t> bufferOf;
  int64_t index = 0;
  for (Operation &op : func.getBody().front()) {
    // What the function returns (the loss, a stage's output) is the caller's, not saved.
    for (Value operand : op.hasTrait<OpTrait::IsTerminator>() ? ValueRange() : op.getOperands()) {
      if (auto it = bufferOf.find(operand); it != bufferOf.end()) {
        buffers[it->second].lastUse = index;
      }
    }
    if (!isa<tg::ParamRefOp>(op) && index <= lossIndex) {
      for (Value result : op.getResults()) {
        if (!isa<RankedTensorType>(result.getType())) {
          continue;
        }
        if (auto source = isa<tg::ReshapeOp>(op) ? bufferOf.find(op.getOperand(0)) : bufferOf.end();
            source != bufferOf.end()) {
          bufferOf[result] = source->second; // a view of its input's bytes
          continue;
        }
        bufferOf[result] = buffers.size();
        buffers.push_back({storageBytes(result.getType(), 1), layerOf[index], index});
      }
    }
    ++index;
  }
  llvm::DenseMap<int64_t, int64_t> bytesOfLayer;
  for (const Buffer &buffer : buffers) {
    if (buffer.lastUse <= lossIndex) {
      continue; // dead before the backward
    }
    if (buffer.layer < 0) {
      saved.otherBytes += buffer.bytes;
    } else {
      bytesOfLayer[buffer.layer] += buffer.bytes;
    }
  }
  int64_t total = 0;
  for (auto [layerIndex, bytes] : bytesOfLayer) {
    total += bytes;
  }
  saved.layers = static_cast<int64_t>(bytesOfLayer.size());
  saved.bytesPerLayer = saved.layers ? total / saved.layers : 0;
  return saved;
}

} // namespace mlperf
