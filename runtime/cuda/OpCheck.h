//===- OpCheck.h - Every CUDA-kernel op on both backends, compared -*- C++ -*-===//
//
// The op checker (mlperf-opcheck) runs each op that has a CUDA kernel on random inputs as a
// one-command plan on the CPU backend (the twin) and on a candidate backend, and compares
// the results by the op's tolerance class (shared/DESIGN.md, "GPU backend"):
//   exact      layout ops, casts, and element math without transcendentals (f64 arithmetic
//              and a correctly rounded sqrt are the same on both);
//   ulps       ops through exp, sin or cos, whose f64 results may differ in the last bit
//              before the rounding to the result type: at most kMaxUlps apart there;
//   norm       GEMMs, whose sums run in another order: ‖candidate − cpu‖ / ‖cpu‖ bounded.
// Plain C++ (no CUDA): the cases and the comparison are tested on any machine, CPU against CPU.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CUDA_OPCHECK_H
#define MLPERFC_RUNTIME_CUDA_OPCHECK_H

#include "runtime/exec/Backend.h"
#include "runtime/plan.pb.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace mlperf::rt::cuda {

enum class Tolerance { kExact, kUlps, kNorm };
const char *toleranceName(Tolerance tolerance);

/// Results of ulp-bounded ops may differ by this many units in the last place of their type.
constexpr int64_t kMaxUlps = 2;

/// One op on one set of shapes and types: a plan whose last program, "check", holds the
/// command, its operands (inputs) and results (outputs); one case also runs a call of an
/// earlier program and an event between two streams.
struct OpCheckCase {
  std::string name; // "matmul bf16 [2,64,96]x[96,80] transpose_rhs"
  std::string op;
  Tolerance tolerance = Tolerance::kExact;
  double normBound = 0; // kNorm: the largest relative Frobenius error allowed
  plan::Plan plan;
  /// The range of each input's random values, by buffer id (default [-2, 2]; integers in
  /// [low, high)).
  std::map<uint32_t, std::pair<double, double>> ranges;
  /// Bad input: the case passes when the candidate fails with an error containing this text,
  /// and, unless `candidateOnly`, the reference fails with the same message.
  std::string expectError;
  bool candidateOnly = false;
};

/// The cases: every op the CUDA backend has a kernel for, in f32 and bf16 where it computes.
std::vector<OpCheckCase> opCheckCases();

/// The ops by family ("gemm", "elementwise", ...): one `gpu.opcheck.<family>` test each
/// (mlperf-opcheck --family). Every op with a CUDA kernel is in exactly one (CudaHostTest).
const std::map<std::string, std::vector<std::string>> &opCheckFamilies();

struct OpCheckResult {
  bool passed = false;
  double maxAbsError = 0;   // over every result element
  int64_t maxUlps = 0;      // in the result's type
  double relativeError = 0; // ‖candidate − reference‖ / ‖reference‖
  std::string detail;       // why it failed
};

/// Runs `check` on `reference` and `candidate` (fresh backends; prepared here) with the same
/// random inputs (seeded by the case's name) and compares every result.
Status runOpCheck(const OpCheckCase &check, Backend &reference, Backend &candidate,
                  OpCheckResult &result);

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_OPCHECK_H
