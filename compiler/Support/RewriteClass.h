//===- RewriteClass.h - The rewrite class every pass declares ----*- C++ -*-===//
//
// MLPerf's closed division allows only rewrites that keep the reference's math: exact ones
// (same function, same evaluation order where it matters), reassociations (same function,
// other summation order) and precision changes with safe compensation. Every pass declares
// its class next to its code, with MLPERF_DECLARE_REWRITE_CLASS; `mlperfc audit` reads the
// declarations by pass argument (the name in an IR dump's file name) and refuses a pass that
// has none. docs/passes.md lists them; docs/compliance.md says how the audit uses them.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_SUPPORT_REWRITECLASS_H
#define MLPERFC_COMPILER_SUPPORT_REWRITECLASS_H

#include "llvm/ADT/StringRef.h"

#include <vector>

namespace mlperf {

enum class RewriteClass {
  /// Same real-valued function and the same floating-point evaluation order.
  kExact,
  /// Same real-valued function, another summation order.
  kReassociation,
  /// Another storage or compute precision, approved formats, scaled where narrowed.
  kPrecision,
  /// Changes nothing the plan computes (placement, representation, analyses).
  kAnalysis,
};

/// "exact", "reassociation", "precision", "analysis".
llvm::StringRef rewriteClassName(RewriteClass rewriteClass);

struct PassClassDeclaration {
  llvm::StringRef pass; // the pass argument, "dist-partition"
  RewriteClass rewriteClass;
  llvm::StringRef rationale; // why the pass is in its class, one sentence
};

/// Records a declaration (at static initialization, through the macro below); returns true.
bool declareRewriteClass(llvm::StringRef pass, RewriteClass rewriteClass,
                         llvm::StringRef rationale);

/// The declaration of `pass`, or null when it declares none.
const PassClassDeclaration *findRewriteClass(llvm::StringRef pass);

/// Every declaration, sorted by pass.
std::vector<PassClassDeclaration> rewriteClassDeclarations();

} // namespace mlperf

#define MLPERF_REWRITE_CLASS_CONCAT_(a, b) a##b
#define MLPERF_REWRITE_CLASS_NAME_(line) MLPERF_REWRITE_CLASS_CONCAT_(kRewriteClassDeclared, line)
/// In a pass's .cpp file: MLPERF_DECLARE_REWRITE_CLASS("tg-simplify", kExact, "...");
#define MLPERF_DECLARE_REWRITE_CLASS(pass, rewriteClass, rationale)                                \
  [[maybe_unused]] static const bool MLPERF_REWRITE_CLASS_NAME_(__LINE__) =                        \
      ::mlperf::declareRewriteClass(pass, ::mlperf::RewriteClass::rewriteClass, rationale)

#endif // MLPERFC_COMPILER_SUPPORT_REWRITECLASS_H
