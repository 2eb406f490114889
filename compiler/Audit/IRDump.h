//===- IRDump.h - Write the IR after every pass ----------------*- C++ -*-===//

#ifndef MLPERFC_COMPILER_SUPPORT_IRDUMP_H
#define MLPERFC_COMPILER_SUPPORT_IRDUMP_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
class PassManager;
} // namespace mlir

namespace mlperf {

/// Makes `pm` write the module before the first pass as DIR/00-input.mlir and after every
/// top-level pass as DIR/NN-<pass-argument>.mlir, numbered in pipeline order, each file
/// written atomically. `mlperfc audit` reads these. Fails if DIR cannot be created.
bool addIRDump(mlir::PassManager &pm, llvm::StringRef directory, std::string &error);

} // namespace mlperf

#endif // MLPERFC_COMPILER_SUPPORT_IRDUMP_H
