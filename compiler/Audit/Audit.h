//===- Audit.h - mlperfc audit: does a plan compute the reference's math -*- C++ -*-===//
//
// The audit of one compile: per pass its rewrite class, its certificate and the numeric
// evidence on the declaration's tiny variant; the closed-division rules on the plan against
// the declaration and the benchmark; and whether the plan is what the declaration compiles to
// with the options the plan records. docs/compliance.md describes the report.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_AUDIT_AUDIT_H
#define MLPERFC_COMPILER_AUDIT_AUDIT_H

#include "runtime/plan.pb.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlperf {

/// The exit status of an audit.
enum class AuditResult {
  kCompliant = 0,   // every check holds
  kViolations = 1,  // at least one violation, each reported on its own line
  kCannotAudit = 2, // an input is missing or unreadable, or the audit cannot be carried out
};

struct AuditInput {
  mutable mlir::ModuleOp declaration; // MODEL.mlir, parsed and verified
  std::string modelPath;
  std::vector<plan::Plan> plans; // every pipeline stage's plan, stage k at index k
  std::vector<std::string> planPaths;
  /// Read the IR dumps and certificates in this directory (mlperfc compile --dump-ir)
  /// instead of compiling again.
  std::string dumpDirectory;
  /// The tiny variant for the evidence; empty: found next to MODEL.mlir (the model or its
  /// benchmark name with _tiny), or MODEL.mlir itself when it is one.
  std::string tinyPath;
  bool json = false;
};

/// Runs the audit and writes the report (text, or one JSON object) to `os`; errors that stop
/// it go to stderr, prefixed "mlperfc audit: error:".
AuditResult runAudit(const AuditInput &input, llvm::raw_ostream &os);

/// The plans of a compile written to `path` (one file, or with pp > 1 its stage files
/// path.stage<k>.pb), loaded and validated, in stage order. Fails with a message naming the
/// file.
bool loadStagePlans(const std::string &path, std::vector<plan::Plan> &plans,
                    std::vector<std::string> &paths, std::string &error);

} // namespace mlperf

#endif // MLPERFC_COMPILER_AUDIT_AUDIT_H
