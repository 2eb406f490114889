//===- RulesOptimizer.cpp - Rules: optimizer, clipping, LR schedule -*- C++ -*-===//

#include "compiler/Audit/RuleChecker.h"

#include "compiler/Interpreter/TGInterpreter.h"
#include "compiler/Support/OptimizerPrograms.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/StepRoles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ScopedPrinter.h" // llvm::to_string
#include "llvm/Support/raw_ostream.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

using namespace mlir;

namespace mlperf::closed_rules {

void RuleChecker::checkOptimizer() {
  std::string name = optimizer.getName().str();
  if (rules && name != rules->optimizer) {
    violation("optimizer", "expected optimizer " + rules->optimizer + " (" + rules->source +
                               "), the declaration has " + name);
  }
  const bool adamw = name == "adamw";
  // The reference's hyperparameters are its optimizer's: compared only when the names agree
  // (a different optimizer is the violation above).
  const bool sameOptimizer = rules && name == rules->optimizer;
  const double beta1 = adamw ? optimizer.getBeta1()->convertToDouble() : 0.0,
               beta2 = adamw ? optimizer.getBeta2()->convertToDouble() : 0.0,
               epsilon = optimizer.getEpsilon().convertToDouble();
  if (adamw) {
    declaredAgainstBenchmark("adamw.beta1", "beta1", beta1,
                             sameOptimizer ? rules->beta1 : std::nullopt);
    declaredAgainstBenchmark("adamw.beta2", "beta2", beta2,
                             sameOptimizer ? rules->beta2 : std::nullopt);
  }
  declaredAgainstBenchmark(name + ".epsilon", "eps", epsilon,
                           sameOptimizer ? rules->epsilon : std::nullopt);
  declaredAgainstBenchmark(name + ".weight_decay", "weight decay",
                           optimizer.getWeightDecay().convertToDouble(),
                           sameOptimizer ? rules->weightDecay : std::nullopt);
  std::string groups = optimizer.getWeightDecayParams().str();
  if (rules && !rules->weightDecayParams.empty() && groups != rules->weightDecayParams) {
    violation(name + ".weight_decay_params",
              "the " + benchmarkName() + " reference decays " + rules->weightDecayParams +
                  " parameters, the declaration's weight_decay_params is " + groups);
  }
  // Each parameter's update is an element program (the runtime knows no optimizer): the
  // one tg-optimizer writes for the declaration, character for character. AdamW's also
  // reads the step's bias corrections, one f64 program of the step.
  const std::string updateRule = name + ".update";
  double decay = optimizer.getWeightDecay().convertToDouble();
  int64_t updates = 0, programWrong = 0, correctionsWrong = 0;
  std::map<std::string, int64_t> updatesOf;
  for (size_t stage = 0; stage < stages.size(); ++stage) {
    const plan::Plan &plan = stages[stage];
    if (plan.model().optimizer() != name) {
      violation("optimizer", "expected optimizer " + name + " (declaration), the plan records " +
                                 plan.model().optimizer() + at(stage));
    }
    const plan::Program *step = findProgram(plan, "optimizer_step");
    if (!step) {
      violation("optimizer", "the plan has no optimizer_step program" + at(stage));
      continue;
    }
    auto state = stateOf(plan);
    std::set<uint32_t> corrections; // the results of AdamW's bias-correction program
    if (adamw) {
      const std::string expected = adamwCorrectionsProgram(beta1, beta2);
      int64_t found = 0;
      for (const plan::Command &command : step->commands()) {
        if (command.op() == "elementwise" && stringAttr(command, "program") == expected &&
            stringAttr(command, "arithmetic") == std::string("f64")) {
          ++found;
          corrections.insert(command.results().begin(), command.results().end());
        }
      }
      if (found != 1) {
        ++correctionsWrong;
        violation("adamw.bias_correction", "expected one f64 program \"" + expected +
                                               "\" in optimizer_step, the plan has " +
                                               std::to_string(found) + at(stage));
      }
    }
    for (int index = 0; index < step->commands_size(); ++index) {
      const plan::Command &command = step->commands(index);
      auto owner = command.operands_size() > 0 ? state.find(command.operands(0)) : state.end();
      if (command.op() != "elementwise" || owner == state.end()) {
        continue; // not an update of a parameter's state
      }
      ++updates;
      const std::string &param = owner->second.second;
      ++updatesOf[param];
      auto declared = params.find(param);
      int64_t rank = declared == params.end() ? 2 : declared->second.rank;
      double expectedDecay = optimizer.getWeightDecayParams() == "all" || rank >= 2 ? decay : 0.0;
      std::string expected =
          adamw ? adamwProgram(beta1, beta2, epsilon, expectedDecay)
                : adagradProgram(optimizer.getClipGradNorm().has_value(), expectedDecay, epsilon);
      std::optional<std::string> program = stringAttr(command, "program");
      if (program != expected) {
        ++programWrong;
        violation(updateRule, "expected the update \"" + expected +
                                  "\" (declaration: " + formatRuleValue(decay) +
                                  " weight decay on " + groups + " parameters), plan has \"" +
                                  program.value_or("none") + "\" for " + param + at(stage));
      }
      if (adamw && (command.operands_size() != 8 ||
                    !corrections.count(command.operands(adamw_operand::kCorrection1)) ||
                    !corrections.count(command.operands(adamw_operand::kCorrection2)))) {
        ++correctionsWrong;
        violation("adamw.bias_correction", "the update of " + param +
                                               " does not read the step's bias corrections" +
                                               at(stage));
      }
    }
  }
  if (programWrong == 0) {
    pass(updateRule,
         (adamw ? "beta1 " + formatRuleValue(beta1) + ", beta2 " + formatRuleValue(beta2) + ", "
                : std::string()) +
             "eps " + formatRuleValue(epsilon) + ", weight decay " + formatRuleValue(decay) +
             " on " + groups + " parameters in all " + std::to_string(updates) + " " + name +
             " updates");
  }
  if (adamw && correctionsWrong == 0) {
    pass("adamw.bias_correction", "1 - beta^t of the step in f64, read by every update");
  }
  // Every declared trainable parameter updated exactly once (over the stages), a frozen
  // one never.
  int64_t wrong = 0;
  for (const auto &entry : params) {
    const std::string &param = entry.first;
    auto it = updatesOf.find(param);
    int64_t count = it == updatesOf.end() ? 0 : it->second, expected = entry.second.frozen ? 0 : 1;
    if (count != expected) {
      ++wrong;
      violation("optimizer.updates", param + " is updated by " + std::to_string(count) + " " +
                                         name + " updates, expected " + std::to_string(expected) +
                                         (entry.second.frozen ? " (frozen)" : ""));
    }
  }
  for (const auto &[param, count] : updatesOf) {
    if (!params.count(param)) {
      ++wrong;
      violation("optimizer.updates",
                "the plan updates " + param + ", which the declaration does not declare");
    }
  }
  if (wrong == 0) {
    int64_t frozen = llvm::count_if(params, [](const auto &entry) { return entry.second.frozen; });
    pass("optimizer",
         name + ": every one of the " +
             std::to_string(static_cast<int64_t>(params.size()) - frozen) +
             " declared trainable parameter tensors updated once" +
             (frozen ? ", the " + std::to_string(frozen) + " frozen ones never" : std::string()));
  }
}

void RuleChecker::checkClipping() {
  if (!optimizer.getClipGradNorm()) {
    if (rules && rules->clip) {
      violation("clip.max_norm", "the reference clips to " + formatRuleValue(*rules->clip) + " (" +
                                     rules->source + "), the declaration does not clip");
    } else {
      pass("clip", "no clipping declared");
    }
    return;
  }
  double clip = optimizer.getClipGradNorm()->convertToDouble();
  // Where an update reads its gradient and the clipping coefficient.
  const bool adamw = optimizer.getName() == "adamw";
  const int gradOperand = adamw ? adamw_operand::kGrad : adagrad_operand::kGrad;
  const int clipOperand = adamw ? adamw_operand::kClip : adagrad_operand::kClip;
  // An update: an element program reading a gradient (not AdamW's bias corrections).
  auto isUpdate = [&](const plan::Command &command) {
    return command.op() == "elementwise" && command.operands_size() > gradOperand;
  };
  declaredAgainstBenchmark("clip.max_norm", "clip norm", clip, rules ? rules->clip : std::nullopt);
  int64_t problems = 0;
  for (size_t stage = 0; stage < stages.size(); ++stage) {
    const plan::Plan &plan = stages[stage];
    const plan::Program *step = findProgram(plan, "optimizer_step");
    if (!step) {
      continue;
    }
    std::vector<int> clips;
    std::multiset<uint32_t> normed;
    std::set<uint32_t> updated;
    for (int index = 0; index < step->commands_size(); ++index) {
      const plan::Command &command = step->commands(index);
      if (command.op() == "clip_coefficient") {
        clips.push_back(index);
      }
      if (command.op() == "global_norm" || command.op() == "sum_squares") {
        for (uint32_t operand : command.operands()) {
          normed.insert(operand);
        }
      }
      if (isUpdate(command)) {
        updated.insert(command.operands(gradOperand));
      }
    }
    if (clips.size() != 1) {
      ++problems;
      violation("clip.formula", "expected one clip_coefficient in optimizer_step, the plan has " +
                                    std::to_string(clips.size()) + at(stage));
      continue;
    }
    const plan::Command &coefficient = step->commands(clips.front());
    std::optional<double> maxNorm = doubleAttr(coefficient, "max_norm");
    if (!maxNorm || *maxNorm != clip) {
      ++problems;
      violation("clip.max_norm", "expected clip norm " + formatRuleValue(clip) +
                                     " (declaration), plan has " +
                                     (maxNorm ? formatRuleValue(*maxNorm) : std::string("none")) +
                                     " in clip_coefficient (optimizer_step command " +
                                     std::to_string(clips.front()) + ")" + at(stage));
    }
    // Every update scaled by this coefficient, and the norm over every gradient once.
    uint32_t factor = coefficient.results_size() ? coefficient.results(0) : ~0u;
    for (int index = 0; index < step->commands_size(); ++index) {
      const plan::Command &command = step->commands(index);
      if (isUpdate(command) &&
          (command.operands_size() <= clipOperand || command.operands(clipOperand) != factor)) {
        ++problems;
        violation("clip.formula", "the update at optimizer_step command " + std::to_string(index) +
                                      " is not scaled by the clipping coefficient" + at(stage));
      }
    }
    for (uint32_t grad : updated) {
      if (normed.count(grad) != 1) {
        ++problems;
        violation("clip.formula",
                  "the global norm counts the gradient " + plan.buffers(grad).name() + " " +
                      std::to_string(normed.count(grad)) + " times, expected once" + at(stage));
      }
    }
    for (uint32_t grad : normed) {
      if (!updated.count(grad)) {
        ++problems;
        violation("clip.formula", "the global norm reads " + plan.buffers(grad).name() +
                                      ", which no update uses" + at(stage));
      }
    }
  }
  if (problems == 0) {
    pass("clip", "global L2 norm of every gradient once, max_norm " + formatRuleValue(clip) +
                     ", every update scaled by the coefficient");
  }
}

void RuleChecker::checkSchedule() {
  std::string kind = schedule.getKind().str();
  double base = schedule.getBaseLr().convertToDouble(), end = schedule.getEndLr().convertToDouble();
  int64_t warmup = schedule.getWarmupSteps(), decaySteps = schedule.getDecaySteps(),
          maxSteps = schedule.getMaxSteps();
  int64_t problems = 0;
  auto bad = [&](const std::string &message) {
    ++problems;
    violation("lr_schedule", message);
  };
  if (decaySteps != maxSteps - warmup) {
    bad("decay steps " + std::to_string(decaySteps) + " are not max_steps - warmup = " +
        std::to_string(maxSteps - warmup) + " (the schedule's formula)");
  }
  if (rules) {
    std::string src = " (" + rules->source + ")";
    if (!rules->schedule.empty() && kind != rules->schedule) {
      bad("expected schedule " + rules->schedule + src + ", the declaration has " + kind);
    }
    if (rules->maxSteps && maxSteps != *rules->maxSteps) {
      bad("expected max_steps " + std::to_string(*rules->maxSteps) + src +
          ", the declaration has " + std::to_string(maxSteps));
    }
    int64_t gbs = batch.getGlobalBatchSizeAttr().getInt();
    if (rules->benchmark == "llama31_8b" && end != 0.1 * base) {
      bad("expected end LR 0.1 x base = " + formatRuleValue(0.1 * base) + src +
          ", the declaration has " + formatRuleValue(end));
    }
    if (rules->benchmark == "llama31_405b") {
      // The checker's expressions, in the same double arithmetic.
      double gbsD = static_cast<double>(gbs);
      int64_t expectedWarmup = static_cast<int64_t>(std::ceil(8000.0 * 1152.0 / gbsD));
      int64_t expectedDecay =
          static_cast<int64_t>(std::ceil(1200000.0 * 1152.0 / gbsD)) - expectedWarmup;
      if (base * 1152 != gbsD * 8e-5) {
        bad("expected base LR 8e-5 x GBS / 1152 = " + formatRuleValue(gbsD * 8e-5 / 1152) + src +
            ", the declaration has " + formatRuleValue(base));
      }
      if (warmup != expectedWarmup) {
        bad("expected warmup ceil(8000 x 1152 / GBS) = " + std::to_string(expectedWarmup) + src +
            ", the declaration has " + std::to_string(warmup));
      }
      if (decaySteps != expectedDecay) {
        bad("expected decay steps ceil(1200000 x 1152 / GBS) - warmup = " +
            std::to_string(expectedDecay) + src + ", the declaration has " +
            std::to_string(decaySteps));
      }
      if (end != 8e-07) {
        bad("expected end LR 8e-07" + src + ", the declaration has " + formatRuleValue(end));
      }
    }
  }
  for (size_t stage = 0; stage < stages.size(); ++stage) {
    const plan::Program *step = findProgram(stages[stage], "optimizer_step");
    if (!step) {
      continue;
    }
    int64_t found = 0;
    for (int index = 0; index < step->commands_size(); ++index) {
      const plan::Command &command = step->commands(index);
      if (command.op() != "lr_value") {
        continue;
      }
      ++found;
      std::string where =
          " in lr_value (optimizer_step command " + std::to_string(index) + ")" + at(stage);
      std::optional<std::string> planKind = stringAttr(command, "kind");
      if (planKind.value_or("") != kind) {
        bad("expected schedule " + kind + " (declaration), plan has " + planKind.value_or("none") +
            where);
      }
      auto compare = [&](llvm::StringRef attribute, double declared, bool steps) {
        std::optional<double> value = doubleAttr(command, attribute);
        auto show = [&](double number) {
          bool integral =
              std::isfinite(number) && number == std::floor(number) && std::abs(number) < 9e15;
          return steps && integral ? std::to_string(static_cast<int64_t>(number))
                                   : formatRuleValue(number);
        };
        if (!value || *value != declared) {
          bad("expected " + attribute.str() + " " + show(declared) + " (declaration), plan has " +
              (value ? show(*value) : std::string("none")) + where);
        }
      };
      compare("base_lr", base, false);
      compare("end_lr", end, false);
      compare("warmup_steps", static_cast<double>(warmup), true);
      compare("max_steps", static_cast<double>(maxSteps), true);
    }
    if (found != 1) {
      bad("expected one lr_value in optimizer_step, the plan has " + std::to_string(found) +
          at(stage));
    }
  }
  if (problems == 0) {
    pass("lr_schedule", kind + " " + formatRuleValue(base) + " -> " + formatRuleValue(end) +
                            ", warmup " + std::to_string(warmup) + ", decay " +
                            std::to_string(decaySteps) + ", max steps " + std::to_string(maxSteps));
  }
}

} // namespace mlperf::closed_rules
