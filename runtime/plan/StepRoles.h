//===- StepRoles.h - What a train-step input or output is ------*- C++ -*-===//
//
// One list of the roles a train step's arguments and results play, shared by the compiler
// (`tg.role` on @optimizer_step / @train_step), the plan (roles of program inputs and
// outputs) and the runtime (what it feeds, reads and checkpoints). Per-parameter roles
// carry the parameter's name; `stateKey` is the tensor name a checkpoint stores them under.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_PLAN_STEPROLES_H
#define MLPERFC_RUNTIME_PLAN_STEPROLES_H

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace mlperf::rt::role {

// Fed by the runtime each step.
constexpr std::string_view kTokens = "tokens"; // [micro-batches, rows, seq] token ids
constexpr std::string_view kLabels = "labels"; // likewise, the next-token labels
constexpr std::string_view kStep = "step";     // the 0-based optimizer step (i64 scalar)
constexpr std::string_view kSeed = "seed";     // the initialization seed (i64 scalar)
// The dropout key [seed, micro-batch counter] a function called per micro-batch takes
// (tg-train-step computes it; never fed by the runtime).
constexpr std::string_view kDropoutKey = "dropout_key";
// Per parameter: its value and its gradient. The optimizer's state has roles of the
// optimizer's own (tg-optimizer names them); the runtime only carries them through the plan.
constexpr std::string_view kParam = "param";
constexpr std::string_view kGrad = "grad";
// fp8 scaling state (tg-fp8), per GEMM group, named by the group's first weight: the amax
// history and scale of its input (E4M3) and of its output gradient (E5M2), and of its weights
// the history, the scale of the next cast and the scale the stored fp8 weights were cast with.
constexpr std::string_view kFp8InputHistory = "fp8_input_history";
constexpr std::string_view kFp8InputScale = "fp8_input_scale";
constexpr std::string_view kFp8GradHistory = "fp8_grad_history";
constexpr std::string_view kFp8GradScale = "fp8_grad_scale";
constexpr std::string_view kFp8WeightHistory = "fp8_weight_history";
constexpr std::string_view kFp8WeightScale = "fp8_weight_scale";
constexpr std::string_view kFp8WeightCastScale = "fp8_weight_cast_scale";
/// Whether a role is fp8 scaling state.
inline bool isFp8State(std::string_view role) { return role.substr(0, 4) == "fp8_"; }
// Read by the runtime after a step.
constexpr std::string_view kLr = "lr";
constexpr std::string_view kGradNorm = "grad_norm";
constexpr std::string_view kLosses = "losses"; // every micro-batch loss of the global batch
constexpr std::string_view kLoss = "loss";     // the evaluation's mean loss (f64 scalar)
// Kept in the plan between programs: evaluation's running [sum, count] of micro-batch losses
// (f64), which @eval_step adds to and @eval_finish reduces, divides and starts again.
constexpr std::string_view kEvalSum = "eval_sum";
// The loss mask @forward also returns when its loss has one (tg-train-step appends it), which
// @eval_step weighs each micro-batch's loss with: the evaluation loss is then the mean over
// every counted token.
constexpr std::string_view kLossMask = "loss_mask";

/// Checkpoint tensors of optimizer state start with this.
constexpr std::string_view kOptimizerStatePrefix = "optimizer.";

/// The checkpoint tensor name of per-parameter state: the Hugging Face name for the
/// parameter itself, `optimizer.<role>.<name>` for optimizer state.
inline std::string stateKey(std::string_view role, std::string_view param) {
  if (role == kParam) {
    return std::string(param);
  }
  return std::string(kOptimizerStatePrefix) + std::string(role) + "." + std::string(param);
}

/// The role and parameter of optimizer-state checkpoint tensor `key` (stateKey's inverse;
/// roles have no '.'); nullopt for a parameter's own value.
inline std::optional<std::pair<std::string, std::string>> parseStateKey(std::string_view key) {
  if (key.substr(0, kOptimizerStatePrefix.size()) != kOptimizerStatePrefix) {
    return std::nullopt;
  }
  key.remove_prefix(kOptimizerStatePrefix.size());
  size_t dot = key.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == key.size()) {
    return std::nullopt;
  }
  return std::pair{std::string(key.substr(0, dot)), std::string(key.substr(dot + 1))};
}

/// Whether checkpoint tensor `key` is optimizer state (not a parameter).
inline bool isOptimizerStateKey(std::string_view key) {
  return key.substr(0, kOptimizerStatePrefix.size()) == kOptimizerStatePrefix;
}

} // namespace mlperf::rt::role

#endif // MLPERFC_RUNTIME_PLAN_STEPROLES_H
