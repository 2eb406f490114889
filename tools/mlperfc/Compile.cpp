//===- Compile.cpp - mlperfc compile ---------------------------*- C++ -*-===//
//
// Lowers a declaration to its train step (@forward_backward, @optimizer_step), reports it
// (op counts, activation arena against its lower bound), writes the IR after every pass with
// --dump-ir and the execution plan with -o.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "runtime/support/NumberFormat.h"

#include "compiler/Analysis/MemoryPlan.h"
#include "compiler/Analysis/ModelSummary.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Plan/PlanEmit.h"
#include "compiler/Registration.h"
#include "compiler/Support/IRDump.h"
#include "compiler/Support/ModelFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

namespace mlperf::cli {

cl::SubCommand compileCommand("compile", "Lower a model declaration to its train step");

static cl::opt<std::string> compileInput(cl::Positional, cl::Required, cl::sub(compileCommand),
                                         cl::desc("<model.mlir>"), cl::cat(mlperfcCategory()));
static cl::opt<std::string> compilePrecision(
    "precision", cl::sub(compileCommand), cl::init("bf16"),
    cl::desc("Compute precision: bf16 (the reference's, as declared) or fp32 (oracle and RCP "
             "reference runs)"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> compileDumpIR(
    "dump-ir", cl::sub(compileCommand), cl::value_desc("DIR"),
    cl::desc("Write the IR before the first pass and after every pass, numbered in pipeline "
             "order (DIR/00-input.mlir, DIR/01-tg-set-precision.mlir, ...)"),
    cl::cat(mlperfcCategory()));

static cl::opt<std::string> compileOutput(
    "o", cl::sub(compileCommand), cl::value_desc("plan.pb"),
    cl::desc("Write the execution plan (runtime/plan.proto) to this file, atomically"),
    cl::cat(mlperfcCategory()));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "mlperfc compile") << message << "\n";
  return 1;
}

static void describeFunction(mlir::func::FuncOp func) {
  llvm::MapVector<llvm::StringRef, unsigned> counts;
  unsigned total = 0;
  func.walk([&](mlir::Operation *op) {
    if (op != func.getOperation()) {
      ++counts[op->getName().getStringRef()];
      ++total;
    }
  });
  llvm::outs() << "  @" << func.getSymName() << ": " << func.getNumArguments() << " inputs, "
               << func.getNumResults() << " results, " << total << " ops (";
  llvm::interleaveComma(counts, llvm::outs(), [](const auto &entry) {
    llvm::outs() << entry.first << " " << entry.second;
  });
  llvm::outs() << ")\n";
  MemoryPlan memory = planFunctionMemory(func);
  if (memory.lowerBoundBytes > 0) {
    llvm::outs() << llvm::format(
        "    activation arena %s (%lld buffers), lower bound %s: %.3fx\n",
        rt::humanBytes(memory.arenaBytes).c_str(), static_cast<long long>(memory.buffers.size()),
        rt::humanBytes(memory.lowerBoundBytes).c_str(),
        static_cast<double>(memory.arenaBytes) / static_cast<double>(memory.lowerBoundBytes));
  }
}

int runCompile() {
  if (compilePrecision != "bf16" && compilePrecision != "fp32") {
    return fail("--precision must be bf16 or fp32, got '" + compilePrecision + "'");
  }
  std::unique_ptr<mlir::MLIRContext> contextOwner = createModelContext();
  ModelFile modelFile(*contextOwner, compileInput);
  mlir::OwningOpRef<mlir::ModuleOp> module = modelFile.load();
  if (!module) {
    return 1;
  }
  tg::ModelOp model = getModel(*module);
  auto batch = *model.getBody().front().getOps<tg::BatchOp>().begin();
  TrainStepOptions options;
  options.precision = compilePrecision;
  // One data-parallel rank until the cluster options exist.
  options.accumulationSteps = accumulationStepsOnOneRank(model);
  // Size and FLOPs of the declaration, before lowering rewrites it.
  ModelSummary declared = summarizeModel(model);
  mlir::PassManager pm(contextOwner.get());
  buildTrainStepPipeline(pm, options);
  buildPlanPipeline(pm, options);
  if (!compileDumpIR.empty()) {
    std::string error;
    if (!addIRDump(pm, compileDumpIR, error)) {
      return fail(error);
    }
  }
  if (failed(pm.run(*module))) {
    return fail("lowering failed (errors above)");
  }
  unsigned params = 0;
  for ([[maybe_unused]] auto param : model.getBody().front().getOps<tg::ParamOp>()) {
    ++params;
  }
  llvm::outs() << "compiled @" << model.getSymName() << ": precision " << compilePrecision << ", "
               << params << " parameter tensors, " << options.accumulationSteps
               << " micro-batches of " << batch.getMicroBatchSizeAttr().getInt() << " per step\n";
  llvm::outs() << llvm::format("  %lld parameters, %.4g model FLOPs per step (%.4g per token)\n",
                               static_cast<long long>(declared.parameters),
                               declared.trainFlopsPerStep, declared.trainFlopsPerToken);
  for (auto func : model.getBody().front().getOps<mlir::func::FuncOp>()) {
    describeFunction(func);
  }
  // The placed plan: what the runtime will allocate and run.
  plan_ir::PlanOp planOp = getPlan(*module);
  int64_t commands = 0, buffers = 0;
  planOp.walk([&](plan_ir::CommandOp) { ++commands; });
  planOp.walk([&](plan_ir::BufferOp) { ++buffers; });
  for (auto arena : planOp.getBody().front().getOps<plan_ir::ArenaOp>()) {
    if (arena.getMemoryClass() == "persistent") {
      llvm::outs() << "  placed plan: " << commands << " commands, " << buffers
                   << " buffers; persistent arena " << rt::humanBytes(arena.getSize());
    }
  }
  for (auto arena : planOp.getBody().front().getOps<plan_ir::ArenaOp>()) {
    if (arena.getMemoryClass() == "activations") {
      int64_t bound = arena.getLowerBound();
      llvm::outs() << llvm::format(
          ", activation arena %s against a lower bound of %s (%.3fx)\n",
          rt::humanBytes(arena.getSize()).c_str(), rt::humanBytes(bound).c_str(),
          bound > 0 ? static_cast<double>(arena.getSize()) / static_cast<double>(bound) : 1.0);
    }
  }
  if (!compileDumpIR.empty()) {
    llvm::outs() << "  IR after every pass: " << compileDumpIR << "/\n";
  }
  if (!compileOutput.empty()) {
    mlir::FailureOr<plan::Plan> plan = emitPlan(getPlan(*module));
    if (failed(plan)) {
      return fail("could not emit the plan (errors above)");
    }
    std::string bytes;
    if (!plan->SerializeToString(&bytes)) {
      return fail("could not serialize the plan");
    }
    if (llvm::Error error = llvm::writeToOutput(compileOutput, [&](llvm::raw_ostream &os) {
          os << bytes;
          return llvm::Error::success();
        })) {
      return fail("cannot write '" + compileOutput + "': " + llvm::toString(std::move(error)));
    }
    int64_t commands = 0;
    for (const plan::Program &program : plan->programs()) {
      commands += program.commands_size();
    }
    llvm::outs() << "  plan: " << compileOutput << " (format " << plan->format_version() << ", "
                 << plan->buffers_size() << " buffers, " << commands << " commands; persistent "
                 << rt::humanBytes(plan->arenas(0).size()) << ", activations "
                 << rt::humanBytes(plan->arenas(1).size()) << ")\n";
  }
  return 0;
}

} // namespace mlperf::cli
