//===- StreamOrder.cpp - What may run at the same time in a program -*- C++ -*-===//

#include "runtime/plan/StreamOrder.h"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace mlperf::rt {
namespace {

/// A vector clock: per stream (at most two), the last command known complete.
using Clock = std::array<int64_t, 2>;

void mergeInto(Clock &into, const Clock &from) {
  for (size_t i = 0; i < into.size(); ++i) {
    into[i] = std::max(into[i], from[i]);
  }
}

bool overlap(const ByteRange &a, const ByteRange &b) {
  return a.arena == b.arena && a.begin < b.end && b.begin < a.end;
}

} // namespace

std::optional<StreamProblem> StreamOrder::analyze(StreamCommands commands, uint32_t streams,
                                                  StreamOrder &order) {
  if (streams < 1 || streams > 2) {
    return StreamProblem{0, "a program has 1 or 2 streams, not " + std::to_string(streams)};
  }
  order.streamCount = streams;
  order.stream.assign(commands.size(), 0);
  order.known.assign(commands.size() * streams, -1);
  order.ofStream.assign(streams, {});
  // Vector clocks: per stream, the last command of every stream known to have completed
  // before its next command starts (entries past `streams` stay -1).
  std::array<Clock, 2> clock;
  clock.fill(Clock{-1, -1});
  std::unordered_map<int64_t, std::pair<uint32_t, Clock>> recorded; // event -> stream, clock
  for (size_t i = 0; i < commands.size(); ++i) {
    const StreamCommand &command = commands[i];
    uint32_t s = command.stream;
    if (s >= streams) {
      return StreamProblem{i, "is on stream " + std::to_string(s) + " of a program with " +
                                  std::to_string(streams) + " stream" + (streams == 1 ? "" : "s")};
    }
    using Kind = StreamCommand::Kind;
    if (command.kind == Kind::kRecord || command.kind == Kind::kWait) {
      if (command.event < 0) {
        return StreamProblem{i, "needs an event >= 0"};
      }
      auto it = recorded.find(command.event);
      if (command.kind == Kind::kRecord && it != recorded.end()) {
        return StreamProblem{i,
                             "records event " + std::to_string(command.event) + " a second time"};
      }
      if (command.kind == Kind::kWait) {
        if (it == recorded.end() || it->second.first == s) {
          return StreamProblem{i, "waits for event " + std::to_string(command.event) +
                                      ", which no other stream recorded before it"};
        }
        mergeInto(clock[s], it->second.second);
      }
    }
    if (command.kind == Kind::kCall) {
      for (uint32_t t = 0; t < streams; ++t) {
        mergeInto(clock[s], clock[t]);
      }
    }
    order.stream[i] = s;
    std::copy(clock[s].begin(), clock[s].begin() + streams, order.known.begin() + i * streams);
    order.ofStream[s].push_back(i);
    clock[s][s] = static_cast<int64_t>(i);
    if (command.kind == Kind::kCall) {
      for (uint32_t t = 0; t < streams; ++t) {
        clock[t] = clock[s];
      }
    }
    if (command.kind == Kind::kRecord) {
      recorded[command.event] = {s, clock[s]};
    }
  }
  return std::nullopt;
}

bool StreamOrder::precedes(size_t earlier, size_t later) const {
  return stream[earlier] == stream[later] ||
         knownBefore(later, stream[earlier]) >= static_cast<int64_t>(earlier);
}

std::pair<int64_t, int64_t> StreamOrder::window(size_t index) const {
  if (ofStream.size() < 2) {
    return {1, 0};
  }
  uint32_t s = stream[index], t = 1 - s;
  const std::vector<size_t> &other = ofStream[t];
  int64_t position = static_cast<int64_t>(index);
  // t's commands after the last one `index` knows complete ...
  auto first =
      std::upper_bound(other.begin(), other.end(), knownBefore(index, t),
                       [](int64_t value, size_t j) { return value < static_cast<int64_t>(j); });
  // ... that do not know `index` complete (knownBefore(j, s) grows along t's commands).
  auto last = std::partition_point(first, other.end(),
                                   [&](size_t j) { return knownBefore(j, s) < position; });
  if (first == last) {
    return {1, 0};
  }
  return {static_cast<int64_t>(*first), static_cast<int64_t>(*(last - 1))};
}

uint64_t StreamOrder::concurrentPairs() const {
  uint64_t pairs = 0;
  for (size_t i : ofStream.size() < 2 ? std::vector<size_t>() : ofStream[1]) {
    auto [first, last] = window(i);
    pairs += first <= last ? static_cast<uint64_t>(last - first + 1) : 0;
  }
  return pairs;
}

std::optional<StreamConflict> StreamOrder::findConflict(StreamCommands commands) const {
  if (ofStream.size() < 2) {
    return std::nullopt;
  }
  std::optional<StreamConflict> found;
  // Every concurrent pair has one command on stream 1: look from there.
  for (size_t i : ofStream[1]) {
    auto [first, last] = window(i);
    for (int64_t j = first; j <= last; ++j) {
      if (stream[j] == 1) {
        continue;
      }
      const StreamCommand &a = commands[std::min<size_t>(i, j)];
      const StreamCommand &b = commands[std::max<size_t>(i, j)];
      auto check = [&](const std::vector<ByteRange> &ra, bool aWrites,
                       const std::vector<ByteRange> &rb, bool bWrites) {
        for (const ByteRange &x : ra) {
          for (const ByteRange &y : rb) {
            if (overlap(x, y)) {
              StreamConflict conflict{
                  std::min<size_t>(i, j), std::max<size_t>(i, j), x, y, aWrites, bWrites};
              if (!found || conflict.first < found->first ||
                  (conflict.first == found->first && conflict.second < found->second)) {
                found = conflict;
              }
              return true;
            }
          }
        }
        return false;
      };
      check(a.writes, true, b.reads, false) || check(a.writes, true, b.writes, true) ||
          check(a.reads, false, b.writes, true);
    }
  }
  return found;
}

} // namespace mlperf::rt
