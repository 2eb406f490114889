//===- Compile.cpp - mlperfc compile ---------------------------*- C++ -*-===//
//
// Lowers a declaration to its train step (@forward_backward, @optimizer_step), reports it
// (op counts, activation arena against its lower bound), writes the IR after every pass with
// --dump-ir and the execution plan with -o.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "CompileReport.h"

#include "compiler/Analysis/PipelineSchedule.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/support/NumberFormat.h"

#include "compiler/Analysis/DeviceMemory.h"
#include "compiler/Analysis/MemoryPlan.h"
#include "compiler/Analysis/ModelSummary.h"
#include "compiler/Audit/Audit.h"
#include "compiler/Audit/CompileRecord.h"
#include "compiler/Audit/IRDump.h"
#include "compiler/Pipelines/DeviceFit.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Plan/PlanEmit.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Threading.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <optional>

namespace cl = llvm::cl;

namespace mlperf::cli {

static cl::opt<std::string> compileDumpIR(
    "dump-ir", cl::sub(compileCommand()), cl::value_desc("DIR"),
    cl::desc("Write the IR before the first pass and after every pass, numbered in pipeline "
             "order (DIR/00-input.mlir, DIR/01-tg-set-precision.mlir, ...)"),
    cl::cat(mlperfcCategory()));

static cl::opt<bool> compileTiming(
    "timing", cl::sub(compileCommand()),
    cl::desc("Print the wall time of every pass (MLIR's pass timing report) to stderr"),
    cl::cat(mlperfcCategory()));

static cl::opt<bool> compileVerifyEach(
    "verify-each", cl::sub(compileCommand()),
    cl::desc("Verify the IR after every pass, not only the input and the final IR (finds the "
             "pass that broke an invariant; slower on large models)"),
    cl::cat(mlperfcCategory()));

static cl::opt<std::string> compileOutput(
    "o", cl::sub(compileCommand()), cl::value_desc("plan.pb"),
    cl::desc("Write the execution plan (runtime/plan.proto) to this file, atomically"),
    cl::cat(mlperfcCategory()));

static cl::opt<bool> compileAudit(
    "audit", cl::sub(compileCommand()),
    cl::desc("Audit what was just compiled (mlperfc audit: pass classes, certificates, "
             "numeric evidence, closed-division rules); exit 1 on a violation"),
    cl::cat(mlperfcCategory()));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "mlperfc compile") << message << "\n";
  return 1;
}

int runCompile() {
  FlaggedModel loaded;
  TrainStepOptions options;
  if (int error = loadFlaggedModel("mlperfc compile", loaded, options)) {
    return error;
  }
  mlir::OwningOpRef<mlir::ModuleOp> &module = loaded.module;
  std::optional<DeviceMemory> &device = loaded.device;
  tg::ModelOp model = getModel(*module);
  rt::ModelDims dims = parallelDims(model);
  auto batch = *model.getBody().front().getOps<tg::BatchOp>().begin();
  rt::MeshShape &mesh = options.mesh;
  int64_t declaredMicroBatch = batch.getMicroBatchSizeAttr().getInt();

  auto started = std::chrono::steady_clock::now();
  // Size and FLOPs of the declaration, before lowering rewrites it.
  ModelSummary declared = summarizeModel(model);
  std::string declaredName = model.getSymName().str();
  unsigned declaredTensors = 0;
  for ([[maybe_unused]] auto param : model.getBody().front().getOps<tg::ParamOp>()) {
    declaredTensors += param.getCopies();
  }
  std::string dumpError;
  auto configure = [&](mlir::PassManager &pm) -> mlir::LogicalResult {
    if (!compileDumpIR.empty() && !addIRDump(pm, compileDumpIR, dumpError)) {
      return mlir::failure();
    }
    if (compileTiming) {
      pm.enableTiming();
    }
    pm.enableVerifier(compileVerifyEach);
    return mlir::success();
  };
  mlir::FailureOr<CompiledStep> step = device
                                           ? compileForDevice(*module, options, *device, configure)
                                           : compileStep(*module, options, configure);
  if (failed(step)) {
    return fail(dumpError.empty() ? std::string("lowering failed (errors above)") : dumpError);
  }
  mlir::ModuleOp lowered = *step->module;
  // A lowered 405B module holds about a million ops, and freeing them (and the context) takes
  // a tenth of the compile; the process ends when this function returns, so the OS gets them.
  llvm::scope_exit leaveToExit([&] {
    (void)step->module.release();
    (void)module.release();
    (void)loaded.context.release();
  });
  // After dist-pipeline the declaration is one model (and one plan) per pipeline stage.
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  llvm::outs() << "compiled @" << declaredName << ": precision " << options.precision << ", "
               << declaredTensors << " parameter tensors, " << options.accumulationSteps
               << " micro-batches of " << declaredMicroBatch << " per step and rank\n";
  llvm::outs() << "  cluster " << mesh.describe() << ": " << mesh.worldSize() << " rank"
               << (mesh.worldSize() == 1 ? "" : "s") << ", "
               << (mesh.pp == 1 ? std::string("one plan for every rank")
                                : std::to_string(mesh.pp) + " plans, one per pipeline stage")
               << llvm::format(" (compiled in %.2f s)\n", seconds);
  if (mesh.pp > 1) {
    // The order each stage's @train_step runs, and the bubble it leaves (backward = 2 forwards).
    std::vector<std::vector<PipelineOp>> schedule;
    PipelineTiming timing;
    if (pipelineSchedule(mesh.pp, mesh.vp, options.accumulationSteps, schedule).isOk() &&
        simulatePipeline(schedule, mesh.pp, mesh.vp, 1.0 / mesh.vp, 2.0 / mesh.vp, timing).isOk()) {
      llvm::outs() << llvm::format(
          "  pipeline schedule %s, %lld micro-batches: bubble %.4f of the step (textbook "
          "(p-1)/(v*m+p-1) = %.4f)\n",
          mesh.vp == 1 ? "1F1B" : "interleaved 1F1B",
          static_cast<long long>(options.accumulationSteps), timing.bubbleFraction,
          textbookBubbleFraction(mesh.pp, mesh.vp, options.accumulationSteps));
    }
    llvm::outs() << "  layers per " << (mesh.vp > 1 ? "virtual " : "") << "pipeline stage: "
                 << rt::describeLayerSplit(rt::pipelineLayerSplit(dims.layers, mesh.pp * mesh.vp))
                 << "\n";
  }
  llvm::outs() << llvm::format("  %lld parameters, %.4g model FLOPs per step (%.4g per token)\n",
                               static_cast<long long>(declared.parameters),
                               declared.trainFlopsPerStep, declared.trainFlopsPerToken);
  auto plans = llvm::to_vector(lowered.getOps<plan_ir::PlanOp>());
  RecomputeTotals recompute;
  for (auto [stage, stageModel] : llvm::enumerate(lowered.getOps<tg::ModelOp>())) {
    if (mesh.pp > 1) {
      llvm::outs() << "  stage " << stage << " (@" << stageModel.getSymName() << "):\n";
    }
    for (auto func : stageModel.getBody().front().getOps<mlir::func::FuncOp>()) {
      describeFunction(func, dims, mesh, recompute);
    }
    // The placed plan: what the runtime will allocate and run.
    plan_ir::PlanOp planOp = plans[stage];
    int64_t commands = 0, buffers = 0;
    planOp.walk([&](plan_ir::CommandOp) { ++commands; });
    planOp.walk([&](plan_ir::BufferOp) { ++buffers; });
    for (auto arena : planOp.getBody().front().getOps<plan_ir::ArenaOp>()) {
      if (arena.getMemoryClass() == plan_ir::MemoryClass::persistent) {
        llvm::outs() << "  placed plan: " << commands << " commands, " << buffers
                     << " buffers; persistent arena " << rt::humanBytes(arena.getSize());
      }
    }
    for (auto arena : planOp.getBody().front().getOps<plan_ir::ArenaOp>()) {
      if (arena.getMemoryClass() == plan_ir::MemoryClass::activations) {
        int64_t bound = arena.getLowerBound();
        llvm::outs() << llvm::format(
            ", activation arena %s against a lower bound of %s (%.3fx)\n",
            rt::humanBytes(arena.getSize()).c_str(), rt::humanBytes(bound).c_str(),
            bound > 0 ? static_cast<double>(arena.getSize()) / static_cast<double>(bound) : 1.0);
      }
    }
    describeRankMemory(step->stages[stage], mesh, device ? &*device : nullptr);
  }
  if (recompute.model > 0) {
    llvm::outs() << llvm::format("  recompute %s: %.2f%% of the step's model FLOPs recomputed\n",
                                 options.recompute.c_str(),
                                 100.0 * recompute.recomputed / recompute.model);
  }
  if (!compileDumpIR.empty()) {
    llvm::outs() << "  IR after every pass: " << compileDumpIR << "/\n";
  }
  if (device && step->peakBytes() > device->capacityBytes) {
    return refuseUnfit(*module, options, dims, accumulationStepsOnOneRank(model), *step, *device);
  }
  if (compileOutput.empty() && !compileAudit) {
    return 0;
  }
  // Each stage's plan is emitted, checked, signed and written on its own thread (the plans
  // are independent; a 405B stage has 18,000 commands); the report follows in stage order.
  struct EmittedStage {
    std::optional<plan::Plan> plan; // kept for the audit only
    std::string path, error, report;
  };
  std::vector<EmittedStage> stages(plans.size());
  mlir::parallelFor(module->getContext(), 0, plans.size(), [&](size_t stage) {
    EmittedStage &out = stages[stage];
    mlir::FailureOr<plan::Plan> plan = emitPlan(plans[stage]);
    if (failed(plan)) {
      out.error = "could not emit the plan (errors above)";
      return;
    }
    // What `mlperfc audit` needs to compile the declaration again and compare.
    recordCompileOptions(step->options, deviceFlag(), *plan);
    if (compileOutput.empty()) {
      out.path = plans.size() == 1 ? std::string("the compiled plan")
                                   : "the compiled plan of stage " + std::to_string(stage);
    } else {
      out.path =
          plans.size() == 1 ? std::string(compileOutput) : rt::stagePlanPath(compileOutput, stage);
      std::string bytes = rt::signPlan(*plan); // with its CRC-32 self-check
      if (llvm::Error error = llvm::writeToOutput(out.path, [&](llvm::raw_ostream &os) {
            os << bytes;
            return llvm::Error::success();
          })) {
        out.error = "cannot write '" + out.path + "': " + llvm::toString(std::move(error));
        return;
      }
      int64_t commands = 0;
      for (const plan::Program &program : plan->programs()) {
        commands += program.commands_size();
      }
      out.report = llvm::formatv("  plan: {0} (format {1}, {2} buffers, {3} commands; persistent "
                                 "{4}, activations {5})\n",
                                 out.path, plan->format_version(), plan->buffers_size(), commands,
                                 rt::humanBytes(plan->arenas(0).size()),
                                 rt::humanBytes(plan->arenas(1).size()))
                       .str();
    }
    if (compileAudit) {
      out.plan = std::move(*plan);
    }
  });
  std::vector<plan::Plan> emitted;
  std::vector<std::string> emittedPaths;
  for (EmittedStage &stage : stages) {
    if (!stage.error.empty()) {
      return fail(stage.error);
    }
    llvm::outs() << stage.report;
    if (compileAudit) {
      emittedPaths.push_back(std::move(stage.path));
      emitted.push_back(std::move(*stage.plan));
    }
  }
  if (!compileAudit) {
    return 0;
  }
  llvm::outs() << "\n";
  AuditInput audit;
  audit.declaration = *module;
  audit.modelPath = modelPathFlag();
  audit.plans = std::move(emitted);
  audit.planPaths = std::move(emittedPaths);
  audit.dumpDirectory = compileDumpIR; // audits the dumps just written, when there are some
  AuditResult result = runAudit(audit, llvm::outs());
  llvm::outs().flush();
  return static_cast<int>(result);
}

} // namespace mlperf::cli
