//===- ModelFile.h - Load and verify a model declaration -------*- C++ -*-===//
//
// Every mlperfc command that reads a model goes through ModelFile, so that every diagnostic a
// user sees has the form file:line:col and a missing file is one clear line, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_SUPPORT_MODELFILE_H
#define MLPERFC_COMPILER_SUPPORT_MODELFILE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>

namespace mlir {
class MLIRContext;
class SourceMgrDiagnosticHandler;
} // namespace mlir

namespace mlperf {

/// One model file. While the object lives, diagnostics emitted in its context are printed to
/// stderr with the offending source line, so keep it alive while the module is transformed.
class ModelFile {
public:
  ModelFile(mlir::MLIRContext &context, llvm::StringRef path);
  ~ModelFile();

  /// Parses and verifies the file ("-" reads stdin). Returns null after printing diagnostics
  /// when the file cannot be read, does not parse, fails verification or declares no function.
  mlir::OwningOpRef<mlir::ModuleOp> load();

private:
  mlir::MLIRContext &context;
  std::string path;
  // One buffer per SourceMgr: the MLIR parser always parses a SourceMgr's main (first) file.
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> diagnosticHandler;
};

} // namespace mlperf

#endif // MLPERFC_COMPILER_SUPPORT_MODELFILE_H
