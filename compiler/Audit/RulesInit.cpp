//===- RulesInit.cpp - Rules: initialization, trained parameters -*- C++ -*-===//

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

void RuleChecker::checkInit() {
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
                     " filled, " + std::to_string(loaded) + " from a checkpoint, each as declared");
  }
}

void RuleChecker::checkParameters() {
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
    violation("parameters", "expected " + std::to_string(*rules->parameterCount) + " parameters (" +
                                benchmarkName() + "), the declaration has " +
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

} // namespace mlperf::closed_rules
