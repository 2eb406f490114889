//===- Predict.cpp - mlperfc predict and mlperfc plan-search ---*- C++ -*-===//
//
// Argument parsing and printing around the step-time model (compiler/Analysis/StepTime.h)
// and the strategy search (compiler/Pipelines/StrategySearch.h).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "compiler/Analysis/ModelSummary.h"
#include "compiler/Analysis/StepTime.h"
#include "compiler/Models/Llama.h"
#include "compiler/Pipelines/StrategySearch.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"
#include "dialects/TG/IR/TGOps.h"

#include "runtime/support/ChromeTrace.h"
#include "runtime/support/NumberFormat.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace cl = llvm::cl;

namespace mlperf::cli {

static cl::opt<std::string> calibrateFile(
    "calibrate", cl::sub(predictCommand()), cl::sub(planSearchCommand()), cl::value_desc("FILE"),
    cl::desc("Measured microbenchmarks (JSON, format mlperfc-calibration-1: mlperf-run "
             "--calibrate-out or the device check writes it) replacing the device's figures"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> traceFile(
    "trace", cl::sub(predictCommand()), cl::value_desc("FILE.json"),
    cl::desc("Write the simulated step as a Chrome trace / Perfetto timeline (one track per "
             "stream of each pipeline stage's first rank)"),
    cl::cat(mlperfcCategory()));
static cl::list<int64_t> searchBatches(
    "gbs", cl::sub(planSearchCommand()), cl::CommaSeparated, cl::value_desc("N,..."),
    cl::desc("Global batch sizes to search (default: the declaration's reference convergence "
             "points, else its global batch)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool>
    searchVerbose("verbose", cl::sub(planSearchCommand()),
                  cl::desc("Print every strategy as it is compiled (default: a count every 10)"),
                  cl::cat(mlperfcCategory()));
static cl::opt<unsigned> searchTop("top", cl::sub(planSearchCommand()), cl::init(10),
                                   cl::desc("How many strategies to print (default 10)"),
                                   cl::cat(mlperfcCategory()));

static int fail(const char *command, const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), command) << message << "\n";
  return 1;
}

/// The device's speed figures: --device's built-in table entry (h100 without one), replaced
/// by --calibrate's measurements. A NAME=SIZE device has no figures of its own: it starts
/// from H100's and needs --calibrate.
static int speedFromFlags(const char *command, DeviceSpeed &speed) {
  std::string name = deviceFlag().empty() ? "h100" : deviceFlag();
  bool custom = name.find('=') != std::string::npos;
  rt::Status status = builtinDeviceSpeed(custom ? "h100" : name, speed);
  if (!status.isOk()) {
    return fail(command, status.message());
  }
  if (custom) {
    if (calibrateFile.empty()) {
      return fail(command, "--device " + name +
                               " has no speed figures: give --calibrate FILE with its "
                               "measurements, or use one of " +
                               builtinDeviceNames());
    }
    speed.name = name.substr(0, name.find('='));
  }
  if (!calibrateFile.empty()) {
    status = loadCalibration(calibrateFile, speed);
    if (!status.isOk()) {
      return fail(command, status.message());
    }
  }
  return 0;
}

static std::string duration(double value) {
  return value >= 3600 ? llvm::formatv("{0:F2} h", value / 3600).str()
         : value >= 60 ? llvm::formatv("{0:F1} min", value / 60).str()
                       : rt::humanSeconds(value);
}

static void printStage(llvm::raw_ostream &os, const StageTime &stage, const rt::MeshShape &mesh) {
  os << "compute " << rt::humanSeconds(stage.compute) << ", recompute "
     << rt::humanSeconds(stage.recompute) << ", exposed communication "
     << rt::humanSeconds(stage.exposedTotal()) << " (dp "
     << rt::humanSeconds(stage.exposedDataParallel());
  if (mesh.hsdp > 0) { // of which inside the sharding groups and across them
    os << " [dp_shard " << rt::humanSeconds(stage.exposedOn(rt::MeshAxis::kDPShard))
       << ", dp_replicate " << rt::humanSeconds(stage.exposedOn(rt::MeshAxis::kDPReplicate)) << "]";
  }
  os << ", tp " << rt::humanSeconds(stage.exposedOn(rt::MeshAxis::kTP)) << ", pp "
     << rt::humanSeconds(stage.exposedOn(rt::MeshAxis::kPP)) << "), bubble "
     << rt::humanSeconds(stage.bubble) << "; communication stream busy "
     << rt::humanSeconds(stage.communication);
}

static rt::Trace timelineTrace(const StepPrediction &prediction, const rt::MeshShape &mesh,
                               const DeviceSpeed &speed) {
  rt::Trace trace;
  trace.metadata["source"] = "mlperfc predict";
  trace.metadata["device"] = speed.name + " (" + speed.source + ")";
  trace.metadata["step_seconds"] = llvm::formatv("{0}", prediction.stepSeconds).str();
  for (size_t stage = 0; stage < prediction.stages.size(); ++stage) {
    int64_t rank = static_cast<int64_t>(stage) * mesh.tp * mesh.dp;
    trace.processNames[rank] = "rank " + std::to_string(rank) + " (pipeline stage " +
                               std::to_string(stage) + ", predicted)";
    trace.threadNames[{rank, 0}] = "stream 0: compute";
    trace.threadNames[{rank, 1}] = "stream 1: communication";
  }
  for (const TimelineEvent &event : prediction.timeline) {
    rt::TraceSpan span;
    span.name = event.name;
    span.process = event.stage * mesh.tp * mesh.dp;
    span.thread = event.stream;
    span.startSeconds = event.start;
    span.seconds = event.seconds;
    span.args["program"] = event.program;
    if (event.microBatch >= 0) {
      span.args["micro_batch"] = std::to_string(event.microBatch);
    }
    trace.spans.push_back(std::move(span));
  }
  return trace;
}

int runPredict() {
  const char *command = "mlperfc predict";
  FlaggedModel loaded;
  TrainStepOptions options;
  if (int error = loadFlaggedModel(command, loaded, options)) {
    return error;
  }
  mlir::OwningOpRef<mlir::ModuleOp> &module = loaded.module;
  std::optional<DeviceMemory> &device = loaded.device;
  DeviceSpeed speed;
  if (int error = speedFromFlags(command, speed)) {
    return error;
  }
  tg::ModelOp model = getModel(*module);
  ModelSummary summary = summarizeModel(model);
  std::string error;
  mlir::FailureOr<PredictedStep> predicted = predictCompiledStep(
      *module, options, device ? &*device : nullptr, speed, !traceFile.empty(), error);
  if (failed(predicted)) {
    return fail(command, error);
  }
  const rt::MeshShape &mesh = options.mesh;
  const StepPrediction &step = predicted->step;
  llvm::raw_ostream &os = llvm::outs();
  double world = static_cast<double>(mesh.worldSize());
  double tokens = static_cast<double>(summary.globalBatch) * static_cast<double>(summary.seqLen);
  double modelFlops = summary.trainFlopsPerStep;
  os << "predicted step of @" << model.getSymName() << " on " << mesh.describe() << ", "
     << (options.precision) << ", " << speed.name << ": " << rt::humanSeconds(step.stepSeconds)
     << "\n";
  os << "  device figures: " << speed.source << "\n";
  os << llvm::format(
      "  throughput: %s tokens/s (%s per GPU), %.1f model TFLOP/s per GPU, MFU "
      "%.1f%% of the bf16 peak\n",
      rt::groupedNumber(static_cast<int64_t>(tokens / step.stepSeconds)).c_str(),
      rt::groupedNumber(static_cast<int64_t>(tokens / step.stepSeconds / world)).c_str(),
      modelFlops / step.stepSeconds / world / 1e12,
      100.0 * modelFlops / (step.stepSeconds * world * speed.peakBf16));
  for (size_t s = 0; s < step.stages.size(); ++s) {
    os << "  " << (step.stages.size() > 1 ? "stage " + std::to_string(s) : std::string("step"))
       << (step.stages.size() > 1 && s == step.criticalStage ? " (slowest)" : "") << ": "
       << rt::humanSeconds(step.stages[s].step) << " = ";
    printStage(os, step.stages[s], mesh);
    os << "\n";
  }
  if (device) {
    os << "  per-rank peak memory " << rt::humanBytes(predicted->peakBytes) << " of "
       << rt::humanBytes(device->capacityBytes) << " (" << device->name << ", recompute "
       << predicted->options.recompute << ")"
       << (predicted->peakBytes > device->capacityBytes ? ": does not fit" : "") << "\n";
  }
  if (std::optional<int64_t> samples = rcpMeanSamples(*module, summary.globalBatch)) {
    double steps =
        std::ceil(static_cast<double>(*samples) / static_cast<double>(summary.globalBatch));
    os << "  time to train: " << rt::groupedNumber(*samples) << " samples (RCP mean at global "
       << "batch " << summary.globalBatch << ") = " << static_cast<int64_t>(steps) << " steps x "
       << rt::humanSeconds(step.stepSeconds) << " = " << duration(steps * step.stepSeconds)
       << " (training steps only: evaluation and initialization not included)\n";
  } else {
    os << "  time to train: the declaration has no reference convergence point for global "
          "batch "
       << summary.globalBatch << "\n";
  }
  if (!traceFile.empty()) {
    rt::Status written = rt::writeChromeTrace(traceFile, timelineTrace(step, mesh, speed));
    if (!written.isOk()) {
      return fail(command, written.message());
    }
    os << "  timeline: " << traceFile << " (" << step.timeline.size() << " commands)\n";
  }
  return 0;
}

/// `text` as one shell word (single-quoted unless it needs no quoting).
static std::string shellWord(const std::string &text) {
  bool plain = !text.empty() && llvm::all_of(text, [](char c) {
    return llvm::isAlnum(c) || llvm::StringRef("_./-+=,:@%").contains(c);
  });
  if (plain) {
    return text;
  }
  std::string quoted = "'";
  for (char c : text) {
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return quoted + "'";
}

/// The commands that build `ranked`'s plan: `mlperfc compile` with the strategy and the
/// flags given, after an `emit-model` of the declaration at the strategy's global batch when
/// that differs from the declared one (or, for a declaration emit-model did not write, what
/// to change in a copy).
static std::vector<std::string> buildCommands(const RankedStrategy &ranked, int64_t declaredBatch,
                                              const std::string &modelPath,
                                              const std::optional<models::EmitModelCommand> &emit,
                                              const rt::MeshShape &cluster) {
  std::vector<std::string> lines;
  std::string model = modelPath;
  if (ranked.globalBatch != declaredBatch) {
    // In the working directory: the declaration's may be read-only (an installed model).
    model = llvm::sys::path::stem(modelPath).str() + "_gbs" + std::to_string(ranked.globalBatch) +
            ".mlir";
    if (emit) {
      models::EmitModelCommand atBatch = *emit;
      atBatch.settings =
          models::withSetting(emit->settings, "gbs", std::to_string(ranked.globalBatch));
      lines.push_back(atBatch.str() + " -o " + shellWord(model));
    } else {
      lines.push_back("(" + modelPath + " was not written by mlperfc emit-model: copy it to " +
                      model +
                      " with tg.batch global_batch_size = " + std::to_string(ranked.globalBatch) +
                      " and eval_every_samples a multiple of it)");
    }
  }
  rt::MeshShape mesh = ranked.options.mesh;
  mesh.microBatch = 0; // the declaration's
  lines.push_back("mlperfc compile " + shellWord(model) + " --cluster " +
                  std::to_string(cluster.nodes) + "x" + std::to_string(cluster.gpusPerNode) +
                  " --parallel " + mesh.parallelFlag() + sharedCompileFlags() + " -o plan.pb");
  return lines;
}

/// Why `better` ranks above `next`: the difference in their steps (and global batches), the
/// part of the critical path that gains most and the one that loses most.
static std::string whyBetter(const RankedStrategy &better, const RankedStrategy &next) {
  const StageTime &ours = better.step.stages[better.step.criticalStage];
  const StageTime &theirs = next.step.stages[next.step.criticalStage];
  struct Part {
    const char *name;
    double delta; // > 0: `better` spends less on it
  } parts[] = {
      {"compute", theirs.compute - ours.compute},
      {"recompute", theirs.recompute - ours.recompute},
      {"exposed dp communication", theirs.exposedDataParallel() - ours.exposedDataParallel()},
      {"exposed tp communication",
       theirs.exposedOn(rt::MeshAxis::kTP) - ours.exposedOn(rt::MeshAxis::kTP)},
      {"exposed pp communication",
       theirs.exposedOn(rt::MeshAxis::kPP) - ours.exposedOn(rt::MeshAxis::kPP)},
      {"pipeline bubble", theirs.bubble - ours.bubble},
  };
  const Part *gain = &parts[0], *loss = &parts[0];
  for (const Part &part : parts) {
    gain = part.delta > gain->delta ? &part : gain;
    loss = part.delta < loss->delta ? &part : loss;
  }
  if (better.globalBatch != next.globalBatch) {
    // Steps of different batches compare only through what is ranked.
    return better.timeToTrainSeconds && next.timeToTrainSeconds
               ? "time to train " + duration(*better.timeToTrainSeconds) + " vs " +
                     duration(*next.timeToTrainSeconds) + " (global batch " +
                     std::to_string(better.globalBatch) + " vs " +
                     std::to_string(next.globalBatch) + ")"
               : llvm::formatv("{0:F1} vs {1:F1} samples/s (global batch {2} vs {3})",
                               better.samplesPerSecond, next.samplesPerSecond, better.globalBatch,
                               next.globalBatch)
                     .str();
  }
  std::string why =
      "step " + rt::humanSeconds(next.stepSeconds - better.stepSeconds) + " shorter; ";
  why += "on the critical path " +
         (gain->delta > 0 ? std::string(gain->name) + " " + rt::humanSeconds(gain->delta) + " less"
                          : std::string("no part shorter"));
  if (loss->delta < 0) {
    why += ", " + std::string(loss->name) + " " + rt::humanSeconds(-loss->delta) + " more";
  }
  return why;
}

int runPlanSearch() {
  const char *command = "mlperfc plan-search";
  if (deviceFlag().empty()) {
    return fail(command, "give --device (h100, h200, b200 or NAME=SIZE with --calibrate): the "
                         "search keeps the strategies that fit it");
  }
  FlaggedModel loaded;
  SearchOptions search;
  if (int error = loadFlaggedModel(command, loaded, search.base, /*withStrategy=*/false)) {
    return error;
  }
  mlir::OwningOpRef<mlir::ModuleOp> &module = loaded.module;
  std::optional<DeviceMemory> &device = loaded.device;
  if (!device) {
    return fail(command, "--device cpu has no memory size: plan-search needs h100, h200, b200 "
                         "or NAME=SIZE");
  }
  if (int error = speedFromFlags(command, search.speed)) {
    return error;
  }
  for (int64_t gbs : searchBatches) {
    if (gbs <= 0) {
      return fail(command, "--gbs values must be positive, got " + llvm::Twine(gbs));
    }
    search.globalBatches.push_back(gbs);
  }
  search.device = *device;
  search.nodes = search.base.mesh.nodes;
  search.gpusPerNode = search.base.mesh.gpusPerNode;
  int64_t done = 0;
  auto progress = [&](const std::string &description, const std::string &outcome) {
    ++done;
    if (searchVerbose) {
      llvm::errs() << "  " << done << ". " << description << ": " << outcome << "\n";
    } else if (done % 10 == 0) {
      llvm::errs() << "  searched " << done << " strategies\n";
    }
  };
  search.progress = progress;
  search.keep = searchTop;
  SearchResult result = searchStrategies(*module, search);
  llvm::raw_ostream &os = llvm::outs();
  tg::ModelOp model = getModel(*module);
  auto batch = *model.getBody().front().getOps<tg::BatchOp>().begin();
  int64_t declaredBatch = batch.getGlobalBatchSize();
  std::optional<models::EmitModelCommand> emit;
  if (llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
          llvm::MemoryBuffer::getFile(modelPathFlag())) {
    emit = models::generatingCommand((*text)->getBuffer());
  }
  os << "plan-search @" << model.getSymName() << " on " << search.nodes << "x" << search.gpusPerNode
     << " " << device->name << " (" << search.speed.source << "): " << result.enumerated
     << " strategies, " << result.tooLarge << " do not fit, " << result.notCompiling
     << " do not compile for this model, " << result.pruned << " cannot make the top " << searchTop
     << " by their bound, " << result.ranked.size() << " ranked (" << result.compiled
     << " compiles, " << llvm::formatv("{0:F1}", result.seconds) << " s)\n";
  if (searchVerbose && !result.excluded.empty()) {
    os << "  left out:\n";
    for (const ExcludedStrategy &excluded : result.excluded) {
      os << "    " << excluded.description << ": " << excluded.reason << "\n";
    }
  }
  if (result.ranked.empty()) {
    os << "  no strategy fits: use more GPUs or a larger device"
       << (searchVerbose ? "" : " (--verbose says why each strategy was left out)") << "\n";
    return 1;
  }
  bool byTrain = result.ranked.front().timeToTrainSeconds.has_value();
  os << "  ranked by "
     << (byTrain ? "predicted time to train (RCP mean samples x step time)"
                 : "samples per second (no RCP for these batches)")
     << "; each strategy compiled as the command under it builds it (recompute "
     << search.base.recompute
     << (search.base.recompute == "auto" ? ": as little as fits the device" : "")
     << "), its step what mlperfc predict gives for it\n";
  size_t shown = std::min<size_t>(searchTop, result.ranked.size());
  for (size_t i = 0; i < shown; ++i) {
    const RankedStrategy &r = result.ranked[i];
    const StepPrediction &step = r.step;
    const StageTime &critical = step.stages[step.criticalStage];
    size_t stages = step.stages.size();
    os << llvm::format("  %2zu. %s\n      step %s, %.1f samples/s, MFU %.1f%%", i + 1,
                       r.description.c_str(), rt::humanSeconds(r.stepSeconds).c_str(),
                       r.samplesPerSecond, 100.0 * r.mfu);
    if (r.timeToTrainSeconds) {
      os << ", time to train " << duration(*r.timeToTrainSeconds);
    }
    os << "\n      memory: peak " << rt::humanBytes(r.peakBytes) << " per rank"
       << (stages > 1 ? " (stage " + std::to_string(r.peakStage) + ")" : std::string()) << ", "
       << rt::humanBytes(device->capacityBytes - r.peakBytes) << " of "
       << rt::humanBytes(device->capacityBytes) << " free";
    if (r.peakBytes > device->targetBytes()) {
      os << " (less than the " << rt::humanBytes(device->headroomBytes)
         << " --memory-headroom: compile warns)";
    }
    os << "\n      critical path: "
       << (stages > 1 ? "stage " + std::to_string(step.criticalStage) + " of " +
                            std::to_string(stages) + " (the slowest), "
                      : std::string())
       << rt::humanSeconds(critical.step) << " = ";
    printStage(os, critical, r.options.mesh);
    os << "\n";
    std::vector<std::string> commands =
        buildCommands(r, declaredBatch, modelPathFlag(), emit, search.base.mesh);
    for (size_t c = 0; c < commands.size(); ++c) {
      os << (c == 0 ? "      build: " : "             ") << commands[c] << "\n";
    }
    if (i + 1 < result.ranked.size()) {
      os << "      beats #" << i + 2 << ": " << whyBetter(r, result.ranked[i + 1]) << "\n";
    }
  }
  return 0;
}

} // namespace mlperf::cli
