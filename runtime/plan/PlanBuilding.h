//===- PlanBuilding.h - Commands of hand-built plans ------------*- C++ -*-===//
//
// The op checker, calibration, tools and tests build small plans by hand; this is the one way
// they add a command. (The compiler builds plans through the plan dialect and plan-emit.)
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_PLAN_PLANBUILDING_H
#define MLPERFC_RUNTIME_PLAN_PLANBUILDING_H

#include "runtime/plan.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlperf::rt {

/// Appends `op(operands) -> results` on `stream` to `program`.
inline plan::Command *addCommand(plan::Program &program, const std::string &op,
                                 const std::vector<uint32_t> &operands,
                                 const std::vector<uint32_t> &results, uint32_t stream = 0) {
  plan::Command *command = program.add_commands();
  command->set_op(op);
  for (uint32_t id : operands) {
    command->add_operands(id);
  }
  for (uint32_t id : results) {
    command->add_results(id);
  }
  command->set_stream(stream);
  return command;
}

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_PLAN_PLANBUILDING_H
