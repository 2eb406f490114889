//===- mlperfc.cpp - The mlperfc command-line interface -------*- C++ -*-===//
//
// `mlperfc <command> [options]`. Exit status: 0 success, 1 bad input or failed check.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Version.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

#if MLPERFC_MIMALLOC
#include <mimalloc.h>
#endif

namespace cl = llvm::cl;

namespace mlperf::cli {

cl::OptionCategory &mlperfcCategory() {
  static cl::OptionCategory category("mlperfc options");
  return category;
}

/// The allocator compiles run on (mimalloc where the build found it); naming it also keeps
/// the linker from dropping the library under --as-needed.
static std::string allocatorName() {
#if MLPERFC_MIMALLOC
  int version = mi_version(); // major * 100 + minor * 10 + patch
  return "mimalloc " + std::to_string(version / 100) + "." + std::to_string(version / 10 % 10) +
         "." + std::to_string(version % 10);
#else
  return "the C library's malloc";
#endif
}

static void printVersion(llvm::raw_ostream &os) {
  os << "mlperfc " << MLPERFC_VERSION << "\n"
     << "  MLIR/LLVM " << MLPERFC_MLIR_VERSION << ", " << MLPERFC_BUILD_TYPE << " build\n"
     << "  CUDA backend: "
     << (MLPERFC_CUDA_ENABLED ? "built (sm_90a, sm_100a; mlperf-run --backend cuda, ops listed by "
                                "mlperf-opcheck)"
                              : "not built (no CUDA toolkit)")
     << "\n"
     << "  allocator: " << allocatorName() << "\n";
}

static constexpr llvm::StringLiteral kOverview =
    "mlperfc: ahead-of-time compiler for MLPerf Training graphs\n\n"
    "  mlperfc check MODEL.mlir...          parse and verify model declarations\n"
    "  mlperfc summary MODEL.mlir [--json]  parameters, memory, FLOPs, op counts\n"
    "  mlperfc compile MODEL.mlir [--precision bf16|fp32|fp8] [--cluster NxG] [--parallel ...]\n"
    "                 [--dump-ir DIR] [-o plan.pb] [--audit]\n"
    "                                       lower to the train step and its plan(s)\n"
    "  mlperfc audit MODEL.mlir PLAN.pb [--dump-ir DIR] [--json] [--tiny TINY.mlir]\n"
    "                                       does the plan compute the declaration's math under\n"
    "                                       the MLPerf closed-division rules (exit 0 / 1 / 2)\n"
    "  mlperfc predict MODEL.mlir [--cluster NxG] [--parallel ...] [--device h100]\n"
    "                 [--calibrate FILE] [--trace FILE.json]\n"
    "                                       predicted step time, MFU and time to train\n"
    "  mlperfc plan-search MODEL.mlir --cluster NxG --device h100 [--gbs N,...]\n"
    "                                       strategies ranked by predicted time to train\n"
    "  mlperfc show plan.pb [--commands]    print an execution plan\n"
    "  mlperfc schedule --pp N [--vp V] --micro-batches M [--order]\n"
    "                                       a pipeline schedule and its bubble\n"
    "  mlperfc emit-model llama3 [--preset P] [--set key=value,...] [-o FILE]\n"
    "                                       write a model declaration\n"
    "  mlperfc run-reference MODEL.mlir --inputs BATCH.safetensors [--function forward_backward]\n"
    "                                       loss (and gradients) on the CPU reference\n\n"
    "Run 'mlperfc <command> --help' for a command's options.\n";

} // namespace mlperf::cli

int main(int argc, char **argv) {
  using namespace mlperf::cli;
  cl::SetVersionPrinter(printVersion);
  // Only our options in --help: libLLVM registers hundreds of its own at load time.
  cl::HideUnrelatedOptions(mlperfcCategory());
  for (cl::SubCommand *sub :
       {&checkCommand, &summaryCommand, &emitModelCommand, &runReferenceCommand, &compileCommand(),
        &showCommand, &scheduleCommand, &auditCommand, &predictCommand(), &planSearchCommand()}) {
    cl::HideUnrelatedOptions(mlperfcCategory(), *sub);
  }

  // llvm::cl would read an unknown command as a stray positional argument; say what it is.
  if (argc >= 2 && argv[1][0] != '-') {
    llvm::StringRef command = argv[1];
    bool known = false;
    for (cl::SubCommand *sub : cl::getRegisteredSubcommands()) {
      known |= sub->getName() == command;
    }
    if (!known) {
      llvm::WithColor::error(llvm::errs(), "mlperfc")
          << "unknown command '" << command << "' (run 'mlperfc --help' for the list)\n";
      return 1;
    }
  }
  // One error per mistake: an unknown option's value (`--paralel dp=2`) would also be counted
  // as a stray positional argument, a second error that is only the first one's echo.
  std::string parseErrors;
  llvm::raw_string_ostream parseErrorStream(parseErrors);
  if (!cl::ParseCommandLineOptions(argc, argv, kOverview, &parseErrorStream)) {
    const bool unknownOption =
        parseErrors.find("Unknown command line argument") != std::string::npos;
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(parseErrors).split(lines, '\n', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef line : lines) {
      if (unknownOption && (line.contains("Too many positional arguments") ||
                            line.starts_with("Can specify at most"))) {
        continue;
      }
      llvm::errs() << line << "\n";
    }
    return 1;
  }
  if (checkCommand) {
    return runCheck();
  }
  if (summaryCommand) {
    return runSummary();
  }
  if (emitModelCommand) {
    return runEmitModel();
  }
  if (runReferenceCommand) {
    return runRunReference();
  }
  if (compileCommand()) {
    return runCompile();
  }
  if (showCommand) {
    return runShow();
  }
  if (predictCommand()) {
    return runPredict();
  }
  if (planSearchCommand()) {
    return runPlanSearch();
  }
  if (scheduleCommand) {
    return runSchedule();
  }
  if (auditCommand) {
    return runAuditCommand();
  }
  llvm::WithColor::error(llvm::errs(), "mlperfc")
      << "no command given (run 'mlperfc --help' for the list)\n";
  return 1;
}
