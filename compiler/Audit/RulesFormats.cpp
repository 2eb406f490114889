//===- RulesFormats.cpp - Rules: numeric formats, scaled fp8 casts -*- C++ -*-===//

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

void RuleChecker::checkFormats() {
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
            violation("casts.scaled",
                      "a convert to " + plan::DType_Name(plan.buffers(command.results(0)).dtype()) +
                          " without scaling: " + program.name() + " command " +
                          std::to_string(index) + " (" + plan.buffers(command.results(0)).name() +
                          ")" + at(stage));
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

} // namespace mlperf::closed_rules
