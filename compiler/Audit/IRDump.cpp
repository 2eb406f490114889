//===- IRDump.cpp - Write the IR and a certificate after every pass -*- C++ -*-===//

#include "compiler/Audit/IRDump.h"

#include "compiler/Audit/Certificate.h"

#include "mlir/IR/BuiltinOps.h"
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

  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
    if (index == 0 && !op->getParentOp()) {
      write(op, "input", nullptr);
    }
  }

  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    if (op->getParentOp()) {
      return; // nested pass managers: the top-level pass's dump covers them
    }
    write(op, pass->getArgument().empty() ? pass->getName() : pass->getArgument(), pass);
  }

private:
  void write(mlir::Operation *op, llvm::StringRef name, mlir::Pass *pass) {
    std::string stem = llvm::formatv("{0:2}-{1}", index++, name).str();
    // With locations: each op keeps the declaration's file:line:col (a rewritten op its
    // source's; tg-recompute's clones are "recomputed"(...)), so a dump traces back.
    writeFile(stem + ".mlir", [&](llvm::raw_ostream &os) {
      op->print(os, mlir::OpPrintingFlags().enableDebugInfo(/*enable=*/true,
                                                            /*prettyForm=*/false));
    });
    auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
    if (!module) {
      return;
    }
    IRCensus after = takeCensus(module);
    if (pass) {
      Certificate certificate = certify(name, census, after);
      writeFile(stem + ".certificate.json", [&](llvm::raw_ostream &os) {
        os << llvm::formatv("{0:2}", certificateToJSON(certificate)) << "\n";
      });
    }
    census = std::move(after);
  }

  void writeFile(llvm::StringRef file, llvm::function_ref<void(llvm::raw_ostream &)> body) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, file);
    if (llvm::Error error = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
          body(os);
          return llvm::Error::success();
        })) {
      llvm::WithColor::warning(llvm::errs(), "mlperfc")
          << "cannot write " << path << ": " << llvm::toString(std::move(error)) << "\n";
    }
  }

  std::string directory;
  unsigned index = 0;
  IRCensus census; // of the last module written
};

} // namespace

bool isIRDumpFile(llvm::StringRef name) {
  return name.size() > 3 && llvm::isDigit(name[0]) && llvm::isDigit(name[1]) && name[2] == '-' &&
         (name.ends_with(".mlir") || name.ends_with(".certificate.json"));
}

bool addIRDump(mlir::PassManager &pm, llvm::StringRef directory, std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory)) {
    error = "cannot create " + directory.str() + ": " + ec.message();
    return false;
  }
  // Dumps of an earlier compile into this directory would read as this one's: a pipeline with
  // other passes numbers them differently.
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator entry(directory, ec), end; entry != end && !ec;
       entry.increment(ec)) {
    if (isIRDumpFile(llvm::sys::path::filename(entry->path()))) {
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
