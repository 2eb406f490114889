//===- ModelFuzzer.cpp - libFuzzer harness for model declarations -----------===//
//
// A model file is user input: MLIR parse and verify must give a diagnostic, never a crash,
// an LLVM fatal error or a sanitizer report.
//
//===----------------------------------------------------------------------===//

#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"

#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>
#include <memory>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::unique_ptr<mlir::MLIRContext> context = mlperf::createModelContext();
  mlperf::ModelFile file(*context, "<fuzz>");
  // Diagnostics go to the file's handler; the fuzzer only cares that nothing crashes.
  (void)file.loadFromString(llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz");
  return 0;
}
