//===- Llama.h - Llama 3 family model declarations ------------*- C++ -*-===//
//
// Writes the tg declaration of a Llama model from a configuration: family llama3 (Llama 3.1
// 8B and 405B) and family llama2 (Llama 2 70B, whose q, k and v projections are one fused
// qkv_proj), and any consistent variant. The checked-in model files are this generator's
// output.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_MODELS_LLAMA_H
#define MLPERFC_COMPILER_MODELS_LLAMA_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlperf::models {

struct LlamaConfig {
  std::string family;      // llama3 | llama2
  std::string name;        // model symbol
  std::string description; // first comment line of the file
  // Architecture.
  int64_t layers = 0, hidden = 0, heads = 0, kvHeads = 0, ffn = 0, vocab = 0, seq = 0;
  double ropeTheta = 0;
  bool ropeScaling = true;
  double ropeFactor = 0, ropeLowFreqFactor = 0, ropeHighFreqFactor = 0;
  int64_t ropeOriginalMaxPosition = 0;
  double normEps = 0;
  /// One qkv_proj [(heads + 2 kv_heads) · head_dim, hidden] split into q, k, v after the
  /// matmul (Llama 2 70B's MLPerf checkpoint), instead of three projections.
  bool fusedQkv = false;
  /// LoRA fine-tuning (PEFT): rank r > 0 adds adapters A [r, in] (kaiming-uniform) and B
  /// [out, r] (zeros) to qkv_proj and o_proj, y = W x + (alpha / r) · B A dropout(x), and
  /// freezes every other parameter. Needs the fused qkv_proj.
  int64_t loraRank = 0;
  double loraAlpha = 0, loraDropout = 0;
  std::string dtype; // bf16 | f32
  std::string init;  // random | checkpoint
  double initStd = 0;
  // Batch and optimizer.
  int64_t gbs = 0, microBatch = 0;
  double lr = 0, endLr = 0;
  int64_t warmupSteps = 0, maxSteps = 0, decaySteps = 0;
  double beta1 = 0, beta2 = 0, adamEps = 0, weightDecay = 0, clip = 0;
  std::string weightDecayParams; // all | matrices
  /// adamw (the Llama references') or adagrad (epsilon adagrad_eps, the sum starting at
  /// initial_accumulator_value; beta1, beta2 and adam_eps unused).
  std::string optimizer = "adamw";
  double adagradEps = 1e-8, initialAccumulatorValue = 0;
  // MLPerf metadata.
  std::string benchmark, targetMetric;
  int64_t evalEvery = 0, evalSamples = 0;
  double target = 0;
  /// Reference convergence points: global batch -> mean samples to converge (the RCP checker's
  /// olympic mean of the RCP file's runs); a variant with other sizes has them only when
  /// `--set rcp=GBS:SAMPLES/...` states them.
  std::vector<std::pair<int64_t, int64_t>> rcpMeanSamples;

  // GPT-OSS-20B's differences (family "gpt-oss"; shared/reference/BENCHMARKS.md section 2).
  /// head_dim when it is not hidden / heads (GPT-OSS: 64 with hidden 2880 and 64 heads).
  int64_t headDimOverride = 0;
  /// RMSNorm over the head dim of q and k before RoPE, each with its own weight.
  bool qkNorm = false;
  /// Sliding-window causal attention on even layers: a query sees itself and this many
  /// earlier keys (Transformer Engine's window (W, 0)); 0: every layer fully causal.
  int64_t slidingWindow = 0;
  /// Mixture of experts in every layer: `experts` SwiGLU experts of width `ffn`, `topK` per
  /// token (top-k on the raw router logits, softmax over the k), dropless.
  int64_t experts = 0, topK = 0;
  /// Positions whose input token is this id are left out of the loss (Megatron's
  /// eod_mask_loss); -1: none.
  int64_t eodToken = -1;

  int64_t headDim() const {
    return headDimOverride > 0 ? headDimOverride : heads > 0 ? hidden / heads : 0;
  }
};

/// The model families, "llama3", "llama2", "llama2-lora" and "gpt-oss".
std::vector<std::string> llamaFamilies();

/// Names of a family's presets, e.g. "llama31_8b"; the first is the family's default.
std::vector<std::string> llamaPresetNames(llvm::StringRef family);

/// The preset's configuration, or an error naming the family's presets (or the families).
llvm::Expected<LlamaConfig> llamaPreset(llvm::StringRef family, llvm::StringRef preset);

/// Applies "key=value[,key=value...]" to `config` (keys as in docs/models.md). Derived fields
/// follow the reference's rules unless set explicitly in the same call: for llama31_8b, gbs
/// selects the RCP's lr and warmup; end_lr = 0.1 lr; decay_steps = max_steps - warmup_steps;
/// for llama31_405b, gbs sets lr, warmup_steps and max_steps by the reference's formulas.
/// Setting any size marks the declaration as a variant in its description.
llvm::Error applyLlamaSettings(LlamaConfig &config, llvm::StringRef settings);

/// Every key `applyLlamaSettings` accepts.
std::vector<std::string> llamaSettingKeys();

/// Checks that the sizes fit together (heads divide hidden, kv_heads divide heads, ...).
llvm::Error validateLlamaConfig(const LlamaConfig &config);

/// The declaration as MLIR text. `commandLine` is recorded in the header comment.
std::string emitLlama(const LlamaConfig &config, llvm::StringRef commandLine);

/// The declaration of `config`'s family: emitLlama or emitGptOss.
std::string emitModel(const LlamaConfig &config, llvm::StringRef commandLine);

/// The GPT-OSS-20B-shaped declaration (compiler/Models/GptOss.cpp): mixture-of-experts layers,
/// sliding-window attention on even layers, QK norm, the end-of-document loss mask.
std::string emitGptOss(const LlamaConfig &config, llvm::StringRef commandLine);

/// What every generated file starts with: the header comment, tg.benchmark, tg.batch,
/// tg.optimizer and tg.lr_schedule, from `config`; `generator` is the source file named in
/// the "change the generator" line.
std::string emitModelHeader(const LlamaConfig &config, llvm::StringRef commandLine,
                            llvm::StringRef generator);

/// A decoder layer's attention from `%q`, `%k`, `%v` ([B, S, heads·head_dim], [B, S,
/// kv_heads·head_dim]) to `%context_flat` [B, S, heads·head_dim], in primitive ops
/// tg-fuse-attention recognizes: the heads, RMSNorm of each q and k head (`%q_norm`,
/// `%k_norm`) when `config.qkNorm`, RoPE (`rope`: the attribute dictionary), grouped-query
/// scores in f32 scaled by 1/sqrt(head_dim), the causal mask (a sliding `window` when > 0),
/// the softmax, the context.
void emitAttentionCore(llvm::raw_ostream &os, const LlamaConfig &config, llvm::StringRef rope,
                       int64_t window);

/// `tensor<AxBxtype>`.
std::string tensorType(std::initializer_list<int64_t> shape, llvm::StringRef elementType);

/// A number as the generated files write it (an MLIR float literal).
std::string formatModelNumber(double value);

/// An `mlperfc emit-model` command line.
struct EmitModelCommand {
  std::string family, preset, settings; // settings: "key=value,..." or empty
  /// "mlperfc emit-model FAMILY --preset PRESET[ --set SETTINGS]".
  std::string str() const;
  /// The declaration it writes, or the error applyLlamaSettings / validateLlamaConfig gives.
  llvm::Expected<std::string> emit() const;
};

/// The command a declaration's header says generated it ("// Generated by: ..."), when that
/// command writes exactly `declarationText` today; none for a hand-written or edited file.
std::optional<EmitModelCommand> generatingCommand(llvm::StringRef declarationText);

/// `settings` ("key=value,...") with `key` set to `value`, replacing an earlier value.
std::string withSetting(llvm::StringRef settings, llvm::StringRef key, llvm::StringRef value);

} // namespace mlperf::models

#endif // MLPERFC_COMPILER_MODELS_LLAMA_H
