//===- CommandTypes.h - Operand and result types of plan commands -*- C++ -*-===//

#ifndef MLPERFC_RUNTIME_PLAN_COMMANDTYPES_H
#define MLPERFC_RUNTIME_PLAN_COMMANDTYPES_H

#include "runtime/plan.pb.h"

#include <string>

namespace mlperf::rt {

/// Empty when the command's operand and result dtypes, shapes and attributes fit its op;
/// otherwise what is wrong. The command's arity and buffer ids must already be valid.
std::string checkCommandTypes(const plan::Plan &plan, const plan::Command &command);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_PLAN_COMMANDTYPES_H
