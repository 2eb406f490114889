//===- Registration.cpp - Dialects and passes mlperfc tools load -*- C++ -*-===//

#include "compiler/Registration.h"

#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Plan/IR/PlanOps.h"
#include "dialects/TG/IR/TGOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Transforms/Passes.h"

namespace mlperf {

void registerMlperfcDialects(mlir::DialectRegistry &registry) {
  registry.insert<tg::TGDialect, dist::DistDialect, plan_ir::PlanDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
}

std::unique_ptr<mlir::MLIRContext> createModelContext() {
  mlir::DialectRegistry registry;
  registerMlperfcDialects(registry);
  return std::make_unique<mlir::MLIRContext>(registry);
}

void registerMlperfcPassesAndPipelines() {
  registerMlperfcTransformsPasses();
  registerMlperfcPipelines();
  // Generic MLIR passes that are exact and that our pipelines use.
  mlir::registerCSEPass();
  mlir::registerCanonicalizerPass();
}

} // namespace mlperf
