//===- IRDump.h - Write the IR and a certificate after every pass -*- C++ -*-===//

#ifndef MLPERFC_COMPILER_AUDIT_IRDUMP_H
#define MLPERFC_COMPILER_AUDIT_IRDUMP_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir {
class PassManager;
} // namespace mlir

namespace mlperf {

/// Makes `pm` write the module before the first pass as DIR/00-input.mlir and after every
/// top-level pass as DIR/NN-<pass-argument>.mlir, numbered in pipeline order, with the pass's
/// certificate (compiler/Audit/Certificate.h) as DIR/NN-<pass-argument>.certificate.json;
/// every file is written atomically. `mlperfc audit --dump-ir DIR` reads them. Earlier dumps
/// in DIR are removed. Fails if DIR cannot be created.
bool addIRDump(mlir::PassManager &pm, llvm::StringRef directory, std::string &error);

/// Whether `name` is a file addIRDump writes ("07-cse.mlir", "07-cse.certificate.json").
bool isIRDumpFile(llvm::StringRef name);

} // namespace mlperf

#endif // MLPERFC_COMPILER_AUDIT_IRDUMP_H
