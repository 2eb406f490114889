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

#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/exec/Calibration.h"
#include "runtime/exec/TrainingSession.h"
#include "runtime/mpi/MpiCommunicator.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/support/CommandLine.h"
#include "runtime/support/FileOutput.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

using namespace mlperf::rt;

namespace {

/// Set by SIGINT/SIGTERM: the run stops after the step in progress, keeping what it did.
volatile std::sig_atomic_t interruptSignal = 0;

void onInterrupt(int signal) { interruptSignal = signal; }

struct Options {
  std::vector<std::string> positional;
  SessionOptions session;
  int64_t printEvery = 10, collectiveTimeout = 600;
  std::string calibrateOut;
  bool noPrefetch = false;
};

/// This process's rank and the job's size: "rank R: " prefixes messages of a multi-rank job.
RankInfo world;

int fail(const std::string &message) {
  if (world.size > 1) {
    std::fprintf(stderr, "mlperf-run: rank %lld of %lld: error: %s\n",
                 static_cast<long long>(world.rank), static_cast<long long>(world.size),
                 message.c_str());
  } else {
    std::fprintf(stderr, "mlperf-run: error: %s\n", message.c_str());
  }
  return 1;
}

int fail(const Status &status) { return fail(status.message()); }

/// MPI under mpirun (with the collective watchdog), one rank otherwise.
Status makeCommunicator(const Options &options, const MeshShape &mesh,
                        std::unique_ptr<Communicator> &communicator) {
  if (world.size > 1 || launchedByMpiLauncher()) {
    CollectiveTimeout timeout;
    timeout.seconds = static_cast<double>(options.collectiveTimeout);
    timeout.onTimeout = [seconds = options.collectiveTimeout](const std::string &waitingFor) {
      // From the watchdog thread: report and leave; mpirun then ends every other rank.
      std::fprintf(stderr,
                   "mlperf-run: rank %lld of %lld: error: %s did not complete within %lld s: "
                   "another rank is stuck (stopped, deadlocked) or far slower; ending the job "
                   "(--collective-timeout)\n",
                   static_cast<long long>(world.rank), static_cast<long long>(world.size),
                   waitingFor.c_str(), static_cast<long long>(seconds));
      std::fflush(stderr);
      std::_Exit(1);
    };
    return createMpiCommunicator(mesh, communicator, timeout);
  }
  if (mesh.worldSize() > 1) {
    return Status(StatusCode::kInvalidArgument,
                  "the plan is compiled for " + std::to_string(mesh.worldSize()) + " ranks (" +
                      mesh.describe() + "): start it with mpirun -np " +
                      std::to_string(mesh.worldSize()));
  }
  communicator = createSingleRankCommunicator();
  return Status::ok();
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

/// --calibrate-out: the backend's command speeds for mlperfc predict --calibrate.
int calibrate(const Options &options) {
  // Plans given: their commands' shapes are measured too.
  std::vector<mlperf::plan::Plan> samples(options.positional.size());
  std::vector<const mlperf::plan::Plan *> samplePointers;
  for (size_t i = 0; i < samples.size(); ++i) {
    Status loaded = loadPlan(options.positional[i], samples[i]);
    if (!loaded.isOk()) {
      return fail(loaded);
    }
    samplePointers.push_back(&samples[i]);
  }
  std::string json;
  Status status =
      calibrateBackend(options.session.backend, samplePointers, json, [](const std::string &entry) {
        std::printf("  %s\n", entry.c_str());
        std::fflush(stdout);
      });
  if (status.isOk()) {
    status = writeFileAtomically(options.calibrateOut, {json});
  }
  if (!status.isOk()) {
    return fail(status);
  }
  std::printf("mlperf-run: wrote %s (backend %s)\n", options.calibrateOut.c_str(),
              options.session.backend.c_str());
  return 0;
}

int run(Options &options) {
  if (!options.calibrateOut.empty()) {
    return calibrate(options);
  }
  if (options.positional.size() != 1) {
    return fail("give exactly one plan file (mlperfc compile MODEL.mlir -o plan.pb)");
  }
  if (options.collectiveTimeout < 0) {
    return fail("--collective-timeout must be >= 0 (0: wait forever)");
  }
  if (options.printEvery < 0) {
    return fail("--print-every must be >= 0");
  }
  options.session.plan = options.positional[0];
  std::unique_ptr<TrainingSession> session;
  Status status = TrainingSession::open(
      options.session, world,
      [&](const MeshShape &mesh, std::unique_ptr<Communicator> &communicator) {
        return makeCommunicator(options, mesh, communicator);
      },
      session);
  if (!status.isOk()) {
    return fail(status);
  }
  auto failRun = [&](const std::string &message) {
    session->abandon();
    return fail(message);
  };
  // Everything printed from here on is rank 0's, for the whole job.
  bool printing = session->leader();
  if (printing) {
    std::printf("mlperf-run: %s\n", session->describe().c_str());
    std::fflush(stdout);
  }
  bool terminal = printing && isatty(fileno(stderr));
  int64_t maxSteps = session->maxSteps();
  bool converged = false;
  double lastEval = NAN;
  const std::string &save = options.session.save;
  while (session->stepsTaken() < maxSteps && !converged) {
    StepReport taken;
    status = session->step(taken);
    if (!status.isOk()) {
      return failRun(status.message());
    }
    int64_t step = taken.metrics.step;
    if (printing && options.printEvery > 0 &&
        (step % options.printEvery == 0 || step + 1 == maxSteps)) {
      std::printf("step %lld loss %.9g lr %.9g grad_norm %.9g time_ms %.1f\n",
                  static_cast<long long>(step), taken.metrics.loss, taken.metrics.lr,
                  taken.metrics.gradNorm, taken.seconds * 1e3);
      std::fflush(stdout);
    }
    if (terminal) {
      std::fprintf(stderr, "\r[%lld/%lld] loss %.4f  %.0f tokens/s  ",
                   static_cast<long long>(step + 1), static_cast<long long>(maxSteps),
                   taken.metrics.loss, taken.tokensPerSecond);
    }
    // Every rank stops after the same step: the decision is the sum of what every rank saw
    // at this point (a signal arriving later counts at the next step), never a local read.
    int stopSignal = 0;
    status = session->agreeOnStop(interruptSignal, stopSignal);
    if (!status.isOk()) {
      return failRun(status.message());
    }
    if (stopSignal != 0) {
      interruptSignal = stopSignal;
      // Stop cleanly: the checkpoint holds every step taken, the log says aborted.
      if (!save.empty()) {
        status = session->saveCheckpoint();
        if (!status.isOk()) {
          return failRun(status.message());
        }
      }
      if (terminal) {
        std::fputc('\n', stderr);
      }
      std::string resume = save.empty() ? std::string(" (no --save, so nothing to resume from)")
                                        : "; continue with --resume " + save;
      failRun("interrupted by signal " + std::to_string(stopSignal) + " after step " +
              std::to_string(step) + resume);
      return 128 + stopSignal;
    }
    if (options.session.saveEvery > 0 && (step + 1) % options.session.saveEvery == 0 &&
        step + 1 < maxSteps) {
      status = session->saveCheckpoint();
      if (!status.isOk()) {
        return failRun(status.message());
      }
      if (printing) {
        std::printf("mlperf-run: wrote %s (step %lld)\n", session->checkpointPath().c_str(),
                    static_cast<long long>(session->stepsTaken()));
      }
    }
    if (session->evaluationDue() && session->evaluating()) {
      EvalReport eval;
      status = session->evaluate(eval);
      if (!status.isOk()) {
        return failRun(status.message());
      }
      lastEval = eval.loss;
      converged = eval.converged;
      if (terminal) {
        std::fputc('\n', stderr);
      }
      if (printing) {
        std::printf("eval step %lld samples %lld eval_loss %.6f target %s%s\n",
                    static_cast<long long>(step), static_cast<long long>(eval.samples), eval.loss,
                    number(session->target()).c_str(), converged ? " reached" : "");
      }
      std::fflush(stdout);
    }
  }
  if (terminal) {
    std::fputc('\n', stderr);
  }
  status = session->finish(converged);
  if (!status.isOk()) {
    return fail(status);
  }
  if (!save.empty()) {
    status = session->saveCheckpoint();
    if (!status.isOk()) {
      return fail(status);
    }
    if (printing) {
      std::printf("mlperf-run: wrote %s (step %lld)\n", session->checkpointPath().c_str(),
                  static_cast<long long>(session->stepsTaken()));
    }
  }
  if (session->evaluating() && !converged) {
    if (printing) {
      std::printf("mlperf-run: target eval loss %s not reached in %lld steps (last %.6f)\n",
                  number(session->target()).c_str(), static_cast<long long>(maxSteps), lastEval);
    }
    return 2;
  }
  if (session->evaluating() && printing) {
    std::printf("mlperf-run: converged: eval loss %.6f <= %s after %lld samples\n", lastEval,
                number(session->target()).c_str(),
                static_cast<long long>(session->samplesAfter(session->stepsTaken())));
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  CommandLine cli("mlperf-run", "mlperf-run: train from an execution plan (mlperfc compile -o "
                                "plan.pb) on a backend; a plan for several ranks runs under "
                                "mpirun -np N, one rank per process (docs/distributed.md)");
  cli.addString("backend", &options.session.backend, "NAME",
                "cpu (default; the reference backend) or cuda (GPU 0; a plan holding an op "
                "without a CUDA kernel yet is refused before it runs)");
  cli.addString("gemm-cache", &options.session.gemmCache, "FILE",
                "cuda: time cuBLASLt's candidates for every GEMM at initialization and keep the "
                "choices in FILE, reused by later runs (default: cuBLASLt's first choice)");
  cli.addFlag("no-cudnn-attention", &options.session.noCudnnAttention,
              "cuda: run attention on the backend's own kernel, not cuDNN's fused SDPA (which is "
              "used by default where cuDNN takes the command: bf16, libcudnn.so.9 loadable)");
  cli.addFlag("no-prefetch", &options.noPrefetch,
              "Read each step's batch when the step starts, not on a host thread while the "
              "previous step runs (the same batches either way; to compare)");
  cli.addString("data", &options.session.data, "PREFIX",
                "Training data: Megatron indexed dataset PREFIX.bin/.idx (required)");
  cli.addString("eval-data", &options.session.evalData, "PREFIX",
                "Evaluation data (file order); eval loss at the model's cadence");
  cli.addString("data-order", &options.session.dataOrder, "ORDER",
                "shuffled (by --seed, default) or sequential (file order)");
  cli.addInt("seed", &options.session.seed,
             "Seed of the parameter init and the data order (default 0)");
  cli.addInt("max-steps", &options.session.maxSteps,
             "Stop after this many steps (default: the model's)");
  cli.addString("target", &options.session.target, "LOSS",
                "Stop when the eval loss is at most LOSS (default: the model's target)");
  cli.addString("init-from", &options.session.initFrom, "W.safetensors",
                "Start from these parameters (Hugging Face names) with a fresh optimizer");
  cli.addString("save", &options.session.save, "CKPT.safetensors",
                "At the end, write parameters, optimizer state and step (atomically)");
  cli.addInt("save-every", &options.session.saveEvery,
             "Also write the --save checkpoint every N steps (a crash loses at most N steps)");
  cli.addString("resume", &options.session.resume, "CKPT.safetensors",
                "Continue a run saved with --save, bit-identically");
  cli.addString("mllog", &options.session.mllog, "FILE", "Write the MLPerf log here");
  cli.addString("submission-org", &options.session.submissionOrg, "NAME",
                "The log's submission_org: the submitting organization (default mlperfc)");
  cli.addString("submission-division", &options.session.submissionDivision, "DIVISION",
                "The log's submission_division: closed (default) or open");
  cli.addString("submission-platform", &options.session.submissionPlatform, "SYSTEM",
                "The log's submission_platform: the system's name, as in the package's "
                "systems/SYSTEM.json (default: this run's cluster and backend)");
  cli.addString("submission-status", &options.session.submissionStatus, "STATUS",
                "The log's submission_status: onprem, cloud, research or preview (default: not "
                "logged)");
  cli.addString("metrics-out", &options.session.metricsOut, "FILE.jsonl",
                "One JSON object per step: step, samples, loss, lr, grad_norm, tokens_per_s");
  cli.addString("trace", &options.session.trace, "FILE.json",
                "Write the last training step's commands as a Chrome trace / Perfetto timeline "
                "(per rank: FILE.rank<r>.json under mpirun), beside mlperfc predict --trace");
  cli.addInt("collective-timeout", &options.collectiveTimeout,
             "Under mpirun: end the job when a collective or pipeline transfer waits longer "
             "than this many seconds for another rank (default 600; 0: wait forever)");
  cli.addInt("print-every", &options.printEvery,
             "Print a step line every N steps (default 10; 0: only evaluations)");
  cli.addString("calibrate-out", &options.calibrateOut, "FILE.json",
                "Instead of training: time the backend's commands (GEMMs, attention, memory-bound "
                "adds, an empty command; with plan files, also their commands' shapes) and write "
                "them for mlperfc predict --calibrate");
  cli.setPositional(&options.positional, "PLAN.pb", 0);
  if (std::optional<int> exit = cli.parse(argc, argv)) {
    return *exit;
  }
  options.session.prefetch = !options.noPrefetch;
  if (Status threads = cpu::checkCpuThreadsSetting(); !threads.isOk()) {
    return fail(threads);
  }
  // BLIS picks its kernels (Gemm.h sets BLIS_ARCH_TYPE) while the process has one thread.
  mlperf::rt::cpu::gemmDescription();
  if (launchedByMpiLauncher()) {
    Status status = initializeMpi(&argc, &argv, world.rank, world.size);
    if (!status.isOk()) {
      return fail(status);
    }
  }
  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);
  int exitCode = run(options);
  if (exitCode == 1 && world.size > 1) {
    abortMpi(1); // the other ranks would wait for this one in their next collective
  }
  finalizeMpi();
  return exitCode;
}
