//===- StrategySearch.cpp - Predicted steps and the strategy search -*- C++ -*-===//

#include "compiler/Pipelines/StrategySearch.h"

#include "compiler/Analysis/ModelSummary.h"
#include "compiler/Plan/PlanEmit.h"
#include "dialects/Plan/IR/PlanOps.h"
#include "dialects/TG/IR/TGOps.h"

#include "runtime/dist/Mesh.h"

#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <tuple>

#include "llvm/ADT/STLExtras.h"

namespace mlperf {

using namespace mlir;

namespace {

tg::ModelOp modelOf(ModuleOp module) { return *module.getOps<tg::ModelOp>().begin(); }

template <typename Op> Op metadata(tg::ModelOp model) {
  return *model.getBody().front().getOps<Op>().begin();
}

} // namespace

FailureOr<PredictedStep> predictCompiledStep(ModuleOp declaration, const TrainStepOptions &options,
                                             const DeviceMemory *device, const DeviceSpeed &speed,
                                             bool withTimeline, std::string &error,
                                             ConfigurePassManager configure) {
  FailureOr<CompiledStep> compiled =
      device ? compileForDevice(declaration, options, *device, configure)
             : compileStep(declaration, options, configure);
  if (failed(compiled)) {
    error = "the strategy does not compile (errors above)";
    return failure();
  }
  PredictedStep result;
  result.options = compiled->options;
  result.stages = compiled->stages;
  result.peakBytes = compiled->peakBytes();
  for (plan_ir::PlanOp planOp : compiled->module->getOps<plan_ir::PlanOp>()) {
    FailureOr<plan::Plan> plan = emitPlan(planOp);
    if (failed(plan)) {
      error = "could not emit the plan (errors above)";
      return failure();
    }
    result.plans.push_back(std::move(*plan));
  }
  std::vector<const plan::Plan *> stages;
  for (const plan::Plan &plan : result.plans) {
    stages.push_back(&plan);
  }
  rt::Status status = predictStep(stages, speed, result.step, withTimeline);
  if (!status.isOk()) {
    error = status.message();
    return failure();
  }
  return result;
}

std::vector<int64_t> rcpBatchSizes(ModuleOp declaration) {
  auto benchmark = metadata<tg::BenchmarkOp>(modelOf(declaration));
  if (std::optional<ArrayRef<int64_t>> batches = benchmark.getRcpBatchSizes()) {
    return {batches->begin(), batches->end()};
  }
  return {};
}

std::optional<int64_t> rcpMeanSamples(ModuleOp declaration, int64_t gbs) {
  auto benchmark = metadata<tg::BenchmarkOp>(modelOf(declaration));
  std::optional<ArrayRef<int64_t>> batches = benchmark.getRcpBatchSizes();
  std::optional<ArrayRef<int64_t>> samples = benchmark.getRcpMeanSamples();
  if (!batches || !samples) {
    return std::nullopt;
  }
  for (size_t i = 0; i < batches->size() && i < samples->size(); ++i) {
    if ((*batches)[i] == gbs) {
      return (*samples)[i];
    }
  }
  return std::nullopt;
}

OwningOpRef<ModuleOp> resizedDeclaration(ModuleOp declaration, int64_t layers, int64_t gbs) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(declaration->clone()));
  tg::ModelOp model = modelOf(*copy);
  if (layers > 0) {
    model.walk([&](tg::RepeatLayersOp stack) { stack.setCount(layers); });
    for (tg::ParamOp param : model.getBody().front().getOps<tg::ParamOp>()) {
      if (param.getRepeat()) {
        param.setRepeat(layers);
      }
    }
  }
  if (gbs > 0) {
    auto batch = metadata<tg::BatchOp>(model);
    batch.setGlobalBatchSize(gbs);
    auto benchmark = metadata<tg::BenchmarkOp>(model);
    int64_t every = benchmark.getEvalEverySamples();
    benchmark.setEvalEverySamples((every + gbs - 1) / gbs * gbs);
  }
  return copy;
}

namespace {

/// The persistent bytes a rank of `mesh` holds at least: bf16 parameters and gradients and
/// 12 bytes of f32 master weights and moments per parameter (sharded over dp with ZeRO-1),
/// split over tp and pp. Strategies above the device by this alone are not compiled.
double persistentLowerBound(const ModelSummary &summary, const rt::MeshShape &mesh) {
  double split = static_cast<double>(mesh.tp * mesh.pp);
  double trainable = static_cast<double>(summary.trainableParameters) / split;
  double frozen = static_cast<double>(summary.parameters - summary.trainableParameters) / split;
  double optimizer = 12.0 / (mesh.zero >= 1 ? static_cast<double>(mesh.dp) : 1.0);
  // bf16 parameter and gradient plus f32 master and moments; a frozen parameter is its value.
  return trainable * (4.0 + optimizer) + frozen * 2.0;
}

std::string describe(const rt::MeshShape &mesh, const std::string &recompute, int64_t gbs) {
  return "dp=" + std::to_string(mesh.dp) + " tp=" + std::to_string(mesh.tp) +
         " pp=" + std::to_string(mesh.pp) + " vp=" + std::to_string(mesh.vp) +
         " sp=" + (mesh.sequenceParallel ? "on" : "off") + " zero=" + std::to_string(mesh.zero) +
         " recompute=" + recompute + " gbs=" + std::to_string(gbs);
}

/// A candidate compiled at one proxy size.
struct ProxyPoint {
  StageTime critical;
  int64_t peak = 0;
};

/// The line through `one` (at x = 1) and `two` (at x = 2), at `x`; parts never below zero.
StageTime extrapolate(const StageTime &one, const StageTime &two, double x) {
  auto line = [&](double a, double b) { return std::max(0.0, a + (b - a) * (x - 1.0)); };
  StageTime out;
  out.step = line(one.step, two.step);
  out.compute = line(one.compute, two.compute);
  out.recompute = line(one.recompute, two.recompute);
  out.bubble = line(one.bubble, two.bubble);
  out.communication = line(one.communication, two.communication);
  out.flops = line(one.flops, two.flops);
  for (int a = 0; a < 3; ++a) {
    out.exposed[a] = line(one.exposed[a], two.exposed[a]);
  }
  return out;
}

} // namespace

namespace {

struct Candidate {
  rt::MeshShape mesh;
  int64_t gbs = 0;
  double bound = 0; // a lower bound on the ranking metric (seconds to train or per sample)
};

/// The fastest a rank can execute FLOPs: the device's large-GEMM rate (or its fastest
/// calibrated point).
double fastestFlopRate(const DeviceSpeed &speed) {
  double rate =
      std::max(speed.peakBf16 * speed.gemmEfficiency, speed.peakFp8 * speed.fp8GemmEfficiency);
  for (const std::vector<SpeedPoint> *points :
       {&speed.gemmBf16, &speed.gemmF32, &speed.gemmFp8, &speed.attention}) {
    for (const SpeedPoint &point : *points) {
      rate = std::max(rate, point.work / point.seconds);
    }
  }
  return rate;
}

} // namespace

SearchResult searchStrategies(ModuleOp declaration, const SearchOptions &options) {
  auto started = std::chrono::steady_clock::now();
  SearchResult result;
  tg::ModelOp model = modelOf(declaration);
  ModelSummary summary = summarizeModel(model);
  rt::ModelDims dims = parallelDims(model);
  auto batch = metadata<tg::BatchOp>(model);
  int64_t microBatch = batch.getMicroBatchSize();
  std::vector<int64_t> batches = options.globalBatches;
  if (batches.empty()) {
    batches = rcpBatchSizes(declaration);
  }
  if (batches.empty()) {
    batches = {static_cast<int64_t>(batch.getGlobalBatchSize())};
  }
  bool byTrain = llvm::all_of(
      batches, [&](int64_t gbs) { return rcpMeanSamples(declaration, gbs).has_value(); });
  int64_t world = options.nodes * options.gpusPerNode;
  double flopRate = fastestFlopRate(options.speed);
  std::vector<int64_t> tps;
  for (int64_t tp = 1; tp <= options.gpusPerNode && tp <= 8; tp *= 2) {
    if (options.gpusPerNode % tp == 0) {
      tps.push_back(tp);
    }
  }
  // Every strategy the mesh checks and the persistent-state bound allow.
  std::vector<Candidate> candidates;
  for (int64_t gbs : batches) {
    for (int64_t tp : tps) {
      for (int64_t pp = 1; pp * tp <= world; ++pp) {
        if ((world / tp) % pp != 0 || world % tp != 0 || (dims.layers > 0 && pp > dims.layers)) {
          continue;
        }
        for (int64_t vp : {1, 2}) {
          if (vp > 1 && pp == 1) {
            continue;
          }
          for (int64_t zero : {1, 0}) { // ZeRO-1 first: its fit bounds ZeRO-0's
            rt::MeshShape mesh;
            mesh.nodes = options.nodes;
            mesh.gpusPerNode = options.gpusPerNode;
            mesh.tp = tp;
            mesh.pp = pp;
            mesh.vp = vp;
            mesh.dp = world / (tp * pp);
            mesh.zero = zero;
            mesh.sequenceParallel = tp > 1;
            mesh.microBatch = microBatch;
            if (zero == 1 && mesh.dp == 1) {
              continue;
            }
            rt::ModelDims candidateDims = dims;
            candidateDims.globalBatch = gbs;
            if (!rt::validateMesh(mesh, candidateDims, true).isOk()) {
              continue;
            }
            ++result.enumerated;
            if (persistentLowerBound(summary, mesh) >
                static_cast<double>(options.device.capacityBytes)) {
              ++result.tooLarge;
              continue;
            }
            // The step takes at least the rank's share of the model FLOPs at the fastest
            // GEMM rate, stretched by the pipeline's fill and drain (p - 1) / (v m).
            double accumulation = static_cast<double>(gbs / microBatch / mesh.dp);
            double compute = summary.trainFlopsPerToken * static_cast<double>(gbs) *
                             static_cast<double>(summary.seqLen) / static_cast<double>(world) /
                             flopRate;
            double step = compute * (1.0 + static_cast<double>(pp - 1) /
                                               (static_cast<double>(vp) * accumulation));
            Candidate candidate{mesh, gbs, 0};
            std::optional<int64_t> samples = rcpMeanSamples(declaration, gbs);
            candidate.bound =
                byTrain ? std::ceil(static_cast<double>(*samples) / static_cast<double>(gbs)) * step
                        : step / static_cast<double>(gbs);
            candidates.push_back(candidate);
          }
        }
      }
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate &a, const Candidate &b) { return a.bound < b.bound; });
  auto metric = [&](const RankedStrategy &r) {
    return byTrain ? *r.timeToTrainSeconds : r.stepSeconds / static_cast<double>(r.globalBatch);
  };
  // Silence the diagnostics of strategies that do not split this model: they are counted.
  ScopedDiagnosticHandler quiet(declaration.getContext(), [](Diagnostic &) { return success(); });
  std::vector<double> best; // the metrics found so far, ascending
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>, int> levelNeededWithZero1;
  for (const Candidate &candidate : candidates) {
    const rt::MeshShape &checked = candidate.mesh;
    int64_t gbs = candidate.gbs;
    // Branch and bound: once `keep` strategies are ranked, one whose lower bound is worse
    // than the keep-th best cannot enter the list.
    if (options.keep > 0 && best.size() >= options.keep &&
        candidate.bound > best[options.keep - 1]) {
      ++result.pruned;
      continue;
    }
    int64_t chunks = checked.pp * checked.vp;
    // The fullest chunk of an uneven split sets the pace and the peak.
    double chunkLayers =
        dims.layers > 0 ? static_cast<double>((dims.layers + chunks - 1) / chunks) : 1;
    // Proxies of one and two layers per chunk, unless they would not be smaller than the
    // declaration: then the declaration itself, once.
    bool direct = dims.layers <= 0 || 2 * chunks >= dims.layers;
    if (direct) {
      chunkLayers = 1;
    }
    // And proxies of A1 = pp and A2 = 2 pp micro-batches per step (the 1F1B steady state is
    // reached; every further micro-batch adds the same work), unless the step has no more.
    // (A2 = pp + 1 would compile faster but extrapolates the 405B pp=64 step 1% short of its
    // full compile; 2 pp is within 0.01%.)
    int64_t accumulation = gbs / microBatch / checked.dp;
    int64_t a1 = checked.pp, a2 = 2 * checked.pp;
    bool allMicroBatches = accumulation <= a2;
    double microBatchLevel =
        allMicroBatches ? 0.0
                        : static_cast<double>(accumulation - a1) / static_cast<double>(a2 - a1);
    bool placed = false, compiles = true;
    // points[k][j]: k + 1 layers per chunk, micro-batch level j (A1, A2). The peak is the A2
    // proxies' (memory does not grow with micro-batches past the pipeline's window); the A1
    // proxies, compiled first because they are the cheaper (a proxy's compile time grows with
    // its micro-batches), hold at most that much, so a level whose A1 peak does not fit is
    // dropped without compiling its A2 proxies.
    auto peakOf = [&](ProxyPoint(&points)[2][2], int j) {
      return static_cast<double>(points[0][j].peak) +
             static_cast<double>(points[direct ? 0 : 1][j].peak - points[0][j].peak) *
                 (chunkLayers - 1.0);
    };
    double capacity = static_cast<double>(options.device.capacityBytes);
    auto compileAt = [&](const TrainStepOptions &trial, ProxyPoint(&points)[2][2], bool &fits) {
      fits = false;
      for (int j = 0; j < (allMicroBatches ? 1 : 2); ++j) {
        for (int k = 0; k < (direct ? 1 : 2); ++k) {
          int64_t steps = allMicroBatches ? accumulation : (j == 0 ? a1 : a2);
          OwningOpRef<ModuleOp> proxy = resizedDeclaration(
              declaration, direct ? 0 : chunks * (k + 1), steps * microBatch * checked.dp);
          TrainStepOptions compiled = trial;
          compiled.accumulationSteps = steps;
          std::string error;
          FailureOr<PredictedStep> predicted =
              predictCompiledStep(*proxy, compiled, nullptr, options.speed, false, error);
          ++result.compiled;
          if (failed(predicted)) {
            return false;
          }
          points[k][j].critical = predicted->step.stages[predicted->step.criticalStage];
          points[k][j].peak = predicted->peakBytes;
        }
        if (peakOf(points, j) > capacity) {
          return true; // compiles, does not fit (a larger proxy would hold more)
        }
      }
      for (int k = 0; k < 2; ++k) {
        if (allMicroBatches) {
          points[k][1] = points[k][0];
        }
      }
      if (direct) {
        points[1][0] = points[0][0];
        points[1][1] = points[0][1];
      }
      fits = peakOf(points, 1) <= capacity;
      return true;
    };
    // ZeRO-0 holds at least what ZeRO-1 holds: it needs at least the recompute level ZeRO-1
    // needed with the same tp, pp, vp and batch (3: nothing fitted).
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t> shape{gbs, checked.tp, checked.pp,
                                                                  checked.vp, checked.dp};
    int firstLevel = 0;
    if (checked.zero == 0) {
      auto known = levelNeededWithZero1.find(shape);
      firstLevel = known == levelNeededWithZero1.end() ? 0 : known->second;
    }
    int neededLevel = 3;
    static const char *const kPolicies[] = {"none", "selective", "full"};
    for (int level = firstLevel; level < 3; ++level) {
      const char *recompute = kPolicies[level];
      TrainStepOptions trial = options.base;
      trial.mesh = checked;
      trial.recompute = recompute;
      trial.recomputeBudgets.clear();
      trial.accumulationSteps = accumulation;
      ProxyPoint points[2][2];
      bool fits = false;
      if (!compileAt(trial, points, fits)) {
        compiles = false;
        break; // more recompute does not make it compile
      }
      if (!fits) {
        continue; // recompute more
      }
      // Memory does not grow with micro-batches past the pipeline's window: the A2 proxies'.
      double peak = peakOf(points, 1);
      RankedStrategy ranked;
      ranked.description = describe(checked, recompute, gbs);
      ranked.options = trial;
      ranked.globalBatch = gbs;
      // Bilinear in (layers per chunk, micro-batches): along micro-batches, then layers.
      ranked.critical = extrapolate(
          extrapolate(points[0][0].critical, points[0][1].critical, microBatchLevel + 1.0),
          extrapolate(points[1][0].critical, points[1][1].critical, microBatchLevel + 1.0),
          chunkLayers);
      ranked.stepSeconds = ranked.critical.step;
      ranked.samplesPerSecond = static_cast<double>(gbs) / ranked.stepSeconds;
      ranked.peakBytes = static_cast<int64_t>(peak);
      if (std::optional<int64_t> samples = rcpMeanSamples(declaration, gbs)) {
        double steps = std::ceil(static_cast<double>(*samples) / static_cast<double>(gbs));
        ranked.timeToTrainSeconds = steps * ranked.stepSeconds;
      }
      double modelFlops = summary.trainFlopsPerToken * static_cast<double>(gbs) *
                          static_cast<double>(summary.seqLen);
      ranked.mfu =
          modelFlops / (ranked.stepSeconds * static_cast<double>(world) * options.speed.peakBf16);
      neededLevel = level;
      best.insert(std::upper_bound(best.begin(), best.end(), metric(ranked)), metric(ranked));
      result.ranked.push_back(std::move(ranked));
      placed = true;
      break;
    }
    if (checked.zero == 1 && compiles) {
      levelNeededWithZero1[shape] = neededLevel;
    }
    if (!compiles) {
      ++result.notCompiling;
    } else if (!placed) {
      ++result.tooLarge;
    }
    if (options.progress) {
      // What became of it: its ranked description, or the strategy and why not.
      std::string shape = describe(checked, "none", gbs);
      shape = shape.substr(0, shape.find(" recompute="));
      options.progress(placed     ? result.ranked.back().description
                       : compiles ? shape + ": does not fit with any recompute"
                                  : shape + ": does not compile for this model");
    }
  }
  std::stable_sort(
      result.ranked.begin(), result.ranked.end(),
      [&](const RankedStrategy &a, const RankedStrategy &b) { return metric(a) < metric(b); });
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

} // namespace mlperf
