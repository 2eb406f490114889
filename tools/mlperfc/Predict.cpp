//===- Predict.cpp - mlperfc predict and mlperfc plan-search ---*- C++ -*-===//
//
// Argument parsing and printing around the step-time model (compiler/Analysis/StepTime.h)
// and the strategy search (compiler/Pipelines/StrategySearch.h).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "compiler/Analysis/ModelSummary.h"
#include "compiler/Analysis/StepTime.h"
#include "compiler/Pipelines/StrategySearch.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"
#include "dialects/TG/IR/TGOps.h"

#include "runtime/support/ChromeTrace.h"
#include "runtime/support/NumberFormat.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace cl = llvm::cl;

namespace mlperf::cli {

// predictCommand and planSearchCommand are defined in Compile.cpp, before the options they
// share with compile (static initialization runs in definition order within a file only).

static cl::opt<std::string> calibrateFile(
    "calibrate", cl::sub(predictCommand), cl::sub(planSearchCommand), cl::value_desc("FILE"),
    cl::desc("Measured microbenchmarks (JSON, format mlperfc-calibration-1: mlperf-run "
             "--calibrate-out or the device check writes it) replacing the device's figures"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> traceFile(
    "trace", cl::sub(predictCommand), cl::value_desc("FILE.json"),
    cl::desc("Write the simulated step as a Chrome trace / Perfetto timeline (one track per "
             "stream of each pipeline stage's first rank)"),
    cl::cat(mlperfcCategory()));
static cl::list<int64_t> searchBatches(
    "gbs", cl::sub(planSearchCommand), cl::CommaSeparated, cl::value_desc("N,..."),
    cl::desc("Global batch sizes to search (default: the declaration's reference convergence "
             "points, else its global batch)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool>
    searchVerbose("verbose", cl::sub(planSearchCommand),
                  cl::desc("Print every strategy as it is compiled (default: a count every 10)"),
                  cl::cat(mlperfcCategory()));
static cl::opt<unsigned> searchTop("top", cl::sub(planSearchCommand), cl::init(10),
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

static std::string seconds(double value) {
  return value >= 1.0    ? llvm::formatv("{0:F3} s", value).str()
         : value >= 1e-3 ? llvm::formatv("{0:F2} ms", value * 1e3).str()
                         : llvm::formatv("{0:F1} us", value * 1e6).str();
}

static std::string duration(double value) {
  return value >= 3600 ? llvm::formatv("{0:F2} h", value / 3600).str()
         : value >= 60 ? llvm::formatv("{0:F1} min", value / 60).str()
                       : seconds(value);
}

static void printStage(llvm::raw_ostream &os, const StageTime &stage) {
  double exposed = stage.exposed[0] + stage.exposed[1] + stage.exposed[2];
  os << "compute " << seconds(stage.compute) << ", recompute " << seconds(stage.recompute)
     << ", exposed communication " << seconds(exposed) << " (dp "
     << seconds(stage.exposed[static_cast<int>(rt::MeshAxis::kDP)]) << ", tp "
     << seconds(stage.exposed[static_cast<int>(rt::MeshAxis::kTP)]) << ", pp "
     << seconds(stage.exposed[static_cast<int>(rt::MeshAxis::kPP)]) << "), bubble "
     << seconds(stage.bubble) << "; communication stream busy " << seconds(stage.communication);
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
  std::unique_ptr<mlir::MLIRContext> contextOwner = createModelContext();
  ModelFile modelFile(*contextOwner, modelPathFlag());
  mlir::OwningOpRef<mlir::ModuleOp> module = modelFile.load();
  if (!module) {
    return 1;
  }
  TrainStepOptions options;
  std::optional<DeviceMemory> device;
  if (int error = trainStepOptionsFromFlags(*module, command, options, device)) {
    return error;
  }
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
     << (options.precision) << ", " << speed.name << ": " << seconds(step.stepSeconds) << "\n";
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
       << seconds(step.stages[s].step) << " = ";
    printStage(os, step.stages[s]);
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
       << seconds(step.stepSeconds) << " = " << duration(steps * step.stepSeconds)
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

int runPlanSearch() {
  const char *command = "mlperfc plan-search";
  if (deviceFlag().empty()) {
    return fail(command, "give --device (h100, h200, b200 or NAME=SIZE with --calibrate): the "
                         "search keeps the strategies that fit it");
  }
  std::unique_ptr<mlir::MLIRContext> contextOwner = createModelContext();
  ModelFile modelFile(*contextOwner, modelPathFlag());
  mlir::OwningOpRef<mlir::ModuleOp> module = modelFile.load();
  if (!module) {
    return 1;
  }
  SearchOptions search;
  std::optional<DeviceMemory> device;
  if (int error = trainStepOptionsFromFlags(*module, command, search.base, device,
                                            /*withStrategy=*/false)) {
    return error;
  }
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
  auto progress = [&](const std::string &what) {
    ++done;
    if (searchVerbose) {
      llvm::errs() << "  " << done << ": " << what << "\n";
    } else if (done % 10 == 0) {
      llvm::errs() << "  searched " << done << " strategies\n";
    }
  };
  search.progress = progress;
  search.keep = searchTop;
  SearchResult result = searchStrategies(*module, search);
  llvm::raw_ostream &os = llvm::outs();
  tg::ModelOp model = getModel(*module);
  os << "plan-search @" << model.getSymName() << " on " << search.nodes << "x" << search.gpusPerNode
     << " " << device->name << " (" << search.speed.source << "): " << result.enumerated
     << " strategies, " << result.tooLarge << " do not fit, " << result.notCompiling
     << " do not compile for this model, " << result.pruned << " cannot make the top " << searchTop
     << " by their bound, " << result.ranked.size() << " ranked (" << result.compiled
     << " proxy compiles, " << llvm::formatv("{0:F1}", result.seconds) << " s)\n";
  if (result.ranked.empty()) {
    os << "  no strategy fits: use more GPUs or a larger device\n";
    return 1;
  }
  bool byTrain = result.ranked.front().timeToTrainSeconds.has_value();
  os << "  ranked by "
     << (byTrain ? "predicted time to train (RCP mean samples x step time)"
                 : "samples per second (no RCP for these batches)")
     << "; step times extrapolated from proxies of 1 and 2 layers per model chunk and pp and 2 pp "
        "micro-batches\n";
  size_t shown = std::min<size_t>(searchTop, result.ranked.size());
  for (size_t i = 0; i < shown; ++i) {
    const RankedStrategy &r = result.ranked[i];
    os << llvm::format("  %2zu. %s\n      step %s, %.1f samples/s, MFU %.1f%%, peak %s", i + 1,
                       r.description.c_str(), seconds(r.stepSeconds).c_str(), r.samplesPerSecond,
                       100.0 * r.mfu, rt::humanBytes(r.peakBytes).c_str());
    if (r.timeToTrainSeconds) {
      os << ", time to train " << duration(*r.timeToTrainSeconds);
    }
    os << "\n      ";
    printStage(os, r.critical);
    os << "\n";
    if (i + 1 < result.ranked.size()) {
      // Why it beats the next: the largest of the differences in the parts of the step.
      const RankedStrategy &next = result.ranked[i + 1];
      struct Part {
        const char *name;
        double delta;
      } parts[] = {
          {"compute", next.critical.compute - r.critical.compute},
          {"recompute", next.critical.recompute - r.critical.recompute},
          {"exposed dp communication", next.critical.exposed[0] - r.critical.exposed[0]},
          {"exposed tp communication", next.critical.exposed[1] - r.critical.exposed[1]},
          {"exposed pp communication", next.critical.exposed[2] - r.critical.exposed[2]},
          {"pipeline bubble", next.critical.bubble - r.critical.bubble},
      };
      const Part *largest = &parts[0];
      for (const Part &part : parts) {
        largest = part.delta > largest->delta ? &part : largest;
      }
      os << "      beats #" << i + 2 << ": ";
      if (r.globalBatch != next.globalBatch) {
        os << "global batch " << r.globalBatch << " vs " << next.globalBatch << "; ";
      }
      os << (largest->delta > 0
                 ? std::string(largest->name) + " " + seconds(largest->delta) + " less per step"
                 : std::string("fewer steps to train"))
         << "\n";
    }
  }
  return 0;
}

} // namespace mlperf::cli
