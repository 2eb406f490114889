//===- Registration.h - Dialects and passes mlperfc tools load --*- C++ -*-===//

#ifndef MLPERFC_COMPILER_REGISTRATION_H
#define MLPERFC_COMPILER_REGISTRATION_H

#include <memory>

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace mlperf {

/// The dialects a model file may use: tg, func and arith. Registered narrowly on purpose: a
/// model that uses anything else is rejected at parse time.
void registerMlperfcDialects(mlir::DialectRegistry &registry);

/// A context with the model dialects registered (what every mlperfc command reads models in).
std::unique_ptr<mlir::MLIRContext> createModelContext();

/// Every mlperfc pass and pipeline, for mlperf-opt and --dump-ir style drivers.
void registerMlperfcPassesAndPipelines();

} // namespace mlperf

#endif // MLPERFC_COMPILER_REGISTRATION_H
