//===- PlanMemory.cpp - Static offsets for plan buffers --------*- C++ -*-===//

#include "compiler/Analysis/MemoryPlan.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/PlanLiveness.h"
#include "runtime/plan/StreamOrder.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#define DEBUG_TYPE "plan-memory"

namespace mlperf {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

LogicalResult placePlan(plan_ir::PlanOp plan) {
  SymbolTableCollection symbols;
  Block &body = plan.getBody().front();
  Builder builder(plan.getContext());
  // By symbol name attribute: uniqued, so lookups hash a pointer, not a name.
  llvm::DenseMap<Attribute, plan_ir::BufferOp> buffers;
  llvm::StringMap<plan_ir::ArenaOp> arenas;
  for (Operation &op : body) {
    if (auto buffer = dyn_cast<plan_ir::BufferOp>(op)) {
      buffers[buffer.getSymNameAttr()] = buffer;
    } else if (auto arena = dyn_cast<plan_ir::ArenaOp>(op)) {
      arenas[plan_ir::stringifyMemoryClass(arena.getMemoryClass())] = arena;
    }
  }
  plan_ir::ArenaOp persistent = arenas.lookup("persistent"),
                   activations = arenas.lookup("activations");
  if (!persistent || !activations) {
    return plan.emitError() << "plan-memory: the plan needs a persistent and an activations arena";
  }
  auto inArena = [](plan_ir::BufferOp buffer, plan_ir::ArenaOp arena) {
    return buffer.getArena() == arena.getSymName();
  };

  // Every offset is assigned afresh (the input may carry stale ones).
  for (auto buffer : body.getOps<plan_ir::BufferOp>()) {
    buffer.removeOffsetAttr();
  }
  // Persistent buffers: consecutive aligned slots, in plan order.
  int64_t persistentBytes = 0;
  for (auto buffer : body.getOps<plan_ir::BufferOp>()) {
    if (inArena(buffer, persistent) && !buffer.getViewOfAttr()) {
      buffer.setOffsetAttr(builder.getI64IntegerAttr(persistentBytes));
      persistentBytes += alignedPlanBytes(buffer.getStorageBytes());
    }
  }

  // Activations: per program, liveness in command order, then first-fit placement.
  int64_t arenaBytes = 0, lowerBound = 0;
  llvm::DenseMap<Operation *, StringRef> programOf; // activation buffer -> the program using it
  // A program's buffers go above those of every program it calls (a callee's temporaries
  // are live during the call); per program the top of that stack and its lower bound.
  llvm::StringMap<int64_t> extentOf, boundOf;
  for (auto program : body.getOps<plan_ir::ProgramOp>()) {
    auto commandList = llvm::to_vector(program.getBody().front().getOps<plan_ir::CommandOp>());
    // A command may run while the other stream goes on (runtime/plan/StreamOrder.h): a
    // communication command's buffers stay alive over every compute command that can run at
    // the same time (from the fork to the join of a collective).
    SmallVector<StringRef> names;
    std::vector<rt::StreamCommand> ordered = plan_ir::streamCommands(program, symbols, names);
    rt::StreamOrder order;
    if (auto problem =
            rt::StreamOrder::analyze(ordered, static_cast<uint32_t>(program.getStreams()), order)) {
      return commandList[problem->command].emitOpError() << problem->message;
    }
    std::vector<int64_t> bytes(names.size(), 0);
    std::vector<plan_ir::BufferOp> rootOf(names.size());
    for (auto [id, name] : llvm::enumerate(names)) {
      plan_ir::BufferOp buffer = buffers.lookup(builder.getStringAttr(name));
      if (buffer && inArena(buffer, activations)) {
        bytes[id] = alignedPlanBytes(buffer.getStorageBytes());
        rootOf[id] = buffer;
      }
    }
    std::vector<BufferLife> lives = liveRanges(ordered, order, bytes);
    std::vector<LiveRange> ranges;
    std::vector<plan_ir::BufferOp> owners;
    for (const BufferLife &life : lives) {
      plan_ir::BufferOp buffer = rootOf[life.buffer];
      auto [used, fresh] = programOf.try_emplace(buffer, program.getSymName());
      if (!fresh && used->second != program.getSymName()) {
        return commandList[life.range.firstUse].emitError()
               << "plan-memory: activation buffer @" << buffer.getSymName()
               << " is used by programs @" << used->second << " and @" << program.getSymName()
               << "; programs share the arena, so they cannot";
      }
      ranges.push_back(life.range);
      owners.push_back(buffer);
    }
    int64_t base = 0;
    std::vector<int64_t> calleeBound(commandList.size() + 1, 0);
    for (auto [i, command] : llvm::enumerate(commandList)) {
      if (command.getKernel() != "call") {
        continue;
      }
      auto callee = command.getKernelAttrs().getAs<StringAttr>("program");
      auto extent = callee ? extentOf.find(callee.getValue()) : extentOf.end();
      if (extent == extentOf.end()) {
        return command.emitError() << "plan-memory: @" << program.getSymName() << " calls "
                                   << (callee ? "@" + callee.str() : "no 'program'")
                                   << ", which does not come before it in the plan";
      }
      base = std::max(base, extent->second);
      calleeBound[i] = boundOf.lookup(callee.getValue());
    }
    int64_t ownLowerBound = 0;
    int64_t ownBytes = assignOffsets(ranges, ownLowerBound);
    for (size_t i = 0; i < ranges.size(); ++i) {
      owners[i].setOffsetAttr(builder.getI64IntegerAttr(base + ranges[i].offset));
    }
    // The lower bound: the most bytes live at one command, a call counting its callee's.
    std::vector<int64_t> live(commandList.size() + 2, 0);
    for (const LiveRange &range : ranges) {
      live[range.firstUse] += range.bytes;
      live[range.lastUse + 1] -= range.bytes;
    }
    int64_t programBound = ownLowerBound, running = 0;
    for (size_t i = 0; i < commandList.size(); ++i) {
      running += live[i];
      programBound = std::max(programBound, running + calleeBound[i]);
    }
    extentOf[program.getSymName()] = base + ownBytes;
    boundOf[program.getSymName()] = programBound;
    arenaBytes = std::max(arenaBytes, base + ownBytes);
    lowerBound = std::max(lowerBound, programBound);
  }
  // Activation buffers no command uses still need a valid place; views (one level, as the
  // verifier guarantees) then share their source's bytes.
  for (auto buffer : body.getOps<plan_ir::BufferOp>()) {
    if (!buffer.getViewOfAttr() && !buffer.getOffsetAttr()) {
      buffer.setOffsetAttr(builder.getI64IntegerAttr(0));
      arenaBytes = std::max(arenaBytes, alignedPlanBytes(buffer.getStorageBytes()));
    }
  }
  for (auto buffer : body.getOps<plan_ir::BufferOp>()) {
    if (buffer.getViewOfAttr()) {
      buffer.setOffsetAttr(buffers.lookup(buffer.getViewOfAttr().getAttr()).getOffsetAttr());
    }
  }
  persistent.setSizeAttr(builder.getI64IntegerAttr(persistentBytes));
  activations.setSizeAttr(builder.getI64IntegerAttr(arenaBytes));
  activations.setLowerBoundAttr(builder.getI64IntegerAttr(lowerBound));
  return success();
}

struct PlanMemoryPass : impl::PlanMemoryPassBase<PlanMemoryPass> {
  void runOnOperation() override {
    // Plans are isolated from each other (one per pipeline stage): placed in parallel.
    auto plans = llvm::to_vector(getOperation().getOps<plan_ir::PlanOp>());
    if (failed(failableParallelForEach(&getContext(), plans, placePlan))) {
      return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "plan-memory", kExact,
    "places buffers at static offsets; values alive together never share bytes");
