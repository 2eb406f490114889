//===- CompileFlags.cpp - The options compile, predict and plan-search share -*- C++ -*-===//
//
// One definition of the strategy, precision, fusion, scheduling and device options of
// `mlperfc compile`, `predict` and `plan-search`, and their reading into TrainStepOptions.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "compiler/Analysis/ModelSummary.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/TG/IR/TGOps.h"

#include "runtime/dist/Mesh.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"

namespace cl = llvm::cl;

namespace mlperf::cli {

// Constructed on first use: the options of several files name these subcommands, and
// static initialization runs in definition order within one file only.
cl::SubCommand &compileCommand() {
  static cl::SubCommand command("compile", "Lower a model declaration to its train step");
  return command;
}
cl::SubCommand &predictCommand() {
  static cl::SubCommand command("predict",
                                "Predict the compiled train step's time (the step-time model)");
  return command;
}
cl::SubCommand &planSearchCommand() {
  static cl::SubCommand command(
      "plan-search", "Rank the parallel strategies of a cluster by predicted time to train");
  return command;
}

static cl::opt<std::string> compileInput(cl::Positional, cl::Required, cl::sub(compileCommand()),
                                         cl::sub(predictCommand()), cl::sub(planSearchCommand()),
                                         cl::desc("<model.mlir>"), cl::cat(mlperfcCategory()));

static cl::opt<std::string> compilePrecision(
    "precision", cl::sub(compileCommand()), cl::sub(predictCommand()), cl::sub(planSearchCommand()),
    cl::init("bf16"),
    cl::desc("Compute precision: bf16 (the reference's, as declared), fp32 (oracle and RCP "
             "reference runs) or fp8 (bf16 with the layer stack's linears in fp8, scaled as "
             "--fp8-recipe says)"),
    cl::cat(mlperfcCategory()));

static cl::opt<std::string> compileFp8Recipe(
    "fp8-recipe", cl::sub(compileCommand()), cl::sub(predictCommand()),
    cl::sub(planSearchCommand()), cl::init("delayed"),
    cl::desc("fp8 scaling with --precision fp8: delayed (Transformer Engine DelayedScaling, "
             "the reference's: amax history 4, most_recent, margin 0; default) or current "
             "(Float8CurrentScaling: each cast with its tensor's own amax)"),
    cl::cat(mlperfcCategory()));

static cl::opt<bool> compileFuseAttention(
    "fuse-attention", cl::sub(compileCommand()), cl::sub(predictCommand()),
    cl::sub(planSearchCommand()), cl::init(true),
    cl::desc("Fuse each attention into tg.attention (tg-fuse-attention; default on). "
             "--fuse-attention=false keeps the declared softmax(QKᵀ)V graph"),
    cl::cat(mlperfcCategory()));

static cl::opt<bool> compileFuseSwiglu(
    "fuse-swiglu", cl::sub(compileCommand()), cl::sub(predictCommand()),
    cl::sub(planSearchCommand()), cl::init(true),
    cl::desc("Fuse silu(gate) * up into tg.swiglu (tg-fuse-swiglu, exact; default on)"),
    cl::cat(mlperfcCategory()));

static cl::opt<bool> compileFuseCrossEntropy(
    "fuse-cross-entropy", cl::sub(compileCommand()), cl::sub(predictCommand()),
    cl::sub(planSearchCommand()), cl::init(true),
    cl::desc("Fuse the output layer and the loss into tg.linear_cross_entropy "
             "(tg-fuse-cross-entropy, exact; default on)"),
    cl::cat(mlperfcCategory()));

static cl::opt<bool> compileFuseAddRMSNorm(
    "fuse-add-rms-norm", cl::sub(compileCommand()), cl::sub(predictCommand()),
    cl::sub(planSearchCommand()), cl::init(false),
    cl::desc("Fuse each residual add and the RMSNorm of its sum into tg.add_rms_norm "
             "(tg-fuse-add-rms-norm, exact; default off: no gain on the CPU backend)"),
    cl::cat(mlperfcCategory()));

static cl::opt<bool> compileFuseRopeQK(
    "fuse-rope-qk", cl::sub(compileCommand()), cl::sub(predictCommand()),
    cl::sub(planSearchCommand()), cl::init(false),
    cl::desc("Fuse each attention's query and key rotations into tg.rope_qk (tg-fuse-rope-qk, "
             "exact; default off: no gain on the CPU backend)"),
    cl::cat(mlperfcCategory()));

static cl::opt<std::string> compileRecompute(
    "recompute", cl::sub(compileCommand()), cl::sub(predictCommand()), cl::sub(planSearchCommand()),
    cl::value_desc("POLICY"),
    cl::desc("Activation recompute (tg-recompute): none, selective (attention core and SwiGLU "
             "output), full (per layer, keep the layer input) or auto (recompute as little as "
             "makes each rank fit --device; the default with --device, none without)"),
    cl::cat(mlperfcCategory()));

static cl::opt<std::string> compileDevice(
    "device", cl::sub(compileCommand()), cl::sub(predictCommand()), cl::sub(planSearchCommand()),
    cl::value_desc("h100|h200|b200|NAME=SIZE"),
    cl::desc("The accelerator each rank runs on (for example mygpu=80GiB): the summary prints "
             "each rank's peak memory against it, recompute defaults to auto, and a strategy "
             "that cannot fit is refused with the strategies nearby that would"),
    cl::cat(mlperfcCategory()));

static cl::opt<std::string> compileMemoryHeadroom(
    "memory-headroom", cl::sub(compileCommand()), cl::sub(predictCommand()),
    cl::sub(planSearchCommand()), cl::value_desc("SIZE|PERCENT"),
    cl::desc("With --device: what a fit should leave free, as a size (2GiB) or a share of the "
             "device (2%); auto recompute aims for it and a plan that fits with less is "
             "compiled with a warning (default 1GiB: the spread of the estimated reserves; 0 "
             "for none)"),
    cl::init("1GiB"), cl::cat(mlperfcCategory()));

static cl::opt<std::string> compileCluster(
    "cluster", cl::sub(compileCommand()), cl::sub(predictCommand()), cl::sub(planSearchCommand()),
    cl::init("1x1"), cl::value_desc("NODESxGPUS"),
    cl::desc("The cluster the plan runs on: nodes x GPUs (ranks) per node, e.g. 8x8"),
    cl::cat(mlperfcCategory()));

static cl::opt<std::string> compileParallel(
    "parallel", cl::sub(compileCommand()), cl::sub(predictCommand()),
    cl::value_desc("dp=..,tp=..,pp=..,vp=..,sp=on|off,zero=0|1|2|3,hsdp=..,micro_batch=.."),
    cl::desc("Parallel strategy; dp defaults to the ranks left after tp and pp. Every degree "
             "is checked against the cluster and the model"),
    cl::cat(mlperfcCategory()));

static cl::opt<double> compileBucketMiB(
    "bucket-mib", cl::sub(compileCommand()), cl::sub(predictCommand()),
    cl::sub(planSearchCommand()), cl::value_desc("MiB"),
    cl::desc("Gradient bytes per data-parallel bucket (dist-decompose-collectives; default "
             "Megatron's 40 M elements of the gradient type)"),
    cl::cat(mlperfcCategory()));

static cl::opt<bool>
    compileSchedule("schedule", cl::sub(compileCommand()), cl::sub(predictCommand()),
                    cl::sub(planSearchCommand()), cl::init(true),
                    cl::desc("Overlap collectives with computation (plan-schedule; default on). "
                             "--schedule=false keeps every collective's wait right after it"),
                    cl::cat(mlperfcCategory()));

static cl::opt<std::string> compileScheduleMemoryLimit(
    "schedule-memory-limit", cl::sub(compileCommand()), cl::sub(predictCommand()),
    cl::sub(planSearchCommand()), cl::value_desc("SIZE"),
    cl::desc("Most activation bytes plan-schedule may keep alive at once, e.g. 40GiB "
             "(default: the unscheduled plan's peak, so scheduling never needs more memory)"),
    cl::cat(mlperfcCategory()));

static cl::opt<int64_t> compileMaxOutstanding(
    "max-outstanding", cl::sub(compileCommand()), cl::sub(predictCommand()),
    cl::sub(planSearchCommand()), cl::init(4), cl::value_desc("N"),
    cl::desc("Most collectives plan-schedule keeps in flight at once (default 4)"),
    cl::cat(mlperfcCategory()));

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

int loadFlaggedModel(const char *command, FlaggedModel &model, TrainStepOptions &options,
                     bool withStrategy) {
  model.context = createModelContext();
  model.file = std::make_unique<ModelFile>(*model.context, modelPathFlag());
  model.module = model.file->load();
  if (!model.module) {
    return 1;
  }
  return trainStepOptionsFromFlags(*model.module, command, options, model.device, withStrategy);
}

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
  bool cpuBackend = compileDevice == "cpu" && (predictCommand() || planSearchCommand());
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
  bool dpGiven = false;
  if (status.isOk()) {
    status = rt::parseParallel(compileParallel, mesh, &dpGiven);
  }
  if (status.isOk()) {
    status = rt::validateMesh(mesh, dims, dpGiven);
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

} // namespace mlperf::cli
