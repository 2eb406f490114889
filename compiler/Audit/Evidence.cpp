//===- Evidence.cpp - Numeric evidence that passes keep the math --*- C++ -*-===//

#include "compiler/Audit/Evidence.h"
#include "compiler/Support/StepRoles.h"

#include "compiler/Interpreter/ReferenceTrainer.h"
#include "compiler/Pipelines/DeviceFit.h"
#include "compiler/Plan/PlanEmit.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Dist/IR/DistOps.h"
#include "runtime/checkpoint/Safetensors.h"
#include "runtime/dist/InProcessCommunicator.h"
#include "runtime/exec/Backend.h"
#include "runtime/exec/PlanTrainer.h"
#include "runtime/plan/StepRoles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <thread>

using namespace mlir;
using mlperf::rt::HostTensor;

namespace mlperf {
namespace {

constexpr uint64_t kEvidenceSeed = 1234;
constexpr int kEvidenceSteps = 2;
/// The std of stand-ins for parameters a declaration loads from a checkpoint.
constexpr double kCheckpointStandInStd = 0.02;
/// A rank of the in-process mesh that waits this long on another has failed.
constexpr double kRankTimeoutSeconds = 300;

/// A zero tensor of a function argument's type (an element type the runtime has no form for
/// gives f32, which the interpreter then refuses as the wrong argument, naming it).
HostTensor zerosOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  FailureOr<rt::DType> dtype = toDType(tensor.getElementType());
  return HostTensor::zeros(
      succeeded(dtype) ? *dtype : rt::DType::kF32,
      std::vector<int64_t>(tensor.getShape().begin(), tensor.getShape().end()));
}

/// Runs `body` on every rank of `mesh`, each in a thread of its own talking to the others
/// through an in-process mesh; a rank that fails ends the others' waits. The error of the rank
/// that failed first (not of those it stopped), or ok.
rt::Status onEveryRank(const rt::MeshShape &mesh,
                       const std::function<rt::Status(int64_t, rt::Communicator &)> &body) {
  int64_t world = mesh.worldSize();
  std::vector<rt::Status> results(world);
  rt::InProcessMesh ranks(mesh, kRankTimeoutSeconds);
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      results[rank] = body(rank, ranks.communicator(rank));
      if (!results[rank].isOk()) {
        ranks.abort("rank " + std::to_string(rank) + " failed: " + results[rank].message());
      }
    });
  }
  for (std::thread &thread : threads) {
    thread.join();
  }
  for (const rt::Status &status : results) {
    if (!status.isOk() && status.message().find("abandoned") == std::string::npos) {
      return status;
    }
  }
  for (const rt::Status &status : results) {
    if (!status.isOk()) {
      return status;
    }
  }
  return rt::Status::ok();
}

struct Snapshot {
  std::string pass;
  OwningOpRef<ModuleOp> module;
};

/// Keeps a copy of the module before the first pass and after every top-level pass.
class SnapshotInstrumentation : public PassInstrumentation {
public:
  explicit SnapshotInstrumentation(std::vector<Snapshot> &snapshots) : snapshots(snapshots) {}
  void runBeforePass(Pass *, Operation *op) override {
    if (snapshots.empty() && !op->getParentOp()) {
      snapshots.push_back({"input", cast<ModuleOp>(op->clone())});
    }
  }
  void runAfterPass(Pass *pass, Operation *op) override {
    if (!op->getParentOp()) {
      snapshots.push_back({pass->getArgument().str(), cast<ModuleOp>(op->clone())});
    }
  }

private:
  std::vector<Snapshot> &snapshots;
};

/// The global batch every evaluation reads: token ids and labels [global batch, seq].
struct Batch {
  HostTensor tokens, labels;
};

Batch makeBatch(int64_t rows, int64_t seq, int64_t vocab) {
  Batch batch;
  batch.tokens = HostTensor::zeros(rt::DType::kI32, {rows, seq});
  batch.labels = HostTensor::zeros(rt::DType::kI32, {rows, seq});
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int64_t i = 0; i < rows * seq; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    batch.tokens.ints[i] = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(vocab));
  }
  // Next-token labels within each sample, and one drawn past its end.
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < seq; ++t) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      batch.labels.ints[r * seq + t] =
          t + 1 < seq ? batch.tokens.ints[r * seq + t + 1]
                      : static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(vocab));
    }
  }
  return batch;
}

/// This rank's micro-batches of the global batch, `rows` sequences as [rows, seq]: its
/// micro-batch a is micro-batch globalMicroBatch(a) of the global batch (the batch layout the
/// plan or @train_step records).
Batch rankShare(const Batch &batch, const rt::MeshShape &mesh, int64_t rows,
                llvm::function_ref<int64_t(int64_t)> globalMicroBatch) {
  int64_t seq = batch.tokens.shape[1], micro = mesh.microBatch;
  Batch share;
  share.tokens = HostTensor::zeros(rt::DType::kI32, {rows, seq});
  share.labels = HostTensor::zeros(rt::DType::kI32, {rows, seq});
  for (int64_t a = 0; a < rows / micro; ++a) {
    int64_t first = globalMicroBatch(a) * micro * seq;
    std::copy_n(batch.tokens.ints.begin() + first, micro * seq,
                share.tokens.ints.begin() + a * micro * seq);
    std::copy_n(batch.labels.ints.begin() + first, micro * seq,
                share.labels.ints.begin() + a * micro * seq);
  }
  return share;
}

/// What one state of the IR computes, as far as it can be run.
struct Outcome {
  std::string undefined; // why nothing could be computed
  bool hasGradients = false;
  // Why the gradients are not compared though computed: ZeRO-2's backward returns each rank's
  // shard of the sharding group's sum, not a micro-batch's gradient.
  std::string gradientsNotComparable;
  bool differentiatedCopy = false; // the gradients come from tg-autodiff on a copy
  double loss = 0;
  std::map<std::string, HostTensor> grads;
  bool hasSteps = false;
  std::vector<StepMetrics> steps;
  ParamValues params; // after the steps
  bool hasPlanSteps = false;
  std::vector<rt::TrainStepMetrics> planSteps;
};

/// max |a - b| / max |b|, 0 when both are 0; infinity when the shapes differ.
double relativeDifference(const HostTensor &a, const HostTensor &b) {
  if (a.shape != b.shape || a.values.size() != b.values.size()) {
    return std::numeric_limits<double>::infinity();
  }
  double difference = 0, scale = 0;
  for (size_t i = 0; i < a.values.size(); ++i) {
    difference = std::max(difference, std::abs(static_cast<double>(a.values[i]) - b.values[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b.values[i])));
  }
  if (difference == 0) {
    return 0;
  }
  return scale > 0 ? difference / scale : std::numeric_limits<double>::infinity();
}

double relativeDifference(double a, double b) {
  if (a == b) {
    return 0;
  }
  return b != 0 ? std::abs(a - b) / std::abs(b) : std::numeric_limits<double>::infinity();
}

double tensorsDifference(const std::map<std::string, HostTensor> &a,
                         const std::map<std::string, HostTensor> &b) {
  if (a.size() != b.size()) {
    return std::numeric_limits<double>::infinity();
  }
  double worst = 0;
  for (const auto &[name, tensor] : a) {
    auto other = b.find(name);
    if (other == b.end()) {
      return std::numeric_limits<double>::infinity();
    }
    worst = std::max(worst, relativeDifference(tensor, other->second));
  }
  return worst;
}

class Evaluator {
public:
  /// `fullParams`: every parameter of the tiny variant at its full size, by name (the values
  /// every state of the IR starts from; a rank takes its slices).
  Evaluator(const TrainStepOptions &options, const Batch &batch, const rt::TensorFile *weights,
            const ParamValues &fullParams)
      : options(options), batch(batch), weights(weights), fullParams(fullParams) {}

  /// The outcome of `module`'s tg models (and with `runPlan`, of its placed plans). A pass
  /// that leaves the models as they are (clean-ups with nothing to do, the plan passes) reuses
  /// the outcome of the last state with the same models, printed.
  Outcome evaluate(ModuleOp module, bool runPlan) {
    std::string key;
    {
      llvm::raw_string_ostream os(key);
      for (auto model : module.getOps<tg::ModelOp>()) {
        model->print(os, OpPrintingFlags().printGenericOpForm());
      }
    }
    auto cached = cache.find(key);
    Outcome outcome = cached != cache.end() ? cached->second : evaluateModels(module);
    if (cached == cache.end()) {
      cache.emplace(std::move(key), outcome);
    }
    if (runPlan && outcome.undefined.empty()) {
      std::vector<plan::Plan> plans;
      for (auto planOp : module.getOps<plan_ir::PlanOp>()) {
        FailureOr<plan::Plan> plan = emitPlan(planOp);
        if (failed(plan)) {
          outcome.undefined = "the plan cannot be emitted (errors above)";
          return outcome;
        }
        plans.push_back(std::move(*plan));
      }
      rt::Status status = runPlans(plans, options.mesh, batch, weights, outcome.planSteps);
      if (!status.isOk()) {
        module.emitError() << "the plan failed on the CPU backend: " << status.message();
        outcome.undefined = "the plan failed on the CPU backend";
        return outcome;
      }
      outcome.hasPlanSteps = true;
    }
    return outcome;
  }

  Outcome evaluateModels(ModuleOp module) {
    Outcome outcome;
    auto models = llvm::to_vector(module.getOps<tg::ModelOp>());
    if (models.size() > 1) {
      return evaluateStages(module);
    }
    tg::ModelOp model = models.front();
    if (isa_and_nonnull<dist::MeshOp>(SymbolTable::lookupSymbolIn(model, "mesh"))) {
      // Before dist-pipeline the ranks of every stage run the whole model (replicas).
      return evaluateRanks(module, model);
    }
    FailureOr<ParamValues> params =
        initializeParameters(model, kEvidenceSeed, kCheckpointStandInStd);
    if (failed(params)) {
      outcome.undefined = "its parameters cannot be drawn";
      return outcome;
    }
    OwningOpRef<ModuleOp> copy;
    tg::ModelOp differentiatedModel = model;
    FailureOr<func::FuncOp> fb =
        backwardOf(module, differentiatedModel, copy, outcome.differentiatedCopy);
    if (failed(fb) || failed(runMicroBatch(differentiatedModel, *fb, *params, nullptr, outcome))) {
      outcome.undefined = "the interpreter failed (errors above)";
      return outcome;
    }
    auto trainStep =
        dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "train_step"));
    if (trainStep) {
      ReferenceTrainer trainer(model);
      FailureOr<TrainState> initial = trainer.initialState(*params);
      if (failed(initial)) {
        outcome.undefined = "the interpreter failed on @init_optimizer (errors above)";
        return outcome;
      }
      TrainState state = std::move(*initial);
      state.seed = kEvidenceSeed; // the plans' seed: their dropout masks
      for (int step = 0; step < kEvidenceSteps; ++step) {
        FailureOr<StepMetrics> metrics = trainer.step(state, batch.tokens, batch.labels);
        if (failed(metrics)) {
          outcome.undefined = "the interpreter failed on @train_step (errors above)";
          return outcome;
        }
        outcome.steps.push_back(*metrics);
      }
      outcome.params = std::move(state.params);
      outcome.hasSteps = true;
    }
    return outcome;
  }

  /// Every rank of `mesh` runs its stage's plan in a thread of this process.
  /// `weights`: the parameters of a declaration that loads them from a checkpoint (null: the
  /// plan draws them from the seed).
  static rt::Status runPlans(const std::vector<plan::Plan> &plans, const rt::MeshShape &mesh,
                             const Batch &batch, const rt::TensorFile *weights,
                             std::vector<rt::TrainStepMetrics> &metrics) {
    std::vector<std::vector<rt::TrainStepMetrics>> perRank(mesh.worldSize());
    MLPERF_RETURN_IF_ERROR(
        onEveryRank(mesh, [&](int64_t rank, rt::Communicator &communicator) -> rt::Status {
          rt::RankCoordinates at = communicator.coordinates();
          if (at.pp >= static_cast<int64_t>(plans.size())) {
            return rt::Status(rt::StatusCode::kInvalidArgument, "no plan for a pipeline stage");
          }
          const plan::Plan &plan = plans[at.pp];
          std::unique_ptr<rt::Backend> backend = rt::createCpuBackend();
          MLPERF_RETURN_IF_ERROR(backend->prepare(plan, communicator));
          std::unique_ptr<rt::PlanTrainer> trainer;
          MLPERF_RETURN_IF_ERROR(rt::PlanTrainer::create(plan, *backend, communicator, trainer));
          if (weights) {
            MLPERF_RETURN_IF_ERROR(
                trainer->load(rt::TensorFileSource(*weights), /*withOptimizerState=*/false));
          } else {
            MLPERF_RETURN_IF_ERROR(trainer->initialize(kEvidenceSeed));
          }
          Batch share =
              rankShare(batch, mesh, trainer->accumulationSteps() * trainer->microBatchRows(),
                        [&](int64_t a) { return trainer->globalMicroBatch(a, at.dp); });
          for (int step = 0; step < kEvidenceSteps; ++step) {
            rt::TrainStepMetrics taken;
            MLPERF_RETURN_IF_ERROR(trainer->step(share.tokens.ints, share.labels.ints, taken));
            perRank[rank].push_back(taken);
          }
          return rt::Status::ok();
        }));
    metrics = perRank[0];
    return rt::Status::ok();
  }

private:
  /// The @forward_backward of `model`, or of a copy of `module` differentiated with
  /// tg-autodiff (kept in `copy`) when it has no backward yet.
  FailureOr<func::FuncOp> backwardOf(ModuleOp module, tg::ModelOp &model,
                                     OwningOpRef<ModuleOp> &copy, bool &differentiated) {
    auto fb =
        dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward_backward"));
    differentiated = false;
    if (fb) {
      return fb;
    }
    copy = cast<ModuleOp>(module->clone());
    PassManager pm(module.getContext());
    pm.enableVerifier(false);
    bool stacked = false;
    copy->walk([&](tg::RepeatLayersOp) { stacked = true; });
    if (stacked) {
      pm.addPass(createTGInlineLayersPass());
    }
    pm.addPass(createTGAutodiffPass(TGAutodiffPassOptions{
        1.0 / static_cast<double>(options.accumulationSteps * options.mesh.dp)}));
    if (failed(pm.run(*copy))) {
      return failure();
    }
    model = *copy->getOps<tg::ModelOp>().begin();
    differentiated = true;
    return cast<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward_backward"));
  }

  /// Loss and gradients (this rank's) of micro-batch 0 through `fb`.
  LogicalResult runMicroBatch(tg::ModelOp model, func::FuncOp fb, const ParamValues &params,
                              rt::Communicator *communicator, Outcome &outcome) const {
    FunctionType type = fb.getFunctionType();
    int64_t rows = cast<RankedTensorType>(type.getInput(0)).getDimSize(0);
    int64_t seq = batch.tokens.shape[1];
    std::vector<HostTensor> args;
    for (unsigned i = 0; i < type.getNumInputs(); ++i) {
      auto input = cast<RankedTensorType>(type.getInput(i));
      FailureOr<rt::DType> dtype = toDType(input.getElementType());
      if (failed(dtype)) {
        return fb.emitError() << "argument " << i << " has no runtime type";
      }
      HostTensor arg = HostTensor::zeros(
          *dtype, std::vector<int64_t>(input.getShape().begin(), input.getShape().end()));
      std::optional<StepRole> role = argRole(fb, i);
      if (role && role->role == rt::role::kDropoutKey) {
        arg.ints = {static_cast<int64_t>(kEvidenceSeed), 0}; // micro-batch 0 of the run
      } else if (i < 2) { // the micro-batch's tokens, then its labels: rows 0..rows-1
        const HostTensor &source = i == 0 ? batch.tokens : batch.labels;
        std::copy(source.ints.begin(), source.ints.begin() + rows * seq, arg.ints.begin());
      }
      args.push_back(std::move(arg));
    }
    TGInterpreter interpreter(model, params, communicator);
    // Before tg-train-step the dropouts have no key: the one tg-train-step gives micro-batch 0
    // of step 0, so that every snapshot draws the same masks.
    interpreter.setKeylessDropoutKey(kEvidenceSeed, 0);
    FailureOr<std::vector<HostTensor>> results = interpreter.call(fb, std::move(args));
    if (failed(results)) {
      return failure();
    }
    auto names = fb->getAttrOfType<ArrayAttr>("tg.gradients");
    outcome.loss = (*results)[0].values.at(0);
    for (size_t i = 1; i < results->size(); ++i) {
      std::string name;
      if (names && i - 1 < names.size()) {
        if (auto ref = dyn_cast<FlatSymbolRefAttr>(names[i - 1])) {
          name = ref.getValue().str();
        }
      }
      if (auto param = fb.getResultAttrOfType<FlatSymbolRefAttr>(i, "tg.param")) {
        name = param.getValue().str();
      }
      outcome.grads[name.empty() ? "result " + std::to_string(i) : name] = std::move((*results)[i]);
    }
    outcome.hasGradients = true;
    return success();
  }

  /// The full tensor of `name` from every tensor-parallel rank's value (the ranks of data-
  /// parallel index 0): the slices of a split parameter put back, the partial sums of a
  /// sequence-parallel one added, any other taken from the first rank.
  FailureOr<HostTensor> assemble(tg::ModelOp model, const std::string &name,
                                 const std::vector<const HostTensor *> &tpValues, bool partial) {
    auto param = dyn_cast_or_null<tg::ParamOp>(
        SymbolTable::lookupSymbolIn(model, StringAttr::get(model.getContext(), name)));
    auto full = fullParams.find(name);
    if (!param || full == fullParams.end()) {
      return model.emitError() << "no parameter '" << name << "' to assemble";
    }
    FailureOr<dist::ParameterSplit> split = dist::parameterSplit(param, "audit");
    if (failed(split)) {
      return failure();
    }
    HostTensor out = HostTensor::zeros(full->second.dtype, full->second.shape);
    // Every part must be its share of the full tensor (a rank's value of another size, a
    // shard of something else, cannot be put back).
    int64_t parts = split->axis ? static_cast<int64_t>(tpValues.size()) : 1;
    for (const HostTensor *value : tpValues) {
      if (value->numElements() * parts != out.numElements()) {
        return model.emitError() << "'" << name << "': a rank holds " << value->numElements()
                                 << " elements, not 1/" << parts << " of its " << out.numElements();
      }
    }
    if (split->axis) {
      std::vector<int64_t> blocks;
      if (split->blocks) {
        blocks.assign(split->blocks.asArrayRef().begin(), split->blocks.asArrayRef().end());
      }
      for (size_t part = 0; part < tpValues.size(); ++part) {
        const HostTensor &local = *tpValues[part];
        for (int64_t i = 0; i < local.numElements(); ++i) {
          out.values[rt::fullIndexOfPart(local.shape, split->dim, split->count, part, i, blocks)] =
              local.values[i];
        }
      }
      return out;
    }
    if (partial && param->hasAttr("dist.sequence_parallel")) {
      for (int64_t i = 0; i < out.numElements(); ++i) {
        double sum = 0;
        for (const HostTensor *value : tpValues) {
          sum += value->values[i];
        }
        out.values[i] = static_cast<float>(sum);
      }
      return out;
    }
    return *tpValues.front();
  }

  /// onEveryRank on the evidence mesh for interpreter work, whose errors are diagnostics:
  /// empty when every rank succeeded, else which one failed.
  std::string interpretOnEveryRank(
      const std::function<LogicalResult(int64_t, rt::Communicator &)> &body) const {
    rt::Status status =
        onEveryRank(options.mesh, [&](int64_t rank, rt::Communicator &communicator) {
          return succeeded(body(rank, communicator))
                     ? rt::Status::ok()
                     : rt::Status(rt::StatusCode::kInternal,
                                  "rank " + std::to_string(rank) + " failed");
        });
    return status.isOk() ? std::string() : status.message();
  }

  /// One rank's optimizer steps of `stepModel`'s @train_step on its share of the batch, from
  /// its slices of the parameters and @init_optimizer's state.
  LogicalResult rankSteps(tg::ModelOp stepModel, const rt::RankCoordinates &at,
                          rt::Communicator &communicator, Outcome &rankOutcome) const {
    FailureOr<ParamValues> params = rankParameters(stepModel, fullParams, at);
    if (failed(params)) {
      return failure();
    }
    ReferenceTrainer trainer(stepModel, &communicator);
    FailureOr<TrainState> state = trainer.initialState(std::move(*params));
    if (failed(state)) {
      return failure();
    }
    state->seed = kEvidenceSeed; // the plans' seed: their dropout masks
    auto step = cast<func::FuncOp>(SymbolTable::lookupSymbolIn(stepModel, "train_step"));
    ArrayRef<int64_t> shape = cast<RankedTensorType>(step.getArgumentTypes()[0]).getShape();
    auto layout = step->getAttrOfType<DenseI64ArrayAttr>(kBatchLayoutAttr);
    if (!layout || layout.size() != shape[0] * options.mesh.dp) {
      return step.emitError() << "@train_step has no batch layout (" << kBatchLayoutAttr
                              << ") for its " << shape[0] << " micro-batches on " << options.mesh.dp
                              << " data-parallel ranks";
    }
    Batch share = rankShare(batch, options.mesh, shape[0] * shape[1],
                            [&](int64_t a) { return layout[a * options.mesh.dp + at.dp]; });
    for (int s = 0; s < kEvidenceSteps; ++s) {
      FailureOr<StepMetrics> metrics = trainer.step(*state, share.tokens, share.labels);
      if (failed(metrics)) {
        return failure();
      }
      rankOutcome.steps.push_back(*metrics);
    }
    rankOutcome.params = std::move(state->params);
    return success();
  }

  /// Puts pipeline stage `stage`'s results back together from its tensor-parallel ranks of
  /// data-parallel index 0: the gradients (parameters declared by `gradModel`) and, with
  /// `stepping`, the updated parameters (declared by `stepModel`). False, with the reason in
  /// `outcome.undefined`, when a tensor cannot be.
  bool assembleStage(int64_t stage, tg::ModelOp gradModel, tg::ModelOp stepModel, bool stepping,
                     std::vector<Outcome> &ranks, Outcome &outcome) {
    const rt::MeshShape &mesh = options.mesh;
    auto tpRank = [&](int64_t t) { return rt::rankAt(mesh, {0, t, stage}); };
    auto gather = [&](tg::ModelOp model, std::map<std::string, HostTensor> Outcome::*field,
                      bool partial, const char *what) {
      for (const auto &entry : ranks[tpRank(0)].*field) {
        std::vector<const HostTensor *> tpValues;
        // A ZeRO-3 parameter: each tp rank's local tensor from its sharding group's shards.
        std::vector<HostTensor> unsharded;
        auto param = dyn_cast_or_null<tg::ParamOp>(
            SymbolTable::lookupSymbolIn(model, StringAttr::get(model.getContext(), entry.first)));
        bool zeroSharded =
            field == &Outcome::params && param && param->hasAttr(dist::kZeroShardAttr);
        for (int64_t t = 0; t < mesh.tp && zeroSharded; ++t) {
          HostTensor local = zerosOf(param.getUnshardedType());
          int64_t size = entry.second.numElements(), offset = 0;
          // The first sharding group's ranks (dp, or with hsdp the first hsdp of them).
          for (int64_t d = 0; d < mesh.shardGroupSize(); ++d) {
            const HostTensor &shard = (ranks[rt::rankAt(mesh, {d, t, stage})].*field)[entry.first];
            if (shard.numElements() != size || offset + size > local.numElements()) {
              outcome.undefined = "the ranks' shards of '" + entry.first + "' do not make it up";
              return false;
            }
            std::copy_n(shard.values.begin(), size, local.values.begin() + offset);
            offset += size;
          }
          if (offset != local.numElements()) {
            outcome.undefined = "the ranks' shards of '" + entry.first + "' do not make it up";
            return false;
          }
          unsharded.push_back(std::move(local));
        }
        for (int64_t t = 0; t < mesh.tp; ++t) {
          tpValues.push_back(zeroSharded ? &unsharded[t] : &(ranks[tpRank(t)].*field)[entry.first]);
        }
        FailureOr<HostTensor> full = assemble(model, entry.first, tpValues, partial);
        if (failed(full)) {
          outcome.undefined = std::string("the ranks' ") + what + " cannot be put together";
          return false;
        }
        (outcome.*field)[entry.first] = std::move(*full);
      }
      return true;
    };
    // ZeRO-2: the backward's gradients are shards of the group's sum (the steps still compare).
    for (const auto &entry : ranks[tpRank(0)].grads) {
      auto param = dyn_cast_or_null<tg::ParamOp>(SymbolTable::lookupSymbolIn(
          gradModel, StringAttr::get(gradModel.getContext(), entry.first)));
      if (param && entry.second.numElements() != param.getUnshardedType().getNumElements()) {
        outcome.gradientsNotComparable = "the backward returns ZeRO-2 shards of the ranks' sums";
      }
    }
    return (!outcome.gradientsNotComparable.empty() ||
            gather(gradModel, &Outcome::grads, /*partial=*/true, "gradients")) &&
           (!stepping || gather(stepModel, &Outcome::params, /*partial=*/false, "parameters"));
  }

  /// One micro-batch through pipeline stages (one model per stage, one model chunk each):
  /// each rank runs its stage's forward on what the previous stage sends it, the last stage
  /// its backward from the loss, the others theirs from the gradient the next stage sends
  /// back (through the ranks' communicator, as the step's transfers do); with @train_step, each
  /// rank's steps. Gradients and parameters are put back together over stages and tp.
  Outcome evaluateStages(ModuleOp module) {
    Outcome outcome;
    const rt::MeshShape &mesh = options.mesh;
    if (mesh.vp > 1) {
      outcome.undefined = "interleaved pipeline stages";
      return outcome;
    }
    // Differentiate a copy first, single-threaded, when the stages have no backward yet.
    OwningOpRef<ModuleOp> copy;
    ModuleOp differentiated = module;
    auto first = *module.getOps<tg::ModelOp>().begin();
    if (!SymbolTable::lookupSymbolIn(first, "forward_backward") &&
        !SymbolTable::lookupSymbolIn(first, "backward_from_stash")) {
      tg::ModelOp model = first;
      if (failed(backwardOf(module, model, copy, outcome.differentiatedCopy))) {
        outcome.undefined = "the stages cannot be differentiated (errors above)";
        return outcome;
      }
      differentiated = *copy;
    }
    auto stages = llvm::to_vector(differentiated.getOps<tg::ModelOp>());
    auto stepModels = llvm::to_vector(module.getOps<tg::ModelOp>());
    if (static_cast<int64_t>(stages.size()) != mesh.pp) {
      outcome.undefined = "a model per stage that the mesh does not have";
      return outcome;
    }
    bool stepping = SymbolTable::lookupSymbolIn(stepModels.front(), "train_step") != nullptr;
    int64_t last = mesh.pp - 1;
    std::vector<Outcome> ranks(mesh.worldSize());
    std::string failedRank = interpretOnEveryRank([&](int64_t rank,
                                                      rt::Communicator &communicator) {
      rt::RankCoordinates at = communicator.coordinates();
      tg::ModelOp model = stages[at.pp];
      FailureOr<ParamValues> params = rankParameters(model, fullParams, at);
      if (failed(params)) {
        return LogicalResult(failure());
      }
      TGInterpreter interpreter(model, *params, &communicator);
      auto lookup = [&](StringRef name) {
        return dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, name));
      };
      func::FuncOp forward = lookup("forward"), fb = lookup("forward_backward"),
                   fas = lookup("forward_and_stash"), bfs = lookup("backward_from_stash");
      // The given leading arguments of `func`, the rest (gradient accumulators) zero.
      auto withZeros = [](func::FuncOp func, std::vector<HostTensor> args) {
        for (unsigned i = args.size(); i < func.getNumArguments(); ++i) {
          args.push_back(zerosOf(func.getArgumentTypes()[i]));
        }
        return args;
      };
      auto idsOf = [](const HostTensor &source, Type type) {
        HostTensor out = zerosOf(type);
        std::copy_n(source.ints.begin(), out.numElements(), out.ints.begin());
        return out;
      };
      auto status = [&](rt::Status result) -> LogicalResult {
        if (!result.isOk()) {
          return model.emitError() << result.message();
        }
        return success();
      };
      // The stage's input: the tokens, or the previous stage's activation.
      HostTensor input;
      if (at.pp == 0) {
        input = idsOf(batch.tokens, forward.getArgumentTypes()[0]);
      } else {
        input = zerosOf(forward.getArgumentTypes()[0]);
        if (failed(status(communicator.receive(rt::MeshAxis::kPP, -1, 16, input.values)))) {
          return LogicalResult(failure());
        }
      }
      func::FuncOp backward;
      std::vector<HostTensor> results;
      size_t leading = 1; // the loss, or the output activation, before the gradients
      if (at.pp == last) {
        std::vector<HostTensor> args{input, idsOf(batch.labels, fb.getArgumentTypes()[1])};
        FailureOr<std::vector<HostTensor>> out = interpreter.call(fb, withZeros(fb, args));
        if (failed(out)) {
          return LogicalResult(failure());
        }
        results = std::move(*out);
        backward = fb;
        ranks[rank].loss = results[0].values.at(0);
      } else {
        FailureOr<std::vector<HostTensor>> forwardOut =
            interpreter.call(fas ? fas : forward, {input});
        if (failed(forwardOut)) {
          return LogicalResult(failure());
        }
        HostTensor output = (*forwardOut)[0];
        if (failed(status(communicator.send(rt::MeshAxis::kPP, 1, 16, output.values)))) {
          return LogicalResult(failure());
        }
        HostTensor cotangent = output;
        if (failed(status(communicator.receive(rt::MeshAxis::kPP, 1, 17, cotangent.values)))) {
          return LogicalResult(failure());
        }
        std::vector<HostTensor> args{input};
        if (bfs) { // the stash the forward kept, then the cotangent
          args.insert(args.end(), forwardOut->begin() + 1, forwardOut->end());
          backward = bfs;
          leading = 0;
        } else {
          backward = fb;
        }
        args.push_back(cotangent);
        FailureOr<std::vector<HostTensor>> out =
            interpreter.call(backward, withZeros(backward, args));
        if (failed(out)) {
          return LogicalResult(failure());
        }
        results = std::move(*out);
      }
      auto names = backward->getAttrOfType<ArrayAttr>("tg.gradients");
      size_t count = names ? names.size() : 0;
      if (results.size() < leading + count) {
        return LogicalResult(backward.emitError() << "fewer results than gradients");
      }
      for (size_t i = 0; i < count; ++i) {
        ranks[rank].grads[cast<FlatSymbolRefAttr>(names[i]).getValue().str()] =
            results[leading + i];
      }
      if (at.pp > 0) { // the input's gradient, back to the previous stage
        if (failed(status(communicator.send(rt::MeshAxis::kPP, -1, 17, results.back().values)))) {
          return LogicalResult(failure());
        }
      }
      return stepping ? rankSteps(stepModels[at.pp], at, communicator, ranks[rank]) : success();
    });
    if (!failedRank.empty()) {
      outcome.undefined = "the per-rank interpreter failed: " + failedRank + " (errors above)";
      return outcome;
    }
    for (int64_t stage = 0; stage < mesh.pp; ++stage) {
      if (!assembleStage(stage, stages[stage], stepModels[stage], stepping, ranks, outcome)) {
        return outcome;
      }
    }
    outcome.loss = ranks[rt::rankAt(mesh, {0, 0, last})].loss;
    outcome.hasGradients = outcome.gradientsNotComparable.empty();
    if (stepping) {
      outcome.steps = ranks[0].steps; // the first stage has the losses the last sends it
      outcome.hasSteps = true;
    }
    return outcome;
  }

  /// A per-rank model of a mesh without pipeline stages (or before dist-pipeline, the stages'
  /// ranks as replicas): every rank in a thread of this process, its slice of the parameters,
  /// micro-batch 0 on every rank for the gradients and each rank's share of the batch for the
  /// steps; results put back together.
  Outcome evaluateRanks(ModuleOp module, tg::ModelOp model) {
    Outcome outcome;
    OwningOpRef<ModuleOp> copy;
    tg::ModelOp differentiatedModel = model;
    FailureOr<func::FuncOp> fb =
        backwardOf(module, differentiatedModel, copy, outcome.differentiatedCopy);
    if (failed(fb)) {
      outcome.undefined = "the per-rank program cannot be differentiated (errors above)";
      return outcome;
    }
    bool stepping = SymbolTable::lookupSymbolIn(model, "train_step") != nullptr;
    std::vector<Outcome> ranks(options.mesh.worldSize());
    std::string failedRank =
        interpretOnEveryRank([&](int64_t rank, rt::Communicator &communicator) {
          rt::RankCoordinates at = communicator.coordinates();
          FailureOr<ParamValues> params = rankParameters(differentiatedModel, fullParams, at);
          if (failed(params) || failed(runMicroBatch(differentiatedModel, *fb, *params,
                                                     &communicator, ranks[rank]))) {
            return LogicalResult(failure());
          }
          return stepping ? rankSteps(model, at, communicator, ranks[rank]) : success();
        });
    if (!failedRank.empty()) {
      outcome.undefined = "the per-rank interpreter failed: " + failedRank + " (errors above)";
      return outcome;
    }
    if (!assembleStage(0, differentiatedModel, model, stepping, ranks, outcome)) {
      return outcome;
    }
    outcome.loss = ranks[0].loss;
    outcome.hasGradients = outcome.gradientsNotComparable.empty();
    if (stepping) {
      outcome.steps = ranks[0].steps;
      outcome.hasSteps = true;
    }
    return outcome;
  }

  const TrainStepOptions &options;
  const Batch &batch;
  const rt::TensorFile *weights;
  const ParamValues &fullParams;
  std::map<std::string, Outcome> cache; // by the printed models
};

double stepsDifference(const std::vector<StepMetrics> &a, const std::vector<StepMetrics> &b) {
  if (a.size() != b.size()) {
    return std::numeric_limits<double>::infinity();
  }
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max({worst, relativeDifference(a[i].loss, b[i].loss),
                      relativeDifference(a[i].lr, b[i].lr),
                      relativeDifference(a[i].gradNorm, b[i].gradNorm)});
  }
  return worst;
}

double planDifference(const std::vector<rt::TrainStepMetrics> &plan,
                      const std::vector<StepMetrics> &reference) {
  if (plan.size() != reference.size()) {
    return std::numeric_limits<double>::infinity();
  }
  double worst = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    worst = std::max({worst, relativeDifference(plan[i].loss, reference[i].loss),
                      relativeDifference(plan[i].lr, reference[i].lr),
                      relativeDifference(plan[i].gradNorm, reference[i].gradNorm)});
  }
  return worst;
}

int64_t tinyLayers(ModuleOp module) {
  int64_t layers = 0;
  for (auto model : module.getOps<tg::ModelOp>()) {
    for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
      layers = std::max(layers, param.getCopies());
    }
  }
  return layers;
}

} // namespace

double evidenceTolerance(RewriteClass rewriteClass, llvm::StringRef precision) {
  bool fp32 = precision == "fp32";
  switch (rewriteClass) {
  case RewriteClass::kExact:
  case RewriteClass::kAnalysis:
    return 0.0;
  case RewriteClass::kReassociation:
    // Another summation order moves f32 results by a few ulps, and each bf16 gradient by a
    // few roundings of its own size (measured on the tiny variant over every tested strategy:
    // at most 7.3e-7 in f32 and 1.5e-2 in bf16; docs/compliance.md).
    return fp32 ? 1e-5 : 5e-2;
  case RewriteClass::kPrecision:
    // bf16 against f32 compute: bf16 has 8 significant bits (2^-8 = 3.9e-3 per rounding).
    return 5e-2;
  }
  return 0.0;
}

rt::MeshShape reducedMesh(const rt::MeshShape &mesh, int64_t layers) {
  rt::MeshShape reduced = mesh;
  reduced.tp = std::min<int64_t>(mesh.tp, 2);
  reduced.pp = std::min<int64_t>(mesh.pp, std::min<int64_t>(2, std::max<int64_t>(1, layers)));
  reduced.vp = reduced.pp > 1 ? std::max<int64_t>(1, std::min(mesh.vp, layers / reduced.pp)) : 1;
  reduced.dp = std::min<int64_t>(mesh.dp, 2);
  if (mesh.hsdp > 0) {
    // Hybrid sharding on two groups of two: both of its axes have more than one rank.
    reduced.dp = 4;
    reduced.hsdp = 2;
  }
  reduced.sequenceParallel = mesh.sequenceParallel && reduced.tp > 1;
  reduced.nodes = 1;
  reduced.gpusPerNode = reduced.dp * reduced.tp * reduced.pp;
  return reduced;
}

FailureOr<EvidenceReport> gatherEvidence(ModuleOp tiny, const TrainStepOptions &options) {
  auto model = *tiny.getOps<tg::ModelOp>().begin();
  auto batchOp = *model.getBody().front().getOps<tg::BatchOp>().begin();
  int64_t globalBatch = batchOp.getGlobalBatchSizeAttr().getInt();
  int64_t microBatch = batchOp.getMicroBatchSizeAttr().getInt();
  int64_t seq = batchOp.getSeqLenAttr().getInt();
  int64_t vocab = 0;
  model.walk([&](tg::EmbeddingOp embedding) {
    vocab = cast<RankedTensorType>(embedding.getOperand(0).getType()).getDimSize(0);
  });
  if (vocab <= 0) {
    return model.emitError() << "the audit's evidence needs a token embedding to size its batch";
  }
  Batch batch = makeBatch(globalBatch, seq, vocab);

  // The passes one by one: on one rank, or for a multi-rank strategy on the reduced mesh
  // without pipeline stages (tp, sp, dp, zero as given), whose every state the interpreter
  // runs rank by rank. The same pipeline as the audited compile's, pass for pass.
  TrainStepOptions single = options;
  single.mesh = rt::MeshShape();
  if (options.mesh.worldSize() > 1) {
    // With pipeline stages when they hold one model chunk each (the interpreter runs one
    // micro-batch through them); an interleaved pipeline is evidenced without its stages.
    rt::MeshShape reduced = reducedMesh(options.mesh, tinyLayers(tiny));
    if (reduced.vp > 1) {
      reduced.pp = reduced.vp = 1;
      reduced.gpusPerNode = reduced.dp * reduced.tp;
    }
    if (reduced.worldSize() > 1) {
      single.mesh = reduced;
    }
  }
  single.mesh.microBatch = options.mesh.microBatch;
  single.accumulationSteps = globalBatch / microBatch / single.mesh.dp;
  if (single.recompute == "auto") {
    single.recompute = "full"; // auto fits a device; the tiny variant recomputes the most
  }
  single.recomputeBudgets.clear();
  std::vector<Snapshot> snapshots;
  FailureOr<CompiledStep> compiled = compileStep(tiny, single, [&](PassManager &pm) {
    pm.addInstrumentation(std::make_unique<SnapshotInstrumentation>(snapshots));
    return success();
  });
  if (failed(compiled)) {
    return failure();
  }
  EvidenceReport report;
  report.passMesh = single.mesh.worldSize() > 1 ? single.mesh.describe() : std::string();
  report.passesOnStages = single.mesh.pp > 1;
  report.tinyModel = "@" + model.getSymName().str();
  report.configuration = llvm::formatv("precision {0}, {1} micro-batches of {2} x {3} tokens, "
                                       "seed {4}, {5} steps",
                                       options.precision, single.accumulationSteps, microBatch, seq,
                                       kEvidenceSeed, kEvidenceSteps)
                             .str();
  // A declaration loaded from a checkpoint runs on stand-ins drawn as the interpreter draws
  // them, given to the plans as --init-from weights.
  // Every state after tg-set-precision starts from these values, in the compiled precision.
  tg::ModelOp compiledModel = model;
  for (Snapshot &snapshot : snapshots) {
    if (snapshot.pass == "tg-set-precision") {
      compiledModel = *snapshot.module->getOps<tg::ModelOp>().begin();
    }
  }
  FailureOr<ParamValues> fullParams =
      initializeParameters(compiledModel, kEvidenceSeed, kCheckpointStandInStd);
  if (failed(fullParams)) {
    return failure();
  }
  std::optional<rt::TensorFile> weights;
  bool fromCheckpoint = false;
  for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
    fromCheckpoint |= param.getInit() == "checkpoint";
  }
  if (fromCheckpoint) {
    weights.emplace();
    weights->tensors = *fullParams;
  }
  const rt::TensorFile *standIns = weights ? &*weights : nullptr;
  Evaluator evaluator(single, batch, standIns, *fullParams);
  std::vector<Outcome> outcomes;
  for (size_t i = 0; i < snapshots.size(); ++i) {
    outcomes.push_back(
        evaluator.evaluate(*snapshots[i].module, snapshots[i].pass == "plan-memory"));
  }
  for (size_t i = 1; i < snapshots.size(); ++i) {
    PassEvidence evidence;
    evidence.pass = snapshots[i].pass;
    const PassClassDeclaration *declared = findRewriteClass(evidence.pass);
    evidence.rewriteClass = declared ? declared->rewriteClass : RewriteClass::kExact;
    evidence.tolerance = evidenceTolerance(evidence.rewriteClass, options.precision);
    const Outcome &before = outcomes[i - 1], &after = outcomes[i];
    std::vector<std::string> compared;
    if (before.hasGradients && after.hasGradients) {
      evidence.computed = true;
      evidence.difference = std::max(relativeDifference(after.loss, before.loss),
                                     tensorsDifference(after.grads, before.grads));
      compared.push_back(
          llvm::formatv("loss and {0} gradients of micro-batch 0{1}", after.grads.size(),
                        before.differentiatedCopy
                            ? (after.differentiatedCopy ? " (both differentiated on a copy)"
                                                        : " (before: differentiated on a copy)")
                            : "")
              .str());
    }
    if (before.hasGradients && !after.gradientsNotComparable.empty()) {
      compared.push_back("not the gradients: " + after.gradientsNotComparable);
    }
    if (before.hasSteps && after.hasSteps) {
      evidence.computed = true;
      evidence.difference =
          std::max({evidence.difference, stepsDifference(after.steps, before.steps),
                    tensorsDifference(after.params, before.params)});
      compared.push_back(llvm::formatv("{0} optimizer steps (losses, LR, gradient norm, updated "
                                       "parameters)",
                                       kEvidenceSteps)
                             .str());
    }
    if (after.hasPlanSteps && before.hasSteps) {
      evidence.computed = true;
      evidence.difference =
          std::max(evidence.difference, planDifference(after.planSteps, before.steps));
      compared.push_back(llvm::formatv("the placed plan run on the CPU backend against the "
                                       "interpreter's @train_step, {0} steps (losses, LR, "
                                       "gradient norm)",
                                       kEvidenceSteps)
                             .str());
    }
    evidence.what = llvm::join(compared, "; ");
    if (!evidence.computed) {
      evidence.notComputed = !after.undefined.empty()    ? after.undefined
                             : !before.undefined.empty() ? before.undefined
                                                         : "nothing both sides compute";
    }
    report.passes.push_back(std::move(evidence));
  }

  // The distributed passes together: every rank of the reduced mesh against one rank.
  if (options.mesh.worldSize() > 1) {
    TrainStepOptions distributed = options;
    distributed.mesh = reducedMesh(options.mesh, tinyLayers(tiny));
    distributed.accumulationSteps = globalBatch / microBatch / distributed.mesh.dp;
    distributed.recompute = single.recompute;
    distributed.recomputeBudgets.clear();
    report.distributedMesh = distributed.mesh.describe();
    FailureOr<CompiledStep> step = compileStep(tiny, distributed);
    if (failed(step)) {
      return failure();
    }
    std::vector<plan::Plan> plans;
    for (auto planOp : step->module->getOps<plan_ir::PlanOp>()) {
      FailureOr<plan::Plan> plan = emitPlan(planOp);
      if (failed(plan)) {
        return failure();
      }
      plans.push_back(std::move(*plan));
    }
    PassEvidence evidence;
    evidence.pass = "distributed";
    evidence.rewriteClass = RewriteClass::kReassociation;
    evidence.tolerance = evidenceTolerance(RewriteClass::kReassociation, options.precision);
    std::vector<rt::TrainStepMetrics> metrics;
    rt::Status status = Evaluator::runPlans(plans, distributed.mesh, batch, standIns, metrics);
    if (!status.isOk()) {
      return tiny.emitError() << "the distributed evidence failed on " << report.distributedMesh
                              << ": " << status.message();
    }
    // Against one rank: the steps of the single-rank compile on the interpreter.
    Outcome singleRank = outcomes.back();
    if (single.mesh.worldSize() > 1) {
      TrainStepOptions oneRank = single;
      oneRank.mesh = rt::MeshShape();
      oneRank.mesh.microBatch = options.mesh.microBatch;
      oneRank.accumulationSteps = globalBatch / microBatch;
      FailureOr<CompiledStep> reference = compileStep(tiny, oneRank);
      if (failed(reference)) {
        return failure();
      }
      Evaluator oneRankEvaluator(oneRank, batch, standIns, *fullParams);
      singleRank = oneRankEvaluator.evaluate(*reference->module, /*runPlan=*/false);
    }
    const Outcome &reference = singleRank;
    if (reference.hasSteps) {
      evidence.computed = true;
      evidence.difference = planDifference(metrics, reference.steps);
      evidence.what =
          llvm::formatv("the plans of {0} ranks ({1}) run in this process against "
                        "the single rank's @train_step, {2} steps (losses, LR, "
                        "gradient norm)",
                        distributed.mesh.worldSize(), report.distributedMesh, kEvidenceSteps)
              .str();
    } else {
      evidence.notComputed = "the single rank has no @train_step to compare with";
    }
    report.distributed = std::move(evidence);
  }
  return report;
}

} // namespace mlperf
