//===- ReferenceTrainer.cpp - Train steps on the reference interpreter -*- C++ -*-===//

#include "compiler/Interpreter/ReferenceTrainer.h"

#include "compiler/Support/StepRoles.h"
#include "runtime/plan/StepRoles.h"

#include "mlir/IR/SymbolTable.h"

#include <cmath>

using namespace mlir;
using mlperf::rt::DType;
using mlperf::rt::HostTensor;

namespace mlperf {

TrainState initialTrainState(ParamValues params) {
  TrainState state;
  for (const auto &[name, value] : params) {
    HostTensor master = value;
    master.dtype = DType::kF32; // bf16 values are exact in f32
    state.masters[name] = master;
    state.m[name] = HostTensor::zeros(DType::kF32, value.shape);
    state.v[name] = HostTensor::zeros(DType::kF32, value.shape);
  }
  state.params = std::move(params);
  return state;
}

namespace role = rt::role;

/// The train-state group of a per-parameter role (@train_step's roles, StepRoles.h).
static ParamValues *stateGroup(TrainState &state, std::string_view kind) {
  if (kind == role::kParam) {
    return &state.params;
  }
  if (kind == role::kMaster) {
    return &state.masters;
  }
  if (kind == role::kExpAvg) {
    return &state.m;
  }
  if (kind == role::kExpAvgSq) {
    return &state.v;
  }
  return nullptr;
}

FailureOr<StepMetrics> ReferenceTrainer::step(TrainState &state, const HostTensor &tokens,
                                              const HostTensor &labels) {
  auto batch = *model.getBody().front().getOps<tg::BatchOp>().begin();
  int64_t globalBatch = batch.getGlobalBatchSizeAttr().getInt();
  int64_t microBatch = batch.getMicroBatchSizeAttr().getInt();
  int64_t seq = batch.getSeqLenAttr().getInt();
  if (tokens.shape != std::vector<int64_t>{globalBatch, seq} || labels.shape != tokens.shape) {
    return model.emitError() << "a step takes tokens and labels of shape [" << globalBatch << ", "
                             << seq << "], got " << tokens.describe() << " and "
                             << labels.describe();
  }
  auto trainStep = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "train_step"));
  if (!trainStep) {
    return model.emitError() << "the model has no @train_step: run the train-step pipeline";
  }
  // @train_step's arguments by role: the global batch as [A, micro_batch, seq], the step and
  // the optimizer state.
  std::vector<HostTensor> args;
  for (unsigned i = 0; i < trainStep.getNumArguments(); ++i) {
    std::optional<StepRole> r = argRole(trainStep, i);
    auto type = cast<RankedTensorType>(trainStep.getArgumentTypes()[i]);
    if (r && (r->role == role::kTokens || r->role == role::kLabels)) {
      HostTensor input = HostTensor::zeros(*toDType(type.getElementType()),
                                           {globalBatch / microBatch, microBatch, seq});
      input.ints = (r->role == role::kTokens ? tokens : labels).ints;
      args.push_back(std::move(input));
    } else if (r && r->role == role::kStep) {
      HostTensor stepTensor = HostTensor::zeros(DType::kI64, {});
      stepTensor.ints[0] = state.step;
      args.push_back(std::move(stepTensor));
    } else if (ParamValues *group = r ? stateGroup(state, r->role) : nullptr) {
      auto it = group->find(r->param);
      if (it == group->end()) {
        return trainStep.emitError()
               << "no " << r->role << " state for parameter @\"" << r->param << "\"";
      }
      args.push_back(it->second);
    } else {
      return trainStep.emitError() << "argument " << i << " has no train-step role";
    }
  }
  TGInterpreter interpreter(model, state.params);
  FailureOr<std::vector<HostTensor>> results = interpreter.call(trainStep, std::move(args));
  if (failed(results)) {
    return failure();
  }
  StepMetrics metrics;
  metrics.step = state.step;
  std::vector<std::pair<ParamValues *, std::pair<std::string, HostTensor *>>> updates;
  for (unsigned i = 0; i < trainStep.getNumResults(); ++i) {
    std::optional<StepRole> r = resultRole(trainStep, i);
    HostTensor &value = (*results)[i];
    if (!r) {
      return trainStep.emitError() << "result " << i << " has no train-step role";
    }
    if (r->role == role::kLosses) {
      // The mean of the micro-batch losses equals the token mean over the global batch.
      double sum = 0.0;
      for (float loss : value.values) {
        sum += loss;
      }
      metrics.loss = sum / static_cast<double>(value.numElements());
    } else if (r->role == role::kLr) {
      metrics.lr = value.values[0];
    } else if (r->role == role::kGradNorm) {
      metrics.gradNorm = value.values[0];
    } else if (ParamValues *group = stateGroup(state, r->role)) {
      updates.push_back({group, {r->param, &value}});
    }
  }
  if (!std::isfinite(metrics.loss)) {
    return model.emitError() << "non-finite loss " << metrics.loss << " at step " << state.step
                             << ": training diverged or the data or parameters hold NaN/Inf; "
                                "stopping before the update";
  }
  if (!std::isfinite(metrics.gradNorm)) {
    return model.emitError() << "non-finite gradient norm at step " << state.step
                             << ": stopping before the update";
  }
  // The step computed new state without touching the old; it is kept only when usable.
  for (auto &[group, update] : updates) {
    (*group)[update.first] = std::move(*update.second);
  }
  ++state.step;
  return metrics;
}

} // namespace mlperf
