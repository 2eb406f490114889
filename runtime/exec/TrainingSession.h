//===- TrainingSession.h - One training run of a plan ----------*- C++ -*-===//
//
// What `mlperf-run` does, as a library: load and check the plan (one file per pipeline
// stage), start the train state (resume, --init-from or the plan's init programs), read the
// data (this rank's share of every global batch, its evaluation micro-batches), and then,
// step by step, replay the plan's train_step, evaluate at the model's cadence, save
// checkpoints that resume bit-identically, and write the MLPerf log and the per-step
// metrics. The tool around it parses arguments, starts MPI, handles signals and prints.
//
// Under several ranks every rank opens its own session on the same plan; rank 0 (the
// leader) alone writes the log and the metrics, each rank its own checkpoint file.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_EXEC_TRAININGSESSION_H
#define MLPERFC_RUNTIME_EXEC_TRAININGSESSION_H

#include "runtime/exec/PlanTrainer.h"

#include <functional>
#include <memory>
#include <string>

namespace mlperf::rt {

struct SessionOptions {
  std::string plan; // PLAN.pb (or the prefix of plan.stage<k>.pb)
  std::string backend = "cpu";
  std::string gemmCache;         // BackendOptions::gemmAlgorithmCache (mlperf-run --gemm-cache)
  bool noCudnnAttention = false; // !BackendOptions::cudnnAttention (--no-cudnn-attention)
  /// Read the next step's batch on a host thread while this step runs (--no-prefetch: read
  /// each batch when its step starts).
  bool prefetch = true;
  std::string data, evalData;         // Megatron indexed datasets (PREFIX)
  std::string dataOrder = "shuffled"; // or "sequential"
  std::string target;                 // eval loss to stop at; empty: the model's
  std::string initFrom, resume, save, mllog, metricsOut;
  /// Chrome trace of the last training step's commands (with several ranks, each writes
  /// FILE with ".rank<r>" before its extension).
  std::string trace;
  int64_t seed = -1;     // -1: 0, or the checkpoint's on a resume
  int64_t maxSteps = -1; // -1: the model's
  int64_t saveEvery = 0;
  /// The MLPerf log's submission keys (mlperf-run --submission-*): who submits, the division
  /// (closed or open), the system (the systems/<name>.json of the package; empty: a
  /// description of this run's cluster and backend) and its availability status (onprem,
  /// cloud, research or preview; empty: not logged).
  std::string submissionOrg = "mlperfc", submissionDivision = "closed", submissionPlatform,
              submissionStatus;
};

/// This rank of the job: 0 of 1 for a single process.
struct RankInfo {
  int64_t rank = 0, size = 1;
};

/// Creates the communicator for the plan's mesh (MPI under mpirun, one rank otherwise).
using CommunicatorFactory =
    std::function<Status(const MeshShape &, std::unique_ptr<Communicator> &)>;

struct StepReport {
  TrainStepMetrics metrics;
  int64_t samples = 0; // after the step
  double seconds = 0, tokensPerSecond = 0;
  /// How long the step waited for its batch before it could start (0 when it was read
  /// while the previous step ran).
  double inputWaitSeconds = 0;
};

struct EvalReport {
  double loss = 0;
  int64_t samples = 0;
  bool converged = false; // at or below the target
};

class TrainingSession {
public:
  /// Checks the options, loads and checks the plan(s) this rank runs, creates the
  /// communicator, backend and trainer, starts the train state, opens the data and (leader)
  /// the metrics and the MLPerf log through init_stop / run_start.
  static Status open(const SessionOptions &options, RankInfo rank,
                     const CommunicatorFactory &makeCommunicator,
                     std::unique_ptr<TrainingSession> &session);
  ~TrainingSession();

  /// One optimizer step: this rank's micro-batches of the next global batch through the
  /// plan's train_step; the metrics line and the MLPerf block intervals.
  Status step(StepReport &report);
  /// Whether the step just taken ends an evaluation block (the model's cadence past its
  /// skipped evaluations, or the last step).
  bool evaluationDue() const;
  /// Evaluates (when the run has eval data) and logs the result.
  Status evaluate(EvalReport &report);
  /// Every rank stops after the same step: the sum over ranks of what each saw.
  Status agreeOnStop(int localSignal, int &stopSignal);
  /// The --save checkpoint (this rank's file), written atomically.
  Status saveCheckpoint();
  /// Closes the log (run_stop success, or aborted when a target was not reached) and the
  /// metrics; the checkpoint is the caller's to write.
  Status finish(bool converged);
  /// After a failure or an interruption: closes every open log interval as aborted and keeps
  /// the metrics of the steps taken.
  void abandon();

  bool leader() const { return rank.rank == 0; }
  bool evaluating() const { return evalSamples > 0; }
  int64_t stepsTaken() const { return trainer->stepsTaken(); }
  int64_t maxSteps() const { return stepLimit; }
  int64_t evalEverySteps() const { return evalEvery; }
  double target() const { return targetLoss; }
  int64_t samplesAfter(int64_t steps) const { return steps * globalBatch; }
  /// This rank's checkpoint file: CKPT.safetensors, or CKPT.rank<r>-of-<n>.safetensors.
  std::string checkpointPath() const;
  /// "llama31_8b on cpu x 2 ranks (...): 21 parameter tensors, global batch 8 x 32 tokens, ..."
  std::string describe() const;

private:
  TrainingSession() = default;
  Status loadPlan();
  Status checkRanksRunOneCompile();
  Status startState();
  Status openData();
  Status openOutputs();
  /// This rank's micro-batches of training step `step`, as the plan's batch layout says.
  Status readStepBatch(int64_t step, int64_t dpRank, std::vector<int64_t> &tokens,
                       std::vector<int64_t> &labels);

  SessionOptions options;
  RankInfo rank;
  plan::Plan planFile;
  std::string planIdentity; // planFingerprint(planFile): checkpoints record it
  MeshShape mesh;
  std::unique_ptr<Communicator> communicator;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<PlanTrainer> trainer;
  struct Data;
  std::unique_ptr<Data> data;
  struct Log;
  std::unique_ptr<Log> log;
  uint64_t seed = 0;
  /// Whether an evaluation follows the step that brings the run to `taken` steps.
  bool evaluationAfter(int64_t taken) const;
  int64_t globalBatch = 0, seq = 0, stepLimit = 0, evalEvery = 1, evalSkip = 0, evalSamples = 0;
  int64_t firstStep = 0;
  double targetLoss = 0, initSeconds = 0;
  std::vector<Backend::CommandSpan> lastStepSpans; // with --trace
  int64_t lastTracedStep = -1;
  Status writeTrace() const;
};

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_EXEC_TRAININGSESSION_H
