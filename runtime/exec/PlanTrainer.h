//===- PlanTrainer.h - Train steps from an execution plan ------*- C++ -*-===//
//
// Runs a plan's step programs on a backend: train_step is the whole optimizer step (the
// micro-batch loop, pipeline transfers, gradient accumulation, optimizer: all commands of
// the plan), so a step here is: write this rank's micro-batches and the step counter into
// the inputs with those roles, replay, read lr, grad_norm and the losses; eval_step runs
// once per evaluation micro-batch. It also initializes, loads and saves the train state
// (the plan's state tensors: parameters and the optimizer's state by role, and the step) in
// the backend's persistent arena; checkpoints are safetensors in the run-reference
// train-state layout (Hugging Face names, optimizer.<role>.<name>, metadata step).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_EXEC_PLANTRAINER_H
#define MLPERFC_RUNTIME_EXEC_PLANTRAINER_H

#include "runtime/checkpoint/WeightSource.h"
#include "runtime/exec/Backend.h"

#include <map>

namespace mlperf::rt {

struct TrainStepMetrics {
  int64_t step = 0; // the optimizer step just taken (0-based)
  double loss = 0, lr = 0, gradNorm = 0;
  /// This rank's seconds on the compute stream, on the communication stream, and waiting on
  /// the compute stream for communication (Backend::StreamTimes).
  double computeSeconds = 0, communicationSeconds = 0, exposedCommunicationSeconds = 0;
};

class PlanTrainer {
public:
  /// Finds the programs and buffers (by role) a train step needs; fails on a plan that lacks
  /// them. `communicator` places this rank in the mesh (slices, evaluation sums).
  static Status create(const plan::Plan &plan, Backend &backend, Communicator &communicator,
                       std::unique_ptr<PlanTrainer> &trainer);

  /// Runs the plan's init_params (every parameter drawn from the seed, as declared) and
  /// init_optimizer (the optimizer state from the parameters); step 0.
  Status initialize(uint64_t seed);

  /// Writes the run's seed, which init_params draws from and a train_step with dropout keys
  /// its masks by (initialize does it; a run that loads its state sets it before stepping).
  Status setSeed(uint64_t seed);

  /// Parameters from `file` (matching names, shapes and dtypes). With `withOptimizerState`,
  /// all of them and the masters, moments and step (a resume); otherwise the optimizer starts
  /// fresh from these values (--init-from), and parameters the plan draws (not declared
  /// `checkpoint`, e.g. LoRA adapters next to a base checkpoint) may be absent from the file:
  /// init_params draws them from the seed setSeed wrote. A parameter the file stores as its
  /// checkpoint parts (Hugging Face's q_proj, k_proj, v_proj for a fused qkv_proj) is stacked
  /// from them; full tensors of a tensor-parallel plan are sliced to this rank's part.
  Status load(const WeightSource &file, bool withOptimizerState);

  /// Parameters, optimizer state and step, written atomically.
  Status save(const std::string &path, const std::map<std::string, std::string> &metadata);

  /// One optimizer step: this rank's share of the global batch (micro-batches x micro-batch
  /// rows x seq tokens and labels, row-major); the loss reported is the global batch's.
  Status step(const std::vector<int64_t> &tokens, const std::vector<int64_t> &labels,
              TrainStepMetrics &metrics);

  /// The evaluation loss: eval_step over this rank's micro-batches of `tokens`/`labels` (a
  /// whole number of them; a rank may have none when there are fewer micro-batches than
  /// ranks), then eval_finish, whose one number is the mean over every rank's micro-batches.
  Status evalLoss(const std::vector<int64_t> &tokens, const std::vector<int64_t> &labels,
                  double &loss);

  int64_t stepsTaken() const { return steps; }
  /// Micro-batches per step on this rank.
  int64_t accumulationSteps() const { return accumulation; }
  int64_t microBatchRows() const { return microRows; }
  /// The plan's batch layout: which micro-batch of the global batch data-parallel rank d's
  /// micro-batch a holds is entry a * dp + d (a permutation, checked at create).
  int64_t globalMicroBatch(int64_t microBatch, int64_t dataParallelRank) const {
    return batchLayout[microBatch * dataParallel + dataParallelRank];
  }
  int64_t seqLen() const { return seq; }

private:
  static constexpr uint32_t kNoBuffer = ~0u;
  PlanTrainer(const plan::Plan &plan, Backend &backend, Communicator &communicator)
      : plan(plan), backend(backend), communicator(communicator) {}
  /// Tensor parallelism: this rank's part index, the full shape of a split parameter, and
  /// this rank's slice of the full parameter (of each of its blocks).
  int64_t splitIndex(const plan::StateTensor &parameter) const;
  std::vector<int64_t> fullShape(const plan::StateTensor &parameter,
                                 std::vector<int64_t> local) const;
  HostTensor splitSlice(const plan::StateTensor &parameter, const HostTensor &full,
                        const std::vector<int64_t> &local) const;
  /// ZeRO sharding: this rank's index along the state's shard axis, and its 1-D shard of the
  /// flattened `whole`.
  int64_t shardIndex(const plan::StateTensor &state) const;
  HostTensor shardOf(const plan::StateTensor &state, const HostTensor &whole) const;
  /// Writes `shape`'s elements of `source` from `first` on into integer buffer `id` (none:
  /// the stage does not read it).
  Status writeBatch(uint32_t id, const std::vector<int64_t> &source, int64_t first,
                    std::vector<int64_t> shape);
  /// The value of scalar buffer `id` (f32 or f64).
  Status readScalar(uint32_t id, double &value) const;

  const plan::Plan &plan;
  Backend &backend;
  Communicator &communicator;
  int trainProgram = -1, evalProgram = -1, evalFinishProgram = -1, initParamsProgram = -1,
      initOptimizerProgram = -1;
  // Inputs and outputs by role; kNoBuffer where this stage's programs have none.
  uint32_t trainTokens = kNoBuffer, trainLabels = kNoBuffer, stepBuffer = kNoBuffer,
           lrBuffer = kNoBuffer, normBuffer = kNoBuffer, lossesBuffer = kNoBuffer,
           evalTokens = kNoBuffer, evalLabels = kNoBuffer, evalLossBuffer = kNoBuffer,
           seedBuffer = kNoBuffer;
  int64_t microRows = 0, seq = 0, accumulation = 1, dataParallel = 1, steps = 0;
  std::vector<int64_t> batchLayout;
};

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_EXEC_PLANTRAINER_H
