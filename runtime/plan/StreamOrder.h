//===- StreamOrder.h - What may run at the same time in a program -*- C++ -*-===//
//
// The one statement of the stream and event rules of a plan program, shared by the plan
// dialect's verifier, the plan loader and plan-memory (no MLIR, no protobuf):
//
// - each stream runs its commands in program order;
// - across streams only events order commands: `event_wait` on one stream holds it until
//   the `event_record` of that event on another stream has run (and with it everything
//   before it on that stream); every event is recorded once, and before (in program order)
//   any wait for it, so program order is always one valid execution;
// - a `call` is a barrier: everything issued before it, on every stream, completes before
//   the callee starts, and nothing issued after it starts before the callee returned.
//
// From these rules it computes, per command, which commands of another stream may run at
// the same time (its window), and finds two such commands that touch the same bytes with at
// least one of them writing: the plan lacks the event between them.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_PLAN_STREAMORDER_H
#define MLPERFC_RUNTIME_PLAN_STREAMORDER_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlperf::rt {

/// Bytes [begin, end) of one arena that a command reads or writes, and the buffer they belong
/// to (for messages). Before placement the compiler gives each buffer a range of its own.
struct ByteRange {
  int64_t arena = 0;
  uint64_t begin = 0, end = 0;
  uint32_t buffer = 0;
};

struct StreamCommand {
  enum class Kind { kCompute, kRecord, kWait, kCall };
  /// The kind of a plan command op.
  static Kind kindOf(std::string_view op) {
    return op == "event_record" ? Kind::kRecord
           : op == "event_wait" ? Kind::kWait
           : op == "call"       ? Kind::kCall
                                : Kind::kCompute;
  }
  Kind kind = Kind::kCompute;
  uint32_t stream = 0;
  int64_t event = -1; // records and waits
  std::vector<ByteRange> reads, writes;
};

/// A rule a program breaks: the command (its index) and what is wrong with it.
/// A program's commands in one order, without copying them: the vector itself, or the
/// commands of a vector taken in the order of a permutation (plan-schedule tries many orders
/// of one program).
class StreamCommands {
public:
  StreamCommands(const std::vector<StreamCommand> &commands) // NOLINT: a view of the vector
      : base(commands.data()), count(commands.size()) {}
  /// commands[permutation[0]], commands[permutation[1]], ...
  StreamCommands(const std::vector<StreamCommand> &commands, const std::vector<size_t> &permutation)
      : base(commands.data()), permutation(permutation.data()), count(permutation.size()) {}
  size_t size() const { return count; }
  const StreamCommand &operator[](size_t i) const { return base[permutation ? permutation[i] : i]; }

private:
  const StreamCommand *base = nullptr;
  const size_t *permutation = nullptr;
  size_t count = 0;
};

struct StreamProblem {
  size_t command = 0;
  std::string message;
};

/// Two commands on different streams that may run at the same time and touch `bytes` (of
/// `firstRange.buffer` and `secondRange.buffer`), at least one of them writing.
struct StreamConflict {
  size_t first = 0, second = 0; // first < second in program order
  ByteRange firstRange, secondRange;
  bool firstWrites = false, secondWrites = false;
};

class StreamOrder {
public:
  /// Checks the rules for a program of `streams` streams (1 or 2) and computes the order.
  static std::optional<StreamProblem> analyze(StreamCommands commands, uint32_t streams,
                                              StreamOrder &order);

  /// Whether command `earlier` (before `later` in program order) has completed whenever
  /// `later` starts.
  bool precedes(size_t earlier, size_t later) const;

  /// The program positions [first, last] of the commands of the other stream that may run at
  /// the same time as command `index`; first > last when there are none.
  std::pair<int64_t, int64_t> window(size_t index) const;

  /// How many pairs of commands of different streams may run at the same time (the work
  /// findConflict does).
  uint64_t concurrentPairs() const;

  /// The first pair of commands in a conflict (see above), if any.
  std::optional<StreamConflict> findConflict(StreamCommands commands) const;

private:
  /// Per command and stream (row-major, `streams` entries a command): the last command of
  /// that stream known complete when the command starts.
  int64_t knownBefore(size_t command, uint32_t ofStreamIndex) const {
    return known[command * streamCount + ofStreamIndex];
  }

  uint32_t streamCount = 1;
  std::vector<uint32_t> stream;              // per command
  std::vector<int64_t> known;                // see knownBefore
  std::vector<std::vector<size_t>> ofStream; // per stream: its commands in program order
};

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_PLAN_STREAMORDER_H
