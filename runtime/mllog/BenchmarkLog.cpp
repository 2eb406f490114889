//===- BenchmarkLog.cpp - The MLPerf keys of a benchmark run ---*- C++ -*-===//

#include "runtime/mllog/BenchmarkLog.h"

namespace mlperf::rt {

void logBenchmarkConfig(MLLogger &logger, const BenchmarkConfig &c) {
  MLLOG_POINT(logger, "submission_org", c.organization);
  MLLOG_POINT(logger, "submission_platform", c.platform);
  MLLOG_POINT(logger, "submission_division", c.division);
  MLLOG_POINT(logger, "submission_benchmark", c.benchmark);
  MLLOG_POINT(logger, "global_batch_size", c.globalBatchSize);
  MLLOG_POINT(logger, "micro_batch_size", c.microBatchSize);
  MLLOG_POINT(logger, "gradient_accumulation_steps", c.gradientAccumulationSteps);
  MLLOG_POINT(logger, "max_sequence_length", c.maxSequenceLength);
  MLLOG_POINT(logger, "opt_name", c.optimizer);
  MLLOG_POINT(logger, "opt_base_learning_rate", c.baseLr);
  MLLOG_POINT(logger, "opt_end_learning_rate", c.endLr);
  MLLOG_POINT(logger, "opt_learning_rate_warmup_steps", c.warmupSteps);
  MLLOG_POINT(logger, "opt_learning_rate_decay_steps", c.decaySteps);
  MLLOG_POINT(logger, "opt_learning_rate_decay_schedule", c.schedule);
  MLLOG_POINT(logger, "opt_adamw_beta_1", c.beta1);
  MLLOG_POINT(logger, "opt_adamw_beta_2", c.beta2);
  MLLOG_POINT(logger, "opt_adamw_epsilon", c.epsilon);
  MLLOG_POINT(logger, "opt_adamw_weight_decay", c.weightDecay);
  MLLOG_POINT(logger, "opt_gradient_clip_norm", c.gradientClipNorm);
  MLLOG_POINT(logger, "max_steps", c.maxSteps);
  MLLOG_POINT(logger, "train_samples", c.trainSamples);
  MLLOG_POINT(logger, "eval_samples", c.evalSamples);
  MLLOG_POINT(logger, "lowest_numerical_precision_in_linear", c.lowestPrecisionLinear);
  MLLOG_POINT(logger, "lowest_numerical_precision_in_attn", c.lowestPrecisionAttention);
}

} // namespace mlperf::rt
