//===- Registration.h - Dialects and passes mlperfc tools load --*- C++ -*-===//

#ifndef MLPERFC_COMPILER_REGISTRATION_H
#define MLPERFC_COMPILER_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlperf {

/// The dialects a model file may use: tg, func and arith. Registered narrowly on purpose: a
/// model that uses anything else is rejected at parse time.
void registerMlperfcDialects(mlir::DialectRegistry &registry);

/// Every mlperfc pass and pipeline, for mlperf-opt and --dump-ir style drivers.
void registerMlperfcPassesAndPipelines();

} // namespace mlperf

#endif // MLPERFC_COMPILER_REGISTRATION_H
