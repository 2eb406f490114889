//===- RewriteClass.cpp - The rewrite class every pass declares --*- C++ -*-===//

#include "compiler/Support/RewriteClass.h"

#include "llvm/ADT/STLExtras.h"

namespace mlperf {
namespace {

std::vector<PassClassDeclaration> &registry() {
  static std::vector<PassClassDeclaration> declarations;
  return declarations;
}

} // namespace

llvm::StringRef rewriteClassName(RewriteClass rewriteClass) {
  switch (rewriteClass) {
  case RewriteClass::kExact:
    return "exact";
  case RewriteClass::kReassociation:
    return "reassociation";
  case RewriteClass::kPrecision:
    return "precision";
  case RewriteClass::kAnalysis:
    return "analysis";
  }
  return "?";
}

bool declareRewriteClass(llvm::StringRef pass, RewriteClass rewriteClass,
                         llvm::StringRef rationale) {
  registry().push_back({pass, rewriteClass, rationale});
  return true;
}

const PassClassDeclaration *findRewriteClass(llvm::StringRef pass) {
  for (const PassClassDeclaration &declaration : registry()) {
    if (declaration.pass == pass) {
      return &declaration;
    }
  }
  return nullptr;
}

std::vector<PassClassDeclaration> rewriteClassDeclarations() {
  std::vector<PassClassDeclaration> sorted = registry();
  llvm::sort(sorted, [](const PassClassDeclaration &a, const PassClassDeclaration &b) {
    return a.pass < b.pass;
  });
  return sorted;
}

// Upstream passes our pipelines run.
MLPERF_DECLARE_REWRITE_CLASS("cse", kExact,
                             "common subexpression elimination, named as allowed by the MLPerf "
                             "closed-division rules");
MLPERF_DECLARE_REWRITE_CLASS("canonicalize", kExact,
                             "the registered dialects' exact folds and canonical forms");

} // namespace mlperf
