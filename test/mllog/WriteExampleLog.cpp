//===- WriteExampleLog.cpp - A complete llama31_8b run log ---------------===//
//
// Writes the log of a (short) llama31_8b run with the reference's hyperparameters through the
// runtime's logger, so that ctest can run the official MLPerf checker on it.
//
// Usage: mlperf-mllog-example OUT.log
//
//===----------------------------------------------------------------------===//

#include "runtime/mllog/BenchmarkLog.h"

#include <cstdio>

using namespace mlperf::rt;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.log\n", argv[0]);
    return 1;
  }
  MLLogger logger;
  Status status = logger.open(argv[1]);
  if (!status.isOk()) {
    std::fprintf(stderr, "%s\n", status.toString().c_str());
    return 1;
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
  config.beta1 = 0.9;
  config.beta2 = 0.95;
  config.epsilon = 1e-5;
  config.weightDecay = 0.1;
  config.gradientClipNorm = 1.0;

  MLLOG_POINT(logger, "cache_clear", true);
  MLLOG_START(logger, "init_start", MLLogValue{});
  logBenchmarkConfig(logger, config);
  MLLOG_POINT(logger, "seed", int64_t{1234});
  MLLOG_END(logger, "init_stop", MLLogValue{});
  MLLOG_START(logger, "run_start", MLLogValue{});
  for (int64_t block = 0; block < 2; ++block) {
    int64_t samples = block * 12288;
    MLLOG_START(logger, "block_start", MLLogValue{}, {"samples_count", samples});
    MLLOG_END(logger, "block_stop", MLLogValue{}, {"samples_count", samples + 12288});
    MLLOG_START(logger, "eval_start", MLLogValue{}, {"samples_count", samples + 12288});
    MLLOG_POINT(logger, "eval_accuracy", block == 0 ? 3.9 : 3.28,
                {"samples_count", samples + 12288});
    MLLOG_END(logger, "eval_stop", MLLogValue{}, {"samples_count", samples + 12288});
  }
  MLLOG_END(logger, "run_stop", MLLogValue{}, {"status", std::string("success")},
            {"samples_count", int64_t{24576}});
  return 0;
}
