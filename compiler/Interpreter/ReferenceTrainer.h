//===- ReferenceTrainer.h - Train steps on the reference interpreter -*- C++ -*-===//
//
// Runs the train step on the reference interpreter: @train_step (the micro-batch loop,
// gradient accumulation and @optimizer_step, built by tg-train-step), fed and read by the
// tg.role of its arguments and results. This is the step the oracle trajectory test and the
// CPU backend are compared with; the execution plan lowers the same function.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_INTERPRETER_REFERENCETRAINER_H
#define MLPERFC_COMPILER_INTERPRETER_REFERENCETRAINER_H

#include "compiler/Interpreter/TGInterpreter.h"

#include <map>

namespace mlperf {

/// What training carries from step to step, as the plan's train state holds it: the
/// parameters and, by role, the optimizer's state of the trained ones.
struct TrainState {
  ParamValues params; // in their declared types
  // Role ("master", "exp_avg", ...: @optimizer_step's tg.role) -> parameter -> value.
  std::map<std::string, ParamValues> optimizer;
  int64_t step = 0;  // optimizer steps taken
  uint64_t seed = 0; // the run's seed, which keys the dropout masks
};

struct StepMetrics {
  int64_t step = 0;
  double loss = 0, lr = 0, gradNorm = 0;
};

class ReferenceTrainer {
public:
  /// `model` has gone through the train-step pipeline (@train_step). `communicator`: for one
  /// rank's model of a multi-rank mesh (TGInterpreter).
  explicit ReferenceTrainer(tg::ModelOp model, rt::Communicator *communicator = nullptr)
      : model(model), communicator(communicator) {}

  /// The state before the first step as the plan starts it: @init_optimizer of the
  /// parameters (a ZeRO-1 rank's optimizer state is its shards).
  mlir::FailureOr<TrainState> initialState(ParamValues params);

  /// One optimizer step on this rank's micro-batches: tokens and labels [rows, seq], rows the
  /// micro-batches times the micro-batch of @train_step (one rank: the global batch).
  mlir::FailureOr<StepMetrics> step(TrainState &state, const rt::HostTensor &tokens,
                                    const rt::HostTensor &labels);

private:
  tg::ModelOp model;
  rt::Communicator *communicator;
};

} // namespace mlperf

#endif // MLPERFC_COMPILER_INTERPRETER_REFERENCETRAINER_H
