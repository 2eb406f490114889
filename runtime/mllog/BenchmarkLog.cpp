//===- BenchmarkLog.cpp - The MLPerf keys of a benchmark run ---*- C++ -*-===//

#include "runtime/mllog/BenchmarkLog.h"

#include "runtime/plan.pb.h"

namespace mlperf::rt {

BenchmarkConfig benchmarkConfig(const plan::ModelInfo &model) {
  BenchmarkConfig config;
  config.benchmark = model.benchmark();
  config.globalBatchSize = model.global_batch_size();
  config.microBatchSize = model.micro_batch_size();
  config.gradientAccumulationSteps = model.gradient_accumulation_steps();
  config.maxSequenceLength = model.seq_len();
  config.evalSamples = model.eval_samples();
  config.maxSteps = model.max_steps();
  config.trainingSteps = model.max_steps();
  config.warmupSteps = model.warmup_steps();
  config.decaySteps = model.decay_steps();
  config.baseLr = model.base_lr();
  config.endLr = model.end_lr();
  config.optimizer = model.optimizer();
  if (model.precision() == "fp32") {
    config.lowestPrecisionLinear = config.lowestPrecisionAttention = "float32";
  } else if (model.precision() == "fp8") {
    config.lowestPrecisionLinear = "fp8"; // the layer stack's GEMMs; attention stays bf16
  }
  for (const plan::Attribute &key : model.mllog()) {
    MLLogValue value;
    if (key.has_i()) {
      value = key.i();
    } else if (key.has_f()) {
      value = key.f();
    } else if (key.has_s()) {
      value = key.s();
    }
    config.extraKeys.emplace_back(key.name(), value);
  }
  return config;
}

void logBenchmarkConfig(MLLogger &logger, const BenchmarkConfig &c) {
  MLLOG_POINT(logger, "submission_org", c.organization);
  MLLOG_POINT(logger, "submission_platform", c.platform);
  MLLOG_POINT(logger, "submission_division", c.division);
  MLLOG_POINT(logger, "submission_benchmark", c.benchmark);
  if (!c.status.empty()) {
    MLLOG_POINT(logger, "submission_status", c.status);
  }
  if (c.nodes > 0) {
    MLLOG_POINT(logger, "number_of_nodes", c.nodes);
    MLLOG_POINT(logger, "accelerators_per_node", c.acceleratorsPerNode);
  }
  MLLOG_POINT(logger, "global_batch_size", c.globalBatchSize);
  MLLOG_POINT(logger, "micro_batch_size", c.microBatchSize);
  MLLOG_POINT(logger, "gradient_accumulation_steps", c.gradientAccumulationSteps);
  MLLOG_POINT(logger, "max_sequence_length", c.maxSequenceLength);
  MLLOG_POINT(logger, "opt_name", c.optimizer);
  MLLOG_POINT(logger, "opt_base_learning_rate", c.baseLr);
  MLLOG_POINT(logger, "opt_end_learning_rate", c.endLr);
  MLLOG_POINT(logger, "opt_learning_rate_warmup_steps", c.warmupSteps);
  MLLOG_POINT(logger, "opt_learning_rate_decay_steps", c.decaySteps);
  // The schedule's length (the LoRA checker's key; HF's max_steps).
  MLLOG_POINT(logger, "opt_learning_rate_training_steps", c.trainingSteps);
  MLLOG_POINT(logger, "opt_learning_rate_decay_schedule", c.schedule);
  MLLOG_POINT(logger, "max_steps", c.maxSteps);
  MLLOG_POINT(logger, "train_samples", c.trainSamples);
  MLLOG_POINT(logger, "eval_samples", c.evalSamples);
  MLLOG_POINT(logger, "lowest_numerical_precision_in_linear", c.lowestPrecisionLinear);
  MLLOG_POINT(logger, "lowest_numerical_precision_in_attn", c.lowestPrecisionAttention);
  for (const auto &[key, value] : c.extraKeys) {
    MLLOG_POINT(logger, key, value);
  }
}

} // namespace mlperf::rt
