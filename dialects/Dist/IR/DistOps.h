//===- DistOps.h - Distribution dialect ------------------------*- C++ -*-===//

#ifndef MLPERFC_DIALECTS_DIST_IR_DISTOPS_H
#define MLPERFC_DIALECTS_DIST_IR_DISTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/TG/IR/TGOps.h"

#include "dialects/Dist/IR/DistOpsDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Dist/IR/DistOpsTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Dist/IR/DistOpsAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Dist/IR/DistOps.h.inc"

namespace mlperf::dist {

/// How a tensor-parallel parameter is split: along one dim over one mesh axis, `count` parts
/// (Megatron's column/row-parallel layouts). No axis: not split.
struct ParameterSplit {
  mlir::StringAttr axis;
  int64_t dim = 0, count = 1;
  mlir::DenseI64ArrayAttr blocks; // the split dim's blocks (a fused tensor), or null
};

/// The split of `param` from its `dist.sharding` (none without one), or an error at the
/// parameter (prefixed with `pass`) when it splits more than one dim or over several axes.
mlir::FailureOr<ParameterSplit> parameterSplit(tg::ParamOp param, llvm::StringRef pass);

/// ZeRO-3 (dist-shard-parameters): a parameter held as this rank's 1-D shard names the mesh
/// axis it is sharded over and the type it is a shard of.
inline constexpr llvm::StringLiteral kZeroShardAttr = "dist.zero_shard";
/// Hybrid sharding's axes (a `dist.mesh` with `hsdp` > 0): the sharding group of `hsdp`
/// consecutive data-parallel ranks and the replica group of the ranks holding the same shard
/// (runtime/dist/Mesh.h's dp_shard and dp_replicate).
inline constexpr llvm::StringLiteral kShardAxis = "dp_shard";
inline constexpr llvm::StringLiteral kReplicaAxis = "dp_replicate";

/// The type it is a shard of, which tg::ParamOp::getUnshardedType reads.
inline constexpr llvm::StringLiteral kUnshardedTypeAttr = "dist.unsharded_type";

} // namespace mlperf::dist

#endif // MLPERFC_DIALECTS_DIST_IR_DISTOPS_H
