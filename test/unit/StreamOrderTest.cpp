//===- StreamOrderTest.cpp - The stream and event rules -------------------===//

#include "runtime/plan/StreamOrder.h"

#include <gtest/gtest.h>

using namespace mlperf::rt;
using Kind = StreamCommand::Kind;
using Program = std::vector<StreamCommand>;

namespace {

StreamCommand compute(uint32_t stream, std::vector<ByteRange> reads,
                      std::vector<ByteRange> writes) {
  StreamCommand c;
  c.stream = stream;
  c.reads = std::move(reads);
  c.writes = std::move(writes);
  return c;
}

StreamCommand event(Kind kind, uint32_t stream, int64_t id) {
  StreamCommand c;
  c.kind = kind;
  c.stream = stream;
  c.event = id;
  return c;
}

ByteRange bytes(uint64_t begin, uint64_t end, uint32_t buffer) { return {1, begin, end, buffer}; }

// A collective as plan-from-tg issues it: fork, the command on stream 1, join.
std::vector<StreamCommand> fencedCollective() {
  return {compute(0, {}, {bytes(0, 16, 0)}),                  // 0: produce x
          event(Kind::kRecord, 0, 0),                         // 1
          event(Kind::kWait, 1, 0),                           // 2
          compute(1, {bytes(0, 16, 0)}, {bytes(16, 32, 1)}),  // 3: x -> y on stream 1
          compute(0, {bytes(64, 80, 2)}, {bytes(80, 96, 3)}), // 4: independent work
          event(Kind::kRecord, 1, 1),                         // 5
          event(Kind::kWait, 0, 1),                           // 6
          compute(0, {bytes(16, 32, 1)}, {})};                // 7: read y
}

} // namespace

TEST(StreamOrder, EventsOrderCommandsAcrossStreams) {
  std::vector<StreamCommand> commands = fencedCollective();
  StreamOrder order;
  ASSERT_FALSE(StreamOrder::analyze(commands, 2, order));
  EXPECT_TRUE(order.precedes(0, 3));  // through event 0
  EXPECT_TRUE(order.precedes(3, 7));  // through event 1
  EXPECT_FALSE(order.precedes(3, 4)); // 4 runs while the collective does
  // The collective's window on stream 0 is exactly command 4.
  EXPECT_EQ(order.window(3), (std::pair<int64_t, int64_t>{4, 4}));
  // Command 4 may run alongside all of stream 1 between its wait and its record.
  EXPECT_EQ(order.window(4), (std::pair<int64_t, int64_t>{2, 5}));
  EXPECT_FALSE(order.findConflict(commands));
  // The pairs findConflict looks at: each stream-1 command with the stream-0 commands of its
  // window (the wait 2 and the record 5 also run alongside command 4).
  EXPECT_EQ(order.concurrentPairs(), 3u);
}

TEST(StreamOrder, AMissingWaitIsAConflictNamingBothCommands) {
  std::vector<StreamCommand> commands = fencedCollective();
  commands.erase(commands.begin() + 6); // drop stream 0's wait for the collective
  StreamOrder order;
  ASSERT_FALSE(StreamOrder::analyze(commands, 2, order));
  std::optional<StreamConflict> conflict = order.findConflict(commands);
  ASSERT_TRUE(conflict);
  EXPECT_EQ(conflict->first, 3u);
  EXPECT_EQ(conflict->second, 6u); // the read of y
  EXPECT_TRUE(conflict->firstWrites);
  EXPECT_FALSE(conflict->secondWrites);
  EXPECT_EQ(conflict->secondRange.buffer, 1u);
}

TEST(StreamOrder, WritingWhatTheOtherStreamStillReadsIsAConflict) {
  std::vector<StreamCommand> commands = fencedCollective();
  commands[4].writes = {bytes(8, 12, 4)}; // overlaps x, which the collective reads
  StreamOrder order;
  ASSERT_FALSE(StreamOrder::analyze(commands, 2, order));
  std::optional<StreamConflict> conflict = order.findConflict(commands);
  ASSERT_TRUE(conflict);
  EXPECT_EQ(conflict->first, 3u);
  EXPECT_EQ(conflict->second, 4u);
  EXPECT_EQ(conflict->secondRange.buffer, 4u);
}

TEST(StreamOrder, ACallIsABarrier) {
  std::vector<StreamCommand> commands = {
      event(Kind::kRecord, 0, 0), event(Kind::kWait, 1, 0),
      compute(1, {}, {bytes(0, 16, 0)}), // stream 1, never joined by an event
      event(Kind::kCall, 0, -1), compute(0, {bytes(0, 16, 0)}, {})};
  commands[3].kind = Kind::kCall;
  StreamOrder order;
  ASSERT_FALSE(StreamOrder::analyze(commands, 2, order));
  EXPECT_TRUE(order.precedes(2, 4));
  EXPECT_FALSE(order.findConflict(commands));
}

TEST(StreamOrder, BrokenEventsAreNamed) {
  StreamOrder order;
  std::optional<StreamProblem> problem =
      StreamOrder::analyze(Program{event(Kind::kWait, 1, 3), compute(0, {}, {})}, 2, order);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->command, 0u);
  EXPECT_EQ(problem->message, "waits for event 3, which no other stream recorded before it");
  problem = StreamOrder::analyze(Program{event(Kind::kRecord, 0, 1), event(Kind::kRecord, 1, 1)}, 2,
                                 order);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->message, "records event 1 a second time");
  problem = StreamOrder::analyze(Program{compute(2, {}, {})}, 2, order);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->message, "is on stream 2 of a program with 2 streams");
}

// plan-schedule analyzes orders of a program through a permutation instead of copies: the view
// must see exactly the permuted program.
TEST(StreamOrder, APermutedViewIsThePermutedProgram) {
  std::vector<StreamCommand> commands = fencedCollective();
  // The independent work (4) moved after the collective's join (6): then 3 and 4 never overlap.
  std::vector<size_t> permutation = {0, 1, 2, 3, 5, 6, 4, 7};
  std::vector<StreamCommand> copied;
  for (size_t index : permutation) {
    copied.push_back(commands[index]);
  }
  StreamOrder viewed, direct;
  ASSERT_FALSE(StreamOrder::analyze(StreamCommands(commands, permutation), 2, viewed));
  ASSERT_FALSE(StreamOrder::analyze(copied, 2, direct));
  for (size_t i = 0; i < copied.size(); ++i) {
    EXPECT_EQ(viewed.window(i), direct.window(i)) << "command " << i;
  }
  EXPECT_EQ(viewed.window(3), (std::pair<int64_t, int64_t>{1, 0})); // nothing runs alongside
  EXPECT_EQ(viewed.concurrentPairs(), 0u);
  // A write into x by the moved command, now after the join, is no conflict either.
  commands[4].writes = {bytes(8, 12, 4)};
  EXPECT_FALSE(viewed.findConflict(StreamCommands(commands, permutation)));
  StreamOrder original;
  ASSERT_FALSE(StreamOrder::analyze(commands, 2, original));
  EXPECT_TRUE(original.findConflict(commands)) << "(the original order does conflict)";
}
