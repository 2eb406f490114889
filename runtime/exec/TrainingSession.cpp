//===- TrainingSession.cpp - One training run of a plan --------*- C++ -*-===//

#include "runtime/exec/TrainingSession.h"

#include "runtime/data/GPTBatches.h"
#include "runtime/mllog/BenchmarkLog.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/support/ChromeTrace.h"
#include "runtime/support/FileOutput.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <unistd.h>

namespace mlperf::rt {
namespace {

Status invalid(const std::string &message) { return Status(StatusCode::kInvalidArgument, message); }

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
    if (out.is_open() && error.empty()) {
      out << line << '\n';
      out.flush();
      if (!out) {
        error = std::strerror(errno); // a full disk: the file is incomplete
      }
    }
  }
  Status close() {
    if (!out.is_open()) {
      return Status::ok();
    }
    out.close();
    if (error.empty() && !out) {
      error = std::strerror(errno);
    }
    if (error.empty() && std::rename(temporary.c_str(), final.c_str()) != 0) {
      error = std::strerror(errno);
    }
    if (!error.empty()) {
      std::remove(temporary.c_str()); // never leave an incomplete file behind
      return Status(StatusCode::kInternal, "cannot write metrics file " + final + ": " + error);
    }
    return Status::ok();
  }

private:
  std::ofstream out;
  std::string final, temporary, error;
};

} // namespace

struct TrainingSession::Data {
  GPTBatches train;
  std::vector<int64_t> evalTokens, evalLabels, tokens, labels;
  /// The next step's batch, read on a host thread while the current step runs: the only
  /// user of `train` while it is in flight, which `step` waits for before reading again.
  struct Next {
    int64_t step = -1;
    std::vector<int64_t> tokens, labels;
    std::future<Status> read;
  } next;
  ~Data() {
    if (next.read.valid()) {
      next.read.wait(); // it writes next.tokens and reads `train`
    }
  }
};

/// The leader's MLPerf log and metrics, and which log intervals are open (all are closed,
/// also when the run fails, so a failed run's log is well formed and says `aborted`).
struct TrainingSession::Log {
  MLLogger logger;
  bool logging = false, initOpen = false, runOpen = false, blockOpen = false, evalOpen = false;
  int64_t samples = 0;
  MetricsFile metrics;
};

TrainingSession::~TrainingSession() = default;

/// The submission keys as the rules and the official checker take them.
static Status checkSubmissionFields(const SessionOptions &options) {
  if (options.submissionOrg.empty()) {
    return invalid("--submission-org must name the submitting organization");
  }
  if (options.submissionDivision != "closed" && options.submissionDivision != "open") {
    return invalid("--submission-division must be closed or open, got '" +
                   options.submissionDivision + "'");
  }
  const std::string &status = options.submissionStatus;
  if (!status.empty() && status != "onprem" && status != "cloud" && status != "research" &&
      status != "preview") {
    return invalid("--submission-status must be onprem, cloud, research or preview, got '" +
                   status + "'");
  }
  for (const std::string *field : {&options.submissionOrg, &options.submissionPlatform}) {
    if (field->find_first_of("\n\r") != std::string::npos) {
      return invalid("the submission fields are one line each");
    }
  }
  return Status::ok();
}

Status TrainingSession::open(const SessionOptions &options, RankInfo rank,
                             const CommunicatorFactory &makeCommunicator,
                             std::unique_ptr<TrainingSession> &session) {
  if (options.dataOrder != "shuffled" && options.dataOrder != "sequential") {
    return invalid("--data-order must be shuffled or sequential, got '" + options.dataOrder + "'");
  }
  if (!options.initFrom.empty() && !options.resume.empty()) {
    return invalid("--init-from and --resume are alternatives: give one");
  }
  MLPERF_RETURN_IF_ERROR(checkSubmissionFields(options));
  if (options.data.empty()) {
    return invalid("--data PREFIX (a Megatron indexed dataset PREFIX.bin/.idx) is required");
  }
  if (options.saveEvery < 0 || (options.saveEvery > 0 && options.save.empty())) {
    return invalid("--save-every N needs N >= 0 and --save CKPT");
  }
  if (!options.target.empty() && options.evalData.empty()) {
    return invalid("--target needs --eval-data to evaluate against");
  }
  auto start = std::chrono::steady_clock::now();
  session.reset(new TrainingSession());
  TrainingSession &s = *session;
  s.options = options;
  s.rank = rank;
  s.log = std::make_unique<Log>();
  s.data = std::make_unique<Data>();
  MLPERF_RETURN_IF_ERROR(s.loadPlan());
  const plan::ModelInfo &model = s.planFile.model();
  s.targetLoss = model.target_value();
  if (!options.target.empty()) {
    char *end = nullptr;
    s.targetLoss = std::strtod(options.target.c_str(), &end);
    if (*end != '\0' || !std::isfinite(s.targetLoss)) {
      return invalid("--target must be a number, got '" + options.target + "'");
    }
  }
  s.stepLimit = options.maxSteps >= 0 ? options.maxSteps : model.max_steps();
  s.mesh = planMesh(s.planFile);
  MLPERF_RETURN_IF_ERROR(makeCommunicator(s.mesh, s.communicator));
  MLPERF_RETURN_IF_ERROR(s.checkRanksRunOneCompile());
  MLPERF_RETURN_IF_ERROR(
      createBackend(options.backend, s.backend, {options.gemmCache, !options.noCudnnAttention}));
  MLPERF_RETURN_IF_ERROR(s.backend->prepare(s.planFile, *s.communicator));
  s.backend->traceCommands(!options.trace.empty());
  MLPERF_RETURN_IF_ERROR(PlanTrainer::create(s.planFile, *s.backend, *s.communicator, s.trainer));
  s.globalBatch = model.global_batch_size();
  s.seq = s.trainer->seqLen();
  Log &log = *s.log;
  log.logging = s.leader() && !options.mllog.empty();
  if (log.logging) {
    MLPERF_RETURN_IF_ERROR(log.logger.open(options.mllog));
    MLLOG_POINT(log.logger, "cache_clear", true);
    MLLOG_START(log.logger, "init_start", MLLogValue{});
    log.initOpen = true;
  }
  Status status = s.startState();
  if (status.isOk()) {
    status = s.openData();
  }
  if (status.isOk()) {
    status = s.openOutputs();
  }
  if (!status.isOk()) {
    s.abandon();
    return status;
  }
  s.firstStep = s.trainer->stepsTaken();
  s.initSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Status::ok();
}

Status TrainingSession::loadPlan() {
  // A pipeline-parallel plan is one file per stage (plan.stage<k>.pb): the first names the
  // mesh, which says which stage this rank runs.
  std::string path = options.plan;
  if (!std::ifstream(path) && std::ifstream(stagePlanPath(path, 0))) {
    MLPERF_RETURN_IF_ERROR(rt::loadPlan(stagePlanPath(path, 0), planFile));
    MeshShape stageMesh = planMesh(planFile);
    if (stageMesh.worldSize() != rank.size) {
      return invalid("the plan is compiled for " + std::to_string(stageMesh.worldSize()) +
                     " ranks (" + stageMesh.describe() + ") but " + std::to_string(rank.size) +
                     " were started: run mpirun -np " + std::to_string(stageMesh.worldSize()));
    }
    path = stagePlanPath(path, rankCoordinates(stageMesh, rank.rank).pp);
  }
  MLPERF_RETURN_IF_ERROR(rt::loadPlan(path, planFile));
  if (planMesh(planFile).pp > 1 && path == options.plan) {
    // One stage's own file: every rank must read its own stage, found from the plan's name.
    const MeshShape mesh = planMesh(planFile);
    const std::string suffix = ".stage" + std::to_string(planFile.pipeline_stage()) + ".pb";
    std::string name = path.size() > suffix.size() &&
                               path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0
                           ? path.substr(0, path.size() - suffix.size()) + ".pb"
                           : "the name given to mlperfc compile -o";
    return invalid(path + " is pipeline stage " + std::to_string(planFile.pipeline_stage()) +
                   " of a " + std::to_string(mesh.pp) + "-stage plan: pass the plan's name, " +
                   name + ", from which every rank reads its own stage (mpirun -np " +
                   std::to_string(mesh.worldSize()) + " mlperf-run " + name + " ...)");
  }
  if (planMesh(planFile).pp > 1) {
    // The stages' schedules must agree on every transfer before anything runs.
    std::vector<plan::Plan> stages(planMesh(planFile).pp);
    for (size_t k = 0; k < stages.size(); ++k) {
      MLPERF_RETURN_IF_ERROR(
          rt::loadPlan(stagePlanPath(options.plan, static_cast<int64_t>(k)), stages[k]));
    }
    MLPERF_RETURN_IF_ERROR(checkStageTransfers(stages));
  }
  planIdentity = planFingerprint(planFile);
  return Status::ok();
}

Status TrainingSession::checkRanksRunOneCompile() {
  // Every rank must run plans of one compile: mixed files would split inconsistent groups.
  if (rank.size <= 1) {
    return Status::ok();
  }
  const plan::ModelInfo &model = planFile.model();
  std::string identity = planFile.producer() + "|" + mesh.describe() + "|" +
                         std::to_string(model.global_batch_size()) + "|" +
                         std::to_string(model.gradient_accumulation_steps()) + "|" +
                         model.precision() + "|" + std::to_string(planFile.format_version());
  // Two 16-bit pieces of a hash, each summed with its square (exact in f64 for up to 2^20
  // ranks): the sums equal n·x and n·x² only when every rank has the same x.
  size_t hash = std::hash<std::string>{}(identity);
  double low = static_cast<double>(hash & 0xffff),
         high = static_cast<double>((hash >> 16) & 0xffff);
  std::vector<double> sums{low, low * low, high, high * high};
  MLPERF_RETURN_IF_ERROR(communicator->allReduceWorldSum(sums));
  double n = static_cast<double>(rank.size);
  if (sums[0] != n * low || sums[1] != n * low * low || sums[2] != n * high ||
      sums[3] != n * high * high) {
    return invalid("the ranks loaded plans of different compiles (mesh, batch, precision or "
                   "producer differ); recompile and give every rank the same plan");
  }
  return Status::ok();
}

/// Rank r's file of a multi-rank job: CKPT.safetensors -> CKPT.rank<r>-of-<n>.safetensors.
static std::string rankFile(const std::string &path, RankInfo rank) {
  if (rank.size == 1) {
    return path;
  }
  std::string suffix = ".rank" + std::to_string(rank.rank) + "-of-" + std::to_string(rank.size);
  const std::string extension = ".safetensors";
  if (path.size() > extension.size() &&
      path.compare(path.size() - extension.size(), extension.size(), extension) == 0) {
    return path.substr(0, path.size() - extension.size()) + suffix + extension;
  }
  return path + suffix;
}

std::string TrainingSession::checkpointPath() const { return rankFile(options.save, rank); }

Status TrainingSession::startState() {
  // Parameters and optimizer state: resumed, loaded, or drawn from the seed.
  seed = options.seed >= 0 ? static_cast<uint64_t>(options.seed) : 0;
  if (!options.resume.empty()) {
    std::string resumePath = rankFile(options.resume, rank);
    TensorFile file;
    // The reader's errors name the file already; the checks below say which file they mean.
    MLPERF_RETURN_IF_ERROR(readSafetensors(resumePath, file));
    auto entry = [&](const char *key) {
      auto it = file.metadata.find(key);
      return it == file.metadata.end() ? std::string() : it->second;
    };
    Status status = Status::ok();
    // A checkpoint without a mesh is a single rank's.
    std::string savedMesh = file.metadata.count("mesh") ? entry("mesh") : MeshShape().describe();
    // Only a train state mlperf-run wrote, untouched: its checksum covers the metadata below.
    if (!hasChecksum(file) || entry("format") != "mlperfc train state") {
      status =
          invalid("not a train state written by mlperf-run --save (metadata 'format' is '" +
                  entry("format") + "'" + (hasChecksum(file) ? "" : " and it carries no checksum") +
                  "); --init-from loads weights");
    }
    if (status.isOk() && rank.size > 1 && entry("rank") != std::to_string(rank.rank)) {
      status = invalid("holds rank " + entry("rank") + "'s state, not rank " +
                       std::to_string(rank.rank) + "'s");
    }
    if (status.isOk() && savedMesh != mesh.describe()) {
      status = invalid("saved by a run on mesh '" + savedMesh + "', this plan is for '" +
                       mesh.describe() + "'; resume with the plan it was trained with");
    }
    // Another plan of the same shapes (other hyperparameters, schedule, precision of a
    // command) would continue the run with other math.
    if (status.isOk() && entry("plan") != planIdentity) {
      status = invalid("saved by a run of plan " +
                       (entry("plan").empty() ? std::string("(none recorded)") : entry("plan")) +
                       ", this is plan " + planIdentity +
                       " (metadata 'plan'); resume with the plan it was trained with");
    }
    if (status.isOk()) {
      status = trainer->load(TensorFileSource(file), /*withOptimizerState=*/true);
    }
    if (status.isOk() && rank.size > 1) {
      // Every rank's shard must be of the same step.
      std::vector<double> steps{static_cast<double>(trainer->stepsTaken())};
      status = communicator->allReduceWorldSum(steps);
      if (status.isOk() && steps[0] != static_cast<double>(trainer->stepsTaken() * rank.size)) {
        status =
            Status(StatusCode::kDataLoss,
                   "the ranks' checkpoint files hold different steps (this one " +
                       std::to_string(trainer->stepsTaken()) + "): they are not one checkpoint");
      }
    }
    if (!status.isOk()) {
      return Status(status.code(), resumePath + ": " + status.message());
    }
    // The data stream depends on the seed, the order and the batch: a resume continues the
    // checkpoint's stream, so all three must be the run's.
    std::string savedSeed = entry("seed"), savedOrder = entry("data_order"),
                savedSamples = entry("samples");
    char *end = nullptr;
    uint64_t saved = std::strtoull(savedSeed.c_str(), &end, 10);
    if (savedSeed.empty() || *end != '\0' || savedOrder.empty() || savedSamples.empty()) {
      return invalid(options.resume + ": not a checkpoint of mlperf-run --save (its metadata "
                                      "lacks seed, data_order or samples)");
    }
    if (options.seed >= 0 && static_cast<uint64_t>(options.seed) != saved) {
      return invalid(options.resume + " was trained with --seed " + savedSeed +
                     "; a resume continues that run (omit --seed or pass the same one)");
    }
    if (savedOrder != options.dataOrder) {
      return invalid(options.resume + " was trained with --data-order " + savedOrder +
                     "; a resume continues that run");
    }
    if (savedSamples != std::to_string(samplesAfter(trainer->stepsTaken()))) {
      return invalid(options.resume + " stopped after " + savedSamples + " samples, which is not " +
                     std::to_string(trainer->stepsTaken()) + " steps of this plan's global batch " +
                     std::to_string(globalBatch) + ": a different plan?");
    }
    seed = saved;
    return trainer->setSeed(seed); // the checkpoint's run keys its dropout masks by it
  }
  if (!options.initFrom.empty()) {
    // Weights are read tensor by tensor (a sharded Hugging Face checkpoint is larger than a
    // host's memory); a file mlperfc wrote carries a checksum over all of it, so it is read
    // whole and verified.
    auto start = std::chrono::steady_clock::now();
    CheckpointReader checkpoint;
    MLPERF_RETURN_IF_ERROR(CheckpointReader::open(options.initFrom, checkpoint)); // names it
    TensorFile verified;
    bool checksummed = checkpoint.numFiles() == 1 && checkpoint.metadata().count("checksum");
    if (checksummed) {
      MLPERF_RETURN_IF_ERROR(readSafetensors(checkpoint.resolvedPath(), verified));
    }
    MLPERF_RETURN_IF_ERROR(trainer->setSeed(seed));
    Status status = checksummed ? trainer->load(TensorFileSource(verified), false)
                                : trainer->load(checkpoint, /*withOptimizerState=*/false);
    if (!status.isOk()) {
      return Status(status.code(), options.initFrom + ": " + status.message());
    }
    if (leader()) {
      std::fprintf(stderr, "mlperf-run: initialized from %s in %.1f s\n",
                   checkpoint.describe().c_str(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return Status::ok();
  }
  return trainer->initialize(seed);
}

Status TrainingSession::openData() {
  const plan::ModelInfo &model = planFile.model();
  SampleOrder order =
      options.dataOrder == "shuffled" ? SampleOrder::kShuffled : SampleOrder::kSequential;
  MLPERF_RETURN_IF_ERROR(GPTBatches::open(options.data, seq, order, seed, data->train));
  // The model's cadence in whole steps (rounded up: never evaluate before the samples).
  evalEvery = std::max<int64_t>(1, (model.eval_every_samples() + globalBatch - 1) / globalBatch);
  evalSkip = model.eval_skip();
  if (options.evalData.empty()) {
    return Status::ok();
  }
  // Evaluation: the first eval_samples samples of the eval dataset in file order (fewer when
  // the dataset is smaller), whole micro-batches.
  GPTBatches eval;
  MLPERF_RETURN_IF_ERROR(
      GPTBatches::open(options.evalData, seq, SampleOrder::kSequential, 0, eval));
  int64_t rows = trainer->microBatchRows();
  evalSamples = std::min(model.eval_samples(), eval.samplesPerEpoch()) / rows * rows;
  if (evalSamples == 0) {
    return invalid(options.evalData + " holds fewer samples than one micro-batch (" +
                   std::to_string(rows) + " x " + std::to_string(seq + 1) + " tokens)");
  }
  if (evalSamples < model.eval_samples() && leader()) {
    std::fprintf(stderr,
                 "mlperf-run: note: evaluating on %lld samples (the model asks for %lld; the eval "
                 "dataset has %lld)\n",
                 static_cast<long long>(evalSamples), static_cast<long long>(model.eval_samples()),
                 static_cast<long long>(eval.samplesPerEpoch()));
  }
  // This rank's eval micro-batches: b = dp rank, dp rank + dp, ...
  RankCoordinates coordinates = communicator->coordinates();
  for (int64_t first = coordinates.dp * rows; first < evalSamples; first += mesh.dp * rows) {
    std::vector<int64_t> batchTokens, batchLabels;
    MLPERF_RETURN_IF_ERROR(eval.fill(first, rows, batchTokens, batchLabels));
    data->evalTokens.insert(data->evalTokens.end(), batchTokens.begin(), batchTokens.end());
    data->evalLabels.insert(data->evalLabels.end(), batchLabels.begin(), batchLabels.end());
  }
  return Status::ok();
}

Status TrainingSession::openOutputs() {
  // A run killed mid-write leaves its temporary files behind; the next run on the same paths
  // removes those of writers that are gone.
  if (!options.save.empty()) {
    removeStaleTemporaries(checkpointPath());
  }
  if (leader() && !options.metricsOut.empty()) {
    removeStaleTemporaries(options.metricsOut);
    MLPERF_RETURN_IF_ERROR(log->metrics.open(options.metricsOut));
  }
  if (!log->logging) {
    return Status::ok();
  }
  const plan::ModelInfo &model = planFile.model();
  BenchmarkConfig config = benchmarkConfig(model);
  config.organization = options.submissionOrg;
  config.division = options.submissionDivision;
  config.status = options.submissionStatus;
  config.platform = !options.submissionPlatform.empty()
                        ? options.submissionPlatform
                        : std::to_string(mesh.nodes) + "x" + std::to_string(mesh.gpusPerNode) +
                              " " + backend->name() + " (mlperf-run)";
  config.nodes = mesh.nodes;
  config.acceleratorsPerNode = mesh.gpusPerNode;
  config.globalBatchSize = globalBatch;
  config.maxSequenceLength = seq;
  config.evalSamples = evalSamples;
  config.trainSamples = data->train.samplesPerEpoch();
  logBenchmarkConfig(log->logger, config);
  MLLOG_POINT(log->logger, "seed", static_cast<int64_t>(seed));
  MLLOG_END(log->logger, "init_stop", MLLogValue{});
  MLLOG_START(log->logger, "run_start", MLLogValue{});
  log->initOpen = false;
  log->runOpen = true;
  return Status::ok();
}

std::string TrainingSession::describe() const {
  const plan::ModelInfo &model = planFile.model();
  char line[512];
  std::snprintf(line, sizeof line,
                "%s on %s x %lld ranks (%s): %lld parameter tensors, global batch %lld x %lld "
                "tokens, up to %lld steps%s (init %.1f s)",
                model.name().c_str(), backend->name(), static_cast<long long>(rank.size),
                mesh.describe().c_str(), static_cast<long long>(parameterCount(planFile)),
                static_cast<long long>(globalBatch), static_cast<long long>(seq),
                static_cast<long long>(stepLimit),
                evaluating()
                    ? (", eval every " + std::to_string(evalEvery) + " steps" +
                       (evalSkip > 0 ? " from step " + std::to_string((evalSkip + 1) * evalEvery)
                                     : std::string()) +
                       ", target eval loss " + jsonNumber(targetLoss))
                          .c_str()
                    : "",
                initSeconds);
  return line;
}

Status TrainingSession::step(StepReport &report) {
  int64_t step = trainer->stepsTaken();
  if (step >= stepLimit) {
    return invalid("the run already took its " + std::to_string(stepLimit) + " steps");
  }
  // Blocks follow the absolute step count, so a resumed run evaluates where an uninterrupted
  // one does.
  log->samples = samplesAfter(step);
  if (log->logging && (step == firstStep || evaluationAfter(step))) {
    MLLOG_START(log->logger, "block_start", MLLogValue{}, {"samples_count", log->samples});
    log->blockOpen = true;
  }
  // This rank's micro-batches: read while the previous step ran, or now.
  auto waitStart = std::chrono::steady_clock::now();
  int64_t dpRank = communicator->coordinates().dp;
  Data::Next &next = data->next;
  if (next.step == step) {
    Status read = next.read.get();
    next.step = -1;
    MLPERF_RETURN_IF_ERROR(read);
    std::swap(data->tokens, next.tokens);
    std::swap(data->labels, next.labels);
  } else {
    if (next.read.valid()) {
      next.read.wait(); // another step's: dropped, but `train` is free only once it is done
      next.read = {};
    }
    next.step = -1;
    MLPERF_RETURN_IF_ERROR(readStepBatch(step, dpRank, data->tokens, data->labels));
  }
  auto start = std::chrono::steady_clock::now();
  report.inputWaitSeconds = std::chrono::duration<double>(start - waitStart).count();
  if (options.prefetch && step + 1 < stepLimit) {
    next.step = step + 1;
    next.read = std::async(std::launch::async, [this, dpRank, following = step + 1] {
      return readStepBatch(following, dpRank, data->next.tokens, data->next.labels);
    });
  }
  MLPERF_RETURN_IF_ERROR(trainer->step(data->tokens, data->labels, report.metrics));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!options.trace.empty()) {
    lastStepSpans = backend->commandSpans();
    lastTracedStep = step;
  }
  report.samples = log->samples = samplesAfter(step + 1);
  report.tokensPerSecond = static_cast<double>(globalBatch * seq) / report.seconds;
  log->metrics.write(
      "{\"step\": " + std::to_string(report.metrics.step) + ", \"samples\": " +
      std::to_string(report.samples) + ", \"loss\": " + jsonNumber(report.metrics.loss) +
      ", \"lr\": " + jsonNumber(report.metrics.lr) +
      ", \"grad_norm\": " + jsonNumber(report.metrics.gradNorm) +
      ", \"tokens_per_s\": " + jsonNumber(report.tokensPerSecond) +
      ", \"compute_s\": " + jsonNumber(report.metrics.computeSeconds) +
      ", \"communication_s\": " + jsonNumber(report.metrics.communicationSeconds) +
      ", \"exposed_communication_s\": " + jsonNumber(report.metrics.exposedCommunicationSeconds) +
      ", \"input_wait_s\": " + jsonNumber(report.inputWaitSeconds) + "}");
  if (evaluationDue() && log->logging) {
    MLLOG_END(log->logger, "block_stop", MLLogValue{}, {"samples_count", log->samples});
    log->blockOpen = false;
  }
  return Status::ok();
}

Status TrainingSession::readStepBatch(int64_t step, int64_t dpRank, std::vector<int64_t> &tokens,
                                      std::vector<int64_t> &labels) {
  int64_t rows = trainer->microBatchRows(), micro = trainer->accumulationSteps();
  int64_t first = samplesAfter(step);
  bool inOrder = mesh.dp == 1;
  for (int64_t a = 0; a < micro && inOrder; ++a) {
    inOrder = trainer->globalMicroBatch(a, 0) == a;
  }
  if (inOrder) { // the whole global batch, in order: one read
    return data->train.fill(first, globalBatch, tokens, labels);
  }
  tokens.clear();
  labels.clear();
  std::vector<int64_t> microTokens, microLabels;
  for (int64_t a = 0; a < micro; ++a) {
    MLPERF_RETURN_IF_ERROR(data->train.fill(first + trainer->globalMicroBatch(a, dpRank) * rows,
                                            rows, microTokens, microLabels));
    tokens.insert(tokens.end(), microTokens.begin(), microTokens.end());
    labels.insert(labels.end(), microLabels.begin(), microLabels.end());
  }
  return Status::ok();
}

bool TrainingSession::evaluationAfter(int64_t taken) const {
  // Every evalEvery steps once the benchmark's skipped evaluations are past, and at the end.
  bool cadence = taken % evalEvery == 0 && taken / evalEvery > evalSkip;
  return taken > firstStep && (cadence || taken == stepLimit);
}

bool TrainingSession::evaluationDue() const { return evaluationAfter(trainer->stepsTaken()); }

Status TrainingSession::evaluate(EvalReport &report) {
  report.samples = samplesAfter(trainer->stepsTaken());
  if (!evaluating()) {
    return invalid("the run has no evaluation data (--eval-data)");
  }
  if (log->logging) {
    MLLOG_START(log->logger, "eval_start", MLLogValue{}, {"samples_count", report.samples});
    log->evalOpen = true;
  }
  MLPERF_RETURN_IF_ERROR(trainer->evalLoss(data->evalTokens, data->evalLabels, report.loss));
  report.converged = report.loss <= targetLoss;
  if (log->logging) {
    MLLOG_POINT(log->logger, "eval_accuracy", report.loss, {"samples_count", report.samples});
    MLLOG_END(log->logger, "eval_stop", MLLogValue{}, {"samples_count", report.samples});
    log->evalOpen = false;
  }
  return Status::ok();
}

Status TrainingSession::agreeOnStop(int localSignal, int &stopSignal) {
  std::vector<double> stop{static_cast<double>(localSignal)};
  if (rank.size > 1) {
    MLPERF_RETURN_IF_ERROR(communicator->allReduceWorldSum(stop));
  }
  // Another rank's signal when not this one's.
  stopSignal = stop[0] == 0 ? 0 : localSignal != 0 ? localSignal : SIGTERM;
  return Status::ok();
}

Status TrainingSession::saveCheckpoint() {
  // Checkpoints carry what a resume needs to continue the same data stream.
  return trainer->save(checkpointPath(),
                       {{"seed", std::to_string(seed)},
                        {"data_order", options.dataOrder},
                        {"samples", std::to_string(samplesAfter(trainer->stepsTaken()))},
                        {"mesh", mesh.describe()},
                        {"rank", std::to_string(rank.rank)},
                        {"plan", planIdentity}});
}

Status TrainingSession::writeTrace() const {
  Trace trace;
  trace.metadata["source"] = "mlperf-run (measured)";
  trace.metadata["backend"] = backend->name();
  trace.metadata["step"] = std::to_string(lastTracedStep);
  int64_t stage = planFile.pipeline_stage();
  trace.processNames[rank.rank] = "rank " + std::to_string(rank.rank) + " (pipeline stage " +
                                  std::to_string(stage) + ", measured)";
  trace.threadNames[{rank.rank, 0}] = "stream 0: compute";
  trace.threadNames[{rank.rank, 1}] = "stream 1: communication";
  for (const Backend::CommandSpan &span : lastStepSpans) {
    const plan::Program &program = planFile.programs(span.program);
    const plan::Command &command = program.commands(span.command);
    TraceSpan out;
    out.name = command.origin().empty() ? command.op() : command.op() + " " + command.origin();
    out.process = rank.rank;
    out.thread = span.stream;
    out.startSeconds = span.start;
    out.seconds = span.seconds;
    out.args["program"] = program.name();
    if (command.has_micro_batch()) {
      out.args["micro_batch"] = std::to_string(command.micro_batch());
    }
    trace.spans.push_back(std::move(out));
  }
  std::string path = options.trace;
  if (rank.size > 1) {
    size_t dot = path.rfind('.');
    size_t slash = path.rfind('/');
    std::string suffix = ".rank" + std::to_string(rank.rank);
    path = dot != std::string::npos && (slash == std::string::npos || dot > slash)
               ? path.substr(0, dot) + suffix + path.substr(dot)
               : path + suffix;
  }
  return writeChromeTrace(path, trace);
}

Status TrainingSession::finish(bool converged) {
  if (!options.trace.empty() && lastTracedStep >= 0) {
    MLPERF_RETURN_IF_ERROR(writeTrace());
  }
  if (log->logging) {
    MLLOG_END(log->logger, "run_stop", MLLogValue{},
              {"status", std::string(converged || !evaluating() ? "success" : "aborted")},
              {"samples_count", samplesAfter(trainer->stepsTaken())});
    log->runOpen = false;
    Status status = log->logger.status();
    if (!status.isOk()) {
      return Status(status.code(), options.mllog + ": " + status.message());
    }
  }
  return log->metrics.close();
}

void TrainingSession::abandon() {
  Log &l = *log;
  if (l.logging) {
    if (l.evalOpen) {
      MLLOG_END(l.logger, "eval_stop", MLLogValue{}, {"samples_count", l.samples});
    }
    if (l.blockOpen) {
      MLLOG_END(l.logger, "block_stop", MLLogValue{}, {"samples_count", l.samples});
    }
    if (l.initOpen) {
      MLLOG_END(l.logger, "init_stop", MLLogValue{});
    }
    if (l.runOpen) {
      MLLOG_END(l.logger, "run_stop", MLLogValue{}, {"status", std::string("aborted")},
                {"samples_count", l.samples});
    }
    l.evalOpen = l.blockOpen = l.initOpen = l.runOpen = false;
  }
  (void)l.metrics.close(); // keep the steps that were taken
}

} // namespace mlperf::rt
