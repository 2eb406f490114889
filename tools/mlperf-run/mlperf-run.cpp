//===- mlperf-run.cpp - Train from an execution plan -----------*- C++ -*-===//
//
// Loads and validates a plan (mlperfc compile -o), allocates it on a backend and trains:
// global batches of GPT samples from a Megatron indexed dataset, evaluation at the model's
// cadence on an eval dataset, stop at the target eval loss. Writes an MLPerf log, per-step
// metrics (JSON lines) and checkpoints. Exit status: 0 converged (or no target to reach),
// 2 stopped at --max-steps without reaching the target, 1 on any error.
//
// Under mpirun every rank runs this program on the same plan: rank r of the data-parallel
// group reads only its micro-batches of each global batch, rank 0 alone writes the log, the
// metrics and the progress, and each rank saves its own checkpoint shard. A rank that fails
// aborts the whole job (MPI_Abort), so no rank waits forever in a collective for it.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/GPTBatches.h"
#include "runtime/exec/PlanTrainer.h"
#include "runtime/mllog/BenchmarkLog.h"
#include "runtime/mpi/MpiCommunicator.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/support/CommandLine.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <unistd.h>

using namespace mlperf::rt;
namespace plan = mlperf::plan;

namespace {

/// Set by SIGINT/SIGTERM: the run stops after the step in progress, keeping what it did.
volatile std::sig_atomic_t interruptSignal = 0;

void onInterrupt(int signal) { interruptSignal = signal; }

struct Options {
  std::vector<std::string> positional;
  std::string backend = "cpu", data, evalData, dataOrder = "shuffled", target, initFrom, save,
              resume, mllog, metricsOut;
  int64_t seed = -1, maxSteps = -1, printEvery = 10, saveEvery = 0, collectiveTimeout = 600;
};

/// This process's rank and the job's size: "rank R: " prefixes messages of a multi-rank job.
int64_t worldRank = 0, worldSize = 1;

int fail(const std::string &message) {
  if (worldSize > 1) {
    std::fprintf(stderr, "mlperf-run: rank %lld of %lld: error: %s\n",
                 static_cast<long long>(worldRank), static_cast<long long>(worldSize),
                 message.c_str());
  } else {
    std::fprintf(stderr, "mlperf-run: error: %s\n", message.c_str());
  }
  return 1;
}

/// Rank r's checkpoint file of a multi-rank job: CKPT.safetensors ->
/// CKPT.rank<r>-of-<n>.safetensors.
std::string rankPath(const std::string &path) {
  if (worldSize == 1) {
    return path;
  }
  std::string suffix = ".rank" + std::to_string(worldRank) + "-of-" + std::to_string(worldSize);
  const std::string extension = ".safetensors";
  if (path.size() > extension.size() &&
      path.compare(path.size() - extension.size(), extension.size(), extension) == 0) {
    return path.substr(0, path.size() - extension.size()) + suffix + extension;
  }
  return path + suffix;
}

int fail(const Status &status) { return fail(status.message()); }

/// A JSON number; non-finite values (a diverged run) as null, which JSON can represent.
std::string jsonNumber(double value) {
  if (!std::isfinite(value)) {
    return "null";
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

/// Metrics lines go to a temporary file renamed into place at the end, so a reader never
/// sees a half-written file under the final name; each line is flushed as it is written.
class MetricsFile {
public:
  Status open(const std::string &path) {
    final = path;
    temporary = path + ".tmp." + std::to_string(getpid());
    out.open(temporary, std::ios::trunc);
    return out ? Status::ok()
               : Status(StatusCode::kNotFound, "cannot write metrics file " + temporary);
  }
  void write(const std::string &line) {
    if (out.is_open()) {
      out << line << '\n';
      out.flush();
    }
  }
  Status close() {
    if (!out.is_open()) {
      return Status::ok();
    }
    out.close();
    if (!out || std::rename(temporary.c_str(), final.c_str()) != 0) {
      return Status(StatusCode::kInternal, "cannot finish metrics file " + final);
    }
    return Status::ok();
  }

private:
  std::ofstream out;
  std::string final, temporary;
};

int run(const Options &options) {
  if (options.positional.size() != 1) {
    return fail("give exactly one plan file (mlperfc compile MODEL.mlir -o plan.pb)");
  }
  if (options.dataOrder != "shuffled" && options.dataOrder != "sequential") {
    return fail("--data-order must be shuffled or sequential, got '" + options.dataOrder + "'");
  }
  if (!options.initFrom.empty() && !options.resume.empty()) {
    return fail("--init-from and --resume are alternatives: give one");
  }
  if (options.data.empty()) {
    return fail("--data PREFIX (a Megatron indexed dataset PREFIX.bin/.idx) is required");
  }
  if (options.collectiveTimeout < 0) {
    return fail("--collective-timeout must be >= 0 (0: wait forever)");
  }
  if (options.printEvery < 0) {
    return fail("--print-every must be >= 0");
  }
  if (options.saveEvery < 0 || (options.saveEvery > 0 && options.save.empty())) {
    return fail("--save-every N needs N >= 0 and --save CKPT");
  }
  if (!options.target.empty() && options.evalData.empty()) {
    return fail("--target needs --eval-data to evaluate against");
  }

  auto initStart = std::chrono::steady_clock::now();
  plan::Plan plan;
  // A pipeline-parallel plan is one file per stage (plan.stage<k>.pb): the first names the
  // mesh, which says which stage this rank runs.
  std::string planPath = options.positional[0];
  std::ifstream given(planPath);
  if (!given && std::ifstream(stagePlanPath(planPath, 0))) {
    Status first = loadPlan(stagePlanPath(planPath, 0), plan);
    if (!first.isOk()) {
      return fail(first);
    }
    MeshShape stageMesh = planMesh(plan);
    if (stageMesh.worldSize() != worldSize) {
      return fail("the plan is compiled for " + std::to_string(stageMesh.worldSize()) + " ranks (" +
                  stageMesh.describe() + ") but " + std::to_string(worldSize) +
                  " were started: run mpirun -np " + std::to_string(stageMesh.worldSize()));
    }
    planPath = stagePlanPath(planPath, rankCoordinates(stageMesh, worldRank).pp);
  }
  Status status = loadPlan(planPath, plan);
  if (!status.isOk()) {
    return fail(status);
  }
  if (planMesh(plan).pp > 1) {
    // The stages' schedules must agree on every transfer before anything runs.
    std::vector<plan::Plan> stages(planMesh(plan).pp);
    for (size_t k = 0; k < stages.size() && status.isOk(); ++k) {
      status = loadPlan(stagePlanPath(options.positional[0], static_cast<int64_t>(k)), stages[k]);
    }
    if (status.isOk()) {
      status = checkStageTransfers(stages);
    }
    if (!status.isOk()) {
      return fail(status);
    }
  }
  const plan::ModelInfo &model = plan.model();
  double target = model.target_value();
  if (!options.target.empty()) {
    char *end = nullptr;
    target = std::strtod(options.target.c_str(), &end);
    if (*end != '\0' || !std::isfinite(target)) {
      return fail("--target must be a number, got '" + options.target + "'");
    }
  }
  int64_t maxSteps = options.maxSteps >= 0 ? options.maxSteps : model.max_steps();

  MeshShape mesh = planMesh(plan);
  std::unique_ptr<Communicator> communicator;
  if (worldSize > 1 || launchedByMpiLauncher()) {
    CollectiveTimeout timeout;
    timeout.seconds = static_cast<double>(options.collectiveTimeout);
    timeout.onTimeout = [seconds = options.collectiveTimeout](const std::string &waitingFor) {
      // From the watchdog thread: report and leave; mpirun then ends every other rank.
      std::fprintf(stderr,
                   "mlperf-run: rank %lld of %lld: error: %s did not complete within %lld s: "
                   "another rank is stuck (stopped, deadlocked) or far slower; ending the job "
                   "(--collective-timeout)\n",
                   static_cast<long long>(worldRank), static_cast<long long>(worldSize),
                   waitingFor.c_str(), static_cast<long long>(seconds));
      std::fflush(stderr);
      std::_Exit(1);
    };
    status = createMpiCommunicator(mesh, communicator, timeout);
  } else if (mesh.worldSize() > 1) {
    status = Status(StatusCode::kInvalidArgument,
                    "the plan is compiled for " + std::to_string(mesh.worldSize()) + " ranks (" +
                        mesh.describe() + "): start it with mpirun -np " +
                        std::to_string(mesh.worldSize()));
  } else {
    communicator = createSingleRankCommunicator();
  }
  if (!status.isOk()) {
    return fail(status);
  }
  // Every rank must run plans of one compile: mixed files would split inconsistent groups.
  if (worldSize > 1) {
    std::string identity = plan.producer() + "|" + mesh.describe() + "|" +
                           std::to_string(model.global_batch_size()) + "|" +
                           std::to_string(model.gradient_accumulation_steps()) + "|" +
                           model.precision() + "|" + std::to_string(plan.format_version());
    // Two 16-bit pieces of a hash, each summed with its square (exact in f64 for up to 2^20
    // ranks): the sums equal n·x and n·x² only when every rank has the same x.
    size_t hash = std::hash<std::string>{}(identity);
    double low = static_cast<double>(hash & 0xffff),
           high = static_cast<double>((hash >> 16) & 0xffff);
    std::vector<double> sums{low, low * low, high, high * high};
    status = communicator->allReduceWorldSum(sums);
    double n = static_cast<double>(worldSize);
    if (status.isOk() && (sums[0] != n * low || sums[1] != n * low * low || sums[2] != n * high ||
                          sums[3] != n * high * high)) {
      status = Status(StatusCode::kInvalidArgument,
                      "the ranks loaded plans of different compiles (mesh, batch, precision "
                      "or producer differ); recompile and give every rank the same plan");
    }
    if (!status.isOk()) {
      return fail(status);
    }
  }
  RankCoordinates coordinates = communicator->coordinates();
  std::unique_ptr<Backend> backend;
  status = createBackend(options.backend, backend);
  if (status.isOk()) {
    status = backend->prepare(plan, *communicator);
  }
  std::unique_ptr<PlanTrainer> trainer;
  if (status.isOk()) {
    status = PlanTrainer::create(plan, *backend, *communicator, trainer);
  }
  if (!status.isOk()) {
    return fail(status);
  }
  int64_t globalBatch = model.global_batch_size(), seq = trainer->seqLen();

  MLLogger logger;
  bool leader = worldRank == 0; // writes the log, the metrics and the progress
  bool logging = leader && !options.mllog.empty();
  if (logging) {
    status = logger.open(options.mllog);
    if (!status.isOk()) {
      return fail(status);
    }
    MLLOG_POINT(logger, "cache_clear", true);
    MLLOG_START(logger, "init_start", MLLogValue{});
  }
  // Every interval opened in the log is closed, also when the run fails, so a failed run's
  // log is still well formed (and says `aborted`).
  bool initOpen = logging, runOpen = false, blockOpen = false, evalOpen = false;
  int64_t samplesSoFar = 0;
  MetricsFile metrics;
  auto failRun = [&](const std::string &message) {
    if (logging) {
      if (evalOpen) {
        MLLOG_END(logger, "eval_stop", MLLogValue{}, {"samples_count", samplesSoFar});
      }
      if (blockOpen) {
        MLLOG_END(logger, "block_stop", MLLogValue{}, {"samples_count", samplesSoFar});
      }
      if (initOpen) {
        MLLOG_END(logger, "init_stop", MLLogValue{});
      }
      if (runOpen) {
        MLLOG_END(logger, "run_stop", MLLogValue{}, {"status", std::string("aborted")},
                  {"samples_count", samplesSoFar});
      }
    }
    (void)metrics.close(); // keep the steps that were taken
    return fail(message);
  };

  // Parameters and optimizer state: resumed, loaded, or drawn from the seed.
  uint64_t seed = options.seed >= 0 ? static_cast<uint64_t>(options.seed) : 0;
  if (!options.resume.empty()) {
    TensorFile file;
    std::string resumePath = rankPath(options.resume);
    status = readSafetensors(resumePath, file);
    // A checkpoint without a mesh is a single rank's.
    std::string savedMesh =
        file.metadata.count("mesh") ? file.metadata["mesh"] : MeshShape().describe();
    if (status.isOk() && savedMesh != mesh.describe()) {
      status = Status(StatusCode::kInvalidArgument,
                      "saved by a run on mesh '" + savedMesh + "', this plan is for '" +
                          mesh.describe() + "'; resume with the plan it was trained with");
    }
    if (status.isOk()) {
      status = trainer->load(file, /*withOptimizerState=*/true);
    }
    if (status.isOk() && worldSize > 1) {
      // Every rank's shard must be of the same step.
      std::vector<double> steps{static_cast<double>(trainer->stepsTaken())};
      status = communicator->allReduceWorldSum(steps);
      if (status.isOk() && steps[0] != static_cast<double>(trainer->stepsTaken() * worldSize)) {
        status =
            Status(StatusCode::kDataLoss,
                   "the ranks' checkpoint files hold different steps (this one " +
                       std::to_string(trainer->stepsTaken()) + "): they are not one checkpoint");
      }
    }
    if (!status.isOk()) {
      return failRun(resumePath + ": " + status.message());
    }
    // The data stream depends on the seed, the order and the batch: a resume continues the
    // checkpoint's stream, so all three must be the run's.
    auto entry = [&](const char *key) {
      auto it = file.metadata.find(key);
      return it == file.metadata.end() ? std::string() : it->second;
    };
    std::string savedSeed = entry("seed"), savedOrder = entry("data_order"),
                savedSamples = entry("samples");
    char *end = nullptr;
    uint64_t saved = std::strtoull(savedSeed.c_str(), &end, 10);
    if (savedSeed.empty() || *end != '\0' || savedOrder.empty() || savedSamples.empty()) {
      return failRun(options.resume + ": not a checkpoint of mlperf-run --save (its metadata "
                                      "lacks seed, data_order or samples)");
    }
    if (options.seed >= 0 && static_cast<uint64_t>(options.seed) != saved) {
      return failRun(options.resume + " was trained with --seed " + savedSeed +
                     "; a resume continues that run (omit --seed or pass the same one)");
    }
    if (savedOrder != options.dataOrder) {
      return failRun(options.resume + " was trained with --data-order " + savedOrder +
                     "; a resume continues that run");
    }
    if (savedSamples != std::to_string(trainer->stepsTaken() * model.global_batch_size())) {
      return failRun(options.resume + " stopped after " + savedSamples + " samples, which is not " +
                     std::to_string(trainer->stepsTaken()) + " steps of this plan's global batch " +
                     std::to_string(model.global_batch_size()) + ": a different plan?");
    }
    seed = saved;
  } else if (!options.initFrom.empty()) {
    TensorFile file;
    status = readSafetensors(options.initFrom, file);
    if (status.isOk()) {
      status = trainer->load(file, /*withOptimizerState=*/false);
    }
    if (!status.isOk()) {
      return failRun(options.initFrom + ": " + status.message());
    }
  } else {
    status = trainer->initialize(seed);
    if (!status.isOk()) {
      return failRun(status.message());
    }
  }

  SampleOrder order =
      options.dataOrder == "shuffled" ? SampleOrder::kShuffled : SampleOrder::kSequential;
  GPTBatches train;
  status = GPTBatches::open(options.data, seq, order, seed, train);
  if (!status.isOk()) {
    return failRun(status.message());
  }
  // Evaluation: the first eval_samples samples of the eval dataset in file order (fewer when
  // the dataset is smaller), whole micro-batches.
  std::vector<int64_t> evalTokens, evalLabels;
  int64_t evalSamples = 0;
  if (!options.evalData.empty()) {
    GPTBatches eval;
    status = GPTBatches::open(options.evalData, seq, SampleOrder::kSequential, 0, eval);
    if (!status.isOk()) {
      return failRun(status.message());
    }
    int64_t rows = trainer->microBatchRows();
    evalSamples = std::min(model.eval_samples(), eval.samplesPerEpoch()) / rows * rows;
    if (evalSamples == 0) {
      return failRun(options.evalData + " holds fewer samples than one micro-batch (" +
                     std::to_string(rows) + " x " + std::to_string(seq + 1) + " tokens)");
    }
    if (evalSamples < model.eval_samples() && leader) {
      std::fprintf(stderr,
                   "mlperf-run: note: evaluating on %lld samples (the model asks for %lld; "
                   "the eval dataset has %lld)\n",
                   static_cast<long long>(evalSamples),
                   static_cast<long long>(model.eval_samples()),
                   static_cast<long long>(eval.samplesPerEpoch()));
    }
    // This rank's eval micro-batches: b = dp rank, dp rank + dp, ...
    for (int64_t first = coordinates.dp * rows; first < evalSamples; first += mesh.dp * rows) {
      std::vector<int64_t> batchTokens, batchLabels;
      status = eval.fill(first, rows, batchTokens, batchLabels);
      if (!status.isOk()) {
        return failRun(status.message());
      }
      evalTokens.insert(evalTokens.end(), batchTokens.begin(), batchTokens.end());
      evalLabels.insert(evalLabels.end(), batchLabels.begin(), batchLabels.end());
    }
  }
  bool evaluating = evalSamples > 0;
  // The model's cadence in whole steps (rounded up: never evaluate before the samples).
  int64_t evalEverySteps =
      std::max<int64_t>(1, (model.eval_every_samples() + globalBatch - 1) / globalBatch);

  if (leader && !options.metricsOut.empty()) {
    status = metrics.open(options.metricsOut);
    if (!status.isOk()) {
      return failRun(status.message());
    }
  }
  if (logging) {
    BenchmarkConfig config;
    config.platform = std::to_string(mesh.nodes) + "x" + std::to_string(mesh.gpusPerNode) + " " +
                      backend->name() + " (mlperf-run)";
    config.benchmark = model.benchmark();
    config.globalBatchSize = globalBatch;
    config.microBatchSize = model.micro_batch_size();
    config.gradientAccumulationSteps = model.gradient_accumulation_steps();
    config.maxSequenceLength = seq;
    config.evalSamples = evalSamples;
    config.trainSamples = train.samplesPerEpoch();
    config.maxSteps = model.max_steps();
    config.warmupSteps = model.warmup_steps();
    config.decaySteps = model.decay_steps();
    config.baseLr = model.base_lr();
    config.endLr = model.end_lr();
    config.beta1 = model.beta1();
    config.beta2 = model.beta2();
    config.epsilon = model.epsilon();
    config.weightDecay = model.weight_decay();
    config.gradientClipNorm = model.clip_grad_norm();
    if (model.precision() == "fp32") {
      config.lowestPrecisionLinear = config.lowestPrecisionAttention = "float32";
    }
    logBenchmarkConfig(logger, config);
    MLLOG_POINT(logger, "seed", static_cast<int64_t>(seed));
    MLLOG_END(logger, "init_stop", MLLogValue{});
    MLLOG_START(logger, "run_start", MLLogValue{});
    initOpen = false;
    runOpen = true;
  }
  double initSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - initStart).count();
  // Everything printed from here on is rank 0's, for the whole job.
  bool printing = leader;
  if (printing) {
    std::printf("mlperf-run: %s on %s x %lld ranks (%s): %d parameter tensors, global batch "
                "%lld x %lld tokens, up to %lld steps%s (init %.1f s)\n",
                model.name().c_str(), backend->name(), static_cast<long long>(worldSize),
                mesh.describe().c_str(), static_cast<int>(parameterCount(plan)),
                static_cast<long long>(globalBatch), static_cast<long long>(seq),
                static_cast<long long>(maxSteps),
                evaluating ? (", eval every " + std::to_string(evalEverySteps) +
                              " steps, target eval loss " + jsonNumber(target))
                                 .c_str()
                           : "",
                initSeconds);
    std::fflush(stdout);
  }

  auto samplesAfter = [&](int64_t step) { return step * globalBatch; };
  // Checkpoints carry what a resume needs to continue the same data stream.
  auto saveCheckpoint = [&] {
    return trainer->save(rankPath(options.save),
                         {{"seed", std::to_string(seed)},
                          {"data_order", options.dataOrder},
                          {"samples", std::to_string(samplesAfter(trainer->stepsTaken()))},
                          {"mesh", mesh.describe()},
                          {"rank", std::to_string(worldRank)}});
  };
  bool terminal = printing && isatty(fileno(stderr));
  int64_t microRows = trainer->microBatchRows(), microBatches = trainer->accumulationSteps();
  auto fillRankBatch = [&](GPTBatches &batches, int64_t firstSample, std::vector<int64_t> &tokens,
                           std::vector<int64_t> &labels) {
    if (mesh.dp == 1) {
      return batches.fill(firstSample, globalBatch, tokens, labels);
    }
    tokens.clear();
    labels.clear();
    std::vector<int64_t> microTokens, microLabels;
    for (int64_t a = 0; a < microBatches; ++a) {
      int64_t first = firstSample + (a * mesh.dp + coordinates.dp) * microRows;
      Status filled = batches.fill(first, microRows, microTokens, microLabels);
      if (!filled.isOk()) {
        return filled;
      }
      tokens.insert(tokens.end(), microTokens.begin(), microTokens.end());
      labels.insert(labels.end(), microLabels.begin(), microLabels.end());
    }
    return Status::ok();
  };
  bool converged = false;
  double lastEval = NAN;
  int64_t firstStep = trainer->stepsTaken();
  std::vector<int64_t> tokens, labels;
  for (int64_t step = firstStep; step < maxSteps && !converged; ++step) {
    // Blocks follow the absolute step count, so a resumed run evaluates where an
    // uninterrupted one does.
    samplesSoFar = samplesAfter(step);
    if (logging && (step == firstStep || step % evalEverySteps == 0)) {
      MLLOG_START(logger, "block_start", MLLogValue{}, {"samples_count", samplesSoFar});
      blockOpen = true;
    }
    // This rank's micro-batches: micro-batch a of data-parallel rank d is micro-batch
    // a * dp + d of the global batch (Megatron's pretraining sampler).
    status = fillRankBatch(train, samplesSoFar, tokens, labels);
    auto start = std::chrono::steady_clock::now();
    TrainStepMetrics taken;
    if (status.isOk()) {
      status = trainer->step(tokens, labels, taken);
    }
    if (!status.isOk()) {
      return failRun(status.message());
    }
    samplesSoFar = samplesAfter(step + 1);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double tokensPerSecond = static_cast<double>(globalBatch * seq) / seconds;
    metrics.write("{\"step\": " + std::to_string(taken.step) +
                  ", \"samples\": " + std::to_string(samplesSoFar) +
                  ", \"loss\": " + jsonNumber(taken.loss) + ", \"lr\": " + jsonNumber(taken.lr) +
                  ", \"grad_norm\": " + jsonNumber(taken.gradNorm) +
                  ", \"tokens_per_s\": " + jsonNumber(tokensPerSecond) + "}");
    if (printing && options.printEvery > 0 &&
        (step % options.printEvery == 0 || step + 1 == maxSteps)) {
      std::printf("step %lld loss %.9g lr %.9g grad_norm %.9g time_ms %.1f\n",
                  static_cast<long long>(taken.step), taken.loss, taken.lr, taken.gradNorm,
                  seconds * 1e3);
      std::fflush(stdout);
    }
    if (terminal) {
      std::fprintf(stderr, "\r[%lld/%lld] loss %.4f  %.0f tokens/s  ",
                   static_cast<long long>(step + 1), static_cast<long long>(maxSteps), taken.loss,
                   tokensPerSecond);
    }
    // Every rank stops after the same step: the decision is the sum of what every rank saw
    // at this point (a signal arriving later counts at the next step), never a local read.
    int seen = interruptSignal;
    std::vector<double> stop{static_cast<double>(seen)};
    if (worldSize > 1) {
      status = communicator->allReduceWorldSum(stop);
      if (!status.isOk()) {
        return failRun(status.message());
      }
    }
    if (stop[0] != 0) {
      interruptSignal = seen != 0 ? seen : SIGTERM; // another rank's when not this one's
    }
    if (stop[0] != 0) {
      // Stop cleanly: the checkpoint holds every step taken, the log says aborted.
      if (!options.save.empty()) {
        status = saveCheckpoint();
        if (!status.isOk()) {
          return failRun(status.message());
        }
      }
      if (terminal) {
        std::fputc('\n', stderr);
      }
      std::string resume = options.save.empty()
                               ? std::string(" (no --save, so nothing to resume from)")
                               : "; continue with --resume " + options.save;
      failRun("interrupted by signal " + std::to_string(interruptSignal) + " after step " +
              std::to_string(step) + resume);
      return 128 + interruptSignal;
    }
    if (options.saveEvery > 0 && (step + 1) % options.saveEvery == 0 && step + 1 < maxSteps) {
      status = saveCheckpoint();
      if (!status.isOk()) {
        return failRun(status.message());
      }
      if (printing) {
        std::printf("mlperf-run: wrote %s (step %lld)\n", rankPath(options.save).c_str(),
                    static_cast<long long>(trainer->stepsTaken()));
      }
    }
    bool blockEnds = (step + 1) % evalEverySteps == 0 || step + 1 == maxSteps;
    if (blockEnds && logging) {
      MLLOG_END(logger, "block_stop", MLLogValue{}, {"samples_count", samplesSoFar});
      blockOpen = false;
    }
    if (blockEnds && evaluating) {
      if (logging) {
        MLLOG_START(logger, "eval_start", MLLogValue{}, {"samples_count", samplesSoFar});
        evalOpen = true;
      }
      status = trainer->evalLoss(evalTokens, evalLabels, lastEval);
      if (!status.isOk()) {
        return failRun(status.message());
      }
      converged = lastEval <= target;
      if (logging) {
        MLLOG_POINT(logger, "eval_accuracy", lastEval, {"samples_count", samplesSoFar});
        MLLOG_END(logger, "eval_stop", MLLogValue{}, {"samples_count", samplesSoFar});
        evalOpen = false;
      }
      if (terminal) {
        std::fputc('\n', stderr);
      }
      if (printing) {
        std::printf("eval step %lld samples %lld eval_loss %.6f target %s%s\n",
                    static_cast<long long>(taken.step), static_cast<long long>(samplesSoFar),
                    lastEval, jsonNumber(target).c_str(), converged ? " reached" : "");
      }
      std::fflush(stdout);
    }
  }
  if (terminal) {
    std::fputc('\n', stderr);
  }
  int64_t samplesDone = samplesAfter(trainer->stepsTaken());
  if (logging) {
    MLLOG_END(logger, "run_stop", MLLogValue{},
              {"status", std::string(converged || !evaluating ? "success" : "aborted")},
              {"samples_count", samplesDone});
    status = logger.status();
    if (!status.isOk()) {
      return fail(options.mllog + ": " + status.message());
    }
  }
  status = metrics.close();
  if (!status.isOk()) {
    return fail(status);
  }
  if (!options.save.empty()) {
    status = saveCheckpoint();
    if (!status.isOk()) {
      return fail(status);
    }
    if (printing) {
      std::printf("mlperf-run: wrote %s (step %lld)\n", rankPath(options.save).c_str(),
                  static_cast<long long>(trainer->stepsTaken()));
    }
  }
  if (evaluating && !converged) {
    if (printing) {
      std::printf("mlperf-run: target eval loss %s not reached in %lld steps (last %.6f)\n",
                  jsonNumber(target).c_str(), static_cast<long long>(maxSteps), lastEval);
    }
    return 2;
  }
  if (evaluating && printing) {
    std::printf("mlperf-run: converged: eval loss %.6f <= %s after %lld samples\n", lastEval,
                jsonNumber(target).c_str(), static_cast<long long>(samplesDone));
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  CommandLine cli("mlperf-run", "mlperf-run: train from an execution plan (mlperfc compile -o "
                                "plan.pb) on a backend; a plan for several ranks runs under "
                                "mpirun -np N, one rank per process (docs/distributed.md)");
  cli.addString("backend", &options.backend, "NAME", "cpu (default; the reference backend)");
  cli.addString("data", &options.data, "PREFIX",
                "Training data: Megatron indexed dataset PREFIX.bin/.idx (required)");
  cli.addString("eval-data", &options.evalData, "PREFIX",
                "Evaluation data (file order); eval loss at the model's cadence");
  cli.addString("data-order", &options.dataOrder, "ORDER",
                "shuffled (by --seed, default) or sequential (file order)");
  cli.addInt("seed", &options.seed, "Seed of the parameter init and the data order (default 0)");
  cli.addInt("max-steps", &options.maxSteps, "Stop after this many steps (default: the model's)");
  cli.addString("target", &options.target, "LOSS",
                "Stop when the eval loss is at most LOSS (default: the model's target)");
  cli.addString("init-from", &options.initFrom, "W.safetensors",
                "Start from these parameters (Hugging Face names) with a fresh optimizer");
  cli.addString("save", &options.save, "CKPT.safetensors",
                "At the end, write parameters, optimizer state and step (atomically)");
  cli.addInt("save-every", &options.saveEvery,
             "Also write the --save checkpoint every N steps (a crash loses at most N steps)");
  cli.addString("resume", &options.resume, "CKPT.safetensors",
                "Continue a run saved with --save, bit-identically");
  cli.addString("mllog", &options.mllog, "FILE", "Write the MLPerf log here");
  cli.addString("metrics-out", &options.metricsOut, "FILE.jsonl",
                "One JSON object per step: step, samples, loss, lr, grad_norm, tokens_per_s");
  cli.addInt("collective-timeout", &options.collectiveTimeout,
             "Under mpirun: end the job when a collective or pipeline transfer waits longer "
             "than this many seconds for another rank (default 600; 0: wait forever)");
  cli.addInt("print-every", &options.printEvery,
             "Print a step line every N steps (default 10; 0: only evaluations)");
  cli.setPositional(&options.positional, "PLAN.pb", 1);
  if (std::optional<int> exit = cli.parse(argc, argv)) {
    return *exit;
  }
  if (launchedByMpiLauncher()) {
    Status status = initializeMpi(&argc, &argv, worldRank, worldSize);
    if (!status.isOk()) {
      return fail(status);
    }
  }
  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);
  int exitCode = run(options);
  if (exitCode == 1 && worldSize > 1) {
    abortMpi(1); // the other ranks would wait for this one in their next collective
  }
  finalizeMpi();
  return exitCode;
}
