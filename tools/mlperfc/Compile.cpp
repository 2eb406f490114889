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

cl::SubCommand compileCommand("compile", "Lower a model declaration to its train step");
// Defined here, before the options compile shares with them (tools/mlperfc/Predict.cpp).
cl::SubCommand predictCommand("predict",
                              "Predict the compiled train step's time (the step-time model)");
cl::SubCommand
    planSearchCommand("plan-search",
                      "Rank the parallel strategies of a cluster by predicted time to train");

static cl::opt<std::string> compileInput(cl::Positional, cl::Required, cl::sub(compileCommand),
                                         cl::sub(predictCommand), cl::sub(planSearchCommand),
                                         cl::desc("<model.mlir>"), cl::cat(mlperfcCategory()));
static cl::opt<std::string> compilePrecision(
    "precision", cl::sub(compileCommand), cl::sub(predictCommand), cl::sub(planSearchCommand),
    cl::init("bf16"),
    cl::desc("Compute precision: bf16 (the reference's, as declared), fp32 (oracle and RCP "
             "reference runs) or fp8 (bf16 with the layer stack's linears in fp8, scaled as "
             "--fp8-recipe says)"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> compileFp8Recipe(
    "fp8-recipe", cl::sub(compileCommand), cl::sub(predictCommand), cl::sub(planSearchCommand),
    cl::init("delayed"),
    cl::desc("fp8 scaling with --precision fp8: delayed (Transformer Engine DelayedScaling, "
             "the reference's: amax history 4, most_recent, margin 0; default) or current "
             "(Float8CurrentScaling: each cast with its tensor's own amax)"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> compileDumpIR(
    "dump-ir", cl::sub(compileCommand), cl::value_desc("DIR"),
    cl::desc("Write the IR before the first pass and after every pass, numbered in pipeline "
             "order (DIR/00-input.mlir, DIR/01-tg-set-precision.mlir, ...)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> compileFuseAttention(
    "fuse-attention", cl::sub(compileCommand), cl::sub(predictCommand), cl::sub(planSearchCommand),
    cl::init(true),
    cl::desc("Fuse each attention into tg.attention (tg-fuse-attention; default on). "
             "--fuse-attention=false keeps the declared softmax(QKᵀ)V graph"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> compileFuseSwiglu(
    "fuse-swiglu", cl::sub(compileCommand), cl::sub(predictCommand), cl::sub(planSearchCommand),
    cl::init(true),
    cl::desc("Fuse silu(gate) * up into tg.swiglu (tg-fuse-swiglu, exact; default on)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> compileFuseCrossEntropy(
    "fuse-cross-entropy", cl::sub(compileCommand), cl::sub(predictCommand),
    cl::sub(planSearchCommand), cl::init(true),
    cl::desc("Fuse the output layer and the loss into tg.linear_cross_entropy "
             "(tg-fuse-cross-entropy, exact; default on)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> compileFuseAddRMSNorm(
    "fuse-add-rms-norm", cl::sub(compileCommand), cl::sub(predictCommand),
    cl::sub(planSearchCommand), cl::init(false),
    cl::desc("Fuse each residual add and the RMSNorm of its sum into tg.add_rms_norm "
             "(tg-fuse-add-rms-norm, exact; default off: no gain on the CPU backend)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> compileFuseRopeQK(
    "fuse-rope-qk", cl::sub(compileCommand), cl::sub(predictCommand), cl::sub(planSearchCommand),
    cl::init(false),
    cl::desc("Fuse each attention's query and key rotations into tg.rope_qk (tg-fuse-rope-qk, "
             "exact; default off: no gain on the CPU backend)"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> compileRecompute(
    "recompute", cl::sub(compileCommand), cl::sub(predictCommand), cl::sub(planSearchCommand),
    cl::value_desc("POLICY"),
    cl::desc("Activation recompute (tg-recompute): none, selective (attention core and SwiGLU "
             "output), full (per layer, keep the layer input) or auto (recompute as little as "
             "makes each rank fit --device; the default with --device, none without)"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> compileDevice(
    "device", cl::sub(compileCommand), cl::sub(predictCommand), cl::sub(planSearchCommand),
    cl::value_desc("h100|h200|b200|NAME=SIZE"),
    cl::desc("The accelerator each rank runs on (for example mygpu=80GiB): the summary prints "
             "each rank's peak memory against it, recompute defaults to auto, and a strategy "
             "that cannot fit is refused with the strategies nearby that would"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> compileMemoryHeadroom(
    "memory-headroom", cl::sub(compileCommand), cl::sub(predictCommand), cl::sub(planSearchCommand),
    cl::value_desc("SIZE|PERCENT"),
    cl::desc("With --device: what a fit should leave free, as a size (2GiB) or a share of the "
             "device (2%); auto recompute aims for it and a plan that fits with less is "
             "compiled with a warning (default 1GiB: the spread of the estimated reserves; 0 "
             "for none)"),
    cl::init("1GiB"), cl::cat(mlperfcCategory()));
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
    "cluster", cl::sub(compileCommand), cl::sub(predictCommand), cl::sub(planSearchCommand),
    cl::init("1x1"), cl::value_desc("NODESxGPUS"),
    cl::desc("The cluster the plan runs on: nodes x GPUs (ranks) per node, e.g. 8x8"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> compileParallel(
    "parallel", cl::sub(compileCommand), cl::sub(predictCommand),
    cl::value_desc("dp=..,tp=..,pp=..,vp=..,sp=on|off,zero=0|1|3,micro_batch=.."),
    cl::desc("Parallel strategy; dp defaults to the ranks left after tp and pp. Every degree "
             "is checked against the cluster and the model"),
    cl::cat(mlperfcCategory()));

static cl::opt<double> compileBucketMiB(
    "bucket-mib", cl::sub(compileCommand), cl::sub(predictCommand), cl::sub(planSearchCommand),
    cl::value_desc("MiB"),
    cl::desc("Gradient bytes per data-parallel bucket (dist-decompose-collectives; default "
             "Megatron's 40 M elements of the gradient type)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool>
    compileSchedule("schedule", cl::sub(compileCommand), cl::sub(predictCommand),
                    cl::sub(planSearchCommand), cl::init(true),
                    cl::desc("Overlap collectives with computation (plan-schedule; default on). "
                             "--schedule=false keeps every collective's wait right after it"),
                    cl::cat(mlperfcCategory()));
static cl::opt<std::string> compileScheduleMemoryLimit(
    "schedule-memory-limit", cl::sub(compileCommand), cl::sub(predictCommand),
    cl::sub(planSearchCommand), cl::value_desc("SIZE"),
    cl::desc("Most activation bytes plan-schedule may keep alive at once, e.g. 40GiB "
             "(default: the unscheduled plan's peak, so scheduling never needs more memory)"),
    cl::cat(mlperfcCategory()));
static cl::opt<int64_t> compileMaxOutstanding(
    "max-outstanding", cl::sub(compileCommand), cl::sub(predictCommand), cl::sub(planSearchCommand),
    cl::init(4), cl::value_desc("N"),
    cl::desc("Most collectives plan-schedule keeps in flight at once (default 4)"),
    cl::cat(mlperfcCategory()));

static cl::opt<bool> compileAudit(
    "audit", cl::sub(compileCommand),
    cl::desc("Audit what was just compiled (mlperfc audit: pass classes, certificates, "
             "numeric evidence, closed-division rules); exit 1 on a violation"),
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

/// "layers 0-7 full, 8-31 selective" from tg-recompute's levels.
static std::string describeLevels(int64_t firstLayer, llvm::ArrayRef<int64_t> levels) {
  static const char *const names[] = {"kept", "swiglu recomputed", "selective", "full"};
  std::string text;
  for (size_t begin = 0; begin < levels.size();) {
    size_t end = begin;
    while (end + 1 < levels.size() && levels[end + 1] == levels[begin]) {
      ++end;
    }
    int64_t level = std::clamp<int64_t>(levels[begin], 0, 3);
    text += (text.empty() ? "" : ", ") + std::string(begin == end ? "layer " : "layers ") +
            std::to_string(firstLayer + begin) +
            (begin == end ? "" : "-" + std::to_string(firstLayer + end)) + " " + names[level];
    begin = end + 1;
  }
  return text;
}

/// What tg-recompute chose for a differentiated function (its `tg.recompute` report).
struct RecomputeTotals {
  double recomputed = 0, model = 0;
};

static void describeRecompute(mlir::func::FuncOp func, RecomputeTotals &totals) {
  auto report = func->getAttrOfType<mlir::DictionaryAttr>("tg.recompute");
  if (!report) {
    return;
  }
  auto number = [&](llvm::StringRef key) {
    if (auto value = report.getAs<mlir::FloatAttr>(key)) {
      return value.getValueAsDouble();
    }
    auto value = report.getAs<mlir::IntegerAttr>(key);
    return value ? static_cast<double>(value.getInt()) : 0.0;
  };
  auto levels = report.getAs<mlir::DenseI64ArrayAttr>("levels");
  auto policy = report.getAs<mlir::StringAttr>("policy");
  double recomputed = number("recomputed_flops"), model = number("model_flops");
  totals.recomputed += recomputed;
  totals.model += model;
  if (policy && policy.getValue() == "none" && !report.get("stash_after")) {
    return; // the step's total line says so
  }
  llvm::outs() << llvm::format(
      "    recompute %s: %.4g model FLOPs recomputed per call, %.2f%% of its %.4g; activation "
      "arena of the function alone %s before, %s after\n",
      policy ? policy.getValue().str().c_str() : "?", recomputed,
      model > 0 ? 100.0 * recomputed / model : 0.0, model,
      rt::humanBytes(static_cast<int64_t>(number("arena_before"))).c_str(),
      rt::humanBytes(static_cast<int64_t>(number("arena_after"))).c_str());
  if (report.get("stash_after")) {
    llvm::outs() << llvm::format(
        "      kept across the pipeline window: %s per micro-batch (%s with nothing recomputed), "
        "%lld micro-batches in flight\n",
        rt::humanBytes(static_cast<int64_t>(number("stash_after"))).c_str(),
        rt::humanBytes(static_cast<int64_t>(number("stash_before"))).c_str(),
        static_cast<long long>(number("micro_batches_in_flight")));
  }
  if (levels && !levels.empty()) {
    llvm::outs() << "      "
                 << describeLevels(static_cast<int64_t>(number("first_layer")), levels.asArrayRef())
                 << "\n";
  }
}

static void describeFunction(mlir::func::FuncOp func, const rt::ModelDims &dims,
                             const rt::MeshShape &mesh, RecomputeTotals &recompute) {
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
  describeRecompute(func, recompute);
}

/// What one rank holds: parameters, gradients, optimizer state (masters and moments), the
/// batch inputs and scalars, and the activation arena; with a device, the peak against it.
static void describeRankMemory(const RankMemory &memory, const rt::MeshShape &mesh,
                               const DeviceMemory *device) {
  llvm::outs() << "  per-rank memory: parameters " << rt::humanBytes(memory.parameters)
               << ", gradients " << rt::humanBytes(memory.gradients) << ", optimizer state "
               << rt::humanBytes(memory.optimizerState) << ", activations "
               << rt::humanBytes(memory.activationArena) << "; arenas "
               << rt::humanBytes(memory.persistentArena + memory.activationArena) << "\n";
  if (!device) {
    return;
  }
  int64_t peak = memory.peak();
  llvm::outs() << "  per-rank peak on " << device->name << ": " << rt::humanBytes(peak) << " of "
               << rt::humanBytes(device->capacityBytes)
               << (peak <= device->capacityBytes
                       ? " (" + rt::humanBytes(device->capacityBytes - peak) + " free)"
                       : " (" + rt::humanBytes(peak - device->capacityBytes) +
                             " over: does not fit)")
               << ": arenas " << rt::humanBytes(memory.persistentArena + memory.activationArena)
               << " + reserves " << rt::humanBytes(memory.reserves) << " (";
  llvm::interleaveComma(memory.reserveList, llvm::outs(), [](const MemoryReserve &reserve) {
    llvm::outs() << reserve.what << " " << rt::humanBytes(reserve.bytes);
  });
  llvm::outs() << ")\n";
  if (peak <= device->capacityBytes && device->capacityBytes - peak < device->headroomBytes) {
    llvm::outs() << "  warning: it fits with " << rt::humanBytes(device->capacityBytes - peak)
                 << " free, less than the memory headroom of "
                 << rt::humanBytes(device->headroomBytes)
                 << " (--memory-headroom): a reserve larger than estimated would not fit; "
                    "recompute more, shard more (zero=1, tp, pp), or accept it with a lower "
                    "--memory-headroom\n";
  }
}

/// A plan that cannot fit its device is not written: the error gives the numbers, and the
/// strategies one change away that would fit (each compiled, with the same recompute policy).
static int refuseUnfit(mlir::ModuleOp declaration, const TrainStepOptions &options,
                       const rt::ModelDims &dims, int64_t microBatchesOnOneRank,
                       const CompiledStep &step, const DeviceMemory &device) {
  llvm::outs().flush(); // the summary above, before the diagnosis
  size_t stage = step.peakStage();
  const RankMemory &memory = step.stages[stage];
  std::string where =
      step.stages.size() > 1 ? "pipeline stage " + std::to_string(stage) : "each rank";
  llvm::errs() << "mlperfc compile: " << options.mesh.describe() << " with --recompute "
               << options.recompute << " does not fit --device " << device.name << ": " << where
               << " needs " << rt::humanBytes(memory.peak()) << " of "
               << rt::humanBytes(device.capacityBytes) << " (persistent "
               << rt::humanBytes(memory.persistentArena) << ", activations "
               << rt::humanBytes(memory.activationArena) << ", reserves "
               << rt::humanBytes(memory.reserves) << "); trying the strategies nearby\n";
  std::vector<std::string> fitting, tried;
  for (const NearbyStrategy &nearby : nearbyStrategies(options, dims, microBatchesOnOneRank)) {
    llvm::errs() << "  " << nearby.change << " ...";
    llvm::errs().flush();
    // A strategy the mesh checks allow may still not split this model: its first error, in
    // one line, says why.
    std::string firstError;
    mlir::ScopedDiagnosticHandler oneLine(declaration.getContext(), [&](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error && firstError.empty()) {
        firstError = d.str();
      }
      return mlir::success();
    });
    mlir::FailureOr<CompiledStep> candidate = compileForDevice(declaration, nearby.options, device);
    if (failed(candidate)) {
      llvm::errs() << " does not compile: " << firstError << "\n";
      continue;
    }
    int64_t peak = candidate->peakBytes();
    bool fits = peak <= device.capacityBytes;
    llvm::errs() << (fits ? " fits with " : " needs ") << rt::humanBytes(peak) << "\n";
    (fits ? fitting : tried)
        .push_back(nearby.change + (fits ? " fits with " : " needs ") + rt::humanBytes(peak));
  }
  std::string message = "needs " + rt::humanBytes(memory.peak()) + " of " +
                        rt::humanBytes(device.capacityBytes) + " (" + device.name + ", " +
                        rt::humanBytes(memory.peak() - device.capacityBytes) + " over)";
  if (!fitting.empty()) {
    message += "; " + llvm::join(fitting, ", ");
  } else {
    message += "; no strategy one change away fits either" +
               (tried.empty() ? std::string() : " (" + llvm::join(tried, ", ") + ")") +
               ": use more GPUs or a larger device";
  }
  return fail(message + "; no plan written");
}

const std::string &modelPathFlag() { return compileInput; }

std::string sharedCompileFlags() {
  std::string flags;
  auto add = [&](const cl::Option &option, const std::string &value, bool isBool = false) {
    if (option.getNumOccurrences() > 0) {
      flags += " --" + option.ArgStr.str() + (isBool ? "=" : " ") + value;
    }
  };
  auto text = [](bool value) { return std::string(value ? "true" : "false"); };
  add(compilePrecision, compilePrecision);
  add(compileFp8Recipe, compileFp8Recipe);
  add(compileFuseAttention, text(compileFuseAttention), true);
  add(compileFuseSwiglu, text(compileFuseSwiglu), true);
  add(compileFuseCrossEntropy, text(compileFuseCrossEntropy), true);
  add(compileFuseAddRMSNorm, text(compileFuseAddRMSNorm), true);
  add(compileFuseRopeQK, text(compileFuseRopeQK), true);
  add(compileRecompute, compileRecompute);
  add(compileBucketMiB, llvm::formatv("{0}", compileBucketMiB.getValue()).str());
  add(compileSchedule, text(compileSchedule), true);
  add(compileScheduleMemoryLimit, compileScheduleMemoryLimit);
  add(compileMaxOutstanding, std::to_string(compileMaxOutstanding));
  add(compileDevice, compileDevice);
  add(compileMemoryHeadroom, compileMemoryHeadroom);
  return flags;
}
const std::string &deviceFlag() { return compileDevice; }

int trainStepOptionsFromFlags(mlir::ModuleOp module, const char *command, TrainStepOptions &options,
                              std::optional<DeviceMemory> &device, bool withStrategy) {
  auto fail = [&](const llvm::Twine &message) {
    llvm::WithColor::error(llvm::errs(), command) << message << "\n";
    return 1;
  };
  if (compilePrecision != "bf16" && compilePrecision != "fp32" && compilePrecision != "fp8") {
    return fail("--precision must be bf16, fp32 or fp8, got '" + compilePrecision + "'");
  }
  if (compileFp8Recipe.getNumOccurrences() > 0 && compilePrecision != "fp8") {
    return fail("--fp8-recipe applies to --precision fp8 only");
  }
  if (compileFp8Recipe == "mxfp8") {
    return fail("--fp8-recipe mxfp8 is not supported yet (E8M0 block scales): delayed and "
                "current are");
  }
  if (compileFp8Recipe != "delayed" && compileFp8Recipe != "current") {
    return fail("--fp8-recipe must be delayed, current or mxfp8, got '" + compileFp8Recipe + "'");
  }
  tg::ModelOp model = getModel(module);
  rt::ModelDims dims = parallelDims(model);
  auto batch = *model.getBody().front().getOps<tg::BatchOp>().begin();
  options.precision = compilePrecision;
  options.fp8Recipe = compileFp8Recipe;
  options.fuseAttention = compileFuseAttention;
  options.fuseSwiglu = compileFuseSwiglu;
  options.fuseCrossEntropy = compileFuseCrossEntropy;
  options.fuseAddRMSNorm = compileFuseAddRMSNorm;
  options.fuseRopeQK = compileFuseRopeQK;
  if (compileBucketMiB.getNumOccurrences() > 0) {
    if (!(compileBucketMiB > 0) || compileBucketMiB > 1024.0 * 1024.0) {
      return fail("--bucket-mib must be a positive size in MiB (at most 1 TiB), got " +
                  llvm::formatv("{0}", compileBucketMiB.getValue()).str());
    }
    options.bucketBytes =
        std::max<int64_t>(1, static_cast<int64_t>(compileBucketMiB * 1024.0 * 1024.0));
  }
  options.schedule = compileSchedule;
  if (compileMaxOutstanding < 1) {
    return fail("--max-outstanding must be at least 1, got " +
                llvm::Twine(compileMaxOutstanding.getValue()));
  }
  options.maxOutstanding = compileMaxOutstanding;
  if (!compileScheduleMemoryLimit.empty()) {
    std::optional<int64_t> bytes = parseByteSize(compileScheduleMemoryLimit);
    if (!bytes) {
      return fail("--schedule-memory-limit must be a size such as 40GiB or 512MiB, got '" +
                  compileScheduleMemoryLimit + "'");
    }
    options.scheduleMemoryLimit = *bytes;
  }
  device.reset();
  // predict's and plan-search's `cpu` is the CPU backend's speed, with no memory to fit.
  bool cpuBackend = compileDevice == "cpu" && (predictCommand || planSearchCommand);
  if (!compileDevice.empty() && !cpuBackend) {
    device.emplace();
    if (rt::Status parsed = parseDevice(compileDevice, *device); !parsed.isOk()) {
      return fail(parsed.message());
    }
    if (rt::Status parsed = parseMemoryHeadroom(compileMemoryHeadroom, device->capacityBytes,
                                                device->headroomBytes);
        !parsed.isOk()) {
      return fail(parsed.message());
    }
  } else if (compileMemoryHeadroom.getNumOccurrences() > 0) {
    return fail("--memory-headroom is what a fit to --device leaves free: give --device too");
  }
  options.recompute = !compileRecompute.empty() ? std::string(compileRecompute)
                      : device                  ? "auto"
                                                : "none";
  if (!isRecomputePolicy(options.recompute)) {
    return fail("--recompute must be none, selective, full or auto, got '" + options.recompute +
                "'");
  }
  if (options.recompute == "auto" && !device) {
    return fail("--recompute auto fits the plan to a device: give --device (h100, h200, b200 "
                "or NAME=SIZE)");
  }
  rt::MeshShape &mesh = options.mesh;
  rt::Status status = rt::parseCluster(compileCluster, mesh);
  if (!withStrategy) {
    return status.isOk() ? 0 : fail(status.message());
  }
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
  return 0;
}

int runCompile() {
  std::unique_ptr<mlir::MLIRContext> contextOwner = createModelContext();
  ModelFile modelFile(*contextOwner, compileInput);
  mlir::OwningOpRef<mlir::ModuleOp> module = modelFile.load();
  if (!module) {
    return 1;
  }
  TrainStepOptions options;
  std::optional<DeviceMemory> device;
  if (int error = trainStepOptionsFromFlags(*module, "mlperfc compile", options, device)) {
    return error;
  }
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
    (void)contextOwner.release();
  });
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
    recordCompileOptions(step->options, compileDevice, *plan);
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
  audit.modelPath = compileInput;
  audit.plans = std::move(emitted);
  audit.planPaths = std::move(emittedPaths);
  audit.dumpDirectory = compileDumpIR; // audits the dumps just written, when there are some
  AuditResult result = runAudit(audit, llvm::outs());
  llvm::outs().flush();
  return static_cast<int>(result);
}

} // namespace mlperf::cli
