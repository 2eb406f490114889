//===- StrategySearch.cpp - Predicted steps and the strategy search -*- C++ -*-===//

#include "compiler/Pipelines/StrategySearch.h"

#include "compiler/Analysis/ModelSummary.h"
#include "compiler/Plan/PlanEmit.h"
#include "dialects/Plan/IR/PlanOps.h"
#include "dialects/TG/IR/TGOps.h"

#include "runtime/dist/Mesh.h"
#include "runtime/support/NumberFormat.h"

#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
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
  result.peakStage = compiled->peakStage();
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

OwningOpRef<ModuleOp> withGlobalBatch(ModuleOp declaration, int64_t gbs) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(declaration->clone()));
  tg::ModelOp model = modelOf(*copy);
  auto batch = metadata<tg::BatchOp>(model);
  batch.setGlobalBatchSize(gbs);
  auto benchmark = metadata<tg::BenchmarkOp>(model);
  int64_t every = benchmark.getEvalEverySamples();
  benchmark.setEvalEverySamples((every + gbs - 1) / gbs * gbs);
  return copy;
}

namespace {

/// The persistent bytes a rank of `mesh` holds at least: bf16 parameters and gradients and
/// 12 bytes of f32 master weights and moments per parameter (sharded over dp, or hsdp's
/// groups, with ZeRO-1; with ZeRO-2 the accumulated gradients too; with ZeRO-3 the
/// parameters too), split over tp and pp.
/// Strategies above the device by this alone are not compiled.
double persistentLowerBound(const ModelSummary &summary, const rt::MeshShape &mesh) {
  double split = static_cast<double>(mesh.tp * mesh.pp);
  double dp = static_cast<double>(mesh.shardGroupSize());
  double trainable = static_cast<double>(summary.trainableParameters) / split;
  double frozen = static_cast<double>(summary.parameters - summary.trainableParameters) / split;
  double optimizer = 12.0 / (mesh.zero >= 1 ? dp : 1.0);
  double parameter = mesh.zero == 3 ? 2.0 / dp : 2.0;
  double gradient = mesh.zero >= 2 ? 2.0 / dp : 2.0;
  // bf16 parameter and gradient plus f32 master and moments; a frozen parameter is its value.
  return trainable * (parameter + gradient + optimizer) + frozen * parameter;
}

/// "dp=4 tp=8 pp=64 vp=1 sp=on zero=1 recompute=auto gbs=1152": the mesh's strategy (its
/// description without the cluster), the recompute policy and the global batch.
std::string describe(const rt::MeshShape &mesh, const std::string &recompute, int64_t gbs) {
  std::string strategy = mesh.describe();
  return strategy.substr(strategy.find(' ') + 1) + " recompute=" + recompute +
         " gbs=" + std::to_string(gbs);
}

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

std::string gib(double bytes) { return rt::humanBytes(static_cast<uint64_t>(bytes)); }

/// The GEMM and attention seconds of one micro-batch on a rank of tensor-parallel degree tp:
/// per layer, and for the rest of the model (embedding, head, loss). They depend on the
/// shapes alone (tp, sequence parallelism, the micro-batch), so every strategy with this tp
/// spends them on each of its micro-batches, whatever its pipeline, data parallelism, ZeRO
/// level or recompute add.
struct GemmShare {
  double perLayer = 0, rest = 0;
};

/// `declaration` with `layers` layers.
OwningOpRef<ModuleOp> withLayers(ModuleOp declaration, int64_t layers) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(declaration->clone()));
  tg::ModelOp model = modelOf(*copy);
  model.walk([&](tg::RepeatLayersOp stack) { stack.setCount(layers); });
  for (tg::ParamOp param : model.getBody().front().getOps<tg::ParamOp>()) {
    if (param.getRepeat()) {
      param.setRepeat(layers);
    }
  }
  return copy;
}

/// GemmShare from the predicted steps of two proxies (one and two layers, one micro-batch,
/// one rank of a tp group: no pipeline, no data parallelism, nothing recomputed); none when
/// either does not compile.
std::optional<GemmShare> gemmShare(ModuleOp declaration, const TrainStepOptions &base,
                                   const DeviceSpeed &speed, int64_t tp, int64_t microBatch) {
  TrainStepOptions proxy = base;
  proxy.mesh = rt::MeshShape();
  proxy.mesh.gpusPerNode = tp;
  proxy.mesh.tp = tp;
  proxy.mesh.sequenceParallel = tp > 1;
  proxy.mesh.microBatch = microBatch;
  proxy.recompute = "none";
  proxy.recomputeBudgets.clear();
  proxy.accumulationSteps = 1;
  proxy.schedule = false; // overlap moves communication, not GEMMs
  double seconds[2] = {};
  for (int64_t layers : {1, 2}) {
    OwningOpRef<ModuleOp> resized = withLayers(declaration, layers);
    OwningOpRef<ModuleOp> oneMicroBatch = withGlobalBatch(*resized, microBatch);
    std::string error;
    FailureOr<PredictedStep> predicted =
        predictCompiledStep(*oneMicroBatch, proxy, nullptr, speed, false, error);
    if (failed(predicted) || predicted->step.stages.size() != 1) {
      return std::nullopt;
    }
    seconds[layers - 1] = predicted->step.stages.front().gemm;
  }
  GemmShare share;
  share.perLayer = std::max(0.0, seconds[1] - seconds[0]);
  share.rest = std::max(0.0, seconds[0] - share.perLayer);
  return share;
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
  int64_t declaredBatch = batch.getGlobalBatchSize();
  std::vector<int64_t> batches = options.globalBatches;
  if (batches.empty()) {
    batches = rcpBatchSizes(declaration);
  }
  if (batches.empty()) {
    batches = {declaredBatch};
  }
  bool byTrain = llvm::all_of(
      batches, [&](int64_t gbs) { return rcpMeanSamples(declaration, gbs).has_value(); });
  int64_t world = options.nodes * options.gpusPerNode;
  double flopRate = fastestFlopRate(options.speed);
  const std::string &recompute = options.base.recompute;
  auto report = [&](const std::string &description, const std::string &outcome) {
    if (options.progress) {
      options.progress(description, outcome);
    }
  };
  std::vector<int64_t> tps;
  for (int64_t tp = 1; tp <= options.gpusPerNode && tp <= 8; tp *= 2) {
    if (options.gpusPerNode % tp == 0) {
      tps.push_back(tp);
    }
  }
  // Per tp, what its GEMMs and attention cost a micro-batch: the bound below that skips
  // strategies. A proxy that does not compile leaves its tp to the FLOP-rate bound.
  std::map<int64_t, GemmShare> gemmShares;
  if (dims.layers > 0) {
    ScopedDiagnosticHandler quietProxies(declaration.getContext(),
                                         [](Diagnostic &) { return success(); });
    for (int64_t tp : tps) {
      if (std::optional<GemmShare> share =
              gemmShare(declaration, options.base, options.speed, tp, microBatch)) {
        gemmShares[tp] = *share;
      }
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
          // ZeRO-1 before ZeRO-0: its fit bounds ZeRO-0's. ZeRO also sharded inside a node
          // only (hsdp: the node's data-parallel ranks), when a node holds several of them
          // and the cluster more than one node's.
          int64_t nodeRanks = options.gpusPerNode % tp == 0 ? options.gpusPerNode / tp : 0;
          for (auto [zero, hybrid] : {std::pair<int64_t, bool>{1, false},
                                      {1, true},
                                      {2, false},
                                      {2, true},
                                      {3, false},
                                      {3, true},
                                      {0, false}}) {
            int64_t dp = world / (tp * pp), hsdp = hybrid ? nodeRanks : 0;
            if (hybrid && (hsdp < 2 || hsdp >= dp || dp % hsdp != 0)) {
              continue; // no node-local group smaller than dp
            }
            rt::MeshShape mesh;
            mesh.nodes = options.nodes;
            mesh.gpusPerNode = options.gpusPerNode;
            mesh.tp = tp;
            mesh.pp = pp;
            mesh.vp = vp;
            mesh.dp = world / (tp * pp);
            mesh.zero = zero;
            mesh.hsdp = hsdp;
            mesh.sequenceParallel = tp > 1;
            mesh.microBatch = microBatch;
            if (zero > 0 && mesh.dp == 1) {
              continue; // nothing to shard
            }
            if (zero == 2 && gbs / microBatch / mesh.dp == 1) {
              continue; // one micro-batch per rank: ZeRO-2 is ZeRO-1
            }
            rt::ModelDims candidateDims = dims;
            candidateDims.globalBatch = gbs;
            std::string description = describe(mesh, recompute, gbs);
            if (rt::Status valid = rt::validateMesh(mesh, candidateDims, true); !valid.isOk()) {
              result.excluded.push_back({description, valid.message()});
              continue;
            }
            ++result.enumerated;
            double persistent = persistentLowerBound(summary, mesh);
            if (persistent > static_cast<double>(options.device.capacityBytes)) {
              ++result.tooLarge;
              result.excluded.push_back(
                  {description, "does not fit: its parameters, gradients and optimizer state "
                                "alone need at least " +
                                    gib(persistent) + " per rank, the device has " +
                                    gib(static_cast<double>(options.device.capacityBytes))});
              continue;
            }
            // The step takes at least the rank's share of the model FLOPs at the fastest
            // GEMM rate, and at least a stage's average share of the GEMM and attention
            // time of its micro-batches; either stretched by the pipeline's fill and drain
            // (p - 1) / (v m).
            double accumulation = static_cast<double>(gbs / microBatch / mesh.dp);
            double compute = summary.trainFlopsPerToken * static_cast<double>(gbs) *
                             static_cast<double>(summary.seqLen) / static_cast<double>(world) /
                             flopRate;
            if (auto share = gemmShares.find(tp); share != gemmShares.end()) {
              double perMicroBatch =
                  (static_cast<double>(dims.layers) * share->second.perLayer + share->second.rest) /
                  static_cast<double>(pp);
              compute = std::max(compute, accumulation * perMicroBatch);
            }
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
  // The declaration at each searched global batch, as emit-model --set gbs=N writes it for
  // the step (the learning-rate schedule it also adapts does not change the step's work).
  std::map<int64_t, OwningOpRef<ModuleOp>> resized;
  auto declarationAt = [&](int64_t gbs) -> ModuleOp {
    if (gbs == declaredBatch) {
      return declaration;
    }
    OwningOpRef<ModuleOp> &copy = resized[gbs];
    if (!copy) {
      copy = withGlobalBatch(declaration, gbs);
    }
    return *copy;
  };
  // A strategy that does not split this model is counted, with its first error as the reason.
  std::string firstError;
  ScopedDiagnosticHandler quiet(declaration.getContext(), [&](Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == DiagnosticSeverity::Error && firstError.empty()) {
      firstError = diagnostic.str();
    }
    return success();
  });
  std::vector<double> best; // the metrics found so far, ascending
  // Shapes (gbs, tp, pp, vp, dp) whose ZeRO-1 did not fit: ZeRO-0 holds more.
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>> tooLargeWithZero1;
  for (const Candidate &candidate : candidates) {
    const rt::MeshShape &mesh = candidate.mesh;
    int64_t gbs = candidate.gbs;
    std::string description = describe(mesh, recompute, gbs);
    auto exclude = [&](int64_t &counter, std::string reason) {
      ++counter;
      report(description, reason);
      result.excluded.push_back({description, std::move(reason)});
    };
    // Branch and bound: once `keep` strategies are ranked, one whose lower bound is worse
    // than the keep-th best cannot enter the list.
    if (options.keep > 0 && best.size() >= options.keep &&
        candidate.bound > best[options.keep - 1]) {
      exclude(result.pruned,
              "not compiled: even with its GEMMs and attention alone, at no communication, its " +
                  std::string(byTrain ? "time to train" : "time per sample") +
                  " is not below the " + std::to_string(options.keep) + "th best found");
      continue;
    }
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t> shape{gbs, mesh.tp, mesh.pp, mesh.vp,
                                                                  mesh.dp};
    if (mesh.zero == 0 && tooLargeWithZero1.count(shape)) {
      exclude(result.tooLarge, "does not fit: zero=1 of this shape did not, and zero=0 holds "
                               "more (the optimizer state unsharded)");
      continue;
    }
    TrainStepOptions trial = options.base;
    trial.mesh = mesh;
    trial.recomputeBudgets.clear();
    trial.accumulationSteps = gbs / microBatch / mesh.dp;
    std::string error;
    firstError.clear();
    FailureOr<PredictedStep> predicted = predictCompiledStep(
        declarationAt(gbs), trial, &options.device, options.speed, false, error);
    ++result.compiled;
    if (failed(predicted)) {
      exclude(result.notCompiling,
              "does not compile for this model: " + (firstError.empty() ? error : firstError));
      continue;
    }
    if (predicted->peakBytes > options.device.capacityBytes) {
      if (mesh.zero == 1) {
        tooLargeWithZero1.insert(shape);
      }
      exclude(result.tooLarge, "does not fit: peak " +
                                   gib(static_cast<double>(predicted->peakBytes)) + " per rank (" +
                                   (predicted->step.stages.size() > 1
                                        ? "stage " + std::to_string(predicted->peakStage) + ", "
                                        : std::string()) +
                                   "recompute " + recompute + ") > " +
                                   gib(static_cast<double>(options.device.capacityBytes)));
      continue;
    }
    RankedStrategy ranked;
    ranked.description = description;
    ranked.bound = candidate.bound;
    ranked.options = predicted->options;
    ranked.globalBatch = gbs;
    ranked.step = std::move(predicted->step);
    ranked.stepSeconds = ranked.step.stepSeconds;
    ranked.samplesPerSecond = static_cast<double>(gbs) / ranked.stepSeconds;
    ranked.peakBytes = predicted->peakBytes;
    ranked.peakStage = predicted->peakStage;
    if (std::optional<int64_t> samples = rcpMeanSamples(declaration, gbs)) {
      double steps = std::ceil(static_cast<double>(*samples) / static_cast<double>(gbs));
      ranked.timeToTrainSeconds = steps * ranked.stepSeconds;
    }
    double modelFlops =
        summary.trainFlopsPerToken * static_cast<double>(gbs) * static_cast<double>(summary.seqLen);
    ranked.mfu =
        modelFlops / (ranked.stepSeconds * static_cast<double>(world) * options.speed.peakBf16);
    best.insert(std::upper_bound(best.begin(), best.end(), metric(ranked)), metric(ranked));
    report(description, "step " + rt::humanSeconds(ranked.stepSeconds) + ", peak " +
                            gib(static_cast<double>(ranked.peakBytes)));
    result.ranked.push_back(std::move(ranked));
  }
  std::stable_sort(
      result.ranked.begin(), result.ranked.end(),
      [&](const RankedStrategy &a, const RankedStrategy &b) { return metric(a) < metric(b); });
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

} // namespace mlperf
