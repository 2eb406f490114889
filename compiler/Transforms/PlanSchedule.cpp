//===- PlanSchedule.cpp - Latency-hiding order of plan commands -*- C++ -*-===//
//
// Moves each collective's start as early and its wait as late as the buffers it touches
// allow, so that the communication stream works while the compute stream goes on, under a
// hard limit on the bytes alive at once and on the collectives in flight. The pass
// description in Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/PlanLiveness.h"
#include "runtime/plan/StreamOrder.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <unordered_set>

#define DEBUG_TYPE "plan-schedule"

namespace mlperf {
#define GEN_PASS_DEF_PLANSCHEDULEPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

using Kind = rt::StreamCommand::Kind;

/// A collective as plan-from-tg emits it, five consecutive commands: stream 0 records that
/// its inputs are ready, stream 1 waits for that, runs the collective and records, and
/// stream 0 waits for that before it reads the result. The first four move together (the
/// start), the last alone (the done).
struct Collective {
  size_t ready = 0, join = 0, command = 0, record = 0, done = 0; // original command indices
  std::unordered_set<uint32_t> reads, writes;                    // the collective's buffers
};

/// One program's commands in a mutable order, and what a move must respect. The commands
/// and their buffers' sizes are the caller's, which outlive the schedule; copies of a
/// schedule share them.
class ProgramSchedule {
public:
  ProgramSchedule(const std::vector<rt::StreamCommand> &commands, const std::vector<int64_t> &bytes,
                  std::vector<int64_t> calleeBytes, uint32_t streams)
      : commands(&commands), bytes(&bytes), calleeBytes(std::move(calleeBytes)), streams(streams) {
    sequence.resize(commands.size());
    for (size_t i = 0; i < sequence.size(); ++i) {
      sequence[i] = i;
    }
    findCollectives();
    renumber();
  }

  size_t collectiveCount() const { return collectives.size(); }

  /// The most bytes alive at once in the current order (callees included), or -1 if the
  /// order breaks the stream rules (a bug here: then nothing is moved).
  int64_t peak() const {
    rt::StreamCommands ordered(*commands, sequence);
    std::vector<int64_t> callee;
    callee.reserve(sequence.size());
    for (size_t index : sequence) {
      callee.push_back(calleeBytes[index]);
    }
    rt::StreamOrder order;
    if (rt::StreamOrder::analyze(ordered, streams, order)) {
      return -1;
    }
    return peakLiveBytes(liveRanges(ordered, order, *bytes), callee);
  }

  /// Every start hoisted, then every done sunk, each as far as the rules allow; with a
  /// byte limit, a move that would pass it goes only as far as stays within it.
  void schedule(int64_t maxOutstanding, std::optional<int64_t> limit) {
    for (Collective &collective : collectives) {
      size_t target = hoistTarget(collective);
      if (limit) {
        size_t from = position[collective.ready];
        target = latestFitting(
            target, from, *limit, [&](size_t to) { moveStart(collective, to); },
            /*forward=*/false);
      }
      moveStart(collective, target);
    }
    for (Collective &collective : collectives) {
      size_t target = sinkTarget(collective, maxOutstanding);
      if (limit) {
        size_t from = position[collective.done];
        target = latestFitting(
            target, from, *limit, [&](size_t to) { moveDone(collective, to); },
            /*forward=*/true);
      }
      moveDone(collective, target);
    }
  }

  /// The commands' original indices in the scheduled order.
  const std::vector<size_t> &order() const { return sequence; }

private:
  void findCollectives() {
    const std::vector<rt::StreamCommand> &all = *commands;
    auto is = [&](size_t i, Kind kind, uint32_t stream) {
      return i < all.size() && all[i].kind == kind && all[i].stream == stream;
    };
    startsAt.assign(all.size(), false);
    donesAt.assign(all.size(), false);
    for (size_t i = 0; i + 4 < all.size(); ++i) {
      if (is(i, Kind::kRecord, 0) && is(i + 1, Kind::kWait, 1) &&
          all[i + 1].event == all[i].event && is(i + 2, Kind::kCompute, 1) &&
          is(i + 3, Kind::kRecord, 1) && is(i + 4, Kind::kWait, 0) &&
          all[i + 4].event == all[i + 3].event) {
        Collective collective{i, i + 1, i + 2, i + 3, i + 4, {}, {}};
        for (const rt::ByteRange &range : all[i + 2].reads) {
          collective.reads.insert(range.buffer);
        }
        for (const rt::ByteRange &range : all[i + 2].writes) {
          collective.writes.insert(range.buffer);
        }
        startsAt[collective.command] = true;
        donesAt[collective.done] = true;
        collectives.push_back(std::move(collective));
        i += 4;
      }
    }
  }

  void renumber() {
    position.resize(sequence.size());
    for (size_t i = 0; i < sequence.size(); ++i) {
      position[sequence[i]] = i;
    }
  }

  /// Whether compute command `index` must stay on its side of the collective: it writes
  /// what the collective reads, or touches what it writes.
  bool conflicts(const Collective &collective, size_t index) const {
    const rt::StreamCommand &command = (*commands)[index];
    for (const rt::ByteRange &range : command.writes) {
      if (collective.reads.count(range.buffer) || collective.writes.count(range.buffer)) {
        return true;
      }
    }
    for (const rt::ByteRange &range : command.reads) {
      if (collective.writes.count(range.buffer)) {
        return true;
      }
    }
    return false;
  }

  /// The earliest position for the start: above compute-stream commands it does not depend
  /// on, never above a call (a barrier), an event or a communication-stream command (so the
  /// communication stream keeps its order, the same on every rank).
  size_t hoistTarget(const Collective &collective) const {
    size_t at = position[collective.ready];
    while (at > 0) {
      size_t index = sequence[at - 1];
      const rt::StreamCommand &command = (*commands)[index];
      if (command.kind != Kind::kCompute || command.stream != 0 || conflicts(collective, index)) {
        break;
      }
      --at;
    }
    return at;
  }

  /// The latest position for the done: below compute-stream commands that do not read its
  /// result (nor write its buffers), other collectives' events and communication, never below
  /// a call; passing another collective's start keeps at most `maxOutstanding` in flight.
  size_t sinkTarget(const Collective &collective, int64_t maxOutstanding) const {
    size_t at = position[collective.done];
    // In flight right after this done: started before it, done after it.
    int64_t inFlight = 0;
    for (const Collective &other : collectives) {
      if (&other != &collective && position[other.command] < at && position[other.done] > at) {
        ++inFlight;
      }
    }
    while (at + 1 < sequence.size()) {
      size_t index = sequence[at + 1];
      const rt::StreamCommand &command = (*commands)[index];
      if (command.kind == Kind::kCall ||
          (command.stream == 0 && command.kind == Kind::kCompute && conflicts(collective, index))) {
        break;
      }
      if (startsAt[index]) {
        if (inFlight + 2 > maxOutstanding) {
          break; // this one and the next would be more than allowed
        }
        ++inFlight;
      } else if (donesAt[index]) {
        --inFlight;
      }
      ++at;
    }
    return at;
  }

  /// The four start commands to begin at position `to` (before the command there).
  void moveStart(const Collective &collective, size_t to) {
    size_t from = position[collective.ready];
    if (to == from) {
      return;
    }
    std::vector<size_t> block(sequence.begin() + from, sequence.begin() + from + 4);
    sequence.erase(sequence.begin() + from, sequence.begin() + from + 4);
    size_t insertAt = to < from ? to : to - 4;
    sequence.insert(sequence.begin() + insertAt, block.begin(), block.end());
    renumber();
  }

  /// The done to stand at position `to` (after the commands up to there).
  void moveDone(const Collective &collective, size_t to) {
    size_t from = position[collective.done];
    if (to == from) {
      return;
    }
    size_t index = sequence[from];
    sequence.erase(sequence.begin() + from);
    sequence.insert(sequence.begin() + to, index);
    renumber();
  }

  /// The position nearest `target` (from `from`, the current one) whose move keeps the peak
  /// within `limit`: the bytes alive only grow the further a start or done moves away.
  template <typename Move>
  size_t latestFitting(size_t target, size_t from, int64_t limit, Move move, bool forward) {
    if (target == from) {
      return from;
    }
    auto fits = [&](size_t to) {
      std::vector<size_t> saved = sequence;
      move(to);
      int64_t bytes = peak();
      sequence = std::move(saved);
      renumber();
      return bytes >= 0 && bytes <= limit;
    };
    if (fits(target)) {
      return target;
    }
    // Binary search between `from` (fits: nothing moved) and `target` (does not).
    size_t good = from, bad = target;
    while (forward ? bad - good > 1 : good - bad > 1) {
      size_t middle = forward ? good + (bad - good) / 2 : bad + (good - bad) / 2;
      (fits(middle) ? good : bad) = middle;
    }
    return good;
  }

  const std::vector<rt::StreamCommand> *commands;
  const std::vector<int64_t> *bytes;
  std::vector<int64_t> calleeBytes;
  uint32_t streams;
  std::vector<size_t> sequence, position;
  std::vector<Collective> collectives;
  std::vector<bool> startsAt, donesAt; // per original command: a collective's start / done
};

struct PlanSchedulePass : impl::PlanSchedulePassBase<PlanSchedulePass> {
  using PlanSchedulePassBase::PlanSchedulePassBase;

  void runOnOperation() override {
    if (maxOutstanding < 1 || memoryLimit < 0) {
      getOperation().emitError() << "plan-schedule: max-outstanding must be at least 1 and "
                                    "memory-limit not negative";
      return signalPassFailure();
    }
    // Plans are isolated from each other (one per pipeline stage): scheduled in parallel.
    auto plans = llvm::to_vector(getOperation().getOps<plan_ir::PlanOp>());
    if (failed(failableParallelForEach(&getContext(), plans,
                                       [&](plan_ir::PlanOp plan) { return schedulePlan(plan); }))) {
      return signalPassFailure();
    }
  }

  LogicalResult schedulePlan(plan_ir::PlanOp plan) const {
    SymbolTableCollection symbols;
    Builder builder(plan.getContext());
    Block &body = plan.getBody().front();
    llvm::DenseMap<Attribute, plan_ir::BufferOp> buffers;
    for (auto buffer : body.getOps<plan_ir::BufferOp>()) {
      buffers[buffer.getSymNameAttr()] = buffer;
    }
    StringRef activations;
    for (auto arena : body.getOps<plan_ir::ArenaOp>()) {
      if (arena.getMemoryClass() == plan_ir::MemoryClass::activations) {
        activations = arena.getSymName();
      }
    }
    if (activations.empty()) {
      return plan.emitError() << "plan-schedule: the plan has no activations arena";
    }
    struct Program {
      plan_ir::ProgramOp op;
      SmallVector<plan_ir::CommandOp> commands;
      std::vector<rt::StreamCommand> ordered;
      std::vector<int64_t> bytes;
      SmallVector<std::pair<size_t, StringRef>> calls; // command index, callee
    };
    std::vector<Program> programs;
    for (auto program : body.getOps<plan_ir::ProgramOp>()) {
      Program entry;
      entry.op = program;
      entry.commands = llvm::to_vector(program.getBody().front().getOps<plan_ir::CommandOp>());
      SmallVector<StringRef> names;
      entry.ordered = plan_ir::streamCommands(program, symbols, names);
      entry.bytes.assign(names.size(), 0);
      for (auto [id, name] : llvm::enumerate(names)) {
        plan_ir::BufferOp buffer = buffers.lookup(builder.getStringAttr(name));
        if (buffer && buffer.getArena() == activations) {
          entry.bytes[id] = alignedPlanBytes(buffer.getStorageBytes());
        }
      }
      for (auto [i, command] : llvm::enumerate(entry.commands)) {
        if (command.getKernel() == "call") {
          if (auto callee = command.getKernelAttrs().getAs<StringAttr>("program")) {
            entry.calls.push_back({i, callee.getValue()});
          }
        }
      }
      programs.push_back(std::move(entry));
    }
    // Per program its peak (callees in it), programs in plan order (callees first).
    llvm::StringMap<int64_t> peakOf;
    auto calleeBytes = [&](Program &program) {
      std::vector<int64_t> callee(program.commands.size(), 0);
      for (auto [index, name] : program.calls) {
        callee[index] = peakOf.lookup(name);
      }
      return callee;
    };
    auto scheduleOf = [&](Program &program) {
      return ProgramSchedule(program.ordered, program.bytes, calleeBytes(program),
                             static_cast<uint32_t>(program.op.getStreams()));
    };
    // The unscheduled peak, and per program the most its callers keep alive at a call of
    // it (through every level of calls): what a callee may add without a caller passing the
    // limit.
    int64_t unscheduled = 0;
    llvm::StringMap<int64_t> callerBytes;
    llvm::StringMap<SmallVector<std::pair<StringRef, int64_t>>>
        callsOf; // callee -> (caller, live at the call)
    std::vector<StringRef> planOrder;
    for (Program &program : programs) {
      ProgramSchedule schedule = scheduleOf(program);
      int64_t peak = schedule.peak();
      if (peak < 0) {
        return program.op.emitError() << "plan-schedule: the program breaks the stream rules";
      }
      peakOf[program.op.getSymName()] = peak;
      unscheduled = std::max(unscheduled, peak);
      rt::StreamOrder order;
      rt::StreamOrder::analyze(program.ordered, static_cast<uint32_t>(program.op.getStreams()),
                               order);
      std::vector<int64_t> live =
          liveBytesAt(liveRanges(program.ordered, order, program.bytes), program.commands.size());
      for (auto [index, name] : program.calls) {
        callsOf[name].push_back({program.op.getSymName(), live[index]});
      }
      planOrder.push_back(program.op.getSymName());
    }
    // Callers come after their callees: from the last program back, a callee's callers
    // already know what their own callers hold.
    for (StringRef name : llvm::reverse(planOrder)) {
      for (auto [caller, live] : callsOf.lookup(name)) {
        callerBytes[name] = std::max(callerBytes.lookup(name), live + callerBytes.lookup(caller));
      }
    }
    int64_t limit = memoryLimit > 0 ? static_cast<int64_t>(memoryLimit) : unscheduled;
    for (Program &program : programs) {
      ProgramSchedule schedule = scheduleOf(program);
      int64_t before = schedule.peak(); // with its callees' scheduled peaks
      if (schedule.collectiveCount() == 0) {
        peakOf[program.op.getSymName()] = before;
        continue;
      }
      // A program already over its share keeps its peak: no move may add to it.
      int64_t allowed = std::max(limit - callerBytes.lookup(program.op.getSymName()), before);
      ProgramSchedule unbounded = schedule;
      unbounded.schedule(maxOutstanding, std::nullopt);
      int64_t after = unbounded.peak();
      if (after >= 0 && after <= allowed) {
        schedule = std::move(unbounded);
      } else {
        schedule.schedule(maxOutstanding, allowed);
        after = schedule.peak();
      }
      if (after < 0 || after > allowed) {
        return program.op.emitError()
               << "plan-schedule: internal error: the scheduled order "
               << (after < 0 ? "breaks the stream rules" : "passes the memory limit");
      }
      peakOf[program.op.getSymName()] = after;
      Block &commands = program.op.getBody().front();
      for (size_t index : schedule.order()) {
        program.commands[index]->moveBefore(&commands, commands.end());
      }
    }
    return success();
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "plan-schedule", kExact,
    "reorders commands only where neither data nor events depend on the order: every command "
    "reads the same values");
