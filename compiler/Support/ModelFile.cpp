//===- ModelFile.cpp - Load and verify a model declaration ------*- C++ -*-===//

#include "compiler/Support/ModelFile.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

namespace mlperf {

ModelFile::ModelFile(MLIRContext &context, llvm::StringRef path)
    : context(context), path(path.str()),
      diagnosticHandler(std::make_unique<SourceMgrDiagnosticHandler>(sourceMgr, &context)),
      lastErrorLocation(UnknownLoc::get(&context)) {
  // Users read file:line:col and the message; a dump of the generic IR is for developers.
  context.printOpOnDiagnostic(false);
  duplicateFilterId = context.getDiagEngine().registerHandler([this](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error) {
      return failure();
    }
    bool duplicate = diag.getLocation() == lastErrorLocation &&
                     llvm::StringRef(diag.str()).ends_with("op failed to infer returned types");
    lastErrorLocation = diag.getLocation();
    return success(duplicate); // success() swallows the diagnostic
  });
}

ModelFile::~ModelFile() { context.getDiagEngine().eraseHandler(duplicateFilterId); }

OwningOpRef<ModuleOp> ModelFile::load() {
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> buffer = openInputFile(path, &errorMessage);
  if (!buffer) {
    // No buffer means no source location to point at; the message names the file.
    llvm::WithColor::error(llvm::errs()) << errorMessage << "\n";
    return nullptr;
  }
  return parseBuffer(std::move(buffer));
}

OwningOpRef<ModuleOp> ModelFile::loadFromString(llvm::StringRef text, llvm::StringRef bufferName) {
  return parseBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, bufferName));
}

OwningOpRef<ModuleOp> ModelFile::parseBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer) {
  if (sourceMgr.getNumBuffers() != 0) {
    llvm::report_fatal_error("ModelFile parses one buffer; " + llvm::Twine(path) +
                             " was given a second");
  }
  unsigned bufferId = sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  ParserConfig config(&context, /*verifyAfterParse=*/true);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module) {
    return nullptr;
  }
  auto models = module->getOps<tg::ModelOp>();
  size_t count = std::distance(models.begin(), models.end());
  if (count != 1) {
    Location loc = FileLineColLoc::get(
        &context, sourceMgr.getMemoryBuffer(bufferId)->getBufferIdentifier(), 1, 1);
    emitError(loc) << "a model file declares exactly one tg.model, this one declares " << count;
    return nullptr;
  }
  return module;
}

tg::ModelOp getModel(ModuleOp module) { return *module.getOps<tg::ModelOp>().begin(); }

} // namespace mlperf
