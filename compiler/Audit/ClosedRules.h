//===- ClosedRules.h - MLPerf closed-division rules on a plan ----*- C++ -*-===//
//
// Checks the plans of one compile (every pipeline stage) against the declaration they were
// compiled from and against the benchmark's closed-division rules: the optimizer and each of
// its hyperparameters in every update command, which parameters decay, the clipping norm and
// its formula, the LR schedule, every parameter's init, the loss, the trainable parameters,
// the data order of the micro-batches, the accumulation against the batch, the numeric
// formats and the scaling of low-precision casts. The benchmark's fixed values come from the
// official checker's rules (mlperf-logging's training_6.0.0/closed_<benchmark>.yaml) and the
// v6.0 training rules (docs/compliance.md lists them with their sources); a test evaluates the
// checker's own expressions on what the audit reads, so the two cannot drift apart.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_AUDIT_CLOSEDRULES_H
#define MLPERFC_COMPILER_AUDIT_CLOSEDRULES_H

#include "dialects/TG/IR/TGOps.h"
#include "runtime/plan.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlperf {

/// One line of an audit: a rule (e.g. "adamw.epsilon"), whether it holds, and what was found.
struct AuditFinding {
  std::string rule;
  bool ok = true;
  std::string message;
};

/// What the closed division fixes for a benchmark (values the submitter may not change).
struct BenchmarkRules {
  std::string benchmark, source;
  std::string optimizer = "adamw";
  std::optional<double> beta1, beta2, epsilon, weightDecay, clip;
  std::string weightDecayParams; // the reference's parameter groups: "all", or empty (any)
  std::string schedule;          // "cosine_with_linear_warmup"
  std::optional<int64_t> maxSteps, evalSamples, seqLen;
  /// Parameters of the benchmark configuration (checked when the declaration is it).
  std::optional<int64_t> parameterCount;
  /// The base std of every drawn parameter (normal, and scaled_normal before its scaling).
  std::optional<double> initStd;
  /// Parameters come from the reference checkpoint, none drawn.
  bool initFromCheckpoint = false;
  /// Only low-rank adapters train (Llama 2 70B LoRA); the declaration must have them.
  bool onlyAdaptersTrain = false;
  /// Further log keys the closed rules fix (tg.benchmark `mllog`): lora_rank 16, lora_alpha 32.
  std::vector<std::pair<std::string, double>> mllog;
};

/// The rules of `benchmark`, or null for a benchmark the audit has no table for.
const BenchmarkRules *findBenchmarkRules(llvm::StringRef benchmark);

/// Formats a double as Python's repr does ("1e-05", "0.9", "1.0"): the MLPerf checker
/// compares Python floats, and messages quote values in the form users log them.
std::string formatRuleValue(double value);

/// Every rule on `stages` (the plans of one compile, stage k at index k) against the
/// declaration `declaration` and, when known, its benchmark's rules: one finding per check,
/// and one per violation naming the parameter or command.
std::vector<AuditFinding> checkClosedRules(tg::ModelOp declaration,
                                           const std::vector<plan::Plan> &stages,
                                           const BenchmarkRules *rules);

/// The declaration's hyperparameters under the MLPerf log keys a run logs them with
/// (opt_adamw_epsilon, ...), for the report and for checking the rules against the official
/// checker's expressions.
llvm::json::Object declaredHyperparameters(tg::ModelOp declaration);

/// Whether `op` is a tg.convert to an 8-bit float, and whether its operand is scaled per
/// tensor (a tg.scale, or a tg.mul by a 0-d tensor): the pairing the closed division requires.
bool isCastTo8BitFloat(mlir::Operation *op);
bool isScaledCast(mlir::Operation *convert);

/// The numeric-format and cast rules on tg IR (an IR dump): every element type on the approved
/// list, every conversion to an 8-bit float scaled. `where` names the dump in messages.
std::vector<AuditFinding> checkIRFormats(mlir::ModuleOp module, llvm::StringRef where);

} // namespace mlperf

#endif // MLPERFC_COMPILER_AUDIT_CLOSEDRULES_H
