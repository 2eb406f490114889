//===- TGInterpreter.h - Reference execution of tg IR ----------*- C++ -*-===//
//
// Runs tg functions on the CPU reference kernels of runtime/cpu (the same kernels the CPU
// backend uses), rounding every result to its declared element type. Used to check that
// passes preserve the math and to compare against the independent oracle.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_INTERPRETER_TGINTERPRETER_H
#define MLPERFC_COMPILER_INTERPRETER_TGINTERPRETER_H

#include "dialects/TG/IR/TGOps.h"
#include "runtime/cpu/HostTensor.h"
#include "runtime/cpu/OpKernels.h"
#include "runtime/dist/Communicator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace mlperf {

/// Parameter values by resolved Hugging Face name ("model.layers.3.mlp.up_proj.weight").
using ParamValues = std::map<std::string, rt::HostTensor>;

/// The name of layer `layer`'s copy of a per-layer parameter ("{i}" replaced).
std::string resolveLayerName(llvm::StringRef name, int64_t layer);

/// The element type of a tg tensor type as the runtime sees it, or failure for other types.
mlir::FailureOr<rt::DType> toDType(mlir::Type elementType);

/// Draws every declared parameter from its init distribution with Philox keyed by
/// (seed, parameter name, element). Fails with a diagnostic for init = "checkpoint", unless
/// `checkpointStd` is given: such parameters are then drawn from normal(0, checkpointStd)
/// (stand-ins for the checkpoint's values where only the math matters, as in the audit).
mlir::FailureOr<ParamValues> initializeParameters(tg::ModelOp model, uint64_t seed,
                                                  std::optional<double> checkpointStd = {});

/// Checks that `values` holds exactly the model's parameters with their declared shapes and
/// element types, naming the first mismatch.
mlir::LogicalResult checkParameters(tg::ModelOp model, const ParamValues &values);

/// This rank's slice of every parameter of `model` (a per-rank model, its parameters split by
/// `dist.sharding` over the mesh) from the full values `full` (by name): the slice at this
/// rank's coordinates, block by block for a fused tensor.
mlir::FailureOr<ParamValues> rankParameters(tg::ModelOp model, const ParamValues &full,
                                            const rt::RankCoordinates &coordinates);

class TGInterpreter {
public:
  /// `communicator`, for a per-rank program of a multi-rank mesh: the collectives, transfers
  /// and vocabulary-split ops of the `dist` lowering run through it (in the CPU backend's
  /// order and precision). Without one, such an op is an error.
  TGInterpreter(tg::ModelOp model, const ParamValues &params,
                rt::Communicator *communicator = nullptr)
      : model(model), params(params), communicator(communicator) {}

  /// Runs `func` on `args`. On bad input (an id outside the vocabulary, a shape mismatch with
  /// the function's signature) emits an error at the offending op or function and fails.
  mlir::FailureOr<std::vector<rt::HostTensor>> call(mlir::func::FuncOp func,
                                                    std::vector<rt::HostTensor> args);

  /// The key a `tg.dropout` declared without one (a snapshot before tg-train-step threads the
  /// keys) draws its mask with: [seed, micro-batch counter]. Unset, such a dropout is an error.
  void setKeylessDropoutKey(uint64_t seed, int64_t counter) {
    keylessDropoutKey = {static_cast<int64_t>(seed), counter};
  }

private:
  /// tg.(linear_)cross_entropy(_grad) on a vocabulary split over `axis`, as
  /// dist-lower-vocab-loss's pieces and collectives compute it.
  rt::Status runSplitLoss(const std::string &op, rt::MeshAxis axis,
                          const rt::OpAttributes &attributes,
                          const std::vector<const rt::HostTensor *> &operands,
                          std::vector<rt::HostTensor> &results);
  /// A `dist` op, or one with `vocab_shard_axis`: results into `env`.
  mlir::LogicalResult runDistributed(mlir::Operation &op,
                                     llvm::DenseMap<mlir::Value, rt::HostTensor> &env);

  tg::ModelOp model;
  const ParamValues &params;
  rt::Communicator *communicator;
  std::optional<std::pair<int64_t, int64_t>> keylessDropoutKey;
};

} // namespace mlperf

#endif // MLPERFC_COMPILER_INTERPRETER_TGINTERPRETER_H
