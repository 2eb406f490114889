//===- WriteExampleLog.cpp - A complete llama31_8b run log ---------------===//
//
// Writes the log of a (short) run through the runtime's logger, so that ctest can run the
// official MLPerf checker on it: without a plan, llama31_8b with the reference's
// hyperparameters; with PLAN.pb, the configuration that plan's model record states (the keys
// mlperf-run logs for it, the declaration's extra keys among them) and its evaluation cadence,
// skipped evaluations included, with made-up eval losses that reach the target at the third.
//
// Usage: mlperf-mllog-example OUT.log [PLAN.pb]
//
//===----------------------------------------------------------------------===//

#include "runtime/mllog/BenchmarkLog.h"
#include "runtime/plan/PlanLoader.h"

#include <cstdio>
#include <utility>
#include <vector>

using namespace mlperf;
using namespace mlperf::rt;

namespace {

int fail(const Status &status) {
  std::fprintf(stderr, "%s\n", status.toString().c_str());
  return 1;
}

/// The log of a run with `config` whose evaluations come after these sample counts with these
/// eval accuracies, each ending a block that began at the one before; the last converges.
int writeRun(const std::string &out, const BenchmarkConfig &config,
             const std::vector<std::pair<int64_t, double>> &evals) {
  MLLogger logger;
  if (Status status = logger.open(out); !status.isOk()) {
    return fail(status);
  }
  MLLOG_POINT(logger, "cache_clear", true);
  MLLOG_START(logger, "init_start", MLLogValue{});
  logBenchmarkConfig(logger, config);
  MLLOG_POINT(logger, "seed", int64_t{1234});
  MLLOG_END(logger, "init_stop", MLLogValue{});
  MLLOG_START(logger, "run_start", MLLogValue{});
  int64_t samples = 0;
  for (const auto &[after, accuracy] : evals) {
    MLLOG_START(logger, "block_start", MLLogValue{}, {"samples_count", samples});
    samples = after;
    MLLOG_END(logger, "block_stop", MLLogValue{}, {"samples_count", samples});
    MLLOG_START(logger, "eval_start", MLLogValue{}, {"samples_count", samples});
    MLLOG_POINT(logger, "eval_accuracy", accuracy, {"samples_count", samples});
    MLLOG_END(logger, "eval_stop", MLLogValue{}, {"samples_count", samples});
  }
  MLLOG_END(logger, "run_stop", MLLogValue{}, {"status", std::string("success")},
            {"samples_count", samples});
  return logger.status().isOk() ? 0 : fail(logger.status());
}

/// A run of the plan's benchmark at its cadence (skipped evaluations included) that
/// converges at its third evaluation.
int writePlanLog(const std::string &out, const std::string &planPath) {
  plan::Plan compiled;
  if (Status status = loadPlan(planPath, compiled); !status.isOk()) {
    return fail(status);
  }
  const plan::ModelInfo &model = compiled.model();
  BenchmarkConfig config = benchmarkConfig(model);
  MeshShape mesh = planMesh(compiled);
  config.platform = std::to_string(mesh.nodes) + "x" + std::to_string(mesh.gpusPerNode) +
                    " (mlperf-mllog-example)";
  config.trainSamples = 4096;
  int64_t gbs = model.global_batch_size();
  int64_t every = (model.eval_every_samples() + gbs - 1) / gbs;
  std::vector<std::pair<int64_t, double>> evals;
  for (int64_t eval = 1; eval <= 3; ++eval) {
    evals.emplace_back((model.eval_skip() + eval) * every * gbs,
                       model.target_value() + 0.1 * (2 - eval));
  }
  return writeRun(out, config, evals);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s OUT.log [PLAN.pb]\n", argv[0]);
    return 1;
  }
  if (argc == 3) {
    return writePlanLog(argv[1], argv[2]);
  }
  BenchmarkConfig config;
  config.platform = "1xCPU (reference backend)";
  config.benchmark = "llama31_8b";
  config.globalBatchSize = 32;
  config.microBatchSize = 1;
  config.gradientAccumulationSteps = 32;
  config.maxSequenceLength = 8192;
  config.evalSamples = 1024;
  config.trainSamples = 24576;
  config.maxSteps = 1200000;
  config.warmupSteps = 128;
  config.decaySteps = 1200000 - 128;
  config.baseLr = 8e-4;
  config.endLr = 8e-5;
  // What a plan's model record carries for Llama 3.1 8B's AdamW (tg.optimizer's keys).
  config.optimizer = "adamw";
  config.extraKeys = {{"opt_adamw_beta_1", 0.9},
                      {"opt_adamw_beta_2", 0.95},
                      {"opt_adamw_epsilon", 1e-5},
                      {"opt_adamw_weight_decay", 0.1},
                      {"opt_gradient_clip_norm", 1.0}};

  return writeRun(argv[1], config, {{12288, 3.9}, {24576, 3.28}});
}
