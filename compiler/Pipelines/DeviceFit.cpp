//===- DeviceFit.cpp - Compile a train step that fits its device -*- C++ -*-===//

#include "compiler/Pipelines/DeviceFit.h"

#include "compiler/Analysis/MemoryPlan.h"
#include "dialects/Plan/IR/PlanOps.h"
#include "dialects/TG/IR/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>

using namespace mlir;

namespace mlperf {
namespace {

/// Compiles compileForDevice may make: budgets only shrink, and a stage that recomputes every
/// layer fully stops asking, so this bounds a search that normally ends after two or three.
constexpr int kMaxFitCompiles = 6;

/// What tg-recompute reported for one stage (its model's `tg.recompute`), and the arenas of
/// the stage's other callees.
struct StageRecompute {
  /// The cost after recompute, in the budget's terms: the backward functions' largest arena
  /// and, on a pipeline stage, its chunks' stashes per micro-batch in flight and in buffers.
  int64_t costAfter = 0;
  bool everythingRecomputed = true;
  /// The largest activation arena of the stage's other callee functions (the optimizer step,
  /// evaluation, initialization): the plan's arena is the larger of it and the backward's.
  int64_t otherArena = 0;
};

StageRecompute stageRecompute(tg::ModelOp model) {
  StageRecompute stage;
  if (auto report = model->getAttrOfType<DictionaryAttr>("tg.recompute")) {
    if (auto cost = report.getAs<IntegerAttr>("cost_after")) {
      stage.costAfter = cost.getInt();
    }
    if (auto all = report.getAs<BoolAttr>("everything_recomputed")) {
      stage.everythingRecomputed = all.getValue();
    }
  }
  for (auto func : model.getBody().front().getOps<func::FuncOp>()) {
    bool calls = false;
    func.walk([&](func::CallOp) { calls = true; });
    if (!calls && !func->hasAttr("tg.recompute") && !func->hasAttr("tg.to_stash")) {
      stage.otherArena = std::max(stage.otherArena, planFunctionMemory(func).arenaBytes);
    }
  }
  return stage;
}

} // namespace

int64_t CompiledStep::peakBytes() const { return stages.empty() ? 0 : stages[peakStage()].peak(); }

size_t CompiledStep::peakStage() const {
  size_t most = 0;
  for (size_t stage = 1; stage < stages.size(); ++stage) {
    if (stages[stage].peak() > stages[most].peak()) {
      most = stage;
    }
  }
  return most;
}

namespace {

/// compileStep, optionally without the final verification: a calibration compile's module is
/// measured and dropped, and the compile that is kept is verified.
FailureOr<CompiledStep> compile(ModuleOp declaration, const TrainStepOptions &options,
                                ConfigurePassManager configure, bool verifyResult) {
  CompiledStep step;
  step.options = options;
  step.module = cast<ModuleOp>(declaration->clone());
  PassManager pm(declaration.getContext());
  buildTrainStepPipeline(pm, options);
  buildPlanPipeline(pm, options);
  // The input was verified when it was parsed and the result is verified below, so a pass
  // that breaks an invariant is still caught before any plan is written; verifying every
  // intermediate module too costs a quarter of the compile time of a deep model.
  pm.enableVerifier(false);
  if (configure && failed(configure(pm))) {
    return failure();
  }
  if (failed(pm.run(*step.module))) {
    return failure();
  }
  if (verifyResult && failed(verify(*step.module))) {
    return step.module->emitError("the lowered IR does not verify (--verify-each finds the pass)");
  }
  for (auto plan : step.module->getOps<plan_ir::PlanOp>()) {
    step.stages.push_back(rankMemory(plan, options.mesh));
  }
  return step;
}

} // namespace

FailureOr<CompiledStep> compileStep(ModuleOp declaration, const TrainStepOptions &options,
                                    ConfigurePassManager configure) {
  return compile(declaration, options, configure, /*verifyResult=*/true);
}

FailureOr<CompiledStep> compileForDevice(ModuleOp declaration, const TrainStepOptions &options,
                                         const DeviceMemory &device,
                                         ConfigurePassManager configure) {
  if (options.recompute != "auto") {
    return compileStep(declaration, options, configure);
  }
  // First every layer recomputed fully: the smallest plan, and on a pipeline stage the
  // cheapest to build. What a stage needs besides what recompute decides (its peak minus the
  // cost tg-recompute reported) is then known, and the room left is each stage's budget.
  TrainStepOptions trial = options;
  trial.recomputeBudgets = {0};
  FailureOr<CompiledStep> step = compile(declaration, trial, configure, /*verifyResult=*/false);
  if (failed(step)) {
    return failure();
  }
  auto budgetsFrom = [&](CompiledStep &compiled, bool first) {
    auto models = llvm::to_vector(compiled.module->getOps<tg::ModelOp>());
    if (trial.recomputeBudgets.size() != models.size()) {
      trial.recomputeBudgets.assign(models.size(), trial.recomputeBudgets.front());
    }
    bool changed = false;
    for (size_t stage = 0; stage < compiled.stages.size() && stage < models.size(); ++stage) {
      // Against the target, which leaves the headroom free.
      int64_t overflow = compiled.stages[stage].peak() - device.targetBytes();
      StageRecompute recompute = stageRecompute(models[stage]);
      int64_t &budget = trial.recomputeBudgets[stage];
      if (first) {
        // peak = fixed + max(cost, other arenas): the room is what the fixed part leaves.
        budget =
            std::max<int64_t>(0, std::max(recompute.costAfter, recompute.otherArena) - overflow);
        changed = true;
      } else if (overflow > 0 && !recompute.everythingRecomputed) {
        // Placement the cost model does not see (fragmentation, copies): take it off.
        budget = std::max<int64_t>(0, std::min(budget, recompute.costAfter) - overflow);
        changed = true;
      }
    }
    return changed;
  };
  if (step->peakBytes() > device.capacityBytes) {
    // Even recomputing everything does not fit: the caller reports it, from a verified module.
    return compileStep(declaration, trial, configure);
  }
  budgetsFrom(*step, /*first=*/true);
  for (int compile = 1; compile < kMaxFitCompiles; ++compile) {
    step = compileStep(declaration, trial, configure);
    if (failed(step) || !budgetsFrom(*step, /*first=*/false)) {
      return step;
    }
  }
  return step;
}

std::vector<NearbyStrategy> nearbyStrategies(const TrainStepOptions &options,
                                             const rt::ModelDims &dims,
                                             int64_t microBatchesOnOneRank) {
  std::vector<NearbyStrategy> nearby;
  auto consider = [&](std::string change, rt::MeshShape mesh, std::string recompute) {
    if (!rt::validateMesh(mesh, dims, /*dpGiven=*/true).isOk() ||
        microBatchesOnOneRank % mesh.dp != 0) {
      return;
    }
    TrainStepOptions candidate = options;
    candidate.mesh = mesh;
    candidate.recompute = std::move(recompute);
    candidate.recomputeBudgets.clear();
    candidate.accumulationSteps = microBatchesOnOneRank / mesh.dp;
    nearby.push_back({std::move(change), std::move(candidate)});
  };
  const rt::MeshShape &mesh = options.mesh;
  if (mesh.zero == 0 && mesh.dp > 1) {
    rt::MeshShape next = mesh;
    next.zero = 1;
    consider("zero=1", next, options.recompute);
  }
  // ZeRO-2 also shards the accumulated gradients.
  if (mesh.zero < 2 && mesh.dp > 1) {
    rt::MeshShape next = mesh;
    next.zero = 2;
    consider("zero=2", next, options.recompute);
  }
  // ZeRO-3 also shards the parameters (not with fp8, which tg-fp8 refuses).
  if (mesh.zero != 3 && mesh.dp > 1 && options.precision != "fp8") {
    rt::MeshShape next = mesh;
    next.zero = 3;
    consider("zero=3", next, options.recompute);
  }
  // Hybrid sharding holds dp / hsdp times the flat shards.
  if (mesh.hsdp > 0) {
    rt::MeshShape next = mesh;
    next.hsdp = 0;
    consider("hsdp=0", next, options.recompute);
  }
  if (mesh.tp > 1 && !mesh.sequenceParallel) {
    rt::MeshShape next = mesh;
    next.sequenceParallel = true;
    consider("sp=on", next, options.recompute);
  }
  if (mesh.dp % 2 == 0) {
    rt::MeshShape next = mesh;
    next.tp *= 2;
    next.dp /= 2;
    consider("tp=" + std::to_string(next.tp), next, options.recompute);
    next = mesh;
    next.pp *= 2;
    next.dp /= 2;
    consider("pp=" + std::to_string(next.pp), next, options.recompute);
  }
  if (options.recompute != "full" && options.recompute != "auto") {
    consider("--recompute full", mesh, "full");
  }
  return nearby;
}

} // namespace mlperf
