//===- Evidence.h - Numeric evidence that passes keep the math ----*- C++ -*-===//
//
// The audit's evidence runs the tiny variant of a declaration (the same structure at test
// sizes) through the same passes and evaluates the IR before and after each one on the
// reference interpreter: the loss and every gradient of one micro-batch (a declaration
// without a backward is differentiated on a copy), and from @train_step on two whole optimizer
// steps (losses, LR, gradient norm, parameters). The placed plan is run on the CPU backend and
// compared with the interpreter's steps; a multi-rank strategy is run on every rank of a
// reduced mesh (threads in this process) and compared with the single rank. Differences are
// relative to each tensor's scale (max |a - b| / max |b|) and must stay within the pass
// class's tolerance: 0 for exact passes.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_AUDIT_EVIDENCE_H
#define MLPERFC_COMPILER_AUDIT_EVIDENCE_H

#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Support/RewriteClass.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace mlperf {

/// The largest difference a pass of `rewriteClass` may make, relative to each value's scale,
/// at compute precision `precision` ("bf16" or "fp32").
double evidenceTolerance(RewriteClass rewriteClass, llvm::StringRef precision);

struct PassEvidence {
  std::string pass;
  RewriteClass rewriteClass = RewriteClass::kExact;
  bool computed = false;
  std::string what;        // what was compared ("loss and 21 gradients of micro-batch 0")
  std::string notComputed; // why not, when not computed
  double difference = 0, tolerance = 0;
  bool ok() const { return !computed || difference <= tolerance; }
};

struct EvidenceReport {
  std::string tinyModel;            // the declaration it ran on (@llama31_8b_tiny)
  std::string configuration;        // "precision bf16, 32 micro-batches of 1, seed 1234"
  std::vector<PassEvidence> passes; // every pass of that compile, in order
  /// The mesh the passes were evidenced on one by one: empty for one rank, else the reduced
  /// mesh without pipeline stages ("1x4 dp=2 tp=2 pp=1 ...").
  std::string passMesh;
  /// Whether that mesh has pipeline stages (a pipeline strategy that is not interleaved).
  bool passesOnStages = false;
  /// The distributed passes together: the reduced mesh's plans on every rank against the
  /// single rank's steps (absent for a single-rank audit).
  std::optional<PassEvidence> distributed;
  std::string distributedMesh; // "1x8 dp=2 tp=2 pp=2 ..."
};

/// Compiles `tiny` with `options`, on one rank or, for a multi-rank strategy, on the reduced
/// mesh without pipeline stages (evidence pass by pass, every rank interpreted), and on the
/// whole reduced mesh (every rank's plan run), and gathers the evidence. Errors (a
/// pipeline that fails on the tiny variant, an interpreter error) are diagnostics on `tiny`.
mlir::FailureOr<EvidenceReport> gatherEvidence(mlir::ModuleOp tiny,
                                               const TrainStepOptions &options);

/// The mesh the distributed evidence runs on: each degree of `mesh` capped at 2 (vp at what the
/// tiny model's layers allow), the same sp and zero, on as many ranks as that leaves.
rt::MeshShape reducedMesh(const rt::MeshShape &mesh, int64_t layers);

} // namespace mlperf

#endif // MLPERFC_COMPILER_AUDIT_EVIDENCE_H
