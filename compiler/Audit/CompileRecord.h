//===- CompileRecord.h - The compile options a plan records ------*- C++ -*-===//
//
// `mlperfc compile` records in every plan how it was compiled (plan.proto CompileOptions,
// with the precision and accumulation in ModelInfo and the strategy in Mesh), so that
// `mlperfc audit` can compile the declaration again, pass by pass, and compare.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_AUDIT_COMPILERECORD_H
#define MLPERFC_COMPILER_AUDIT_COMPILERECORD_H

#include "compiler/Pipelines/Pipelines.h"
#include "runtime/plan.pb.h"
#include "runtime/support/Status.h"

#include <string>

namespace mlperf {

/// Writes `options` (and the --device given, empty without) into `plan`.
void recordCompileOptions(const TrainStepOptions &options, const std::string &device,
                          plan::Plan &plan);

/// The options `plan` was compiled with; fails, naming the file, when it records none.
rt::Status compileOptionsOf(const plan::Plan &plan, const std::string &path,
                            TrainStepOptions &options, std::string &device);

} // namespace mlperf

#endif // MLPERFC_COMPILER_AUDIT_COMPILERECORD_H
