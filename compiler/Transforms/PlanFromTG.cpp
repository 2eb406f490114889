//===- PlanFromTG.cpp - The execution plan of a train step -----*- C++ -*-===//

#include "compiler/Analysis/MemoryPlan.h"
#include "compiler/Support/ChunkNames.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Support/StepRoles.h"
#include "compiler/Transforms/Passes.h"
#include "runtime/plan/StepRoles.h"

#include "runtime/plan/PlanOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>

#define DEBUG_TYPE "plan-from-tg"

namespace mlperf {
#define GEN_PASS_DEF_PLANFROMTGPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

/// Builds one plan.plan; buffers are created in the order the plan file will number them.
class PlanBuilder {
public:
  PlanBuilder(tg::ModelOp model, plan_ir::PlanOp plan)
      : model(model), plan(plan), builder(&plan.getBody().front(), plan.getBody().front().end()) {}

  LogicalResult build(StringRef precision, int64_t accumulation);

private:
  FlatSymbolRefAttr addBuffer(StringRef name, Type type, FlatSymbolRefAttr arena,
                              FlatSymbolRefAttr viewOf = {}) {
    // Activation and view names repeat (forward.matmul): number them. Any name (a parameter
    // called "loss" or "forward", a generated one) that is already a symbol of the plan gets
    // the next free number too; the Hugging Face name lives in plan.parameter either way.
    bool numbered = arena == activations || viewOf;
    std::string unique =
        numbered ? name.str() + "." + std::to_string(counters[name]++) : name.str();
    while (!usedNames.insert(unique).second) {
      unique = name.str() + "." + std::to_string(counters[name]++);
    }
    bufferOps[unique] =
        plan_ir::BufferOp::create(builder, model.getLoc(), builder.getStringAttr(unique),
                                  TypeAttr::get(type), arena, IntegerAttr(), viewOf);
    return FlatSymbolRefAttr::get(builder.getContext(), unique);
  }
  LogicalResult buildProgram(func::FuncOp func, ArrayRef<FlatSymbolRefAttr> inputs,
                             ArrayRef<FlatSymbolRefAttr> outputs,
                             ArrayRef<std::string> inputRoles = {},
                             ArrayRef<std::string> outputRoles = {});
  /// The step programs (train_step, eval_step): inputs and outputs by their tg.role.
  LogicalResult buildStepProgram(func::FuncOp func);
  /// Whether @train_step calls @`callee`.
  bool stepCalls(StringRef callee) {
    func::FuncOp step = lookup("train_step");
    bool calls = false;
    if (step) {
      step.walk([&](func::CallOp call) { calls |= call.getCallee() == callee; });
    }
    return calls;
  }
  /// The buffer a step program's argument or result with `role` lives in.
  FailureOr<FlatSymbolRefAttr> stepBuffer(func::FuncOp func, const StepRole &role, Type type,
                                          bool input);
  DictionaryAttr modelInfo(StringRef precision, int64_t accumulation);
  func::FuncOp lookup(StringRef name) {
    return dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, name));
  }
  /// A chunk's backward: @forward_backward<suffix>, or on a pipeline stage tg-recompute's
  /// pair @forward_and_stash / @backward_from_stash (nulls when the chunk has neither).
  std::pair<func::FuncOp, func::FuncOp> backwardOf(StringRef suffix);
  /// The persistent buffers of every parameter (value, gradient, optimizer state by the
  /// roles of @optimizer_step's arguments) and their plan.parameter / plan.state ops.
  LogicalResult declareParameters(func::FuncOp optimizerStep);
  /// tg-fp8's scaling state that @train_step takes, one checkpointed buffer per role and group.
  void declareFp8State();
  /// The plan's mesh attribute from the model's dist.mesh.
  void declareMesh();
  /// One model chunk's programs: forward, the stash forward of a pipeline stage, the
  /// backward and its gradient-reducing copy, over buffers named with `suffix`;
  /// `beforePrograms` runs once its buffers exist.
  LogicalResult buildChunkPrograms(func::FuncOp chunkForward, func::FuncOp stashForward,
                                   func::FuncOp chunkBackward, StringRef suffix,
                                   llvm::function_ref<void()> beforePrograms);
  /// @optimizer_step over the buffers of its roles (a gradient from the buffer the last
  /// backward reduced it into).
  LogicalResult buildOptimizerProgram(func::FuncOp optimizerStep);

  struct ParameterBuffers {
    tg::ParamOp param;
    FlatSymbolRefAttr value, grad;
    // Its optimizer state: (role, buffer, ZeRO-1 shard axis and count, whether it starts as
    // the parameter's value) in argument order.
    SmallVector<std::tuple<std::string, FlatSymbolRefAttr, StringAttr, int64_t, bool>> state;
  };

  tg::ModelOp model;
  plan_ir::PlanOp plan;
  OpBuilder builder;
  FlatSymbolRefAttr persistent, activations;
  llvm::StringMap<FlatSymbolRefAttr> parameterValue;
  llvm::StringMap<int64_t> counters;
  llvm::StringMap<plan_ir::BufferOp> bufferOps;
  // Per built program, its input and output buffers (what a call copies in and reads out).
  llvm::StringMap<std::pair<SmallVector<FlatSymbolRefAttr>, SmallVector<FlatSymbolRefAttr>>>
      programIO;
  // Per parameter and state role ("param", "master", ...), its persistent buffer.
  std::map<std::pair<std::string, std::string>, FlatSymbolRefAttr> stateBuffers;
  FlatSymbolRefAttr stepRef, lrRef, normRef, seedRef, evalSumRef, evalLossRef;
  SmallVector<ParameterBuffers> parameters;
  // Per trained parameter its gradient buffer, and the buffer a backward reduced it into
  // when that has another type (a ZeRO-1 shard).
  llvm::StringMap<FlatSymbolRefAttr> gradOf, reducedGradOf;
  // Symbols of the plan: the arenas and programs, then every buffer.
  llvm::StringSet<> usedNames{"persistent",       "activations",       "forward",
                              "forward_backward", "forward_and_stash", "backward_from_stash",
                              "optimizer_step",   "train_step",        "eval_step",
                              "eval_finish"};
};

/// Whether argument (or result) `index` of `func` is fp8 scaling state (tg-fp8): such values
/// follow the positional signature a function had before.
bool isFp8State(func::FuncOp func, unsigned index, bool argument) {
  std::optional<StepRole> role = argument ? argRole(func, index) : resultRole(func, index);
  return role && rt::role::isFp8State(role->role);
}

/// Per parameter, the arguments of @optimizer_step that are its optimizer state (every role
/// but the step, the gradients and tg-fp8's scaling state), in argument order.
FailureOr<llvm::StringMap<SmallVector<unsigned>>> optimizerStateArgs(func::FuncOp optimizerStep) {
  llvm::StringMap<SmallVector<unsigned>> stateArgs;
  for (unsigned i = 0; i < optimizerStep.getNumArguments(); ++i) {
    std::optional<StepRole> role = argRole(optimizerStep, i);
    if (!role) {
      return optimizerStep.emitError()
             << "plan-from-tg: @optimizer_step argument " << i << " has no tg.role";
    }
    if (role->role == rt::role::kStep || role->role == rt::role::kGrad ||
        rt::role::isFp8State(role->role)) {
      continue;
    }
    if (role->param.empty()) {
      return optimizerStep.emitError() << "plan-from-tg: @optimizer_step argument " << i
                                       << " (role '" << role->role << "') names no parameter";
    }
    stateArgs[role->param].push_back(i);
  }
  return stateArgs;
}

/// The buffers of a sub-program's fp8 state arguments or results, one per (role, group).
SmallVector<FlatSymbolRefAttr>
fp8StateBuffers(func::FuncOp func, bool arguments,
                llvm::function_ref<FlatSymbolRefAttr(StringRef, Type)> add) {
  SmallVector<FlatSymbolRefAttr> refs;
  unsigned count = arguments ? func.getNumArguments() : func.getNumResults();
  for (unsigned i = 0; i < count; ++i) {
    if (!isFp8State(func, i, arguments)) {
      continue;
    }
    StepRole role = *(arguments ? argRole(func, i) : resultRole(func, i));
    Type type = arguments ? func.getArgumentTypes()[i] : func.getResultTypes()[i];
    refs.push_back(add(
        (func.getSymName() + (arguments ? ".in." : ".out.") + role.role + "." + role.param).str(),
        type));
  }
  return refs;
}

ArrayAttr refArray(OpBuilder &builder, ArrayRef<FlatSymbolRefAttr> refs) {
  return builder.getArrayAttr(SmallVector<Attribute>(refs.begin(), refs.end()));
}

bool encodable(Attribute value) {
  return isa<FloatAttr, IntegerAttr, UnitAttr, StringAttr, DenseI64ArrayAttr>(value);
}

LogicalResult PlanBuilder::buildProgram(func::FuncOp func, ArrayRef<FlatSymbolRefAttr> inputs,
                                        ArrayRef<FlatSymbolRefAttr> outputs,
                                        ArrayRef<std::string> inputRoles,
                                        ArrayRef<std::string> outputRoles) {
  // The function must have the signature its program's buffers were made for.
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  auto mismatch = [&](TypeRange types, ArrayRef<FlatSymbolRefAttr> refs) {
    if (types.size() != refs.size()) {
      return true;
    }
    for (auto [type, ref] : llvm::zip(types, refs)) {
      if (type != bufferOps.lookup(ref.getValue()).getType()) {
        return true;
      }
    }
    return false;
  };
  if (mismatch(func.getArgumentTypes(), inputs) || mismatch(ret.getOperandTypes(), outputs)) {
    return func.emitError() << "plan-from-tg: @" << func.getSymName() << " should take "
                            << inputs.size() << " and return " << outputs.size()
                            << " tensors of the types of the train step's buffers";
  }
  auto roleArray = [&](ArrayRef<std::string> roles) {
    return roles.empty()
               ? ArrayAttr()
               : builder.getStrArrayAttr(SmallVector<StringRef>(roles.begin(), roles.end()));
  };
  auto program = plan_ir::ProgramOp::create(builder, func.getLoc(), func.getSymNameAttr(),
                                            refArray(builder, inputs), refArray(builder, outputs),
                                            builder.getI64IntegerAttr(1), roleArray(inputRoles),
                                            roleArray(outputRoles));
  programIO[func.getSymName()] = {SmallVector<FlatSymbolRefAttr>(inputs),
                                  SmallVector<FlatSymbolRefAttr>(outputs)};
  program.getBody().emplaceBlock();
  OpBuilder::InsertionGuard guard(builder);
  OpBuilder commands(&program.getBody().front(), program.getBody().front().end());
  // The micro-batch of the step op being lowered (tg-train-step's tg.micro_batch), which
  // every command it becomes carries for readers of the schedule.
  IntegerAttr microBatch;
  auto emit = [&](Location loc, StringRef kernel, ArrayRef<FlatSymbolRefAttr> operands,
                  ArrayRef<FlatSymbolRefAttr> results, DictionaryAttr attributes, int64_t stream,
                  IntegerAttr event = {}) {
    plan_ir::CommandOp::create(commands, loc, commands.getStringAttr(kernel),
                               refArray(commands, operands), refArray(commands, results),
                               attributes, commands.getI64IntegerAttr(stream), event, microBatch);
  };
  int64_t events = 0; // per program

  llvm::DenseMap<Value, FlatSymbolRefAttr> bufferOf;
  // The bytes a buffer uses (a view's are its source's), by symbol attribute: attributes are
  // uniqued, so these maps hash pointers, not the names of ~10^5 buffers.
  llvm::DenseMap<Attribute, StringAttr> rootCache;
  auto rootOf = [&](FlatSymbolRefAttr ref) -> StringAttr {
    auto [it, fresh] = rootCache.try_emplace(ref);
    if (fresh) {
      plan_ir::BufferOp buffer = bufferOps.lookup(ref.getValue());
      it->second =
          buffer && buffer.getViewOfAttr() ? buffer.getViewOfAttr().getAttr() : ref.getAttr();
    }
    return it->second;
  };
  // Per buffer (its bytes), the values bound to it; an entry is stale once its value is
  // bound elsewhere. Calls look up what they overwrite here instead of scanning every value.
  llvm::DenseMap<StringAttr, SmallVector<Value, 2>> holders;
  auto bind = [&](Value value, FlatSymbolRefAttr ref) {
    bufferOf[value] = ref;
    if (ref) {
      holders[rootOf(ref)].push_back(value);
    }
  };
  // The values `root` holds, each once. The array lives in `holders`: read it before the
  // next bind.
  auto valuesIn = [&](StringAttr root) -> ArrayRef<Value> {
    auto it = holders.find(root);
    if (it == holders.end()) {
      return {};
    }
    SmallVector<Value, 2> &values = it->second;
    llvm::erase_if(values, [&](Value value) { // drop the stale entries for good
      FlatSymbolRefAttr ref = bufferOf.lookup(value);
      return !ref || rootOf(ref) != root;
    });
    llvm::sort(values,
               [](Value a, Value b) { return a.getAsOpaquePointer() < b.getAsOpaquePointer(); });
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
  };
  for (auto [arg, ref] : llvm::zip(body.getArguments(), inputs)) {
    bind(arg, ref);
  }
  // Returned values are written straight into the program's output buffers.
  llvm::DenseMap<Value, FlatSymbolRefAttr> outputOf;
  for (auto [value, ref] : llvm::zip(ret.getOperands(), outputs)) {
    outputOf.try_emplace(value, ref);
  }
  // Buffers go before the program, commands into it.
  builder.setInsertionPoint(program);
  llvm::DenseMap<Operation *, int64_t> position;
  for (auto [index, op] : llvm::enumerate(body)) {
    position[&op] = static_cast<int64_t>(index);
  }
  auto definedBefore = [&](Value a, Value b) {
    auto key = [&](Value v) -> std::pair<int64_t, int64_t> {
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        return {-1, arg.getArgNumber()};
      }
      return {position.lookup(v.getDefiningOp()), cast<OpResult>(v).getResultNumber()};
    };
    return key(a) < key(b);
  };
  // The output buffer of the reshape that alone reads `value`, when that reshape's result is
  // returned once, into a buffer that is no view and no input of the program and has
  // `value`'s bytes.
  auto reshapedOutput = [&](Value value) -> FlatSymbolRefAttr {
    if (!value.hasOneUse()) {
      return {};
    }
    auto reshape = dyn_cast<tg::ReshapeOp>(*value.getUsers().begin());
    auto it = reshape ? outputOf.find(reshape.getResult()) : outputOf.end();
    if (it == outputOf.end() || llvm::count(ret.getOperands(), reshape.getResult()) != 1 ||
        llvm::is_contained(inputs, it->second)) {
      return {};
    }
    plan_ir::BufferOp buffer = bufferOps.lookup(it->second.getValue());
    if (!buffer || buffer.getViewOfAttr() ||
        storageBytes(value.getType(), 1) != buffer.getStorageBytes()) {
      return {};
    }
    return it->second;
  };
  auto copy = [&](Location loc, FlatSymbolRefAttr from, FlatSymbolRefAttr to) {
    emit(loc, "copy", {from}, {to}, DictionaryAttr::get(builder.getContext()), 0);
  };
  // A value read only by a call, as a sub-program input nothing else holds until then (the
  // initial gradient sums, a received cotangent), is written straight into that input buffer.
  auto directCallInput = [&](Value value, Operation *producer) -> FlatSymbolRefAttr {
    if (!value.hasOneUse()) {
      return {};
    }
    OpOperand &use = *value.getUses().begin();
    auto call = dyn_cast<func::CallOp>(use.getOwner());
    auto io = call ? programIO.find(call.getCallee()) : programIO.end();
    if (io == programIO.end() || use.getOperandNumber() >= io->second.first.size()) {
      return {};
    }
    FlatSymbolRefAttr input = io->second.first[use.getOperandNumber()];
    if (bufferOps.lookup(input.getValue()).getType() != value.getType()) {
      return {};
    }
    for (Value other : valuesIn(rootOf(input))) {
      for (Operation *user : other.getUsers()) {
        if (producer->isBeforeInBlock(user) || user == producer) {
          return {}; // that buffer still holds a value read later
        }
      }
    }
    return input;
  };
  for (Operation &op : body.without_terminator()) {
    microBatch = op.getAttrOfType<IntegerAttr>(kMicroBatchAttr);
    if (auto call = dyn_cast<func::CallOp>(op)) {
      // A call of a sub-program: its inputs are copied into its input buffers, and it leaves
      // its results in its output buffers. Values of this program that live in those buffers
      // and are read at or after the call (micro-batch 0's gradients, earlier losses) are
      // first saved to buffers of their own.
      auto io = programIO.find(call.getCallee());
      if (io == programIO.end()) {
        return call.emitError() << "plan-from-tg: @" << call.getCallee()
                                << " has no program to call";
      }
      const auto &[calleeInputs, calleeOutputs] = io->second;
      if (calleeInputs.size() != call.getNumOperands() ||
          calleeOutputs.size() != call.getNumResults()) {
        return call.emitError() << "plan-from-tg: the call does not match @" << call.getCallee();
      }
      llvm::SmallDenseSet<StringAttr> clobbered; // the buffers (roots) the call writes or reads
      SmallVector<std::pair<Value, FlatSymbolRefAttr>> saved;
      for (FlatSymbolRefAttr callee :
           llvm::concat<const FlatSymbolRefAttr>(calleeInputs, calleeOutputs)) {
        StringAttr root = rootOf(callee);
        if (!clobbered.insert(root).second) {
          continue;
        }
        for (Value value : valuesIn(root)) {
          FlatSymbolRefAttr ref = bufferOf.lookup(value);
          bool needed = false;
          for (OpOperand &use : value.getUses()) {
            Operation *user = use.getOwner();
            if (user == call.getOperation()) {
              needed |= calleeInputs[use.getOperandNumber()] != ref;
            } else {
              needed |= op.isBeforeInBlock(user);
            }
          }
          if (needed) {
            saved.push_back({value, ref});
          }
        }
      }
      // In program order, so that the plan is the same on every compile.
      llvm::sort(saved,
                 [&](const auto &a, const auto &b) { return definedBefore(a.first, b.first); });
      for (auto &[value, ref] : saved) {
        FlatSymbolRefAttr kept =
            addBuffer(func.getSymName().str() + ".saved", value.getType(), activations);
        copy(call.getLoc(), ref, kept);
        bind(value, kept);
      }
      for (auto [operand, input] : llvm::zip(call.getOperands(), calleeInputs)) {
        FlatSymbolRefAttr source = bufferOf.lookup(operand);
        if (source != input) {
          copy(call.getLoc(), source, input);
        }
      }
      emit(call.getLoc(), "call", {}, {},
           commands.getDictionaryAttr(
               commands.getNamedAttr("program", commands.getStringAttr(call.getCallee()))),
           0);
      // What else those buffers held is dead now (saved values moved to buffers of their
      // own): forgetting it keeps each later call's scan to the values it can clobber, not
      // every gradient sum of every earlier micro-batch.
      for (StringAttr root : clobbered) {
        holders.erase(root);
      }
      for (auto [result, output] : llvm::zip(call.getResults(), calleeOutputs)) {
        bind(result, output);
      }
      continue;
    }
    if (auto ref = dyn_cast<tg::ParamRefOp>(op)) {
      bind(ref.getResult(), parameterValue.lookup(ref.getName()));
      continue;
    }
    if (auto done = dyn_cast<dist::DoneOp>(op)) {
      if (done.getResult()) {
        bind(done.getResult(), bufferOf.lookup(done.getFuture()));
      }
      continue;
    }
    // A collective's start/done pair is one command on the communication stream, fenced by
    // events (below); the done's result is that command's result buffer.
    DictionaryAttr attributes = op.getAttrDictionary();
    StringRef kernel = op.getName().stripDialect();
    Value produced;
    bool transfer = isa<dist::SendStartOp, dist::RecvStartOp>(op);
    bool communication =
        transfer ||
        isa<dist::AllReduceStartOp, dist::ReduceScatterStartOp, dist::AllGatherStartOp>(op);
    if (communication) {
      SmallVector<NamedAttribute> commandAttrs;
      if (transfer) {
        // Point-to-point: "send" / "recv" with the axis, shift and tag of the dist op.
        kernel = isa<dist::SendStartOp>(op) ? "send" : "recv";
        for (StringRef name : {"axis", "shift", "tag"}) {
          commandAttrs.push_back(builder.getNamedAttr(name, op.getAttr(name)));
        }
      } else {
        auto axes = op.getAttrOfType<ArrayAttr>("axes");
        if (!axes || axes.size() != 1) {
          return op.emitError()
                 << "plan-from-tg: a plan collective runs over exactly one mesh axis";
        }
        kernel = kernel.drop_back(StringRef("_start").size());
        commandAttrs.push_back(builder.getNamedAttr("axis", axes[0]));
        if (auto dim = op.getAttrOfType<IntegerAttr>("dim"); dim && dim.getInt() != 0) {
          commandAttrs.push_back(builder.getNamedAttr("dim", dim)); // a sequence split
        }
        if (auto reduce = dyn_cast<dist::AllReduceStartOp>(op);
            reduce && reduce.getReduction() != "sum") {
          commandAttrs.push_back(builder.getNamedAttr("reduction", reduce.getReductionAttr()));
        }
      }
      attributes = builder.getDictionaryAttr(commandAttrs);
      auto done = op.getResult(0).hasOneUse()
                      ? dyn_cast<dist::DoneOp>(*op.getResult(0).getUsers().begin())
                      : dist::DoneOp();
      if (!done || (!done.getResult() && !isa<dist::SendStartOp>(op))) {
        return op.emitError() << "plan-from-tg: a collective start needs exactly one dist.done";
      }
      produced = done.getResult();
    } else if (auto shard = dyn_cast<dist::LocalShardOp>(op)) {
      attributes = builder.getDictionaryAttr({builder.getNamedAttr("axis", shard.getAxisAttr())});
    } else if (op.getName().getDialectNamespace() != "tg") {
      return op.emitError() << "plan-from-tg: no plan command for '" << op.getName() << "'";
    }
    if (!rt::findPlanOp(kernel)) {
      return op.emitError() << "plan-from-tg: no plan command for '" << op.getName()
                            << "' (run the train-step pipeline first)";
    }
    if (auto dropout = dyn_cast<tg::DropoutOp>(op);
        dropout && (!dropout.getKey() || dropout.getName().contains("{i}"))) {
      return op.emitError() << "plan-from-tg: a tg.dropout without a key or with a per-layer "
                               "name outside its layer (tg-train-step gives the functions it "
                               "calls per micro-batch their keys; tg-inline-layers names each "
                               "layer's dropout)";
    }
    SmallVector<FlatSymbolRefAttr> operands, results;
    for (Value operand : op.getOperands()) {
      operands.push_back(bufferOf.lookup(operand));
    }
    for (Value result : isa<dist::SendStartOp>(op) ? ValueRange() : op.getResults()) {
      Value value = produced ? produced : result; // a future's buffer holds the done's value
      FlatSymbolRefAttr ref;
      if (auto it = outputOf.find(value); it != outputOf.end()) {
        ref = it->second;
      } else if (FlatSymbolRefAttr input = directCallInput(value, &op)) {
        ref = input; // produced straight into the buffer the call reads it from
      } else if (FlatSymbolRefAttr output = reshapedOutput(value)) {
        // Read only by a reshape that is returned: produced straight into a view of that
        // output buffer, so the reshape copies nothing (and a collective's result, an
        // all-gathered parameter, waits for no copy).
        ref = addBuffer(func.getSymName().str() + ".view", value.getType(),
                        bufferOps.lookup(output.getValue()).getArenaAttr(), output);
      } else if (isa<tg::ReshapeOp>(op)) {
        // A view of its input's bytes; a view of a view is a view of the first one.
        FlatSymbolRefAttr source = bufferOf.lookup(op.getOperand(0));
        plan_ir::BufferOp sourceBuffer = bufferOps.lookup(source.getValue());
        if (sourceBuffer.getViewOfAttr()) {
          source = sourceBuffer.getViewOfAttr();
        }
        ref = addBuffer(func.getSymName().str() + ".view", value.getType(),
                        sourceBuffer.getArenaAttr(), source);
      } else {
        ref = addBuffer(func.getSymName().str() + "." + kernel.str(), value.getType(), activations);
      }
      bind(result, ref);
      results.push_back(ref);
    }
    for (NamedAttribute attr : attributes) {
      if (!encodable(attr.getValue())) {
        return op.emitError() << "plan-from-tg: attribute '" << attr.getName()
                              << "' has no plan encoding";
      }
    }
    if (!communication) {
      if (isa<tg::ReshapeOp>(op) &&
          bufferOps.lookup(operands[0].getValue()).getViewOfAttr() == results[0]) {
        continue; // its input was produced into a view of its result: the same bytes
      }
      emit(op.getLoc(), kernel, operands, results, attributes, 0);
      continue;
    }
    // A collective runs on the communication stream (1): it waits for what stream 0 computed
    // so far, and stream 0 waits for it right after (where the dist.done was). A scheduling
    // pass (plan-schedule, not written yet) would move stream 0's wait later to overlap.
    auto event = [&](StringRef kind, int64_t stream, int64_t id) {
      emit(op.getLoc(), kind, {}, {}, DictionaryAttr::get(builder.getContext()), stream,
           commands.getI64IntegerAttr(id));
    };
    int64_t ready = events++, done = events++;
    event("event_record", 0, ready);
    event("event_wait", 1, ready);
    emit(op.getLoc(), kernel, operands, results, attributes, 1);
    event("event_record", 1, done);
    event("event_wait", 0, done);
    program.setStreams(2);
  }
  // A returned value produced elsewhere (an argument, a parameter, a value returned twice)
  // is copied into its output buffer.
  for (auto [value, ref] : llvm::zip(ret.getOperands(), outputs)) {
    FlatSymbolRefAttr source = bufferOf.lookup(value);
    if (source != ref) {
      copy(ret.getLoc(), source, ref);
    }
  }
  builder.setInsertionPointToEnd(&plan.getBody().front());
  return success();
}

DictionaryAttr PlanBuilder::modelInfo(StringRef precision, int64_t accumulation) {
  Block &body = model.getBody().front();
  SmallVector<NamedAttribute> fields;
  auto add = [&](StringRef name, Attribute value) {
    fields.push_back(builder.getNamedAttr(name, value));
  };
  add("name", builder.getStringAttr(model.getSymName()));
  add("precision", builder.getStringAttr(precision));
  add("gradient_accumulation_steps", builder.getI64IntegerAttr(accumulation));
  // tg-train-step's batch layout: which global micro-batch each rank's micro-batch reads.
  if (auto trainStep =
          dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "train_step"))) {
    if (auto layout = trainStep->getAttrOfType<DenseI64ArrayAttr>(kBatchLayoutAttr)) {
      add("train_micro_batches", layout);
    }
  }
  for (auto benchmark : body.getOps<tg::BenchmarkOp>()) {
    add("benchmark", benchmark.getNameAttr());
    add("eval_every_samples", benchmark.getEvalEverySamplesAttr());
    add("eval_samples", benchmark.getEvalSamplesAttr());
    add("target_metric", benchmark.getTargetMetricAttr());
    add("target_value", benchmark.getTargetValueAttr());
    if (IntegerAttr skip = benchmark.getEvalSkipAttr()) {
      add("eval_skip", skip);
    }
  }
  // Every MLPerf key the runtime logs as it is: the optimizer's hyperparameters, then what
  // the benchmark declares (tg.benchmark's verifier keeps the two apart).
  NamedAttrList mllog;
  for (auto optimizer : body.getOps<tg::OptimizerOp>()) {
    mllog.append(optimizer.getMLLogKeys());
  }
  for (auto benchmark : body.getOps<tg::BenchmarkOp>()) {
    if (DictionaryAttr declared = benchmark.getMllogAttr()) {
      mllog.append(declared.getValue());
    }
  }
  if (!mllog.empty()) {
    add("mllog", mllog.getDictionary(builder.getContext()));
  }
  for (auto batch : body.getOps<tg::BatchOp>()) {
    add("global_batch_size", batch.getGlobalBatchSizeAttr());
    add("micro_batch_size", batch.getMicroBatchSizeAttr());
    add("seq_len", batch.getSeqLenAttr());
  }
  for (auto optimizer : body.getOps<tg::OptimizerOp>()) {
    add("optimizer", optimizer.getNameAttr());
  }
  for (auto schedule : body.getOps<tg::LRScheduleOp>()) {
    add("lr_schedule", schedule.getKindAttr());
    add("base_lr", schedule.getBaseLrAttr());
    add("end_lr", schedule.getEndLrAttr());
    add("warmup_steps", schedule.getWarmupStepsAttr());
    add("decay_steps", schedule.getDecayStepsAttr());
    add("max_steps", schedule.getMaxStepsAttr());
  }
  return builder.getDictionaryAttr(fields);
}

std::pair<func::FuncOp, func::FuncOp> PlanBuilder::backwardOf(StringRef suffix) {
  if (func::FuncOp fb = lookup(("forward_backward" + suffix).str())) {
    return {func::FuncOp(), fb};
  }
  func::FuncOp forward = lookup(("forward_and_stash" + suffix).str());
  func::FuncOp backward = lookup(("backward_from_stash" + suffix).str());
  // Both halves or neither: one alone is not a chunk's backward.
  return forward && backward ? std::pair{forward, backward}
                             : std::pair{func::FuncOp(), func::FuncOp()};
}

LogicalResult PlanBuilder::build(StringRef precision, int64_t accumulation) {
  func::FuncOp forward = lookup("forward"), optimizerStep = lookup("optimizer_step");
  auto [stashForward, forwardBackward] = backwardOf("");
  if (!forward || !forwardBackward || !optimizerStep) {
    return model.emitError() << "plan-from-tg needs @forward, @forward_backward (or "
                                "tg-recompute's @forward_and_stash and @backward_from_stash) "
                                "and @optimizer_step: run the train-step pipeline first";
  }
  plan->setAttr("model", modelInfo(precision, accumulation));
  if (auto stage = model->getAttrOfType<IntegerAttr>("dist.stage")) {
    plan->setAttr("stage", stage); // one plan per pipeline stage
  }
  MLIRContext *context = builder.getContext();
  for (plan_ir::MemoryClass memoryClass :
       {plan_ir::MemoryClass::persistent, plan_ir::MemoryClass::activations}) {
    plan_ir::ArenaOp::create(builder, model.getLoc(),
                             builder.getStringAttr(plan_ir::stringifyMemoryClass(memoryClass)),
                             plan_ir::MemoryClassAttr::get(context, memoryClass),
                             builder.getI64IntegerAttr(0), builder.getI64IntegerAttr(0));
  }
  persistent = FlatSymbolRefAttr::get(context, "persistent");
  activations = FlatSymbolRefAttr::get(context, "activations");

  if (failed(declareParameters(optimizerStep))) {
    return failure();
  }
  declareFp8State();
  declareMesh();
  // The persistent inputs and outputs of every program before its activations.
  auto addScalars = [&] {
    auto scalarF32 = RankedTensorType::get({}, builder.getF32Type());
    stepRef = addBuffer("step", RankedTensorType::get({}, builder.getI64Type()), persistent);
    lrRef = addBuffer("lr", scalarF32, persistent);
    normRef = addBuffer("grad_norm", scalarF32, persistent);
  };
  if (failed(buildChunkPrograms(forward, stashForward, forwardBackward, "", addScalars))) {
    return failure();
  }
  for (int chunk = 1;; ++chunk) {
    std::string suffix = chunkSuffix(chunk);
    func::FuncOp chunkForward = lookup("forward" + suffix);
    auto [chunkStashForward, chunkBackward] = backwardOf(suffix);
    if (!chunkForward) {
      break;
    }
    if (!chunkBackward ||
        failed(buildChunkPrograms(chunkForward, chunkStashForward, chunkBackward, suffix, [] {}))) {
      return chunkBackward ? failure()
                           : model.emitError() << "plan-from-tg: @forward" << suffix
                                               << " has no @forward_backward" << suffix
                                               << " (nor both @forward_and_stash" << suffix
                                               << " and @backward_from_stash" << suffix << ")";
    }
  }
  if (failed(buildOptimizerProgram(optimizerStep))) {
    return failure();
  }
  // What the runtime runs: the whole step, one evaluation micro-batch and the evaluation's
  // end, and the initial train state (parameters from the seed, the optimizer state from the
  // parameters).
  for (StringRef name :
       {"train_step", "eval_step", "eval_finish", "init_params", "init_optimizer"}) {
    func::FuncOp step = lookup(name);
    if (!step) {
      return model.emitError() << "plan-from-tg needs @" << name
                               << ": run the train-step pipeline (tg-train-step) first";
    }
    if (failed(buildStepProgram(step))) {
      return failure();
    }
  }
  return success();
}

LogicalResult PlanBuilder::declareParameters(func::FuncOp optimizerStep) {
  // Persistent memory: per parameter its value and, when trained, its gradient and optimizer
  // state. What the state is (roles, types, ZeRO-1 shards) is read from @optimizer_step's
  // arguments, so another optimizer changes nothing here.
  Block &body = model.getBody().front();
  FailureOr<llvm::StringMap<SmallVector<unsigned>>> stateArgsOf = optimizerStateArgs(optimizerStep);
  if (failed(stateArgsOf)) {
    return failure();
  }
  // The gradient sums the backwards add to in place, by parameter: with ZeRO-2 a shard
  // (dist-decompose-collectives), which the gradient buffer then holds.
  llvm::StringMap<Type> accumulatorType;
  for (auto func : body.getOps<func::FuncOp>()) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      if (std::optional<StepRole> role = argRole(func, i);
          role && role->role == rt::role::kGrad &&
          func.getSymName() != optimizerStep.getSymName()) {
        accumulatorType[role->param] = func.getArgumentTypes()[i];
      }
    }
  }
  for (auto param : body.getOps<tg::ParamOp>()) {
    if (param.getRepeat()) {
      return param.emitError() << "plan-from-tg needs concrete parameters: run "
                                  "tg-inline-layers first";
    }
    StringRef name = param.getSymName();
    ParameterBuffers &entry = parameters.emplace_back();
    entry.param = param;
    entry.value = addBuffer(name, param.getType(), persistent);
    parameterValue[name] = entry.value;
    stateBuffers[{std::string(rt::role::kParam), name.str()}] = entry.value;
    if (param.getFrozen()) {
      continue; // its value only: no gradient, no optimizer state
    }
    // An fp8 weight (tg-fp8) has a bf16 gradient: its GEMMs' output type.
    // A ZeRO-3 parameter's gradient is whole (it is accumulated before it is reduced).
    RankedTensorType localType = param.getUnshardedType();
    Type gradType = localType;
    if (isa<Float8E4M3FNType, Float8E5M2Type>(localType.getElementType())) {
      gradType = RankedTensorType::get(localType.getShape(), builder.getBF16Type());
    }
    if (Type sum = accumulatorType.lookup(name)) {
      gradType = sum;
    }
    entry.grad = addBuffer(("grad." + name).str(), gradType, persistent);
    gradOf[name] = entry.grad;
    stateBuffers[{std::string(rt::role::kGrad), name.str()}] = entry.grad;
    for (unsigned i : stateArgsOf->lookup(name)) {
      StepRole role = *argRole(optimizerStep, i);
      StringAttr axis;
      int64_t count = 0;
      if (auto sharding = optimizerStep.getArgAttrOfType<dist::ShardingAttr>(i, "dist.sharding")) {
        auto axes =
            sharding.getDims().empty() ? ArrayAttr() : dyn_cast<ArrayAttr>(sharding.getDims()[0]);
        auto mesh = SymbolTable::lookupSymbolIn(model, sharding.getMesh().getValue());
        if (!axes || axes.size() != 1 || !isa_and_nonnull<dist::MeshOp>(mesh)) {
          return optimizerStep.emitError()
                 << "plan-from-tg: optimizer state can be sharded along one mesh axis only";
        }
        axis = cast<StringAttr>(axes[0]);
        count = cast<dist::MeshOp>(mesh).getAxisSize(axis.getValue());
      }
      std::string key = rt::role::stateKey(role.role, name);
      FlatSymbolRefAttr ref = addBuffer(key, optimizerStep.getArgumentTypes()[i], persistent);
      stateBuffers[{role.role, name.str()}] = ref;
      auto start = optimizerStep.getArgAttrOfType<StringAttr>(i, kInitAttr);
      entry.state.emplace_back(role.role, ref, axis, count,
                               start && start.getValue() == kInitFromParam);
    }
  }
  for (ParameterBuffers &entry : parameters) {
    tg::ParamOp param = entry.param;
    // ZeRO-3: the value is a shard (of a frozen parameter, the only state it has).
    DenseI64ArrayAttr valueShardOf;
    StringAttr valueShardAxis;
    IntegerAttr valueShardCount;
    if (auto axis = param->getAttrOfType<StringAttr>(dist::kZeroShardAttr)) {
      auto mesh = dyn_cast_or_null<dist::MeshOp>(SymbolTable::lookupSymbolIn(model, "mesh"));
      if (!mesh) {
        return param.emitError() << "plan-from-tg: a sharded parameter needs the model's @mesh";
      }
      valueShardOf = builder.getDenseI64ArrayAttr(param.getUnshardedType().getShape());
      valueShardAxis = axis;
      valueShardCount = builder.getI64IntegerAttr(mesh.getAxisSize(axis.getValue()));
    }
    // Tensor parallelism: the one split dim of the parameter (dist-tensor-parallel).
    FailureOr<dist::ParameterSplit> split = dist::parameterSplit(param, "plan-from-tg");
    if (failed(split)) {
      return failure();
    }
    StringAttr splitAxis = split->axis;
    IntegerAttr splitDim = splitAxis ? builder.getI64IntegerAttr(split->dim) : IntegerAttr();
    IntegerAttr splitCount = splitAxis ? builder.getI64IntegerAttr(split->count) : IntegerAttr();
    plan_ir::ParameterOp::create(
        builder, param.getLoc(), param.getSymNameAttr(), entry.value, entry.grad,
        param.getInitAttr(),
        builder.getF64FloatAttr(param.getStd() ? param.getStd()->convertToDouble() : 0.0),
        valueShardAxis, valueShardCount, splitAxis, splitDim, splitCount,
        splitAxis ? split->blocks : DenseI64ArrayAttr(), param.getCheckpointPartsAttr(),
        param.getCheckpointParts() ? param.getShardBlocksAttr() : DenseI64ArrayAttr(),
        valueShardOf);
    // Its optimizer state, right after it (checkpoints keep a parameter's tensors together).
    for (auto [role, ref, axis, count, startsAsParam] : entry.state) {
      plan_ir::StateOp::create(builder, param.getLoc(),
                               builder.getStringAttr(rt::role::stateKey(role, param.getSymName())),
                               ref, builder.getStringAttr(role), param.getSymNameAttr(), axis,
                               axis ? builder.getI64IntegerAttr(count) : IntegerAttr(),
                               startsAsParam ? builder.getUnitAttr() : UnitAttr());
    }
  }
  return success();
}

void PlanBuilder::declareFp8State() {
  // fp8 scaling state (tg-fp8): one persistent, checkpointed buffer per role and GEMM group,
  // as @train_step takes it.
  if (func::FuncOp trainStep = lookup("train_step")) {
    for (unsigned i = 0; i < trainStep.getNumArguments(); ++i) {
      if (!isFp8State(trainStep, i, true)) {
        continue;
      }
      StepRole role = *argRole(trainStep, i);
      std::string key = rt::role::stateKey(role.role, role.param);
      FlatSymbolRefAttr ref = addBuffer(key, trainStep.getArgumentTypes()[i], persistent);
      stateBuffers[{role.role, role.param}] = ref;
      plan_ir::StateOp::create(builder, model.getLoc(), builder.getStringAttr(key), ref,
                               builder.getStringAttr(role.role), builder.getStringAttr(role.param),
                               StringAttr(), IntegerAttr(), UnitAttr());
    }
  }
}

void PlanBuilder::declareMesh() {
  Block &body = model.getBody().front();
  for (auto mesh : body.getOps<dist::MeshOp>()) {
    auto i64 = [&](int64_t value) { return builder.getI64IntegerAttr(value); };
    SmallVector<NamedAttribute> fields{
        builder.getNamedAttr("nodes", mesh.getNodesAttr()),
        builder.getNamedAttr("gpus_per_node", mesh.getGpusPerNodeAttr()),
        builder.getNamedAttr("dp", i64(mesh.getAxisSize("dp"))),
        builder.getNamedAttr("tp", i64(mesh.getAxisSize("tp"))),
        builder.getNamedAttr("pp", i64(mesh.getAxisSize("pp"))),
        builder.getNamedAttr("vp", mesh.getVpAttr()),
        builder.getNamedAttr("sequence_parallel", i64(mesh.getSp())),
        builder.getNamedAttr("zero", mesh.getZeroAttr())};
    if (mesh.getHsdp() > 0) {
      fields.push_back(builder.getNamedAttr("hsdp", mesh.getHsdpAttr()));
    }
    plan.setMeshAttr(builder.getDictionaryAttr(fields));
  }
}

// The programs' inputs and outputs by role. A single-rank or dp/tp model maps (tokens,
// labels) to the loss; a pipeline stage (dist-pipeline) maps the tokens or the previous
// stage's activation (and, last, the labels) to its activation or the loss, and its
// backward also takes the activation's gradient and returns its input's. A rank with several
// model chunks (interleaved schedule) has such a pair of programs per chunk
// (`forward.chunk1`, ...), with the chunk's buffers suffixed alike.
LogicalResult PlanBuilder::buildChunkPrograms(func::FuncOp chunkForward, func::FuncOp stashForward,
                                              func::FuncOp chunkBackward, StringRef suffix,
                                              llvm::function_ref<void()> beforePrograms) {
  auto scalarF32 = RankedTensorType::get({}, builder.getF32Type());
  // The signatures without tg-fp8's scaling state, which gets buffers of its own below.
  auto coreType = [&](func::FuncOp func) {
    SmallVector<Type> inputs, results;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      if (!isFp8State(func, i, true)) {
        inputs.push_back(func.getArgumentTypes()[i]);
      }
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      if (!isFp8State(func, i, false)) {
        results.push_back(func.getResultTypes()[i]);
      }
    }
    return builder.getFunctionType(inputs, results);
  };
  auto addState = [&](StringRef name, Type type) { return addBuffer(name, type, persistent); };
  FunctionType forwardType = coreType(chunkForward);
  FunctionType fbType = coreType(chunkBackward);
  // A split chunk's backward returns only gradients and reads the stash after the forward's
  // inputs; @forward_and_stash returns the output, then the stash.
  unsigned firstGradient = stashForward ? 0 : 1;
  unsigned stashed = stashForward ? stashForward.getNumResults() - 1 : 0;
  // The parameters whose gradients it returns (tg-autodiff names them; without the
  // attribute, every parameter in declaration order).
  SmallVector<StringRef> names;
  if (auto named = chunkBackward->getAttrOfType<ArrayAttr>("tg.gradients")) {
    for (Attribute name : named) {
      names.push_back(cast<FlatSymbolRefAttr>(name).getValue());
    }
  } else {
    for (ParameterBuffers &entry : parameters) {
      names.push_back(entry.param.getSymName());
    }
  }
  size_t gradients = names.size();
  // The forward returns its output, and the last stage's may add its loss mask
  // (tg-train-step: evaluation weighs each micro-batch's loss by its counted tokens).
  if (forwardType.getNumResults() < 1 || forwardType.getNumResults() > 2 ||
      fbType.getNumInputs() < forwardType.getNumInputs() + stashed ||
      fbType.getNumResults() < firstGradient + gradients ||
      (stashForward && (stashForward.getNumResults() < 1 ||
                        stashForward.getFunctionType().getInputs() != forwardType.getInputs()))) {
    return chunkBackward.emitError()
           << "plan-from-tg: @" << chunkBackward.getSymName()
           << " should take @forward's inputs and return its result and one gradient per "
              "parameter";
  }
  SmallVector<FlatSymbolRefAttr> forwardInputs, fbInputs;
  for (unsigned argument = 0, index = 0; argument < chunkForward.getNumArguments(); ++argument) {
    if (isFp8State(chunkForward, argument, true)) {
      continue; // as coreType: the scaling state has buffers of its own
    }
    Type type = chunkForward.getArgumentTypes()[argument];
    // An argument with a step role is named by it (the dropout key); the others by kind
    // and place: a stage's first integer input is its tokens, a later one its labels.
    bool integer = !isa<FloatType>(cast<RankedTensorType>(type).getElementType());
    std::optional<StepRole> role = argRole(chunkForward, argument);
    std::string name = role         ? "input." + role->role
                       : !integer   ? "input.activation"
                       : index == 0 ? "input.tokens"
                                    : "input.labels";
    forwardInputs.push_back(addBuffer(name + suffix.str(), type, persistent));
    ++index;
  }
  fbInputs = forwardInputs;
  // The stash: what @forward_and_stash returns for the backward, in buffers both share.
  SmallVector<FlatSymbolRefAttr> stash;
  for (unsigned k = 0; k < stashed; ++k) {
    stash.push_back(addBuffer(("stash." + Twine(k) + suffix).str(),
                              stashForward.getResultTypes()[1 + k], persistent));
  }
  fbInputs.append(stash.begin(), stash.end());
  for (unsigned i = forwardType.getNumInputs() + stashed; i < fbType.getNumInputs(); ++i) {
    // The output's gradient, or (several micro-batches) a gradient sum the backward adds to
    // in place: the parameter's gradient buffer is input and output.
    std::optional<StepRole> role = argRole(chunkBackward, i);
    if (role && role->role == rt::role::kGrad) {
      FlatSymbolRefAttr grad = gradOf.lookup(role->param);
      if (!grad) {
        return chunkBackward.emitError()
               << "plan-from-tg: @" << role->param << " is not a parameter";
      }
      fbInputs.push_back(grad);
      continue;
    }
    fbInputs.push_back(
        addBuffer(("input.cotangent" + suffix).str(), fbType.getInput(i), persistent));
  }
  Type resultType = forwardType.getResult(0);
  FlatSymbolRefAttr result =
      addBuffer((resultType == scalarF32 ? "loss" : "output.activation" + suffix.str()), resultType,
                persistent);
  SmallVector<FlatSymbolRefAttr> fbOutputs;
  if (!stashForward) {
    fbOutputs.push_back(result);
  }
  for (StringRef name : names) {
    FlatSymbolRefAttr grad = gradOf.lookup(name);
    if (!grad) {
      return chunkBackward.emitError() << "plan-from-tg: @" << name << " is not a parameter";
    }
    fbOutputs.push_back(grad);
  }
  for (Type type : fbType.getResults().drop_front(firstGradient + gradients)) {
    fbOutputs.push_back(addBuffer(("grad.input.activation" + suffix).str(), type, persistent));
  }
  beforePrograms();
  SmallVector<FlatSymbolRefAttr> stashOutputs{result};
  stashOutputs.append(stash.begin(), stash.end());
  // fp8 scaling state after the positional signature (tg-fp8 appends it).
  SmallVector<FlatSymbolRefAttr> forwardState = fp8StateBuffers(chunkForward, true, addState);
  SmallVector<FlatSymbolRefAttr> evalInputs(forwardInputs);
  evalInputs.append(forwardState.begin(), forwardState.end());
  SmallVector<FlatSymbolRefAttr> fbState = fp8StateBuffers(chunkBackward, true, addState);
  fbInputs.append(fbState.begin(), fbState.end());
  SmallVector<FlatSymbolRefAttr> fbStateOut = fp8StateBuffers(chunkBackward, false, addState);
  fbOutputs.append(fbStateOut.begin(), fbStateOut.end());
  if (stashForward && coreType(stashForward) != stashForward.getFunctionType()) {
    return stashForward.emitError() << "plan-from-tg: fp8 scaling state on a pipeline stage "
                                       "is not supported";
  }
  // The copy of the backward that also reduces the gradients over dp
  // (dist-decompose-collectives). With one micro-batch per rank the step calls only it: the
  // backward itself then gets no program, whose whole gradients would need persistent
  // buffers that nothing reads (the function stays for the audit).
  func::FuncOp reducing = lookup((chunkBackward.getSymName() + ".reduce").str());
  bool backwardRuns = !reducing || stepCalls(chunkBackward.getSymName());
  SmallVector<FlatSymbolRefAttr> evalOutputs{result};
  if (forwardType.getNumResults() == 2) {
    evalOutputs.push_back(
        addBuffer(("loss_mask" + suffix).str(), forwardType.getResult(1), persistent));
  }
  if (failed(buildProgram(chunkForward, evalInputs, evalOutputs)) ||
      (stashForward && failed(buildProgram(stashForward, forwardInputs, stashOutputs))) ||
      (backwardRuns && failed(buildProgram(chunkBackward, fbInputs, fbOutputs)))) {
    return failure();
  }
  // The reducing copy: the same inputs; a gradient reduced to another type (a ZeRO shard)
  // goes to a buffer of its own, which @optimizer_step reads, or, when the backward does
  // not run, to the gradient buffer itself, then only that size.
  if (!reducing) {
    return success();
  }
  if (reducing.getFunctionType().getInputs() != chunkBackward.getFunctionType().getInputs() ||
      reducing.getNumResults() != chunkBackward.getNumResults()) {
    return reducing.emitError() << "plan-from-tg: @" << reducing.getSymName()
                                << " should take and return what @" << chunkBackward.getSymName()
                                << " does";
  }
  SmallVector<FlatSymbolRefAttr> reducedOutputs(fbOutputs);
  for (auto [k, name] : llvm::enumerate(names)) {
    Type type = reducing.getResultTypes()[firstGradient + k];
    if (type != fbType.getResult(firstGradient + k) && !backwardRuns) {
      bufferOps.lookup(gradOf.lookup(name).getValue()).setType(cast<RankedTensorType>(type));
    } else if (type != fbType.getResult(firstGradient + k)) {
      // The full sum is dead once it is reduced: the reduced gradient (a ZeRO-1 shard)
      // takes the first bytes of its buffer.
      FlatSymbolRefAttr grad = gradOf.lookup(name);
      bool fits = storageBytes(type, 1) <= bufferOps.lookup(grad.getValue()).getStorageBytes();
      FlatSymbolRefAttr reduced = addBuffer(("grad.reduced." + name).str(), type, persistent,
                                            fits ? grad : FlatSymbolRefAttr());
      reducedGradOf[name] = reduced;
      reducedOutputs[firstGradient + k] = reduced;
    }
  }
  return buildProgram(reducing, fbInputs, reducedOutputs);
}

LogicalResult PlanBuilder::buildOptimizerProgram(func::FuncOp optimizerStep) {
  // @optimizer_step's inputs and outputs by role. A gradient the last backward reduced to
  // another type (a ZeRO-1 shard) is read from the buffer it was reduced into.
  SmallVector<FlatSymbolRefAttr> optInputs, optOutputs;
  for (bool input : {true, false}) {
    TypeRange types =
        input ? TypeRange(optimizerStep.getArgumentTypes()) : optimizerStep.getResultTypes();
    for (unsigned i = 0; i < types.size(); ++i) {
      if (isFp8State(optimizerStep, i, input)) {
        continue; // tg-fp8's, given buffers of their own below
      }
      std::optional<StepRole> role =
          input ? argRole(optimizerStep, i) : resultRole(optimizerStep, i);
      if (!role) {
        return optimizerStep.emitError()
               << "plan-from-tg: @optimizer_step " << (input ? "argument " : "result ") << i
               << " has no tg.role";
      }
      if (input && role->role == rt::role::kGrad) {
        FlatSymbolRefAttr grad = gradOf.lookup(role->param);
        if (grad && bufferOps.lookup(grad.getValue()).getType() != types[i]) {
          grad = reducedGradOf.lookup(role->param);
          if (!grad) {
            return optimizerStep.emitError()
                   << "plan-from-tg: @optimizer_step takes the gradient of @" << role->param
                   << " as " << types[i] << ", but no backward reduces it to that";
          }
        }
        if (grad) {
          optInputs.push_back(grad);
          continue;
        }
      }
      FailureOr<FlatSymbolRefAttr> ref = stepBuffer(optimizerStep, *role, types[i], input);
      if (failed(ref)) {
        return failure();
      }
      (input ? optInputs : optOutputs).push_back(*ref);
    }
  }
  auto addState = [&](StringRef name, Type type) { return addBuffer(name, type, persistent); };
  SmallVector<FlatSymbolRefAttr> optState = fp8StateBuffers(optimizerStep, true, addState);
  optInputs.append(optState.begin(), optState.end());
  SmallVector<FlatSymbolRefAttr> optStateOut = fp8StateBuffers(optimizerStep, false, addState);
  optOutputs.append(optStateOut.begin(), optStateOut.end());
  return buildProgram(optimizerStep, optInputs, optOutputs);
}

FailureOr<FlatSymbolRefAttr> PlanBuilder::stepBuffer(func::FuncOp func, const StepRole &role,
                                                     Type type, bool input) {
  namespace r = rt::role;
  FlatSymbolRefAttr ref;
  if (role.role == r::kTokens || role.role == r::kLabels) {
    // The batch inputs the runtime writes before each step (all micro-batches) or
    // evaluation micro-batch.
    ref = addBuffer((func.getSymName() + "." + role.role).str(), type, persistent);
  } else if (role.role == r::kLosses) {
    ref = addBuffer("losses", type, persistent);
  } else if (role.role == r::kStep) {
    ref = stepRef;
  } else if (role.role == r::kSeed) {
    // One buffer: the runtime writes the run's seed once, init_params draws from it and a
    // train_step with dropout keys its masks by it.
    if (!seedRef) {
      seedRef = addBuffer("seed", type, persistent);
    }
    ref = seedRef;
  } else if (role.role == r::kLr) {
    ref = lrRef;
  } else if (role.role == r::kGradNorm) {
    ref = normRef;
  } else if (role.role == r::kEvalSum || role.role == r::kLoss) {
    // Evaluation's running mean (kept between eval_step and eval_finish) and its result.
    FlatSymbolRefAttr &slot = role.role == r::kEvalSum ? evalSumRef : evalLossRef;
    if (!slot) {
      slot = addBuffer(role.role == r::kEvalSum ? "eval_sum" : "eval_loss", type, persistent);
    }
    ref = slot;
  } else {
    auto it = stateBuffers.find({role.role, role.param});
    if (it != stateBuffers.end()) {
      ref = it->second;
    }
  }
  if (!ref || bufferOps.lookup(ref.getValue()).getType() != type) {
    return func.emitError() << "plan-from-tg: @" << func.getSymName() << " has an "
                            << (input ? "argument" : "result") << " with role '" << role.role
                            << "' " << (role.param.empty() ? "" : "of @" + role.param + " ")
                            << "of type " << type << " that no buffer of the plan holds";
  }
  return ref;
}

LogicalResult PlanBuilder::buildStepProgram(func::FuncOp func) {
  SmallVector<FlatSymbolRefAttr> refs[2];
  SmallVector<std::string> roles[2];
  for (bool input : {true, false}) {
    TypeRange types = input ? TypeRange(func.getArgumentTypes()) : func.getResultTypes();
    for (unsigned i = 0; i < types.size(); ++i) {
      std::optional<StepRole> role = input ? argRole(func, i) : resultRole(func, i);
      if (!role) {
        return func.emitError() << "plan-from-tg: " << (input ? "argument " : "result ") << i
                                << " of @" << func.getSymName() << " has no tg.role";
      }
      FailureOr<FlatSymbolRefAttr> ref = stepBuffer(func, *role, types[i], input);
      if (failed(ref)) {
        return failure();
      }
      refs[input].push_back(*ref);
      roles[input].push_back(role->role);
    }
  }
  return buildProgram(func, refs[true], refs[false], roles[true], roles[false]);
}

struct PlanFromTGPass : impl::PlanFromTGPassBase<PlanFromTGPass> {
  using PlanFromTGPassBase::PlanFromTGPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The plans are created here, one after each model, and then built in parallel: a build
    // reads only its model and writes only its plan (a 405B has one model per stage).
    SmallVector<std::pair<tg::ModelOp, plan_ir::PlanOp>> work;
    for (auto model : llvm::to_vector(module.getOps<tg::ModelOp>())) {
      OpBuilder builder(module.getContext());
      builder.setInsertionPointAfter(model);
      std::string name = (model.getSymName() + ".plan").str();
      if (SymbolTable::lookupSymbolIn(module, name)) {
        model.emitError() << "plan-from-tg: the module already has @\"" << name << "\"";
        return signalPassFailure();
      }
      auto plan = plan_ir::PlanOp::create(builder, model.getLoc(), builder.getStringAttr(name),
                                          builder.getI64IntegerAttr(rt::kPlanFormatVersion),
                                          builder.getDictionaryAttr({}), DictionaryAttr());
      plan.getBody().emplaceBlock();
      work.push_back({model, plan});
    }
    if (failed(failableParallelForEach(&getContext(), work, [&](auto &modelAndPlan) {
          return PlanBuilder(modelAndPlan.first, modelAndPlan.second)
              .build(precision, accumulationSteps);
        }))) {
      return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS("plan-from-tg", kExact,
                             "adds the plan: one command per op, in op order, with its attributes");
