//===- Check.cpp - mlperfc check ------------------------------*- C++ -*-===//

#include "Commands.h"

#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

namespace mlperf::cli {

cl::SubCommand checkCommand("check", "Parse and verify model files; print what was checked");

static cl::list<std::string> checkInputs(cl::Positional, cl::OneOrMore, cl::sub(checkCommand),
                                         cl::desc("<model.mlir>..."), cl::cat(mlperfcCategory()));

/// One line per verified file: how many functions and ops of which kind it declares, so the
/// user sees that the checker looked at what they think it looked at.
static void printCheckSummary(llvm::StringRef path, mlir::ModuleOp module) {
  llvm::MapVector<llvm::StringRef, unsigned> opCounts;
  unsigned functions = 0;
  unsigned ops = 0;
  module.walk([&](mlir::Operation *op) {
    if (op == module.getOperation() || llvm::isa<tg::ModelOp>(op)) {
      return;
    }
    if (llvm::isa<mlir::func::FuncOp>(op)) {
      ++functions;
      return;
    }
    ++ops;
    ++opCounts[op->getName().getStringRef()];
  });
  tg::ModelOp model = getModel(module);
  llvm::outs() << path << ": ok: model @" << model.getSymName() << ", " << functions
               << (functions == 1 ? " function, " : " functions, ") << ops
               << (ops == 1 ? " op" : " ops");
  if (!opCounts.empty()) {
    llvm::outs() << " (";
    llvm::interleaveComma(opCounts, llvm::outs(), [](const auto &entry) {
      llvm::outs() << entry.first << " " << entry.second;
    });
    llvm::outs() << ")";
  }
  llvm::outs() << "\n";
}

int runCheck() {
  std::unique_ptr<mlir::MLIRContext> contextOwner = createModelContext();
  mlir::MLIRContext &context = *contextOwner;
  unsigned failures = 0;
  for (const std::string &path : checkInputs) {
    ModelFile modelFile(context, path);
    mlir::OwningOpRef<mlir::ModuleOp> module = modelFile.load();
    if (!module) {
      ++failures;
      continue;
    }
    printCheckSummary(path, *module);
  }
  if (failures != 0 && checkInputs.size() > 1) {
    llvm::errs() << "mlperfc check: " << failures << " of " << checkInputs.size()
                 << " files failed\n";
  }
  return failures == 0 ? 0 : 1;
}

} // namespace mlperf::cli
