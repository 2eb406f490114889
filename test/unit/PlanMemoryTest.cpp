//===- PlanMemoryTest.cpp - The plan-memory pass on compiled plans --------===//
//
// Compiles real declarations to placed plans (one rank; tp=2, whose collectives run on a
// second stream; pp=2, one plan per stage) and checks what plan-memory wrote against rules
// derived here from the plan's own semantics, not from the pass's liveness code:
// - every offset is aligned and every buffer lies inside its arena;
// - persistent buffers never share bytes, and a view has its source's offset;
// - two activation buffers share bytes only if no command of their program can see both
//   alive: in command order their [first, last] uses are disjoint, neither is touched by a
//   command of the other stream that runs between the fork (the event the other stream
//   waits for) and the join (the event this stream waits for), and neither is alive across a
//   call of a program whose (callee's) buffers share its bytes.
// And the placement core on its own: random ranges in both its modes (first fit when the
// overlapping pairs are few, time order when they are many) never collide.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/MemoryPlan.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Plan/IR/PlanOps.h"
#include "runtime/dist/Mesh.h"
#include "runtime/plan/StreamOrder.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlperf;

namespace {

constexpr int64_t kAlignment = 256; // plan-memory's (docs/plan-format.md)

struct Extent {
  int64_t offset = 0, bytes = 0;
  bool overlaps(const Extent &other) const {
    return offset < other.offset + other.bytes && other.offset < offset + bytes;
  }
};

/// A program's activation buffers (roots: a view counts as its source) with the commands
/// that touch them, and the programs it calls at which command.
struct ProgramUse {
  llvm::DenseMap<mlir::Operation *, std::vector<int64_t>> touchedAt; // root -> command indices
  std::vector<std::pair<int64_t, std::string>> calls;
  int64_t commands = 0;
};

class PlanChecker {
public:
  explicit PlanChecker(plan_ir::PlanOp plan) : plan(plan) {
    for (auto buffer : plan.getBody().front().getOps<plan_ir::BufferOp>()) {
      byName[buffer.getSymNameAttr()] = buffer;
    }
    for (auto arena : plan.getBody().front().getOps<plan_ir::ArenaOp>()) {
      (arena.getMemoryClass() == plan_ir::MemoryClass::persistent ? persistent : activations) =
          arena;
    }
  }

  void run() {
    ASSERT_TRUE(persistent && activations);
    checkBuffers();
    for (auto program : plan.getBody().front().getOps<plan_ir::ProgramOp>()) {
      collect(program);
    }
    for (auto program : plan.getBody().front().getOps<plan_ir::ProgramOp>()) {
      checkProgram(program);
    }
  }

private:
  plan_ir::BufferOp root(mlir::Attribute ref) {
    plan_ir::BufferOp buffer = byName.lookup(mlir::cast<mlir::FlatSymbolRefAttr>(ref).getAttr());
    return buffer.getViewOfAttr() ? byName.lookup(buffer.getViewOfAttr().getAttr()) : buffer;
  }
  static Extent extent(plan_ir::BufferOp buffer) {
    return {buffer.getOffsetAttr().getInt(), buffer.getStorageBytes()};
  }
  bool isActivation(plan_ir::BufferOp buffer) {
    return buffer.getArena() == activations.getSymName();
  }

  void checkBuffers() {
    std::vector<plan_ir::BufferOp> placed;
    for (auto buffer : plan.getBody().front().getOps<plan_ir::BufferOp>()) {
      ASSERT_TRUE(buffer.getOffsetAttr()) << buffer.getSymName().str();
      int64_t offset = buffer.getOffsetAttr().getInt();
      EXPECT_EQ(offset % kAlignment, 0) << buffer.getSymName().str();
      plan_ir::ArenaOp arena = isActivation(buffer) ? activations : persistent;
      EXPECT_LE(offset + buffer.getStorageBytes(), arena.getSize()) << buffer.getSymName().str();
      if (buffer.getViewOfAttr()) {
        EXPECT_EQ(offset, extent(byName.lookup(buffer.getViewOfAttr().getAttr())).offset)
            << "view " << buffer.getSymName().str();
      } else if (!isActivation(buffer)) {
        placed.push_back(buffer);
      }
    }
    // Persistent state lives for the whole run: no two buffers share a byte.
    std::sort(placed.begin(), placed.end(), [](plan_ir::BufferOp a, plan_ir::BufferOp b) {
      return extent(a).offset < extent(b).offset;
    });
    for (size_t i = 1; i < placed.size(); ++i) {
      EXPECT_FALSE(extent(placed[i - 1]).overlaps(extent(placed[i])))
          << placed[i - 1].getSymName().str() << " and " << placed[i].getSymName().str();
    }
  }

  void collect(plan_ir::ProgramOp program) {
    ProgramUse &use = uses[program.getSymName().str()];
    int64_t index = 0;
    for (auto command : program.getBody().front().getOps<plan_ir::CommandOp>()) {
      for (mlir::ArrayAttr refs : {command.getOperands(), command.getResults()}) {
        for (mlir::Attribute ref : refs) {
          plan_ir::BufferOp buffer = root(ref);
          if (isActivation(buffer)) {
            use.touchedAt[buffer].push_back(index);
          }
        }
      }
      if (command.getKernel() == "call") {
        use.calls.push_back(
            {index, command.getKernelAttrs().getAs<mlir::StringAttr>("program").str()});
      }
      ++index;
    }
    use.commands = index;
  }

  /// Every activation buffer `program` or a program it calls (transitively) touches.
  void reachable(const std::string &program, std::vector<mlir::Operation *> &out) {
    const ProgramUse &use = uses.at(program);
    for (const auto &entry : use.touchedAt) {
      out.push_back(entry.first);
    }
    for (const auto &[index, callee] : use.calls) {
      reachable(callee, out);
    }
  }

  void checkProgram(plan_ir::ProgramOp program) {
    std::string name = program.getSymName().str();
    const ProgramUse &use = uses.at(name);
    auto commands = llvm::to_vector(program.getBody().front().getOps<plan_ir::CommandOp>());
    // Where each command can run at the same time as the other stream: a stream-1 command
    // runs after the stream-0 record of the event its stream last waited for (the fork) and
    // before the stream-0 wait for the next event its stream records (the join).
    std::map<int64_t, int64_t> recordAt, waitAt; // event -> index, on stream 0
    for (auto [index, command] : llvm::enumerate(commands)) {
      if (command.getStreamAttr().getInt() == 0 && command.getEventAttr()) {
        (command.getKernel() == "event_record" ? recordAt
                                               : waitAt)[command.getEventAttr().getInt()] = index;
      }
    }
    std::vector<std::pair<int64_t, int64_t>> span(commands.size()); // stream-0 positions
    int64_t fork = -1;
    for (auto [index, command] : llvm::enumerate(commands)) {
      span[index] = {static_cast<int64_t>(index), static_cast<int64_t>(index)};
      if (command.getStreamAttr().getInt() != 1) {
        continue;
      }
      if (command.getKernel() == "event_wait") {
        fork = recordAt.at(command.getEventAttr().getInt());
      }
      ASSERT_GE(fork, 0) << name << ": stream 1 runs before any wait";
      // The join: the first stream-0 wait for an event stream 1 records from here on (once
      // plan-schedule moved waits, that of a later record may come first).
      int64_t join = static_cast<int64_t>(commands.size()) - 1;
      for (size_t next = index; next < commands.size(); ++next) {
        if (commands[next].getStreamAttr().getInt() == 1 &&
            commands[next].getKernel() == "event_record") {
          auto wait = waitAt.find(commands[next].getEventAttr().getInt());
          if (wait != waitAt.end()) {
            join = std::min(join, wait->second);
          }
        }
      }
      span[index] = {fork, join};
    }
    // Per buffer, the stream-0 positions it is alive over.
    std::vector<std::pair<plan_ir::BufferOp, std::pair<int64_t, int64_t>>> lives;
    for (const auto &[buffer, indices] : use.touchedAt) {
      int64_t first = span[indices.front()].first, last = span[indices.front()].second;
      for (int64_t index : indices) {
        first = std::min(first, span[index].first);
        last = std::max(last, span[index].second);
      }
      lives.push_back({mlir::cast<plan_ir::BufferOp>(buffer), {first, last}});
    }
    // Two buffers whose spans overlap may still share bytes if every command touching one
    // completes before any touching the other starts (two commands of stream 1 in order).
    mlir::SymbolTableCollection symbols;
    llvm::SmallVector<llvm::StringRef> names;
    rt::StreamOrder order;
    ASSERT_FALSE(rt::StreamOrder::analyze(plan_ir::streamCommands(program, symbols, names),
                                          static_cast<uint32_t>(program.getStreams()), order));
    auto allBefore = [&](mlir::Operation *first, mlir::Operation *second) {
      for (int64_t a : use.touchedAt.lookup(first)) {
        for (int64_t b : use.touchedAt.lookup(second)) {
          if (!(a < b && order.precedes(a, b))) {
            return false;
          }
        }
      }
      return true;
    };
    for (size_t i = 0; i < lives.size(); ++i) {
      for (size_t j = i + 1; j < lives.size(); ++j) {
        auto [a, lifeA] = lives[i];
        auto [b, lifeB] = lives[j];
        bool together = lifeA.first <= lifeB.second && lifeB.first <= lifeA.second &&
                        extent(a).overlaps(extent(b)) && !allBefore(a, b) && !allBefore(b, a);
        EXPECT_FALSE(together && extent(a).overlaps(extent(b)))
            << name << ": " << a.getSymName().str() << " and " << b.getSymName().str()
            << " collide";
      }
    }
    // A callee's temporaries must not clobber what this program holds across the call.
    for (const auto &[index, callee] : use.calls) {
      std::vector<mlir::Operation *> inCallee;
      reachable(callee, inCallee);
      for (auto [buffer, life] : lives) {
        if (life.first > index || life.second < index) {
          continue;
        }
        for (mlir::Operation *other : inCallee) {
          auto used = mlir::cast<plan_ir::BufferOp>(other);
          EXPECT_FALSE(extent(buffer).overlaps(extent(used)))
              << name << " holds " << buffer.getSymName().str() << " across its call of @" << callee
              << ", which uses " << used.getSymName().str();
        }
      }
    }
    ++checkedPrograms;
  }

  plan_ir::PlanOp plan;
  plan_ir::ArenaOp persistent, activations;
  llvm::DenseMap<mlir::Attribute, plan_ir::BufferOp> byName;
  std::map<std::string, ProgramUse> uses;

public:
  int checkedPrograms = 0;
};

/// Compiles `model` for `parallel` on `cluster` and checks every plan it yields; returns the
/// number of programs with a second stream (collectives), for the caller to expect.
int checkCompiled(const std::string &model, const std::string &cluster, const std::string &parallel,
                  int expectedPlans) {
  std::unique_ptr<mlir::MLIRContext> context = createModelContext();
  ModelFile file(*context, MLPERFC_SOURCE_DIR "/models/" + model);
  mlir::OwningOpRef<mlir::ModuleOp> module = file.load();
  EXPECT_TRUE(module);
  if (!module) {
    return 0;
  }
  TrainStepOptions options;
  EXPECT_TRUE(rt::parseCluster(cluster, options.mesh).isOk());
  EXPECT_TRUE(rt::parseParallel(parallel, options.mesh).isOk());
  options.mesh.microBatch = 1;
  options.accumulationSteps = accumulationStepsOnOneRank(getModel(*module)) / options.mesh.dp;
  mlir::PassManager pm(context.get());
  buildTrainStepPipeline(pm, options);
  buildPlanPipeline(pm, options);
  EXPECT_TRUE(succeeded(pm.run(*module)));
  int plans = 0, twoStreams = 0;
  for (auto plan : module->getOps<plan_ir::PlanOp>()) {
    PlanChecker checker(plan);
    checker.run();
    EXPECT_GE(checker.checkedPrograms, 7) << model << " " << parallel; // 5 functions, 2 steps
    plan.walk([&](plan_ir::ProgramOp program) { twoStreams += program.getStreams() == 2; });
    ++plans;
  }
  EXPECT_EQ(plans, expectedPlans);
  return twoStreams;
}

TEST(PlanMemoryPass, OneRank) { checkCompiled("llama31_8b_tiny.mlir", "1x1", "dp=1", 1); }

TEST(PlanMemoryPass, TensorParallelCollectivesOnTheSecondStream) {
  EXPECT_GT(checkCompiled("llama31_8b_tiny.mlir", "1x2", "dp=1,tp=2,sp=on", 1), 0);
}

TEST(PlanMemoryPass, PipelineStages) {
  checkCompiled("llama31_8b_tiny.mlir", "1x2", "dp=1,pp=2", 2);
}

TEST(PlanMemoryPass, StreamZeroRunsWhileTheCollectiveDoes) {
  // Stream 0 fills and scales @t and @u (commands 5, 6) while stream 1 copies @g into @h
  // (command 3, between the fork at command 1 and the join at command 7). @g is last named
  // at command 3, before @t exists, yet its bytes are in use until the join.
  const char *text = R"mlir(
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.arena @activations activations
  plan.buffer @out : tensor<64xf32> in @persistent
  plan.buffer @g : tensor<64xf32> in @activations
  plan.buffer @h : tensor<64xf32> in @activations
  plan.buffer @t : tensor<64xf32> in @activations
  plan.buffer @u : tensor<64xf32> in @activations
  plan.program @step inputs [] outputs [@out] attributes {streams = 2 : i64} {
    plan.command "fill" [] -> [@g] {kernel_attrs = {value = 1.0 : f64}}
    plan.command "event_record" [] -> [] {event = 0 : i64}
    plan.command "event_wait" [] -> [] {event = 0 : i64, stream = 1 : i64}
    plan.command "copy" [@g] -> [@h] {stream = 1 : i64}
    plan.command "event_record" [] -> [] {event = 1 : i64, stream = 1 : i64}
    plan.command "fill" [] -> [@t] {kernel_attrs = {value = 2.0 : f64}}
    plan.command "scale" [@t] -> [@u] {kernel_attrs = {factor = 3.0 : f64}}
    plan.command "event_wait" [] -> [] {event = 1 : i64}
    plan.command "add" [@h, @u] -> [@out]
  }
})mlir";
  std::unique_ptr<mlir::MLIRContext> context = createModelContext();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, context.get());
  ASSERT_TRUE(module);
  mlir::PassManager pm(context.get());
  pm.addPass(createPlanMemoryPass());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  PlanChecker checker(*module->getOps<plan_ir::PlanOp>().begin());
  checker.run();
  EXPECT_EQ(checker.checkedPrograms, 1);
}

/// Ranges whose lifetimes intersect never share bytes; the arena holds them all.
void expectValid(const std::vector<mlperf::LiveRange> &ranges, int64_t arena, int64_t bound) {
  EXPECT_GE(arena, bound);
  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::sort(order.begin(), order.end(),
            [&](size_t x, size_t y) { return ranges[x].firstUse < ranges[y].firstUse; });
  for (size_t i = 0; i < order.size(); ++i) {
    const LiveRange &a = ranges[order[i]];
    EXPECT_LE(a.offset + a.bytes, arena);
    for (size_t j = i + 1; j < order.size() && ranges[order[j]].firstUse <= a.lastUse; ++j) {
      const LiveRange &b = ranges[order[j]];
      ASSERT_FALSE(a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes)
          << "ranges " << order[i] << " and " << order[j] << " collide";
    }
  }
}

std::vector<LiveRange> randomRanges(size_t count, int64_t positions, int64_t maxLife,
                                    unsigned seed) {
  std::mt19937 random(seed);
  std::vector<LiveRange> ranges;
  for (size_t i = 0; i < count; ++i) {
    int64_t first = static_cast<int64_t>(random() % positions);
    int64_t last = std::min(positions - 1, first + static_cast<int64_t>(random() % maxLife));
    ranges.push_back({static_cast<int64_t>(1 + random() % 64) * kAlignment, first, last, 0});
  }
  return ranges;
}

TEST(AssignOffsets, FewOverlapsUseFirstFit) {
  std::vector<LiveRange> ranges = randomRanges(3000, 20000, 40, 1);
  int64_t bound = 0;
  int64_t arena = assignOffsets(ranges, bound);
  expectValid(ranges, arena, bound);
  EXPECT_LE(static_cast<double>(arena), 1.3 * static_cast<double>(bound));
}

TEST(AssignOffsets, ManyOverlapsUseTimeOrder) {
  // Every range alive over most of the program: ~ n^2 / 2 pairs, beyond first fit's limit.
  std::vector<LiveRange> ranges = randomRanges(4000, 1000, 100000, 2);
  int64_t bound = 0;
  int64_t arena = assignOffsets(ranges, bound);
  expectValid(ranges, arena, bound);
}

TEST(AssignOffsets, NestedLifetimesReachTheBound) {
  // A forward/backward pass: activation i lives from step i to step 2n - i (LIFO), with a
  // short temporary at every step. Time order places this exactly at the bound.
  const int64_t n = 3000; // 3000 nested ranges overlap pairwise: ~4.5 million pairs
  std::vector<LiveRange> ranges;
  for (int64_t i = 0; i < n; ++i) {
    ranges.push_back({(1 + i % 7) * kAlignment, i, 2 * n - i, 0});
    ranges.push_back({kAlignment, i, i + 1, 0});
  }
  int64_t bound = 0;
  int64_t arena = assignOffsets(ranges, bound);
  expectValid(ranges, arena, bound);
  EXPECT_EQ(arena, bound);
}

} // namespace
