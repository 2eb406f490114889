//===- PlanOps.cpp - Execution-plan dialect --------------------*- C++ -*-===//

#include "dialects/Plan/IR/PlanOps.h"

#include "dialects/Plan/IR/ElementTypes.h"
#include "runtime/plan/PlanOps.h"
#include "runtime/plan/StreamOrder.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlperf::plan_ir;

#include "dialects/Plan/IR/PlanOpsDialect.cpp.inc"
#include "dialects/Plan/IR/PlanOpsEnums.cpp.inc"

void PlanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Plan/IR/PlanOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "dialects/Plan/IR/PlanOps.cpp.inc"

namespace {

/// The buffer `ref` names in the nearest plan, or an error at `user` naming `role`.
FailureOr<BufferOp> lookupBuffer(Operation *user, SymbolTableCollection &symbols,
                                 FlatSymbolRefAttr ref, StringRef role) {
  auto buffer = symbols.lookupNearestSymbolFrom<BufferOp>(user, ref);
  if (!buffer) {
    return user->emitOpError() << role << " " << ref << " is not a plan.buffer";
  }
  return buffer;
}

LogicalResult verifyBufferList(Operation *user, SymbolTableCollection &symbols, ArrayAttr refs,
                               StringRef role) {
  for (Attribute ref : refs) {
    if (failed(lookupBuffer(user, symbols, cast<FlatSymbolRefAttr>(ref), role))) {
      return failure();
    }
  }
  return success();
}

/// The element types of the plan ABI's dtype table (named as MLIR prints them).
bool isPlanElementType(Type type) { return mlperf::planDTypeInfo(type) != nullptr; }

} // namespace

LogicalResult PlanOp::verify() {
  if (getFormatVersionAttr().getInt() != static_cast<int64_t>(mlperf::rt::kPlanFormatVersion)) {
    return emitOpError() << "has format version " << getFormatVersion() << ", this compiler writes "
                         << mlperf::rt::kPlanFormatVersion;
  }
  llvm::StringSet<> classes;
  for (auto arena : getBody().front().getOps<ArenaOp>()) {
    if (!classes.insert(stringifyMemoryClass(arena.getMemoryClass())).second) {
      return arena.emitOpError() << "is a second arena of memory class \""
                                 << stringifyMemoryClass(arena.getMemoryClass())
                                 << "\": one per class";
    }
  }
  return success();
}

LogicalResult ArenaOp::verify() {
  if (getSizeAttr().getInt() < 0 || getLowerBoundAttr().getInt() < 0) {
    return emitOpError() << "size and lower bound must be non-negative";
  }
  return success();
}

int64_t BufferOp::getStorageBytes() {
  auto tensor = cast<RankedTensorType>(getType());
  return (tensor.getNumElements() * tensor.getElementType().getIntOrFloatBitWidth() + 7) / 8;
}

LogicalResult BufferOp::verify() {
  auto tensor = cast<RankedTensorType>(getType());
  if (!tensor.hasStaticShape() || !isPlanElementType(tensor.getElementType()) ||
      llvm::is_contained(tensor.getShape(), 0)) {
    return emitOpError() << "type must be a static tensor (no empty dims) of "
                         << mlperf::rt::dtypeNameList() << ", got " << tensor;
  }
  if (getOffsetAttr() && getOffsetAttr().getInt() < 0) {
    return emitOpError() << "offset must be non-negative";
  }
  return success();
}

LogicalResult BufferOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto arena = symbols.lookupNearestSymbolFrom<ArenaOp>(*this, getArenaAttr());
  if (!arena) {
    return emitOpError() << "arena " << getArenaAttr() << " is not a plan.arena";
  }
  if (getViewOfAttr()) {
    FailureOr<BufferOp> source = lookupBuffer(*this, symbols, getViewOfAttr(), "view source");
    if (failed(source)) {
      return failure();
    }
    if (source->getArenaAttr() != getArenaAttr() || source->getStorageBytes() < getStorageBytes()) {
      return emitOpError() << "must view a buffer of the same arena with at least its bytes";
    }
    // One level: liveness and placement follow a view to its source, never further.
    if (source->getViewOfAttr()) {
      return emitOpError() << "views " << getViewOfAttr()
                           << ", itself a view: view the source buffer instead";
    }
  }
  return success();
}

/// State that outlives a program (parameters, optimizer state, program inputs and outputs)
/// must be in the persistent arena: activation bytes are reused within and across programs.
static LogicalResult requirePersistent(Operation *user, SymbolTableCollection &symbols,
                                       BufferOp buffer, StringRef role) {
  auto arena = symbols.lookupNearestSymbolFrom<ArenaOp>(buffer, buffer.getArenaAttr());
  if (arena && arena.getMemoryClass() != MemoryClass::persistent) {
    return user->emitOpError() << role << " @" << buffer.getSymName()
                               << " must be in the persistent arena";
  }
  return success();
}

LogicalResult ParameterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  for (auto [ref, role] : {std::pair{getValueAttr(), "value"}, {getGradAttr(), "gradient"}}) {
    if (!ref) {
      continue;
    }
    FailureOr<BufferOp> buffer = lookupBuffer(*this, symbols, ref, role);
    if (failed(buffer) || failed(requirePersistent(*this, symbols, *buffer, role))) {
      return failure();
    }
  }
  if (getShardAxis().has_value() != getShardCount().has_value()) {
    return emitOpError() << "needs both shard_axis and shard_count, or neither";
  }
  return success();
}

LogicalResult StateOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (getShardAxis().has_value() != getShardCount().has_value()) {
    return emitOpError() << "needs both shard_axis and shard_count, or neither";
  }
  FailureOr<BufferOp> buffer = lookupBuffer(*this, symbols, getBufferAttr(), "state");
  return failure(failed(buffer) || failed(requirePersistent(*this, symbols, *buffer, "state")));
}

LogicalResult ProgramOp::verifySymbolUses(SymbolTableCollection &symbols) {
  for (auto [refs, role] : {std::pair{getInputs(), "input"}, {getOutputs(), "output"}}) {
    for (Attribute ref : refs) {
      FailureOr<BufferOp> buffer = lookupBuffer(*this, symbols, cast<FlatSymbolRefAttr>(ref), role);
      if (failed(buffer) || failed(requirePersistent(*this, symbols, *buffer, role))) {
        return failure();
      }
    }
  }
  for (Operation &op : getBody().front()) {
    if (!isa<CommandOp>(op)) {
      return op.emitOpError() << "is not a plan.command: programs hold only commands";
    }
  }
  // The stream rules (runtime/plan/StreamOrder.h), which the loader applies too.
  auto commands = llvm::to_vector(getBody().front().getOps<CommandOp>());
  SmallVector<StringRef> names;
  std::vector<mlperf::rt::StreamCommand> ordered = streamCommands(*this, symbols, names);
  mlperf::rt::StreamOrder order;
  auto streams = static_cast<uint32_t>(getStreamsAttr().getInt());
  if (auto problem = mlperf::rt::StreamOrder::analyze(ordered, streams, order)) {
    return commands[problem->command].emitOpError() << problem->message;
  }
  if (auto conflict = order.findConflict(ordered)) {
    CommandOp first = commands[conflict->first];
    return commands[conflict->second].emitOpError()
           << "on stream " << ordered[conflict->second].stream << " "
           << (conflict->secondWrites ? "writes" : "reads") << " buffer @"
           << names[conflict->secondRange.buffer] << " while command " << conflict->first << " (\""
           << first.getKernel() << "\") on stream " << ordered[conflict->first].stream << " "
           << (conflict->firstWrites ? "writes" : "reads") << " buffer @"
           << names[conflict->firstRange.buffer]
           << ", and no event orders them (a missing event_wait)";
  }
  return success();
}

LogicalResult ProgramOp::verify() {
  int64_t streams = getStreamsAttr().getInt();
  if (streams < 1 || streams > 2) {
    return emitOpError() << "has " << streams
                         << " streams; plans have a compute and a communication stream";
  }
  if ((getInputRolesAttr() && getInputRolesAttr().size() != getInputs().size()) ||
      (getOutputRolesAttr() && getOutputRolesAttr().size() != getOutputs().size())) {
    return emitOpError() << "needs one role per input and per output";
  }
  return success();
}

LogicalResult CommandOp::verify() {
  const mlperf::rt::PlanOpSignature *signature = mlperf::rt::findPlanOp(getKernel().str());
  if (!signature) {
    return emitOpError() << "kernel \"" << getKernel() << "\" is not an op the runtime executes";
  }
  auto within = [](int64_t count, int minimum, int maximum) {
    return count >= minimum && (maximum < 0 || count <= maximum);
  };
  if (!within(getOperands().size(), signature->minOperands, signature->maxOperands) ||
      !within(getResults().size(), signature->minResults, signature->maxResults)) {
    return emitOpError() << "kernel \"" << getKernel() << "\" cannot take " << getOperands().size()
                         << " operands and " << getResults().size() << " results";
  }
  int64_t streams = getParentOp<ProgramOp>().getStreamsAttr().getInt();
  int64_t stream = getStreamAttr().getInt();
  if (stream < 0 || stream >= streams) {
    return emitOpError() << "is on stream " << stream << " of a program with " << streams;
  }
  bool isEvent = getKernel() == "event_record" || getKernel() == "event_wait";
  if (isEvent != static_cast<bool>(getEventAttr())) {
    return emitOpError() << "kernel \"" << getKernel() << "\" "
                         << (isEvent ? "needs an integer 'event'"
                                     : "names an event it does not use");
  }
  return success();
}

LogicalResult CommandOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(verifyBufferList(*this, symbols, getOperands(), "operand")) ||
      failed(verifyBufferList(*this, symbols, getResults(), "result"))) {
    return failure();
  }
  if (getKernel() == "call") {
    auto callee = getKernelAttrs().getAs<StringAttr>("program");
    auto program = getParentOp<ProgramOp>();
    auto target =
        callee ? symbols.lookupSymbolIn<ProgramOp>(program->getParentOp(),
                                                   StringAttr::get(getContext(), callee.getValue()))
               : ProgramOp();
    // Earlier programs only, as the loader requires: no cycles, callees placed first.
    if (!target || target == program || !target->isBeforeInBlock(program)) {
      return emitOpError() << "calls " << (callee ? "@" + callee.str() : "no 'program'")
                           << ", which is no earlier program of the plan";
    }
  }
  return success();
}

std::vector<mlperf::rt::StreamCommand>
mlperf::plan_ir::streamCommands(ProgramOp program, SymbolTableCollection &symbols,
                                SmallVectorImpl<StringRef> &bufferNames) {
  // By root name attribute (uniqued: a pointer hash); the plan is the symbol table.
  llvm::DenseMap<Attribute, uint32_t> idOf;
  Operation *plan = program->getParentOp();
  auto range = [&](Attribute ref) {
    auto symbol = cast<FlatSymbolRefAttr>(ref);
    auto buffer = plan ? symbols.lookupSymbolIn<BufferOp>(plan, symbol) : BufferOp();
    StringAttr root =
        buffer && buffer.getViewOfAttr() ? buffer.getViewOfAttr().getAttr() : symbol.getAttr();
    auto [it, fresh] = idOf.try_emplace(root, bufferNames.size());
    if (fresh) {
      bufferNames.push_back(root.getValue());
    }
    return mlperf::rt::ByteRange{0, it->second, it->second + 1u, it->second};
  };
  std::vector<mlperf::rt::StreamCommand> ordered;
  ordered.reserve(program.getBody().front().getOperations().size());
  for (CommandOp command : program.getBody().front().getOps<CommandOp>()) {
    mlperf::rt::StreamCommand c;
    c.reads.reserve(command.getOperands().size());
    c.writes.reserve(command.getResults().size());
    StringRef kernel = command.getKernel();
    c.kind = mlperf::rt::StreamCommand::kindOf(kernel);
    c.stream = static_cast<uint32_t>(command.getStreamAttr().getInt());
    if (auto event = command.getEventAttr()) {
      c.event = event.getInt();
    }
    for (Attribute ref : command.getOperands()) {
      c.reads.push_back(range(ref));
    }
    for (Attribute ref : command.getResults()) {
      c.writes.push_back(range(ref));
    }
    ordered.push_back(std::move(c));
  }
  return ordered;
}
