//===- PlanLiveness.cpp - Live bytes of a plan program ----------*- C++ -*-===//

#include "compiler/Transforms/PlanLiveness.h"

#include <algorithm>

namespace mlperf {

std::vector<BufferLife> liveRanges(rt::StreamCommands commands, const rt::StreamOrder &order,
                                   const std::vector<int64_t> &bytes) {
  std::vector<BufferLife> lives;
  constexpr size_t kNoLife = ~size_t{0};
  std::vector<size_t> lifeOf(bytes.size(), kNoLife); // per buffer: its entry in `lives`
  for (size_t i = 0; i < commands.size(); ++i) {
    const rt::StreamCommand &command = commands[i];
    auto first = static_cast<int64_t>(i), last = static_cast<int64_t>(i);
    if (command.stream != 0) {
      auto [from, to] = order.window(i);
      if (from <= to) {
        first = std::min(first, from);
        last = std::max(last, to);
      }
    }
    for (const auto *ranges : {&command.reads, &command.writes}) {
      for (const rt::ByteRange &range : *ranges) {
        if (range.buffer >= bytes.size() || bytes[range.buffer] <= 0) {
          continue;
        }
        size_t &entry = lifeOf[range.buffer];
        if (entry == kNoLife) {
          entry = lives.size();
          lives.push_back({range.buffer, LiveRange{bytes[range.buffer], first, last, 0}});
        }
        LiveRange &life = lives[entry].range;
        life.firstUse = std::min(life.firstUse, first);
        life.lastUse = std::max(life.lastUse, last);
      }
    }
  }
  return lives;
}

std::vector<int64_t> liveBytesAt(const std::vector<BufferLife> &lives, size_t commands) {
  std::vector<int64_t> delta(commands + 2, 0);
  for (const BufferLife &life : lives) {
    delta[life.range.firstUse] += life.range.bytes;
    delta[life.range.lastUse + 1] -= life.range.bytes;
  }
  std::vector<int64_t> live(commands, 0);
  int64_t running = 0;
  for (size_t i = 0; i < commands; ++i) {
    running += delta[i];
    live[i] = running;
  }
  return live;
}

int64_t peakLiveBytes(const std::vector<BufferLife> &lives,
                      const std::vector<int64_t> &calleeBytes) {
  std::vector<int64_t> live = liveBytesAt(lives, calleeBytes.size());
  int64_t peak = 0;
  for (size_t i = 0; i < live.size(); ++i) {
    peak = std::max(peak, live[i] + calleeBytes[i]);
  }
  return peak;
}

} // namespace mlperf
