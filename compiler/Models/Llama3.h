//===- Llama3.h - Llama 3 family model declarations ------------*- C++ -*-===//
//
// Writes the tg declaration of a Llama 3 model (Llama 3.1 8B and 405B and any consistent
// variant) from a configuration. The checked-in benchmark files are this generator's output.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_MODELS_LLAMA3_H
#define MLPERFC_COMPILER_MODELS_LLAMA3_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlperf::models {

struct Llama3Config {
  std::string name;        // model symbol
  std::string description; // first comment line of the file
  // Architecture.
  int64_t layers = 0, hidden = 0, heads = 0, kvHeads = 0, ffn = 0, vocab = 0, seq = 0;
  double ropeTheta = 0;
  bool ropeScaling = true;
  double ropeFactor = 0, ropeLowFreqFactor = 0, ropeHighFreqFactor = 0;
  int64_t ropeOriginalMaxPosition = 0;
  double normEps = 0;
  std::string dtype; // bf16 | f32
  std::string init;  // random | checkpoint
  double initStd = 0;
  // Batch and optimizer.
  int64_t gbs = 0, microBatch = 0;
  double lr = 0, endLr = 0;
  int64_t warmupSteps = 0, maxSteps = 0, decaySteps = 0;
  double beta1 = 0, beta2 = 0, adamEps = 0, weightDecay = 0, clip = 0;
  std::string weightDecayParams; // all | matrices
  // MLPerf metadata.
  std::string benchmark, targetMetric;
  int64_t evalEvery = 0, evalSamples = 0;
  double target = 0;

  int64_t headDim() const { return heads > 0 ? hidden / heads : 0; }
};

/// Names of the presets, e.g. "llama31_8b".
std::vector<std::string> llama3PresetNames();

/// The preset's configuration, or an error naming the known presets.
llvm::Expected<Llama3Config> llama3Preset(llvm::StringRef preset);

/// Applies "key=value[,key=value...]" to `config` (keys as in docs/models.md). Derived fields
/// follow the reference's rules unless set explicitly in the same call: for llama31_8b, gbs
/// selects the RCP's lr and warmup; end_lr = 0.1 lr; decay_steps = max_steps - warmup_steps;
/// for llama31_405b, gbs sets lr, warmup_steps and max_steps by the reference's formulas.
/// Setting any size marks the declaration as a variant in its description.
llvm::Error applyLlama3Settings(Llama3Config &config, llvm::StringRef settings);

/// Every key `applyLlama3Settings` accepts.
std::vector<std::string> llama3SettingKeys();

/// Checks that the sizes fit together (heads divide hidden, kv_heads divide heads, ...).
llvm::Error validateLlama3Config(const Llama3Config &config);

/// The declaration as MLIR text. `commandLine` is recorded in the header comment.
std::string emitLlama3(const Llama3Config &config, llvm::StringRef commandLine);

} // namespace mlperf::models

#endif // MLPERFC_COMPILER_MODELS_LLAMA3_H
