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

namespace role = rt::role;

/// The train-state group of a per-parameter role: the parameters, or one kind of the
/// optimizer's state (created when `create`).
static ParamValues *stateGroup(TrainState &state, const std::string &kind, bool create) {
  if (kind == role::kParam) {
    return &state.params;
  }
  if (kind == role::kGrad || role::isFp8State(kind)) {
    return nullptr; // not state the interpreter carries
  }
  auto it = state.optimizer.find(kind);
  if (it == state.optimizer.end()) {
    return create ? &state.optimizer[kind] : nullptr;
  }
  return &it->second;
}

FailureOr<TrainState> ReferenceTrainer::initialState(ParamValues params) {
  auto init = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "init_optimizer"));
  if (!init) {
    return model.emitError() << "the model has no @init_optimizer: run the train-step pipeline";
  }
  // As the plan starts it: @init_optimizer from the parameters (a ZeRO-1 rank its shards).
  TrainState state;
  std::vector<HostTensor> args;
  for (unsigned i = 0; i < init.getNumArguments(); ++i) {
    std::optional<StepRole> r = argRole(init, i);
    auto it = r && r->role == role::kParam ? params.find(r->param) : params.end();
    if (it == params.end()) {
      return init.emitError() << "argument " << i << " is not a parameter the state has";
    }
    args.push_back(it->second);
  }
  TGInterpreter interpreter(model, params, communicator);
  FailureOr<std::vector<HostTensor>> results = interpreter.call(init, std::move(args));
  if (failed(results)) {
    return failure();
  }
  for (unsigned i = 0; i < init.getNumResults(); ++i) {
    std::optional<StepRole> r = resultRole(init, i);
    ParamValues *group = r ? stateGroup(state, r->role, /*create=*/true) : nullptr;
    if (!group) {
      return init.emitError() << "result " << i << " has no train-state role";
    }
    (*group)[r->param] = std::move((*results)[i]);
  }
  state.params = std::move(params);
  return state;
}

FailureOr<StepMetrics> ReferenceTrainer::step(TrainState &state, const HostTensor &tokens,
                                              const HostTensor &labels) {
  auto trainStep = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "train_step"));
  if (!trainStep) {
    return model.emitError() << "the model has no @train_step: run the train-step pipeline";
  }
  // This rank's micro-batches: [A, micro_batch, seq] as @train_step takes them (one rank: the
  // global batch).
  std::optional<unsigned> tokensArg = findArg(trainStep, {std::string(role::kTokens), ""});
  if (!tokensArg) { // the last pipeline stage reads only the labels
    tokensArg = findArg(trainStep, {std::string(role::kLabels), ""});
  }
  if (!tokensArg) {
    return trainStep.emitError() << "@train_step takes neither tokens nor labels";
  }
  ArrayRef<int64_t> batchShape =
      cast<RankedTensorType>(trainStep.getArgumentTypes()[*tokensArg]).getShape();
  int64_t rows = batchShape[0] * batchShape[1], seq = batchShape[2];
  if (tokens.shape != std::vector<int64_t>{rows, seq} || labels.shape != tokens.shape) {
    return model.emitError() << "a step takes tokens and labels of shape [" << rows << ", " << seq
                             << "], got " << tokens.describe() << " and " << labels.describe();
  }
  // @train_step's arguments by role: the global batch as [A, micro_batch, seq], the step and
  // the optimizer state.
  std::vector<HostTensor> args;
  for (unsigned i = 0; i < trainStep.getNumArguments(); ++i) {
    std::optional<StepRole> r = argRole(trainStep, i);
    auto type = cast<RankedTensorType>(trainStep.getArgumentTypes()[i]);
    if (r && (r->role == role::kTokens || r->role == role::kLabels)) {
      HostTensor input =
          HostTensor::zeros(*toDType(type.getElementType()),
                            std::vector<int64_t>(type.getShape().begin(), type.getShape().end()));
      input.ints = (r->role == role::kTokens ? tokens : labels).ints;
      args.push_back(std::move(input));
    } else if (r && r->role == role::kStep) {
      HostTensor stepTensor = HostTensor::zeros(DType::kI64, {});
      stepTensor.ints[0] = state.step;
      args.push_back(std::move(stepTensor));
    } else if (r && r->role == role::kSeed) {
      HostTensor seedTensor = HostTensor::zeros(DType::kI64, {});
      seedTensor.ints[0] = static_cast<int64_t>(state.seed);
      args.push_back(std::move(seedTensor));
    } else if (r && !r->param.empty()) {
      ParamValues *group = stateGroup(state, r->role, /*create=*/false);
      auto it = group ? group->find(r->param) : ParamValues::iterator();
      if (!group || it == group->end()) {
        return trainStep.emitError()
               << "no " << r->role << " state for parameter @\"" << r->param << "\"";
      }
      args.push_back(it->second);
    } else {
      return trainStep.emitError() << "argument " << i << " has no train-step role";
    }
  }
  TGInterpreter interpreter(model, state.params, communicator);
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
    } else if (ParamValues *group = stateGroup(state, r->role, /*create=*/false)) {
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
