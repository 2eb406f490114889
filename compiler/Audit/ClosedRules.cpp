//===- ClosedRules.cpp - MLPerf closed-division rules on a plan --*- C++ -*-===//

#include "compiler/Audit/ClosedRules.h"

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

namespace mlperf {
namespace {

const std::vector<BenchmarkRules> &benchmarkTable() {
  static const std::vector<BenchmarkRules> table = [] {
    std::vector<BenchmarkRules> rules;
    const char *checker = "mlperf-logging 4.1.68 training_6.0.0/closed_";
    BenchmarkRules llama8b;
    llama8b.benchmark = "llama31_8b";
    llama8b.source = std::string(checker) + "llama31_8b.yaml; MLPerf Training v6.0 rules";
    llama8b.beta1 = 0.9;
    llama8b.beta2 = 0.95;
    llama8b.epsilon = 1e-05;
    llama8b.weightDecay = 0.1;
    llama8b.clip = 1.0;
    llama8b.weightDecayParams = "all"; // NeMo 2.1 decays every parameter
    llama8b.schedule = "cosine_with_linear_warmup";
    llama8b.maxSteps = 1200000;
    llama8b.evalSamples = 1024;
    llama8b.seqLen = 8192;
    llama8b.parameterCount = 8030261248;
    llama8b.initStd = 0.02;
    rules.push_back(llama8b);

    BenchmarkRules llama405b = llama8b;
    llama405b.benchmark = "llama31_405b";
    llama405b.source = std::string(checker) + "llama31_405b.yaml; MLPerf Training v6.0 rules";
    llama405b.maxSteps.reset(); // follows the batch: see checkSchedule
    llama405b.evalSamples = 5760;
    llama405b.parameterCount = 405853388800;
    llama405b.initStd.reset();
    llama405b.initFromCheckpoint = true;
    rules.push_back(llama405b);

    BenchmarkRules lora;
    lora.benchmark = "llama2_70b_lora";
    lora.source = std::string(checker) + "llama2_70b_lora.yaml; MLPerf Training v6.0 rules";
    lora.weightDecay = 1e-04;
    lora.clip = 0.3;
    lora.seqLen = 8192;
    lora.initFromCheckpoint = true;
    lora.onlyAdaptersTrain = true;
    lora.mllog = {{"lora_rank", 16}, {"lora_alpha", 32}}; // the checker and the rules table
    rules.push_back(lora);
    return rules;
  }();
  return table;
}

std::optional<double> doubleAttr(const plan::Command &command, llvm::StringRef name) {
  for (const plan::Attribute &attr : command.attributes()) {
    if (attr.name() == name) {
      if (attr.has_f()) {
        return attr.f();
      }
      if (attr.has_i()) {
        return static_cast<double>(attr.i());
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> stringAttr(const plan::Command &command, llvm::StringRef name) {
  for (const plan::Attribute &attr : command.attributes()) {
    if (attr.name() == name && attr.has_s()) {
      return attr.s();
    }
  }
  return std::nullopt;
}

const plan::Program *findProgram(const plan::Plan &plan, llvm::StringRef name) {
  for (const plan::Program &program : plan.programs()) {
    if (program.name() == name) {
      return &program;
    }
  }
  return nullptr;
}

/// One declared parameter tensor (a layer's copy of a per-layer parameter is its own).
struct DeclaredParam {
  std::string init;
  double std = 0; // the std it is drawn with (scaled_normal's scaling applied)
  double baseStd = 0;
  int64_t elements = 0, rank = 0;
  bool frozen = false; // not trained (a LoRA base)
  int64_t fanIn = 0;   // the last dim
};

class RuleChecker {
public:
  RuleChecker(tg::ModelOp declaration, const std::vector<plan::Plan> &stages,
              const BenchmarkRules *rules)
      : declaration(declaration), stages(stages), rules(rules) {
    Block &body = declaration.getBody().front();
    optimizer = *body.getOps<tg::OptimizerOp>().begin();
    schedule = *body.getOps<tg::LRScheduleOp>().begin();
    batch = *body.getOps<tg::BatchOp>().begin();
    benchmark = *body.getOps<tg::BenchmarkOp>().begin();
    for (auto param : body.getOps<tg::ParamOp>()) {
      auto type = cast<RankedTensorType>(param.getType());
      DeclaredParam declared;
      declared.init = param.getInit().str();
      declared.baseStd = param.getStd() ? param.getStd()->convertToDouble() : 0.0;
      declared.std =
          declared.init == "scaled_normal"
              ? declared.baseStd / std::sqrt(2.0 * static_cast<double>(param.getCopies()))
              : declared.baseStd;
      declared.elements = type.getNumElements();
      declared.rank = type.getRank();
      declared.frozen = param.getFrozen();
      declared.fanIn = type.getRank() > 0 ? type.getShape().back() : 0;
      for (int64_t copy = 0; copy < param.getCopies(); ++copy) {
        params[param.getRepeat() ? resolveLayerName(param.getSymName(), copy)
                                 : param.getSymName().str()] = declared;
      }
    }
  }

  std::vector<AuditFinding> run() {
    checkBenchmark();
    checkOptimizer();
    checkClipping();
    checkSchedule();
    checkInit();
    checkLoss();
    checkParameters();
    checkBatchAndData();
    checkFormats();
    return std::move(findings);
  }

private:
  void pass(llvm::StringRef rule, const std::string &message) {
    findings.push_back({rule.str(), true, message});
  }
  void violation(llvm::StringRef rule, const std::string &message) {
    findings.push_back({rule.str(), false, message});
  }
  /// " (stage 1)" in a pipeline, nothing otherwise.
  std::string at(size_t stage) const {
    return stages.size() > 1 ? " (stage " + std::to_string(stage) + ")" : "";
  }
  std::string benchmarkName() { return benchmark.getName().str(); }
  /// Whether the declaration is the benchmark configuration itself (sizes included), not a
  /// reduced variant: its model is named as the benchmark.
  bool isBenchmarkConfiguration() { return declaration.getSymName() == benchmark.getName(); }

  /// The parameter a state buffer belongs to, by role.
  std::map<uint32_t, std::pair<std::string, std::string>> stateOf(const plan::Plan &plan) const {
    std::map<uint32_t, std::pair<std::string, std::string>> state;
    for (const plan::StateTensor &tensor : plan.state()) {
      state[tensor.buffer()] = {tensor.role(), tensor.param()};
    }
    return state;
  }

  /// A declared value against the benchmark's: one finding.
  void declaredAgainstBenchmark(llvm::StringRef rule, llvm::StringRef what, double declared,
                                std::optional<double> fixed) {
    if (!rules || !fixed) {
      return;
    }
    if (declared != *fixed) {
      violation(rule, "expected " + what.str() + " " + formatRuleValue(*fixed) + " (" +
                          benchmarkName() + ", " + rules->source + "), the declaration has " +
                          formatRuleValue(declared));
    }
  }

  void checkBenchmark() {
    if (!rules) {
      violation("benchmark", "no closed-division rule table for benchmark '" + benchmarkName() +
                                 "': only the declaration's own values are checked");
      return;
    }
    pass("benchmark", benchmarkName() + ": " + rules->source +
                          (isBenchmarkConfiguration()
                               ? ""
                               : "; @" + declaration.getSymName().str() +
                                     " is a reduced variant, so its sizes (sequence length, "
                                     "parameter count) are not the benchmark's"));
    if (rules->evalSamples) {
      if (benchmark.getEvalSamplesAttr().getInt() != *rules->evalSamples) {
        violation("eval.samples", "expected eval_samples " + std::to_string(*rules->evalSamples) +
                                      " (" + rules->source + "), the declaration has " +
                                      std::to_string(benchmark.getEvalSamplesAttr().getInt()));
      }
    }
    for (size_t stage = 0; stage < stages.size(); ++stage) {
      const plan::ModelInfo &info = stages[stage].model();
      if (info.benchmark() != benchmarkName() ||
          info.eval_samples() != benchmark.getEvalSamplesAttr().getInt() ||
          info.eval_every_samples() != benchmark.getEvalEverySamplesAttr().getInt()) {
        violation("eval.samples", "the plan's benchmark record (" + info.benchmark() + ", eval " +
                                      std::to_string(info.eval_samples()) + " every " +
                                      std::to_string(info.eval_every_samples()) +
                                      " samples) differs from the declaration's" + at(stage));
      }
    }
    checkDeclaredLogKeys();
    if (rules->seqLen && isBenchmarkConfiguration() &&
        batch.getSeqLenAttr().getInt() != *rules->seqLen) {
      violation("batch.seq_len", "expected max_sequence_length " + std::to_string(*rules->seqLen) +
                                     " (" + rules->source + "), the declaration has " +
                                     std::to_string(batch.getSeqLenAttr().getInt()));
    }
  }

  /// The declaration's extra log keys: those the rules fix, with their values; the plans'
  /// records carry exactly the declared ones (mlperf-run logs what the plan says).
  void checkDeclaredLogKeys() {
    // Integral values as the log writes integers (16, not 16.0).
    auto shown = [](double value) {
      return value == std::floor(value) && std::abs(value) < 1e15
                 ? std::to_string(static_cast<int64_t>(value))
                 : formatRuleValue(value);
    };
    DictionaryAttr declared = benchmark.getMllogAttr();
    int64_t problems = 0;
    for (const auto &[key, expected] : rules->mllog) {
      Attribute value = declared ? declared.get(key) : Attribute();
      std::optional<double> number;
      if (auto integer = dyn_cast_or_null<IntegerAttr>(value)) {
        number = static_cast<double>(integer.getInt());
      } else if (auto real = dyn_cast_or_null<FloatAttr>(value)) {
        number = real.getValueAsDouble();
      }
      if (!number || *number != expected) {
        ++problems;
        violation("mllog." + key, "expected " + key + " " + shown(expected) + " (" + rules->source +
                                      "), the declaration's tg.benchmark mllog " +
                                      (number ? "has " + shown(*number) : "lacks it"));
      }
    }
    // What the plan must carry: the optimizer's keys and the benchmark's own.
    NamedAttrList planKeys(optimizer.getMLLogKeys());
    if (declared) {
      planKeys.append(declared.getValue());
    }
    size_t declaredCount = planKeys.getAttrs().size();
    for (size_t stage = 0; stage < stages.size(); ++stage) {
      const plan::ModelInfo &info = stages[stage].model();
      bool same = static_cast<size_t>(info.mllog_size()) == declaredCount;
      for (const plan::Attribute &key : info.mllog()) {
        Attribute value = planKeys.get(key.name());
        auto integer = dyn_cast_or_null<IntegerAttr>(value);
        auto real = dyn_cast_or_null<FloatAttr>(value);
        auto text = dyn_cast_or_null<StringAttr>(value);
        same = same && ((key.has_i() && integer && integer.getInt() == key.i()) ||
                        (key.has_f() && real && real.getValueAsDouble() == key.f()) ||
                        (key.has_s() && text && text.getValue() == key.s()));
      }
      if (!same) {
        ++problems;
        violation("mllog", "the plan's log keys differ from the declaration's (tg.optimizer's "
                           "hyperparameters and tg.benchmark's mllog)" +
                               at(stage));
      }
    }
    if (problems == 0 && !rules->mllog.empty()) {
      std::string keys;
      for (const auto &[key, expected] : rules->mllog) {
        keys += (keys.empty() ? "" : ", ") + key + " " + shown(expected);
      }
      pass("mllog", keys + ", declared and in the plan");
    }
  }

  void checkOptimizer() {
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
      int64_t count = it == updatesOf.end() ? 0 : it->second,
              expected = entry.second.frozen ? 0 : 1;
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
      int64_t frozen =
          llvm::count_if(params, [](const auto &entry) { return entry.second.frozen; });
      pass("optimizer",
           name + ": every one of the " +
               std::to_string(static_cast<int64_t>(params.size()) - frozen) +
               " declared trainable parameter tensors updated once" +
               (frozen ? ", the " + std::to_string(frozen) + " frozen ones never" : std::string()));
    }
  }

  void checkClipping() {
    if (!optimizer.getClipGradNorm()) {
      if (rules && rules->clip) {
        violation("clip.max_norm", "the reference clips to " + formatRuleValue(*rules->clip) +
                                       " (" + rules->source + "), the declaration does not clip");
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
    declaredAgainstBenchmark("clip.max_norm", "clip norm", clip,
                             rules ? rules->clip : std::nullopt);
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
          violation("clip.formula", "the update at optimizer_step command " +
                                        std::to_string(index) +
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

  void checkSchedule() {
    std::string kind = schedule.getKind().str();
    double base = schedule.getBaseLr().convertToDouble(),
           end = schedule.getEndLr().convertToDouble();
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
          bad("expected schedule " + kind + " (declaration), plan has " +
              planKind.value_or("none") + where);
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
                              std::to_string(decaySteps) + ", max steps " +
                              std::to_string(maxSteps));
    }
  }

  void checkInit() {
    int64_t problems = 0, drawn = 0, filled = 0, loaded = 0;
    if (rules && rules->initStd) {
      for (const auto &[param, declared] : params) {
        if ((declared.init == "normal" || declared.init == "scaled_normal") &&
            declared.baseStd != *rules->initStd) {
          ++problems;
          violation("init", "expected init std " + formatRuleValue(*rules->initStd) + " (" +
                                benchmarkName() + " reference), the declaration draws " + param +
                                " with " + formatRuleValue(declared.baseStd));
        }
      }
    }
    if (rules && rules->initFromCheckpoint) {
      // The checkpoint holds the reference's model; parameters added to it for training
      // (LoRA adapters, where only adapters train) are initialized as the reference does.
      for (const auto &[param, declared] : params) {
        bool added = rules->onlyAdaptersTrain && !declared.frozen;
        if (declared.init != "checkpoint" && !added) {
          ++problems;
          violation("init", benchmarkName() +
                                " starts from the reference checkpoint, but the "
                                "declaration initializes " +
                                param + " with " + declared.init);
        }
      }
    }
    std::map<std::string, int64_t> initialized;
    for (size_t stage = 0; stage < stages.size(); ++stage) {
      const plan::Plan &plan = stages[stage];
      const plan::Program *init = findProgram(plan, "init_params");
      if (!init) {
        continue;
      }
      auto state = stateOf(plan);
      // The command that wrote each buffer; a view no command wrote has its source's bytes.
      std::map<uint32_t, int> producer;
      for (int index = 0; index < init->commands_size(); ++index) {
        for (uint32_t result : init->commands(index).results()) {
          producer[result] = index;
        }
      }
      auto producerOf = [&](uint32_t id) -> std::optional<int> {
        for (int hops = 0; hops <= plan.buffers_size(); ++hops) {
          if (auto found = producer.find(id); found != producer.end()) {
            return found->second;
          }
          if (id >= static_cast<uint32_t>(plan.buffers_size()) || !plan.buffers(id).has_view_of()) {
            break;
          }
          id = plan.buffers(id).view_of();
        }
        return std::nullopt;
      };
      for (int index = 0; index < init->commands_size(); ++index) {
        if (init->commands(index).results_size() != 1) {
          continue;
        }
        auto owner = state.find(init->commands(index).results(0));
        if (owner == state.end() || owner->second.first != rt::role::kParam) {
          continue;
        }
        // A ZeRO-3 shard is this rank's part of the whole parameter's draw (through
        // reshapes): the draw is what must be as declared.
        int source = index;
        for (int hops = 0; hops < init->commands_size(); ++hops) {
          const plan::Command &step = init->commands(source);
          if ((step.op() != "local_shard" && step.op() != "reshape") || step.operands_size() != 1) {
            break;
          }
          std::optional<int> found = producerOf(step.operands(0));
          if (!found || *found >= source) {
            break;
          }
          source = *found;
        }
        const plan::Command &command = init->commands(source);
        const std::string &param = owner->second.second;
        ++initialized[param];
        auto declared = params.find(param);
        if (declared == params.end()) {
          continue; // checkParameters names it
        }
        const DeclaredParam &d = declared->second;
        std::string where = " (init_params command " + std::to_string(index) + ")" + at(stage);
        if (command.op() == "random_normal") {
          ++drawn;
          std::optional<double> value = doubleAttr(command, "std");
          bool normal = d.init == "normal" || d.init == "scaled_normal";
          if (!normal || !value || std::abs(*value - d.std) > 1e-12 * d.std) {
            ++problems;
            violation("init", "expected " + param + " " +
                                  (normal ? "drawn with std " + formatRuleValue(d.std)
                                          : std::string("initialized as ") + d.init) +
                                  " (declaration: " + d.init +
                                  (normal ? " std " + formatRuleValue(d.baseStd) : "") +
                                  "), plan draws it with std " +
                                  (value ? formatRuleValue(*value) : std::string("none")) + where);
          }
        } else if (command.op() == "random_uniform") {
          ++drawn;
          // kaiming_uniform: U(-b, b) with b = 1 / sqrt(fan_in), the full last dim.
          std::optional<double> value = doubleAttr(command, "bound");
          double bound = d.fanIn > 0 ? 1.0 / std::sqrt(static_cast<double>(d.fanIn)) : 0.0;
          if (d.init != "kaiming_uniform" || !value || std::abs(*value - bound) > 1e-12 * bound) {
            ++problems;
            violation("init", "expected " + param + " initialized as " + d.init +
                                  " (declaration), plan draws it uniformly with bound " +
                                  (value ? formatRuleValue(*value) : std::string("none")) +
                                  (d.init == "kaiming_uniform"
                                       ? " instead of 1/sqrt(" + std::to_string(d.fanIn) + ")"
                                       : std::string()) +
                                  where);
          }
        } else if (command.op() == "fill") {
          ++filled;
          std::optional<double> value = doubleAttr(command, "value");
          double expected = d.init == "ones" ? 1.0 : 0.0;
          if ((d.init != "ones" && d.init != "zeros") || !value || *value != expected) {
            ++problems;
            violation("init", "expected " + param + " initialized as " + d.init +
                                  " (declaration), plan fills it with " +
                                  (value ? formatRuleValue(*value) : std::string("none")) + where);
          }
        }
      }
    }
    for (const auto &[param, declared] : params) {
      int64_t count = initialized.count(param) ? initialized[param] : 0;
      int64_t expected = declared.init == "checkpoint" ? 0 : 1;
      loaded += declared.init == "checkpoint";
      if (count != expected) {
        ++problems;
        violation("init", param + " is initialized by " + std::to_string(count) +
                              " init_params commands, expected " + std::to_string(expected) +
                              " (declaration: " + declared.init + ")");
      }
    }
    if (problems == 0) {
      pass("init", std::to_string(drawn) + " parameter tensors drawn, " + std::to_string(filled) +
                       " filled, " + std::to_string(loaded) +
                       " from a checkpoint, each as declared");
    }
  }

  void checkLoss() {
    // The declaration's loss: what @forward returns.
    std::string declaredLoss;
    for (auto func : declaration.getBody().front().getOps<func::FuncOp>()) {
      if (func.getSymName() != "forward" || func.isExternal()) {
        continue;
      }
      auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
      if (ret.getNumOperands() == 1 && ret.getOperand(0).getDefiningOp()) {
        declaredLoss = ret.getOperand(0).getDefiningOp()->getName().stripDialect().str();
      }
    }
    const plan::Plan &last = stages.back();
    int64_t accumulation = last.model().gradient_accumulation_steps();
    int64_t dp = std::max<int64_t>(1, rt::planMesh(last).dp);
    std::string planLoss;
    std::optional<double> seed;
    for (const plan::Program &program : last.programs()) {
      bool differentiated = llvm::StringRef(program.name()).starts_with("forward_backward");
      for (const plan::Command &command : program.commands()) {
        for (uint32_t result : command.results()) {
          if (last.buffers(result).name() == "loss" &&
              llvm::StringRef(program.name()).starts_with("forward")) {
            planLoss = command.op();
          }
        }
        // The backward's seed: d(loss / (A·dp)) / d(loss), a 0-d fill.
        if (differentiated && command.op() == "fill" && command.results_size() == 1 &&
            last.buffers(command.results(0)).shape_size() == 0 && !seed) {
          seed = doubleAttr(command, "value");
        }
      }
    }
    bool crossEntropy = planLoss == "cross_entropy" || planLoss == "linear_cross_entropy";
    if (declaredLoss != "cross_entropy" || !crossEntropy) {
      violation("loss", "expected the mean token cross-entropy (declaration: " +
                            (declaredLoss.empty() ? std::string("none") : declaredLoss) +
                            "), the plan's loss is computed by " +
                            (planLoss.empty() ? std::string("no command") : planLoss));
    } else {
      pass("loss", "mean token cross-entropy (" + planLoss + ")");
    }
    double expected = 1.0 / (static_cast<double>(accumulation) * static_cast<double>(dp));
    if (!seed || *seed != expected) {
      violation("loss.scale", "expected the backward seeded with 1/(micro-batches x dp) = " +
                                  formatRuleValue(expected) +
                                  " (the global batch's mean loss), plan has " +
                                  (seed ? formatRuleValue(*seed) : std::string("none")));
    } else {
      pass("loss.scale", "gradients of loss / (" + std::to_string(accumulation) + " x " +
                             std::to_string(dp) + "): the mean over the global batch");
    }
  }

  void checkParameters() {
    int64_t declaredCount = 0;
    for (const auto &entry : params) {
      declaredCount += entry.second.elements;
    }
    std::map<std::string, int64_t> planned; // full elements per parameter
    for (const plan::Plan &plan : stages) {
      for (const plan::StateTensor &tensor : plan.state()) {
        if (tensor.role() != rt::role::kParam) {
          continue;
        }
        int64_t elements = 1;
        bool overflow = false;
        for (int64_t dim : rt::stateLocalShape(plan, tensor)) { // a ZeRO-3 shard's whole
          overflow |= __builtin_mul_overflow(elements, dim, &elements);
        }
        overflow |=
            __builtin_mul_overflow(elements, std::max<int64_t>(1, tensor.split_count()), &elements);
        planned[tensor.param()] = overflow ? -1 : elements;
      }
    }
    int64_t planCount = 0, problems = 0;
    for (const auto &[param, elements] : planned) {
      planCount += std::max<int64_t>(0, elements);
      auto declared = params.find(param);
      if (declared == params.end()) {
        ++problems;
        violation("parameters", "the plan trains " + param +
                                    ", which the declaration does not "
                                    "declare");
      } else if (declared->second.elements != elements) {
        ++problems;
        violation("parameters",
                  param + " has " +
                      (elements < 0 ? std::string("more than 2^63") : std::to_string(elements)) +
                      " elements in the plan, " + std::to_string(declared->second.elements) +
                      " declared");
      }
    }
    for (const auto &entry : params) {
      if (!planned.count(entry.first)) {
        ++problems;
        violation("parameters", "the plan does not train the declared " + entry.first);
      }
    }
    if (rules && rules->parameterCount && isBenchmarkConfiguration() &&
        declaredCount != *rules->parameterCount) {
      ++problems;
      violation("parameters", "expected " + std::to_string(*rules->parameterCount) +
                                  " parameters (" + benchmarkName() + "), the declaration has " +
                                  std::to_string(declaredCount));
    }
    if (rules && rules->onlyAdaptersTrain) {
      // Trained: the parameters with optimizer state (a frozen one has its value only).
      std::set<std::string> trained;
      for (const plan::Plan &plan : stages) {
        for (const plan::StateTensor &tensor : plan.state()) {
          if (tensor.role() != rt::role::kParam && !rt::role::isFp8State(tensor.role())) {
            trained.insert(tensor.param());
          }
        }
      }
      int64_t base = 0;
      for (const std::string &name : trained) {
        base += llvm::StringRef(name).contains("lora") ? 0 : 1;
      }
      if (base > 0) {
        ++problems;
        violation("parameters.trainable", "the " + benchmarkName() +
                                              " reference trains only its LoRA adapters, the plan "
                                              "trains " +
                                              std::to_string(base) +
                                              " tensors that are not adapters (" +
                                              std::to_string(planCount) + " parameters)");
      }
    }
    if (problems == 0) {
      pass("parameters", std::to_string(planCount) + " parameters in " +
                             std::to_string(planned.size()) + " tensors, as declared" +
                             (rules && rules->parameterCount && isBenchmarkConfiguration()
                                  ? " and as " + benchmarkName() + " has"
                                  : ""));
    }
  }

  /// Where a buffer's value came from at one point of a program: "tokens[3]" for micro-batch 3
  /// of the batch input, "loss[3]" for micro-batch 3's loss, empty for anything computed.
  void checkBatchAndData() {
    int64_t gbs = batch.getGlobalBatchSizeAttr().getInt(),
            micro = batch.getMicroBatchSizeAttr().getInt(), seq = batch.getSeqLenAttr().getInt();
    int64_t problems = 0;
    for (size_t stage = 0; stage < stages.size(); ++stage) {
      const plan::Plan &plan = stages[stage];
      const plan::ModelInfo &info = plan.model();
      int64_t accumulation = info.gradient_accumulation_steps();
      int64_t dp = std::max<int64_t>(1, rt::planMesh(plan).dp);
      // In long double: the plan's numbers are unbounded data, and an int64 product may wrap.
      long double sequences = static_cast<long double>(accumulation) *
                              static_cast<long double>(info.micro_batch_size()) *
                              static_cast<long double>(dp);
      // Name each batch field the plan and the declaration disagree on; the product of
      // accumulation, micro-batch and dp is the rule only when they agree.
      std::string differing;
      auto compare = [&](const char *field, int64_t declared, int64_t planned) {
        if (declared != planned) {
          differing += std::string(differing.empty() ? "" : ", ") + field + " " +
                       std::to_string(declared) + " in the declaration, " +
                       std::to_string(planned) + " in the plan";
        }
      };
      compare("global batch", gbs, info.global_batch_size());
      compare("micro-batch", micro, info.micro_batch_size());
      compare("sequence length", seq, info.seq_len());
      if (!differing.empty()) {
        ++problems;
        violation("batch.accumulation", "the plan is not of this batch: " + differing +
                                            " (compiled from another declaration?)" + at(stage));
      } else if (sequences != static_cast<long double>(gbs)) {
        ++problems;
        violation("batch.accumulation", "expected " + std::to_string(gbs) +
                                            " sequences per step (declaration) = " +
                                            "micro-batches x micro_batch x dp, the plan has " +
                                            std::to_string(accumulation) + " x " +
                                            std::to_string(info.micro_batch_size()) + " x " +
                                            std::to_string(dp) + at(stage));
      }
      const plan::Program *step = findProgram(plan, "train_step");
      if (!step) {
        ++problems;
        violation("data.order", "the plan has no train_step program" + at(stage));
        continue;
      }
      std::map<std::string, const plan::Program *> programs;
      for (const plan::Program &program : plan.programs()) {
        programs[program.name()] = &program;
      }
      std::map<uint32_t, std::string> origin;
      for (int i = 0; i < step->inputs_size() && i < step->input_roles_size(); ++i) {
        const std::string &role = step->input_roles(i);
        if (role == rt::role::kTokens || role == rt::role::kLabels) {
          origin[step->inputs(i)] = role;
          auto shape = plan.buffers(step->inputs(i)).shape();
          if (shape.size() != 3 || shape[0] != accumulation || shape[1] != micro ||
              shape[2] != seq) {
            ++problems;
            violation("batch.accumulation", "the step's " + role + " input is not [" +
                                                std::to_string(accumulation) + ", " +
                                                std::to_string(micro) + ", " + std::to_string(seq) +
                                                "]" + at(stage));
          }
        }
      }
      std::map<std::string, std::set<int64_t>> read; // "tokens" -> micro-batches fed
      std::map<std::string, std::set<int64_t>> callsByProgram;
      for (int index = 0; index < step->commands_size(); ++index) {
        const plan::Command &command = step->commands(index);
        if (command.op() == "split" && command.operands_size() == 1) {
          auto source = origin.find(command.operands(0));
          for (int r = 0; r < command.results_size(); ++r) {
            origin[command.results(r)] = source == origin.end() || source->second.empty()
                                             ? std::string()
                                             : source->second + "[" + std::to_string(r) + "]";
          }
          continue;
        }
        if ((command.op() == "reshape" || command.op() == "copy") && command.operands_size() == 1 &&
            command.results_size() == 1) {
          auto source = origin.find(command.operands(0));
          origin[command.results(0)] = source == origin.end() ? std::string() : source->second;
          continue;
        }
        if (command.op() == "call") {
          std::optional<std::string> callee = stringAttr(command, "program");
          auto program = callee ? programs.find(*callee) : programs.end();
          if (program == programs.end() || !command.has_micro_batch()) {
            continue;
          }
          int64_t k = command.micro_batch();
          callsByProgram[*callee].insert(k);
          for (uint32_t input : program->second->inputs()) {
            llvm::StringRef name = plan.buffers(input).name();
            std::string role = name == "input.tokens"   ? std::string(rt::role::kTokens)
                               : name == "input.labels" ? std::string(rt::role::kLabels)
                                                        : std::string();
            if (role.empty()) {
              continue;
            }
            std::string expected = role + "[" + std::to_string(k) + "]";
            std::string found = origin.count(input) ? origin[input] : std::string();
            read[role].insert(k);
            if (found != expected) {
              ++problems;
              violation("data.order",
                        "micro-batch " + std::to_string(k) + " of " + *callee + " reads " +
                            (found.empty() ? std::string("a computed value") : found) + " as its " +
                            role + ", expected " + expected + " (train_step command " +
                            std::to_string(index) + ")" + at(stage));
            }
          }
          for (uint32_t output : program->second->outputs()) {
            origin[output] = std::string(); // rewritten by the call
          }
          continue;
        }
        for (uint32_t result : command.results()) {
          origin[result] = std::string();
        }
      }
      for (const auto &[role, fed] : read) {
        if (static_cast<int64_t>(fed.size()) != accumulation) {
          ++problems;
          violation("data.order", "the step feeds " + std::to_string(fed.size()) + " of its " +
                                      std::to_string(accumulation) + " micro-batches' " + role +
                                      at(stage));
        }
      }
    }
    // The batch layout: every micro-batch of the global batch read once, and the same on every
    // stage (stage 0 reads the tokens, the last the labels: they must be the same samples).
    int64_t dp = std::max<int64_t>(1, rt::planMesh(stages.front()).dp);
    const auto &layout = stages.front().model().train_micro_batches();
    std::vector<int64_t> sorted(layout.begin(), layout.end());
    std::sort(sorted.begin(), sorted.end());
    bool permutation = static_cast<int64_t>(sorted.size()) ==
                       stages.front().model().gradient_accumulation_steps() * dp;
    for (size_t g = 0; permutation && g < sorted.size(); ++g) {
      permutation = sorted[g] == static_cast<int64_t>(g);
    }
    if (!permutation) {
      ++problems;
      violation("data.order",
                "the batch layout (which micro-batch of the global batch each "
                "rank reads) does not read each of the " +
                    std::to_string(stages.front().model().gradient_accumulation_steps() * dp) +
                    " micro-batches once");
    }
    for (size_t stage = 1; stage < stages.size(); ++stage) {
      if (!std::equal(layout.begin(), layout.end(),
                      stages[stage].model().train_micro_batches().begin(),
                      stages[stage].model().train_micro_batches().end())) {
        ++problems;
        violation("data.order", "pipeline stage " + std::to_string(stage) +
                                    " reads another batch layout than stage 0: its labels would "
                                    "not be stage 0's tokens' samples");
      }
    }
    if (problems == 0) {
      pass("data.order", "each micro-batch's tokens and labels read once, in order, by the "
                         "micro-batch's own calls, as the batch layout assigns the global "
                         "batch's micro-batches to ranks; " +
                             std::to_string(stages.front().model().gradient_accumulation_steps()) +
                             " micro-batches of " + std::to_string(micro) + " x dp " +
                             std::to_string(std::max<int64_t>(1, rt::planMesh(stages.front()).dp)) +
                             " = global batch " + std::to_string(gbs));
    }
  }

  void checkFormats() {
    std::set<std::string> formats;
    int64_t problems = 0, casts = 0;
    for (size_t stage = 0; stage < stages.size(); ++stage) {
      const plan::Plan &plan = stages[stage];
      for (const plan::Buffer &buffer : plan.buffers()) {
        if (buffer.dtype() == plan::DTYPE_UNSPECIFIED || !plan::DType_IsValid(buffer.dtype())) {
          ++problems;
          violation("formats",
                    "buffer " + buffer.name() + " has no approved numeric format" + at(stage));
        } else {
          formats.insert(plan::DType_Name(buffer.dtype()));
        }
      }
      for (const plan::Program &program : plan.programs()) {
        std::map<uint32_t, int> writer;
        for (int index = 0; index < program.commands_size(); ++index) {
          const plan::Command &command = program.commands(index);
          bool toFp8 = command.op() == "convert" && command.results_size() == 1 &&
                       (plan.buffers(command.results(0)).dtype() == plan::F8E4M3FN ||
                        plan.buffers(command.results(0)).dtype() == plan::F8E5M2);
          if (toFp8) {
            ++casts;
            bool scaled = command.operands_size() >= 2;
            if (!scaled && command.operands_size() == 1 && writer.count(command.operands(0))) {
              const plan::Command &producer = program.commands(writer[command.operands(0)]);
              scaled = producer.op() == "scale";
              for (uint32_t operand : producer.operands()) {
                scaled |= producer.op() == "mul" && plan.buffers(operand).shape_size() == 0 &&
                          plan.buffers(operand).dtype() == plan::F32;
              }
            }
            if (!scaled) {
              ++problems;
              violation(
                  "casts.scaled",
                  "a convert to " + plan::DType_Name(plan.buffers(command.results(0)).dtype()) +
                      " without scaling: " + program.name() + " command " + std::to_string(index) +
                      " (" + plan.buffers(command.results(0)).name() + ")" + at(stage));
            }
          }
          for (uint32_t result : command.results()) {
            writer[result] = index;
          }
        }
      }
    }
    if (problems == 0) {
      pass("formats", "numeric formats " + llvm::join(formats, ", ") + " (all approved); " +
                          (casts ? std::to_string(casts) + " casts to 8-bit floats, each scaled"
                                 : std::string("no casts to 8-bit floats")));
    }
  }

  tg::ModelOp declaration;
  const std::vector<plan::Plan> &stages;
  const BenchmarkRules *rules;
  tg::OptimizerOp optimizer;
  tg::LRScheduleOp schedule;
  tg::BatchOp batch;
  tg::BenchmarkOp benchmark;
  std::map<std::string, DeclaredParam> params;
  std::vector<AuditFinding> findings;
};

/// Whether tg element type `type` is on MLPerf's approved list (integers: ids and masks).
bool approvedElementType(Type type) {
  return type.isF64() || type.isF32() || type.isF16() || type.isBF16() || type.isTF32() ||
         isa<Float8E4M3FNType, Float8E5M2Type, Float4E2M1FNType, Float8E8M0FNUType>(type) ||
         type.isInteger(1) || type.isInteger(4) || type.isInteger(8) || type.isInteger(32) ||
         type.isInteger(64);
}

} // namespace

const BenchmarkRules *findBenchmarkRules(llvm::StringRef benchmark) {
  for (const BenchmarkRules &rules : benchmarkTable()) {
    if (rules.benchmark == benchmark) {
      return &rules;
    }
  }
  return nullptr;
}

std::string formatRuleValue(double value) {
  if (!std::isfinite(value)) {
    return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
  }
  // Python's repr: the shortest digits that round-trip, in fixed notation for exponents in
  // [-4, 16) and as d.ddde-XX otherwise.
  char text[64];
  auto [end, error] =
      std::to_chars(text, text + sizeof(text), value, std::chars_format::scientific);
  if (error != std::errc()) {
    return std::to_string(value);
  }
  std::string scientific(text, end);
  size_t e = scientific.find('e');
  std::string mantissa = scientific.substr(0, e);
  int exponent = std::stoi(scientific.substr(e + 1));
  bool negative = mantissa[0] == '-';
  std::string digits;
  for (char c : mantissa) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
    }
  }
  std::string sign = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    std::string fixed;
    if (exponent < 0) {
      fixed = "0." + std::string(-exponent - 1, '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      fixed = digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
    } else {
      fixed = digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
    return sign + fixed;
  }
  std::string out = sign + digits.substr(0, 1);
  if (digits.size() > 1) {
    out += "." + digits.substr(1);
  }
  char exponentText[16];
  std::snprintf(exponentText, sizeof(exponentText), "e%c%02d", exponent < 0 ? '-' : '+',
                std::abs(exponent));
  return out + exponentText;
}

std::vector<AuditFinding> checkClosedRules(tg::ModelOp declaration,
                                           const std::vector<plan::Plan> &stages,
                                           const BenchmarkRules *rules) {
  if (stages.empty()) {
    return {{"plan", false, "no plan to audit"}};
  }
  return RuleChecker(declaration, stages, rules).run();
}

llvm::json::Object declaredHyperparameters(tg::ModelOp declaration) {
  Block &body = declaration.getBody().front();
  auto optimizer = *body.getOps<tg::OptimizerOp>().begin();
  auto schedule = *body.getOps<tg::LRScheduleOp>().begin();
  auto batch = *body.getOps<tg::BatchOp>().begin();
  auto benchmark = *body.getOps<tg::BenchmarkOp>().begin();
  // The schedule's name as mlperf-run logs it (runtime/mllog/BenchmarkLog.h).
  std::string kind = schedule.getKind() == "cosine_with_linear_warmup"
                         ? std::string("cosine with linear warmup")
                         : schedule.getKind().str();
  llvm::json::Object keys{
      {"global_batch_size", batch.getGlobalBatchSizeAttr().getInt()},
      {"max_sequence_length", batch.getSeqLenAttr().getInt()},
      {"opt_name", optimizer.getName().str()},
      {"opt_base_learning_rate", schedule.getBaseLr().convertToDouble()},
      {"opt_end_learning_rate", schedule.getEndLr().convertToDouble()},
      {"opt_learning_rate_warmup_steps", schedule.getWarmupSteps()},
      {"opt_learning_rate_decay_steps", schedule.getDecaySteps()},
      {"opt_learning_rate_decay_schedule", kind},
      {"eval_samples", benchmark.getEvalSamplesAttr().getInt()},
      {"max_steps", schedule.getMaxSteps()},
      {"opt_learning_rate_training_steps", schedule.getMaxSteps()},
  };
  // The optimizer's keys (as the plan carries them) and the benchmark's own.
  SmallVector<NamedAttribute> declaredKeys = optimizer.getMLLogKeys();
  if (DictionaryAttr mllog = benchmark.getMllogAttr()) {
    llvm::append_range(declaredKeys, mllog.getValue());
  }
  for (NamedAttribute entry : declaredKeys) {
    if (auto integer = dyn_cast<IntegerAttr>(entry.getValue())) {
      keys[entry.getName().strref()] = integer.getInt();
    } else if (auto real = dyn_cast<FloatAttr>(entry.getValue())) {
      keys[entry.getName().strref()] = real.getValueAsDouble();
    } else if (auto text = dyn_cast<StringAttr>(entry.getValue())) {
      keys[entry.getName().strref()] = text.str();
    }
  }
  return keys;
}

bool isCastTo8BitFloat(Operation *op) {
  auto convert = dyn_cast<tg::ConvertOp>(op);
  return convert && isa<Float8E4M3FNType, Float8E5M2Type>(
                        cast<RankedTensorType>(convert.getType()).getElementType());
}

bool isScaledCast(Operation *convert) {
  Operation *producer = convert->getOperand(0).getDefiningOp();
  if (producer && isa<tg::ScaleOp>(producer)) {
    return true;
  }
  if (producer && isa<tg::MulOp>(producer)) {
    for (Value operand : producer->getOperands()) {
      auto scalar = dyn_cast<RankedTensorType>(operand.getType());
      if (scalar && scalar.getRank() == 0) {
        return true;
      }
    }
  }
  return false;
}

std::vector<AuditFinding> checkIRFormats(ModuleOp module, llvm::StringRef where) {
  std::vector<AuditFinding> findings;
  std::set<std::string> unapproved;
  module.walk([&](Operation *op) {
    for (Type type : op->getResultTypes()) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (tensor && !approvedElementType(tensor.getElementType())) {
        std::string text = llvm::to_string(tensor.getElementType());
        if (unapproved.insert(text).second) {
          findings.push_back({"formats", false,
                              where.str() + ": " + op->getName().getStringRef().str() +
                                  " produces " + text + ", not an approved numeric format"});
        }
      }
    }
    if (!isCastTo8BitFloat(op)) {
      return;
    }
    auto convert = cast<tg::ConvertOp>(op);
    Type element = cast<RankedTensorType>(convert.getType()).getElementType();
    bool scaled = isScaledCast(op);
    if (!scaled) {
      std::string text = llvm::to_string(element);
      auto func = convert->getParentOfType<func::FuncOp>();
      findings.push_back({"casts.scaled", false,
                          where.str() + ": a tg.convert to " + text + " without scaling in @" +
                              (func ? func.getSymName().str() : std::string("?"))});
    }
  });
  return findings;
}

} // namespace mlperf
