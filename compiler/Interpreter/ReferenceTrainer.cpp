//===- ReferenceTrainer.cpp - Train steps on the reference interpreter -*- C++ -*-===//

#include "compiler/Interpreter/ReferenceTrainer.h"

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

/// Rows [begin, begin + count) of a [rows, seq] integer tensor.
static HostTensor rows(const HostTensor &tensor, int64_t begin, int64_t count, DType dtype) {
  int64_t width = tensor.shape[1];
  HostTensor slice = HostTensor::zeros(dtype, {count, width});
  std::copy_n(tensor.ints.begin() + begin * width, count * width, slice.ints.begin());
  return slice;
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
  auto forwardBackward = cast<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward_backward"));
  auto optimizerStep = cast<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "optimizer_step"));
  auto gradientNames = forwardBackward->getAttrOfType<ArrayAttr>("tg.gradients");
  DType idType = *toDType(
      cast<RankedTensorType>(forwardBackward.getFunctionType().getInput(0)).getElementType());

  TGInterpreter interpreter(model, state.params);
  std::vector<HostTensor> grads;
  double lossSum = 0.0;
  int64_t accumulation = globalBatch / microBatch;
  for (int64_t a = 0; a < accumulation; ++a) {
    FailureOr<std::vector<HostTensor>> results =
        interpreter.call(forwardBackward, {rows(tokens, a * microBatch, microBatch, idType),
                                           rows(labels, a * microBatch, microBatch, idType)});
    if (failed(results)) {
      return failure();
    }
    lossSum += (*results)[0].values[0];
    if (a == 0) {
      grads.assign(results->begin() + 1, results->end());
      continue;
    }
    // Accumulated in the gradients' own type (bf16 in the reference: grad_reduce_in_fp32 off).
    for (size_t i = 0; i < grads.size(); ++i) {
      const HostTensor &add = (*results)[i + 1];
      for (int64_t e = 0; e < grads[i].numElements(); ++e) {
        grads[i].values[e] = static_cast<float>(
            rt::roundTo(grads[i].dtype, static_cast<double>(grads[i].values[e]) + add.values[e]));
      }
    }
  }

  // @optimizer_step(step, grads..., masters..., m..., v...).
  std::vector<HostTensor> args;
  HostTensor stepTensor = HostTensor::zeros(DType::kI64, {});
  stepTensor.ints[0] = state.step;
  args.push_back(stepTensor);
  for (HostTensor &grad : grads) {
    args.push_back(std::move(grad));
  }
  std::vector<std::string> names;
  for (Attribute attr : gradientNames) {
    names.push_back(cast<FlatSymbolRefAttr>(attr).getValue().str());
  }
  for (ParamValues *group : {&state.masters, &state.m, &state.v}) {
    for (const std::string &name : names) {
      args.push_back((*group)[name]);
    }
  }
  double loss = lossSum / static_cast<double>(accumulation);
  if (!std::isfinite(loss)) {
    return model.emitError() << "non-finite loss " << loss << " at step " << state.step
                             << ": training diverged or the data or parameters hold NaN/Inf; "
                                "stopping before the update";
  }
  FailureOr<std::vector<HostTensor>> updated = interpreter.call(optimizerStep, std::move(args));
  if (failed(updated)) {
    return failure();
  }
  size_t n = names.size();
  double gradNorm = (*updated)[4 * n + 1].values[0];
  if (!std::isfinite(gradNorm)) {
    return model.emitError() << "non-finite gradient norm at step " << state.step
                             << ": stopping before the update";
  }
  ParamValues *groups[] = {&state.params, &state.masters, &state.m, &state.v};
  for (size_t group = 0; group < 4; ++group) {
    for (size_t i = 0; i < n; ++i) {
      (*groups[group])[names[i]] = std::move((*updated)[group * n + i]);
    }
  }
  StepMetrics metrics;
  metrics.step = state.step;
  metrics.loss = loss;
  metrics.lr = (*updated)[4 * n].values[0];
  metrics.gradNorm = gradNorm;
  ++state.step;
  return metrics;
}

} // namespace mlperf
