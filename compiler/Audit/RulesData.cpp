//===- RulesData.cpp - Rules: loss, batch, accumulation, data order -*- C++ -*-===//

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

void RuleChecker::checkLoss() {
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
  // vocab_loss: the same loss from a vocabulary split over ranks (dist-lower-vocab-loss).
  bool crossEntropy =
      planLoss == "cross_entropy" || planLoss == "linear_cross_entropy" || planLoss == "vocab_loss";
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

/// Where a buffer's value came from at one point of a program: "tokens[3]" for micro-batch 3
/// of the batch input, "loss[3]" for micro-batch 3's loss, empty for anything computed.
void RuleChecker::checkBatchAndData() {
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
                     std::to_string(declared) + " in the declaration, " + std::to_string(planned) +
                     " in the plan";
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
      violation("batch.accumulation",
                "expected " + std::to_string(gbs) + " sequences per step (declaration) = " +
                    "micro-batches x micro_batch x dp, the plan has " +
                    std::to_string(accumulation) + " x " + std::to_string(info.micro_batch_size()) +
                    " x " + std::to_string(dp) + at(stage));
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
        // With one micro-batch per step the whole input is micro-batch 0's: the step passes it
        // on without slicing it.
        origin[step->inputs(i)] = accumulation == 1 ? role + "[0]" : role;
        auto shape = plan.buffers(step->inputs(i)).shape();
        if (shape.size() != 3 || shape[0] != accumulation || shape[1] != micro || shape[2] != seq) {
          ++problems;
          violation("batch.accumulation",
                    "the step's " + role + " input is not [" + std::to_string(accumulation) + ", " +
                        std::to_string(micro) + ", " + std::to_string(seq) + "]" + at(stage));
        }
      }
    }
    std::map<std::string, std::set<int64_t>> read; // "tokens" -> micro-batches fed
    std::map<std::string, std::set<int64_t>> callsByProgram;
    for (int index = 0; index < step->commands_size(); ++index) {
      const plan::Command &command = step->commands(index);
      if (command.op() == "split" && command.operands_size() == 1 && command.results_size() > 1) {
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

} // namespace mlperf::closed_rules
