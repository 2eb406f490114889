//===- Commands.h - mlperfc subcommands -----------------------*- C++ -*-===//
//
// Each subcommand lives in its own file with its llvm::cl options bound to its
// llvm::cl::SubCommand; mlperfc.cpp dispatches.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_TOOLS_MLPERFC_COMMANDS_H
#define MLPERFC_TOOLS_MLPERFC_COMMANDS_H

#include "compiler/Analysis/DeviceMemory.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Support/ModelFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/CommandLine.h"

#include <optional>

namespace mlperf::cli {

/// The option category every mlperfc option belongs to; --help shows only these.
llvm::cl::OptionCategory &mlperfcCategory();

extern llvm::cl::SubCommand checkCommand;
/// `mlperfc check MODEL.mlir...`: exit 0 when every file parses and verifies.
int runCheck();

extern llvm::cl::SubCommand summaryCommand;
/// `mlperfc summary MODEL.mlir [--json]`: parameters, memory, FLOPs, op counts.
int runSummary();

/// compile, predict and plan-search are constructed on first use (CompileFlags.cpp: the
/// options they share are defined there, their own in Compile.cpp and Predict.cpp).
llvm::cl::SubCommand &compileCommand();
/// `mlperfc compile MODEL.mlir [--precision fp32|bf16] [--dump-ir DIR]`.
int runCompile();

/// The train-step options and device compile's flags give for the declaration `module`
/// (the flags are shared with predict); 0, or 1 after printing the error as `command`.
/// With `withStrategy` false the --parallel flag is not read (plan-search enumerates it).
int trainStepOptionsFromFlags(mlir::ModuleOp module, const char *command, TrainStepOptions &options,
                              std::optional<DeviceMemory> &device, bool withStrategy = true);
/// What compile, predict and plan-search start from: the declaration of their MODEL.mlir
/// argument (its diagnostics printed while `file` lives), the train-step options and the
/// device their flags give.
struct FlaggedModel {
  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<ModelFile> file;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::optional<DeviceMemory> device;
};
/// Loads it; 0, or 1 after the error was printed (as `command`).
int loadFlaggedModel(const char *command, FlaggedModel &model, TrainStepOptions &options,
                     bool withStrategy = true);
/// The model file and --device flags of compile, predict and plan-search.
const std::string &modelPathFlag();
const std::string &deviceFlag();
/// The flags given that compile shares with predict and plan-search (precision, fusions,
/// recompute, scheduling, device, headroom), as compile would take them:
/// " --precision fp8 --fuse-swiglu=false --device h100".
std::string sharedCompileFlags();

llvm::cl::SubCommand &predictCommand();
/// `mlperfc predict MODEL.mlir --cluster NxG --parallel ... [--device h100] [--calibrate F]
/// [--trace F.json]`: the step-time model's prediction of the compiled step.
int runPredict();

llvm::cl::SubCommand &planSearchCommand();
/// `mlperfc plan-search MODEL.mlir --cluster NxG --device h100 [--gbs ...]`: strategies ranked
/// by predicted time to train.
int runPlanSearch();

extern llvm::cl::SubCommand scheduleCommand;
/// `mlperfc schedule --pp N [--vp V] --micro-batches M [--order]`.
int runSchedule();

extern llvm::cl::SubCommand showCommand;
/// `mlperfc show plan.pb [--commands]`.
int runShow();

extern llvm::cl::SubCommand runReferenceCommand;
/// `mlperfc run-reference MODEL.mlir --inputs BATCH [--function forward_backward] ...`.
int runRunReference();

extern llvm::cl::SubCommand auditCommand;
/// `mlperfc audit MODEL.mlir PLAN.pb [--dump-ir DIR] [--json] [--tiny TINY.mlir]`: exit 0
/// compliant, 1 violations, 2 cannot audit.
int runAuditCommand();

extern llvm::cl::SubCommand emitModelCommand;
/// `mlperfc emit-model llama3 [--preset P] [--set k=v,...] [-o FILE]`.
int runEmitModel();

} // namespace mlperf::cli

#endif // MLPERFC_TOOLS_MLPERFC_COMMANDS_H
