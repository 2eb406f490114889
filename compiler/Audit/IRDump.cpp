//===- IRDump.cpp - Write the IR after every pass --------------*- C++ -*-===//

#include "compiler/Support/IRDump.h"

#include "mlir/IR/Operation.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace mlperf {
namespace {

class IRDumpInstrumentation : public mlir::PassInstrumentation {
public:
  explicit IRDumpInstrumentation(std::string directory) : directory(std::move(directory)) {}

  void runBeforePipeline(std::optional<mlir::OperationName>, const PipelineParentInfo &) override {}

  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
    if (index == 0 && !op->getParentOp()) {
      write(op, "input");
    }
  }

  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    if (op->getParentOp()) {
      return; // nested pass managers: the top-level pass's dump covers them
    }
    write(op, pass->getArgument().empty() ? pass->getName() : pass->getArgument());
  }

private:
  void write(mlir::Operation *op, llvm::StringRef name) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, llvm::formatv("{0:2}-{1}.mlir", index++, name).str());
    if (llvm::Error error = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
          op->print(os);
          return llvm::Error::success();
        })) {
      llvm::WithColor::warning(llvm::errs(), "mlperfc")
          << "cannot write " << path << ": " << llvm::toString(std::move(error)) << "\n";
    }
  }

  std::string directory;
  unsigned index = 0;
};

} // namespace

bool addIRDump(mlir::PassManager &pm, llvm::StringRef directory, std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory)) {
    error = "cannot create " + directory.str() + ": " + ec.message();
    return false;
  }
  // Dumps of an earlier compile into this directory (NN-name.mlir) would read as this one's:
  // a pipeline with other passes numbers them differently.
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator entry(directory, ec), end; entry != end && !ec;
       entry.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(entry->path());
    if (name.size() > 3 && llvm::isDigit(name[0]) && llvm::isDigit(name[1]) && name[2] == '-' &&
        name.ends_with(".mlir")) {
      if (std::error_code removed = llvm::sys::fs::remove(entry->path())) {
        error = "cannot remove the old dump " + entry->path() + ": " + removed.message();
        return false;
      }
    }
  }
  pm.addInstrumentation(std::make_unique<IRDumpInstrumentation>(directory.str()));
  return true;
}

} // namespace mlperf
