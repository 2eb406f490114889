//===- ClosedRules.cpp - MLPerf closed-division rules on a plan --*- C++ -*-===//

#include "compiler/Audit/ClosedRules.h"
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

    BenchmarkRules gptOss;
    gptOss.benchmark = "gpt_oss_20b";
    gptOss.source = std::string(checker) +
                    "gpt_oss_20b.yaml; MLPerf Training v6.0 rules; shared/reference/BENCHMARKS.md "
                    "section 2";
    gptOss.beta1 = 0.9;
    gptOss.beta2 = 0.95;
    gptOss.epsilon = 1e-05;
    gptOss.weightDecay = 0.1;
    gptOss.clip = 1.0;
    gptOss.weightDecayParams = "matrices"; // Megatron: no decay on 1-D parameters
    gptOss.schedule = "cosine_with_linear_warmup";
    gptOss.maxSteps = 1200000;
    gptOss.evalSamples = 1024;
    gptOss.seqLen = 8192;
    gptOss.parameterCount = 20488418112; // docs/models.md derives it
    gptOss.initStd = 0.008;
    rules.push_back(gptOss);
    return rules;
  }();
  return table;
}

} // namespace

namespace closed_rules {

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

RuleChecker::RuleChecker(tg::ModelOp declaration, const std::vector<plan::Plan> &stages,
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
    declared.std = declared.init == "scaled_normal"
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

std::vector<AuditFinding> RuleChecker::run() {
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

/// The parameter a state buffer belongs to, by role.
std::map<uint32_t, std::pair<std::string, std::string>>
RuleChecker::stateOf(const plan::Plan &plan) const {
  std::map<uint32_t, std::pair<std::string, std::string>> state;
  for (const plan::StateTensor &tensor : plan.state()) {
    state[tensor.buffer()] = {tensor.role(), tensor.param()};
  }
  return state;
}

void RuleChecker::checkBenchmark() {
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
void RuleChecker::checkDeclaredLogKeys() {
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

} // namespace closed_rules

namespace {

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
  return closed_rules::RuleChecker(declaration, stages, rules).run();
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
