//===- RuleChecker.h - The closed-division rules, one family per file -*- C++ -*-===//
//
// Internal to compiler/Audit: the checker ClosedRules.cpp runs over a declaration and its
// plans. Its rule families live in files of their own: RulesOptimizer.cpp (optimizer,
// clipping, LR schedule), RulesInit.cpp (initialization, trained parameters), RulesData.cpp
// (loss and its scaling, batch, accumulation, data order), RulesFormats.cpp (numeric formats,
// scaled fp8 casts); ClosedRules.cpp has the benchmark table and the declared values.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_AUDIT_RULECHECKER_H
#define MLPERFC_COMPILER_AUDIT_RULECHECKER_H

#include "compiler/Audit/ClosedRules.h"
#include "dialects/TG/IR/TGOps.h"

#include "runtime/plan.pb.h"

#include "llvm/ADT/StringRef.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlperf::closed_rules {

/// A command's attribute as a number or a string, if it has one of that name.
std::optional<double> doubleAttr(const plan::Command &command, llvm::StringRef name);
std::optional<std::string> stringAttr(const plan::Command &command, llvm::StringRef name);
/// The plan's program named `name`, or null.
const plan::Program *findProgram(const plan::Plan &plan, llvm::StringRef name);

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
              const BenchmarkRules *rules);

  std::vector<AuditFinding> run();

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
  std::map<uint32_t, std::pair<std::string, std::string>> stateOf(const plan::Plan &plan) const;

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

  // ClosedRules.cpp: the benchmark and the log keys the rules fix.
  void checkBenchmark();
  /// The declaration's extra log keys: those the rules fix, with their values; the plans'
  /// records carry exactly the declared ones (mlperf-run logs what the plan says).
  void checkDeclaredLogKeys();
  // RulesOptimizer.cpp.
  void checkOptimizer();
  void checkClipping();
  void checkSchedule();
  // RulesInit.cpp.
  void checkInit();
  void checkParameters();
  // RulesData.cpp.
  void checkLoss();
  /// Where a buffer's value came from at one point of a program: "tokens[3]" for micro-batch 3
  /// of the batch input, "loss[3]" for micro-batch 3's loss, empty for anything computed.
  void checkBatchAndData();
  // RulesFormats.cpp.
  void checkFormats();

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

} // namespace mlperf::closed_rules

#endif // MLPERFC_COMPILER_AUDIT_RULECHECKER_H
