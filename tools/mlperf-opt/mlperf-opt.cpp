//===- mlperf-opt.cpp - mlir-opt with only mlperfc's dialects and passes -===//
//
// The developer driver for lit tests and pass debugging. Registers narrowly: our dialects,
// func, arith and our passes, so a test cannot accidentally depend on anything else.
//
//===----------------------------------------------------------------------===//

#include "compiler/Registration.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlperf::registerMlperfcDialects(registry);
  mlperf::registerMlperfcPassesAndPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mlperf-opt: mlperfc dialects and passes\n", registry));
}
