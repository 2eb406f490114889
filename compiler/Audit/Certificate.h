//===- Certificate.h - What a pass changed, by op kind and count --*- C++ -*-===//
//
// A certificate compares the IR before and after one pass: the ops added and removed by kind
// (a plan command counts as plan.command:<op>), the ops modified (same kind, other attributes
// or result types), the plan commands moved within their program or to another stream, the
// functions added and removed, and what a
// pass of its class must account for: for a reassociation the reductions (ops whose result
// depends on a summation order, collectives that sum) added or removed; for a precision
// change the parameters whose type changed and the values per element type. `mlperfc
// compile --dump-ir` writes one next to each dump (NN-<pass>.certificate.json);
// `mlperfc audit` computes them again and reports them.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_AUDIT_CERTIFICATE_H
#define MLPERFC_COMPILER_AUDIT_CERTIFICATE_H

#include "compiler/Support/RewriteClass.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace mlperf {

/// What a module holds, in the terms certificates compare.
struct IRCensus {
  std::map<std::string, int64_t> ops;            // op kind -> count
  std::map<std::string, int64_t> reductions;     // reduction kind ("dist.all_reduce_start over dp")
  std::map<std::string, int64_t> valueTypes;     // element type of op results -> count
  std::map<std::string, std::string> parameters; // "@model::name" -> its type
  std::set<std::string> functions;               // "@model::@function"
  int64_t castsTo8Bit = 0, scaledCastsTo8Bit = 0; // tg.convert to an 8-bit float
  /// Per op kind, a fingerprint of each op's attributes and result types, sorted (a multiset:
  /// ops of a kind are matched by what they are, not by where they are).
  std::map<std::string, std::vector<uint64_t>> fingerprints;
  /// Per plan program ("@plan::@program"), its commands in order: what each is (kernel,
  /// buffers and attributes other than its stream) and its stream.
  std::map<std::string, std::vector<std::pair<uint64_t, int64_t>>> commandOrders;
};

IRCensus takeCensus(mlir::ModuleOp module);

/// Whether ops of this kind (an op name or plan.command:<op>) sum in some order.
bool isReductionKind(llvm::StringRef kind);

struct CountChange {
  std::string kind;
  int64_t before = 0, after = 0;
};

struct ModifiedCount {
  std::string kind;
  int64_t count = 0; // ops of this kind whose attributes or result types changed
};

struct TypeChange {
  std::string name, before, after; // a missing side is empty
};

struct Certificate {
  std::string pass;
  RewriteClass rewriteClass = RewriteClass::kExact;
  bool declared = false; // the pass declares a class (rewriteClass is it)
  std::vector<CountChange> ops, reductions, valueTypes;
  std::vector<ModifiedCount> modified;
  /// Plan commands that changed places: the fewest commands whose moves turn each program's
  /// order before into its order after; the programs that have some; the commands that run
  /// on another stream after.
  int64_t commandsMoved = 0, programsReordered = 0, commandsRestreamed = 0;
  std::vector<TypeChange> parameters;
  std::vector<std::string> functionsAdded, functionsRemoved;
  /// Casts to 8-bit floats before and after, and how many of them are scaled per tensor.
  CountChange castsTo8Bit, scaledCastsTo8Bit;

  bool changesNothing() const {
    return ops.empty() && modified.empty() && commandsMoved == 0 && commandsRestreamed == 0 &&
           valueTypes.empty() && parameters.empty() && functionsAdded.empty() &&
           functionsRemoved.empty();
  }
};

/// The certificate of `pass` (its argument) from the census before and after it.
Certificate certify(llvm::StringRef pass, const IRCensus &before, const IRCensus &after);

/// "ops +12 -40 (tg.repeat_layers -1, tg.param_ref +18, ...); functions +@forward_backward".
std::string describeCertificate(const Certificate &certificate);

llvm::json::Value certificateToJSON(const Certificate &certificate);
/// Reads what certificateToJSON wrote; false on anything else.
bool certificateFromJSON(const llvm::json::Value &value, Certificate &certificate);

} // namespace mlperf

#endif // MLPERFC_COMPILER_AUDIT_CERTIFICATE_H
