//===- ModelFile.h - Load and verify a model declaration -------*- C++ -*-===//
//
// Every mlperfc command that reads a model goes through ModelFile, so that every diagnostic a
// user sees has the form file:line:col and a missing file is one clear line, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_SUPPORT_MODELFILE_H
#define MLPERFC_COMPILER_SUPPORT_MODELFILE_H

#include "dialects/TG/IR/TGOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

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
  /// when the file cannot be read, does not parse, fails verification or does not hold
  /// exactly one tg.model.
  mlir::OwningOpRef<mlir::ModuleOp> load();

  /// Parses and verifies MLIR text held in memory (e.g. a generated declaration), with the
  /// same checks and diagnostics as load(); `bufferName` stands in for the file name.
  mlir::OwningOpRef<mlir::ModuleOp> loadFromString(llvm::StringRef text,
                                                   llvm::StringRef bufferName);

private:
  mlir::OwningOpRef<mlir::ModuleOp> parseBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer);

  mlir::MLIRContext &context;
  std::string path;
  // One buffer per SourceMgr: the MLIR parser always parses a SourceMgr's main (first) file.
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> diagnosticHandler;
  // Drops MLIR's generic "failed to infer returned types" that follows the specific error an
  // op's type inference already reported at the same place: users get one message.
  uint64_t duplicateFilterId = 0;
  mlir::Location lastErrorLocation;
};

/// The model of a module that ModelFile loaded (exactly one exists).
tg::ModelOp getModel(mlir::ModuleOp module);

} // namespace mlperf

#endif // MLPERFC_COMPILER_SUPPORT_MODELFILE_H
