//===- Compile.cpp - mlperfc compile ---------------------------*- C++ -*-===//
//
// Lowers a declaration to its train step (@forward_backward, @optimizer_step), reports it
// (op counts, activation arena against its lower bound), writes the IR after every pass with
// --dump-ir and the execution plan with -o.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "runtime/dist/PipelineSchedule.h"
#include "runtime/plan/PlanLoader.h"
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
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

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
static cl::opt<bool> compileFuseAttention(
    "fuse-attention", cl::sub(compileCommand), cl::init(true),
    cl::desc("Fuse each attention into tg.attention (tg-fuse-attention; default on). "
             "--fuse-attention=false keeps the declared softmax(QKᵀ)V graph"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> compileFuseSwiglu(
    "fuse-swiglu", cl::sub(compileCommand), cl::init(true),
    cl::desc("Fuse silu(gate) * up into tg.swiglu (tg-fuse-swiglu, exact; default on)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> compileFuseCrossEntropy(
    "fuse-cross-entropy", cl::sub(compileCommand), cl::init(true),
    cl::desc("Fuse the output layer and the loss into tg.linear_cross_entropy "
             "(tg-fuse-cross-entropy, exact; default on)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> compileFuseAddRMSNorm(
    "fuse-add-rms-norm", cl::sub(compileCommand), cl::init(false),
    cl::desc("Fuse each residual add and the RMSNorm of its sum into tg.add_rms_norm "
             "(tg-fuse-add-rms-norm, exact; default off: no gain on the CPU backend)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> compileFuseRopeQK(
    "fuse-rope-qk", cl::sub(compileCommand), cl::init(false),
    cl::desc("Fuse each attention's query and key rotations into tg.rope_qk (tg-fuse-rope-qk, "
             "exact; default off: no gain on the CPU backend)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> compileTiming(
    "timing", cl::sub(compileCommand),
    cl::desc("Print the wall time of every pass (MLIR's pass timing report) to stderr"),
    cl::cat(mlperfcCategory()));

static cl::opt<bool> compileVerifyEach(
    "verify-each", cl::sub(compileCommand),
    cl::desc("Verify the IR after every pass, not only the input and the final IR (finds the "
             "pass that broke an invariant; slower on large models)"),
    cl::cat(mlperfcCategory()));

static cl::opt<std::string> compileOutput(
    "o", cl::sub(compileCommand), cl::value_desc("plan.pb"),
    cl::desc("Write the execution plan (runtime/plan.proto) to this file, atomically"),
    cl::cat(mlperfcCategory()));

static cl::opt<std::string> compileCluster(
    "cluster", cl::sub(compileCommand), cl::init("1x1"), cl::value_desc("NODESxGPUS"),
    cl::desc("The cluster the plan runs on: nodes x GPUs (ranks) per node, e.g. 8x8"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> compileParallel(
    "parallel", cl::sub(compileCommand),
    cl::value_desc("dp=..,tp=..,pp=..,vp=..,sp=on|off,zero=0|1,micro_batch=.."),
    cl::desc("Parallel strategy; dp defaults to the ranks left after tp and pp. Every degree "
             "is checked against the cluster and the model"),
    cl::cat(mlperfcCategory()));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "mlperfc compile") << message << "\n";
  return 1;
}

/// Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
/// (arXiv 2205.05198), eq. 1/4/5: bf16 activations a layer keeps for backward,
/// s·b·h·(34 + 5·a·s/h) on one rank, s·b·h·(10 + 24/t + 5·a·s/(h·t)) with tensor parallelism
/// and s·b·h·(34 + 5·a·s/h)/t with sequence parallelism; fused attention removes the 5·a·s/h
/// term (no scores kept), which is what is printed.
static double korthikantiBytesPerLayer(int64_t seq, int64_t batch, int64_t hidden, int64_t tp,
                                       bool sequenceParallel) {
  double sbh = static_cast<double>(seq) * static_cast<double>(batch) * static_cast<double>(hidden);
  double t = static_cast<double>(tp);
  return sequenceParallel ? sbh * 34.0 / t : sbh * (10.0 + 24.0 / t);
}

static void describeFunction(mlir::func::FuncOp func, const rt::ModelDims &dims,
                             const rt::MeshShape &mesh) {
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
  // A step function's temporaries live around its calls; the placed plan reports them.
  if (counts.count("func.call")) {
    return;
  }
  MemoryPlan memory = planFunctionMemory(func);
  if (memory.lowerBoundBytes > 0) {
    llvm::outs() << llvm::format(
        "    activation arena %s (%lld buffers), lower bound %s: %.3fx\n",
        rt::humanBytes(memory.arenaBytes).c_str(), static_cast<long long>(memory.buffers.size()),
        rt::humanBytes(memory.lowerBoundBytes).c_str(),
        static_cast<double>(memory.arenaBytes) / static_cast<double>(memory.lowerBoundBytes));
  }
  SavedActivations saved = savedForBackward(func);
  int64_t hidden = 0;
  func.walk([&](tg::RMSNormOp norm) {
    hidden = hidden ? hidden
                    : mlir::cast<mlir::RankedTensorType>(norm.getWeight().getType()).getDimSize(0);
  });
  if (saved.layers > 0 && hidden > 0) {
    double estimate = korthikantiBytesPerLayer(dims.seqLen, dims.microBatch, hidden, mesh.tp,
                                               mesh.sequenceParallel);
    llvm::outs() << llvm::format(
        "    saved for backward: %s per layer (%lld layers) + %s outside them; Korthikanti et "
        "al. estimate %s per layer (%.2fx)\n",
        rt::humanBytes(saved.bytesPerLayer).c_str(), static_cast<long long>(saved.layers),
        rt::humanBytes(saved.otherBytes).c_str(),
        rt::humanBytes(static_cast<int64_t>(estimate)).c_str(),
        static_cast<double>(saved.bytesPerLayer) / estimate);
  }
}

/// Sizes a parallel strategy must divide, read from the declaration: the batch, the layers of
/// its tg.repeat_layers stacks (dist-pipeline cuts them as one sequence) and every dim, and
/// every block of a dim, a parameter declares split over tp.
static rt::ModelDims modelDims(tg::ModelOp model) {
  rt::ModelDims dims;
  mlir::Block &body = model.getBody().front();
  auto batch = *body.getOps<tg::BatchOp>().begin();
  dims.globalBatch = batch.getGlobalBatchSizeAttr().getInt();
  dims.microBatch = batch.getMicroBatchSizeAttr().getInt();
  dims.seqLen = batch.getSeqLenAttr().getInt();
  model.walk([&](tg::RepeatLayersOp stack) { dims.layers += stack.getCountAttr().getInt(); });
  for (auto param : body.getOps<tg::ParamOp>()) {
    int64_t dim = param.getDeclaredSplitDim();
    if (dim < 0) {
      continue;
    }
    std::string unit = dim == 0   ? "rows"
                       : dim == 1 ? "columns"
                                  : "entries of dim " + std::to_string(dim);
    dims.tensorSplits.push_back(
        {param.getTensorType().getDimSize(dim),
         unit + " of " + param.getSymName().str() + " (declared split over tp)"});
    for (auto [block, size] :
         llvm::enumerate(param.getShardBlocks().value_or(llvm::ArrayRef<int64_t>()))) {
      dims.tensorSplits.push_back({size, unit + " of block " + std::to_string(block) + " of " +
                                             param.getSymName().str() +
                                             " (declared split over tp)"});
    }
  }
  return dims;
}

/// What one rank holds: parameters, gradients, optimizer state (masters and moments), the
/// batch inputs and scalars, and the activation arena.
static void describeRankMemory(plan_ir::PlanOp planOp) {
  mlir::Block &body = planOp.getBody().front();
  llvm::DenseMap<mlir::Attribute, int64_t> bufferBytes; // by name attribute (a pointer hash)
  for (auto buffer : body.getOps<plan_ir::BufferOp>()) {
    auto type = mlir::cast<mlir::RankedTensorType>(buffer.getType());
    bufferBytes[buffer.getSymNameAttr()] =
        type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
  }
  int64_t params = 0, grads = 0, state = 0, activations = 0, persistent = 0;
  for (auto parameter : body.getOps<plan_ir::ParameterOp>()) {
    params += bufferBytes.lookup(parameter.getValueAttr().getAttr());
    grads += bufferBytes.lookup(parameter.getGradAttr().getAttr());
    state += bufferBytes.lookup(parameter.getMasterAttr().getAttr()) +
             bufferBytes.lookup(parameter.getExpAvgAttr().getAttr()) +
             bufferBytes.lookup(parameter.getExpAvgSqAttr().getAttr());
  }
  for (auto arena : body.getOps<plan_ir::ArenaOp>()) {
    (arena.getMemoryClass() == plan_ir::MemoryClass::persistent ? persistent : activations) =
        arena.getSize();
  }
  llvm::outs() << "  per-rank memory: parameters " << rt::humanBytes(params) << ", gradients "
               << rt::humanBytes(grads) << ", optimizer state " << rt::humanBytes(state)
               << ", activations " << rt::humanBytes(activations) << "; arenas "
               << rt::humanBytes(persistent + activations) << "\n";
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
  rt::ModelDims dims = modelDims(model);
  auto batch = *model.getBody().front().getOps<tg::BatchOp>().begin();
  TrainStepOptions options;
  options.precision = compilePrecision;
  options.fuseAttention = compileFuseAttention;
  options.fuseSwiglu = compileFuseSwiglu;
  options.fuseCrossEntropy = compileFuseCrossEntropy;
  options.fuseAddRMSNorm = compileFuseAddRMSNorm;
  options.fuseRopeQK = compileFuseRopeQK;
  rt::MeshShape &mesh = options.mesh;
  rt::Status status = rt::parseCluster(compileCluster, mesh);
  if (status.isOk()) {
    status = rt::parseParallel(compileParallel, mesh);
  }
  if (status.isOk()) {
    status = rt::validateMesh(mesh, dims, compileParallel.find("dp=") != std::string::npos);
  }
  if (!status.isOk()) {
    return fail(status.message());
  }
  int64_t declaredMicroBatch = batch.getMicroBatchSizeAttr().getInt();
  if (mesh.microBatch != declaredMicroBatch) {
    return fail("micro_batch=" + llvm::Twine(mesh.microBatch) +
                ": this declaration's graph is written for micro-batches of " +
                llvm::Twine(declaredMicroBatch) +
                "; emit it at that size (mlperfc emit-model ... --set micro_batch=" +
                llvm::Twine(mesh.microBatch) + ")");
  }
  options.accumulationSteps = accumulationStepsOnOneRank(model) / mesh.dp;
  auto started = std::chrono::steady_clock::now();
  // Size and FLOPs of the declaration, before lowering rewrites it.
  ModelSummary declared = summarizeModel(model);
  std::string declaredName = model.getSymName().str();
  unsigned declaredTensors = 0;
  for ([[maybe_unused]] auto param : model.getBody().front().getOps<tg::ParamOp>()) {
    declaredTensors += param.getCopies();
  }
  mlir::PassManager pm(contextOwner.get());
  buildTrainStepPipeline(pm, options);
  buildPlanPipeline(pm, options);
  if (!compileDumpIR.empty()) {
    std::string error;
    if (!addIRDump(pm, compileDumpIR, error)) {
      return fail(error);
    }
  }
  if (compileTiming) {
    pm.enableTiming();
  }
  // The input was verified when it was parsed and the result is verified below, so a pass
  // that breaks an invariant is still caught before any plan is written; verifying every
  // intermediate module too costs a quarter of the compile time of a deep model.
  pm.enableVerifier(compileVerifyEach);
  if (failed(pm.run(*module))) {
    return fail("lowering failed (errors above)");
  }
  if (!compileVerifyEach && failed(mlir::verify(*module))) {
    return fail("the lowered IR does not verify (errors above; --verify-each finds the pass)");
  }
  // After dist-pipeline the declaration is one model (and one plan) per pipeline stage.
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  llvm::outs() << "compiled @" << declaredName << ": precision " << compilePrecision << ", "
               << declaredTensors << " parameter tensors, " << options.accumulationSteps
               << " micro-batches of " << declaredMicroBatch << " per step and rank\n";
  llvm::outs() << "  cluster " << mesh.describe() << ": " << mesh.worldSize() << " rank"
               << (mesh.worldSize() == 1 ? "" : "s") << ", "
               << (mesh.pp == 1 ? std::string("one plan for every rank")
                                : std::to_string(mesh.pp) + " plans, one per pipeline stage")
               << llvm::format(" (compiled in %.2f s)\n", seconds);
  if (mesh.pp > 1) {
    // The order each stage's @train_step runs, and the bubble it leaves (backward = 2 forwards).
    std::vector<std::vector<rt::PipelineOp>> schedule;
    rt::PipelineTiming timing;
    if (rt::pipelineSchedule(mesh.pp, mesh.vp, options.accumulationSteps, schedule).isOk() &&
        rt::simulatePipeline(schedule, mesh.pp, mesh.vp, 1.0 / mesh.vp, 2.0 / mesh.vp, timing)
            .isOk()) {
      llvm::outs() << llvm::format(
          "  pipeline schedule %s, %lld micro-batches: bubble %.4f of the step (textbook "
          "(p-1)/(v*m+p-1) = %.4f)\n",
          mesh.vp == 1 ? "1F1B" : "interleaved 1F1B",
          static_cast<long long>(options.accumulationSteps), timing.bubbleFraction,
          rt::textbookBubbleFraction(mesh.pp, mesh.vp, options.accumulationSteps));
    }
    llvm::outs() << "  layers per " << (mesh.vp > 1 ? "virtual " : "") << "pipeline stage: "
                 << rt::describeLayerSplit(rt::pipelineLayerSplit(dims.layers, mesh.pp * mesh.vp))
                 << "\n";
  }
  llvm::outs() << llvm::format("  %lld parameters, %.4g model FLOPs per step (%.4g per token)\n",
                               static_cast<long long>(declared.parameters),
                               declared.trainFlopsPerStep, declared.trainFlopsPerToken);
  auto plans = llvm::to_vector(module->getOps<plan_ir::PlanOp>());
  for (auto [stage, stageModel] : llvm::enumerate(module->getOps<tg::ModelOp>())) {
    if (mesh.pp > 1) {
      llvm::outs() << "  stage " << stage << " (@" << stageModel.getSymName() << "):\n";
    }
    for (auto func : stageModel.getBody().front().getOps<mlir::func::FuncOp>()) {
      describeFunction(func, dims, mesh);
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
    describeRankMemory(planOp);
  }
  if (!compileDumpIR.empty()) {
    llvm::outs() << "  IR after every pass: " << compileDumpIR << "/\n";
  }
  if (compileOutput.empty()) {
    return 0;
  }
  for (auto [stage, planOp] : llvm::enumerate(plans)) {
    mlir::FailureOr<plan::Plan> plan = emitPlan(planOp);
    if (failed(plan)) {
      return fail("could not emit the plan (errors above)");
    }
    std::string bytes;
    if (!plan->SerializeToString(&bytes)) {
      return fail("could not serialize the plan");
    }
    std::string path =
        plans.size() == 1 ? std::string(compileOutput) : rt::stagePlanPath(compileOutput, stage);
    if (llvm::Error error = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
          os << bytes;
          return llvm::Error::success();
        })) {
      return fail("cannot write '" + path + "': " + llvm::toString(std::move(error)));
    }
    int64_t commands = 0;
    for (const plan::Program &program : plan->programs()) {
      commands += program.commands_size();
    }
    llvm::outs() << "  plan: " << path << " (format " << plan->format_version() << ", "
                 << plan->buffers_size() << " buffers, " << commands << " commands; persistent "
                 << rt::humanBytes(plan->arenas(0).size()) << ", activations "
                 << rt::humanBytes(plan->arenas(1).size()) << ")\n";
  }
  return 0;
}

} // namespace mlperf::cli
