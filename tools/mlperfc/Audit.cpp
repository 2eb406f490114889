//===- Audit.cpp - mlperfc audit --------------------------------*- C++ -*-===//
//
// `mlperfc audit MODEL.mlir PLAN.pb [--dump-ir DIR] [--json] [--tiny TINY.mlir]`: the
// compliance report of compiler/Audit/Audit.h. Exit 0 compliant, 1 violations (one line each),
// 2 when it cannot audit (a missing or unreadable input).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "compiler/Audit/Audit.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/WithColor.h"

namespace cl = llvm::cl;

namespace mlperf::cli {

cl::SubCommand auditCommand("audit",
                            "Check that a plan computes the declaration's math under the MLPerf "
                            "closed-division rules");

static cl::list<std::string> auditInputs(cl::Positional, cl::sub(auditCommand),
                                         cl::desc("<model.mlir> <plan.pb>"),
                                         cl::cat(mlperfcCategory()));
static cl::opt<std::string> auditDumpIR(
    "dump-ir", cl::sub(auditCommand), cl::value_desc("DIR"),
    cl::desc("Audit the IR dumps and certificates mlperfc compile --dump-ir DIR wrote, instead "
             "of compiling the declaration again"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> auditJSON("json", cl::sub(auditCommand),
                               cl::desc("Print the report as one JSON object"),
                               cl::cat(mlperfcCategory()));
static cl::opt<std::string>
    auditTiny("tiny", cl::sub(auditCommand), cl::value_desc("TINY.mlir"),
              cl::desc("The declaration at test sizes the numeric evidence runs on (default: "
                       "<model>_tiny.mlir or <benchmark>_tiny.mlir next to MODEL.mlir)"),
              cl::cat(mlperfcCategory()));

static int cannotAudit(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "mlperfc audit") << message << "\n";
  return static_cast<int>(AuditResult::kCannotAudit);
}

int runAuditCommand() {
  if (auditInputs.size() != 2) {
    return cannotAudit("expected MODEL.mlir PLAN.pb, got " + llvm::Twine(auditInputs.size()) +
                       " arguments (run 'mlperfc audit --help')");
  }
  std::unique_ptr<mlir::MLIRContext> context = createModelContext();
  ModelFile modelFile(*context, auditInputs[0]);
  mlir::OwningOpRef<mlir::ModuleOp> module = modelFile.load();
  if (!module) {
    return cannotAudit("cannot read the declaration " + auditInputs[0] + " (errors above)");
  }
  AuditInput input;
  input.declaration = *module;
  input.modelPath = auditInputs[0];
  std::string error;
  if (!loadStagePlans(auditInputs[1], input.plans, input.planPaths, error)) {
    return cannotAudit(error);
  }
  input.dumpDirectory = auditDumpIR;
  input.tinyPath = auditTiny;
  input.json = auditJSON;
  AuditResult result = runAudit(input, llvm::outs());
  llvm::outs().flush();
  return static_cast<int>(result);
}

} // namespace mlperf::cli
