//===- Passes.h - mlperfc transformation passes ----------------*- C++ -*-===//

#ifndef MLPERFC_COMPILER_TRANSFORMS_PASSES_H
#define MLPERFC_COMPILER_TRANSFORMS_PASSES_H

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Plan/IR/PlanOps.h"
#include "dialects/TG/IR/TGOps.h"
#include "mlir/Pass/Pass.h"

namespace mlperf {

/// True for a tg-recompute policy: none, selective, full or auto.
bool isRecomputePolicy(llvm::StringRef policy);

#define GEN_PASS_DECL
#include "compiler/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/Passes.h.inc"

} // namespace mlperf

#endif // MLPERFC_COMPILER_TRANSFORMS_PASSES_H
