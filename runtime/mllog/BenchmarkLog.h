//===- BenchmarkLog.h - The MLPerf keys of a benchmark run -----*- C++ -*-===//

#ifndef MLPERFC_RUNTIME_MLLOG_BENCHMARKLOG_H
#define MLPERFC_RUNTIME_MLLOG_BENCHMARKLOG_H

#include "runtime/mllog/MLLog.h"

namespace mlperf::plan {
class ModelInfo;
} // namespace mlperf::plan

namespace mlperf::rt {

/// What a run logs once about its configuration: the submission, the batch and the
/// benchmark's fixed hyperparameters (taken from the model declaration's metadata).
struct BenchmarkConfig {
  std::string organization = "mlperfc", platform, division = "closed", benchmark;
  std::string status; // submission_status (onprem, cloud, research, preview); empty: not logged
  /// The system's scale as the result summarizer reads it; 0: not logged.
  int64_t nodes = 0, acceleratorsPerNode = 0;
  int64_t globalBatchSize = 0, microBatchSize = 0, gradientAccumulationSteps = 0;
  int64_t maxSequenceLength = 0, evalSamples = 0, trainSamples = 0, maxSteps = 0;
  int64_t warmupSteps = 0, decaySteps = 0, trainingSteps = 0;
  std::string optimizer, schedule = "cosine with linear warmup";
  double baseLr = 0, endLr = 0;
  std::string lowestPrecisionLinear = "bfloat16", lowestPrecisionAttention = "bfloat16";
  /// The keys the declaration states, logged as they are: the optimizer's hyperparameters
  /// (opt_adamw_beta_1, ...) and the benchmark's own (lora_rank, ...).
  MLLogMetadata extraKeys;
};

/// The configuration a plan's model record states (the benchmark, batch, optimizer, schedule,
/// precision and declared extra keys); the submission platform and the data's sample counts
/// are the run's to fill in.
BenchmarkConfig benchmarkConfig(const plan::ModelInfo &model);

/// Logs the submission keys and every hyperparameter key the closed-division rules require
/// for LLM benchmarks (checked by `mlperf_logging.compliance_checker`).
void logBenchmarkConfig(MLLogger &logger, const BenchmarkConfig &config);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_MLLOG_BENCHMARKLOG_H
