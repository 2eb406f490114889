//===- DistOps.cpp - Distribution dialect ----------------------*- C++ -*-===//

#include "dialects/Dist/IR/DistOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlperf::dist;

#include "dialects/Dist/IR/DistOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Dist/IR/DistOpsTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Dist/IR/DistOpsAttrs.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Dist/IR/DistOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/Dist/IR/DistOpsTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Dist/IR/DistOpsAttrs.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "dialects/Dist/IR/DistOps.cpp.inc"

//===----------------------------------------------------------------------===//
// dist.mesh
//===----------------------------------------------------------------------===//

LogicalResult MeshOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  if (shape.size() != getAxes().size()) {
    return emitOpError() << "has " << getAxes().size() << " axes but " << shape.size() << " sizes";
  }
  llvm::StringSet<> seen;
  int64_t ranks = 1;
  for (auto [name, size] : llvm::zip(getAxes().getAsValueRange<StringAttr>(), shape)) {
    if (!llvm::is_contained({"dp", "tp", "pp", "cp", "ep"}, name)) {
      return emitOpError() << "axis '" << name << "' is not one of dp, tp, pp, cp, ep";
    }
    if (!seen.insert(name).second) {
      return emitOpError() << "names axis '" << name << "' twice";
    }
    if (size < 1) {
      return emitOpError() << "axis '" << name << "' has size " << size;
    }
    ranks *= size;
  }
  int64_t nodes = getNodesAttr().getInt(), gpus = getGpusPerNodeAttr().getInt();
  if (nodes < 1 || gpus < 1 || ranks != nodes * gpus) {
    return emitOpError() << "has " << ranks << " ranks but the cluster " << nodes << "x" << gpus
                         << " has " << nodes * gpus;
  }
  if (getVpAttr().getInt() < 1 || getZero() < 0 || getZero() > 3) {
    return emitOpError() << "needs vp >= 1 and zero 0, 1, 2 or 3";
  }
  int64_t hsdp = getHsdp(), dp = getAxisSize("dp");
  if (hsdp != 0 && (getZero() == 0 || hsdp < 2 || hsdp >= dp || dp % hsdp != 0)) {
    return emitOpError() << "hsdp " << hsdp << " needs zero 1, 2 or 3 and a divisor of dp " << dp
                         << " from 2 to dp / 2";
  }
  return success();
}

StringRef MeshOp::getZeroShardAxis() { return getHsdp() > 0 ? kShardAxis : "dp"; }

bool MeshOp::hasAxis(StringRef name) {
  if (getHsdp() > 0 && (name == kShardAxis || name == kReplicaAxis)) {
    return true;
  }
  return llvm::is_contained(getAxes().getAsValueRange<StringAttr>(), name);
}

int64_t MeshOp::getAxisSize(StringRef name) {
  if (getHsdp() > 0 && name == kShardAxis) {
    return getHsdp();
  }
  if (getHsdp() > 0 && name == kReplicaAxis) {
    return getAxisSize("dp") / getHsdp();
  }
  for (auto [axis, size] : llvm::zip(getAxes().getAsValueRange<StringAttr>(), getShape())) {
    if (axis == name) {
      return size;
    }
  }
  return 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace {

/// The group size of `axes` on the mesh `meshRef`, or an error at `op`.
FailureOr<int64_t> groupSize(Operation *op, SymbolTableCollection &symbols,
                             FlatSymbolRefAttr meshRef, ArrayRef<StringRef> axes) {
  auto mesh = symbols.lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (!mesh) {
    return op->emitOpError() << meshRef << " is not a dist.mesh";
  }
  if (axes.empty()) {
    return op->emitOpError() << "needs at least one mesh axis";
  }
  int64_t size = 1;
  for (StringRef axis : axes) {
    if (!mesh.hasAxis(axis)) {
      return op->emitOpError() << "mesh " << meshRef << " has no axis '" << axis << "'";
    }
    size *= mesh.getAxisSize(axis);
  }
  return size;
}

SmallVector<StringRef> axisNames(ArrayAttr axes) {
  return llvm::to_vector(axes.getAsValueRange<StringAttr>());
}

/// Checks that `carried` is `input`'s type with `dim` scaled by `num / den`.
LogicalResult verifyScaledShape(Operation *op, RankedTensorType input, Type carriedType,
                                int64_t num, int64_t den, int64_t dim = 0) {
  auto carried = dyn_cast<RankedTensorType>(carriedType);
  if (!carried || carried.getElementType() != input.getElementType() ||
      carried.getRank() != input.getRank()) {
    return op->emitOpError() << "must produce a tensor like " << input;
  }
  if (dim < 0 || dim >= std::max<int64_t>(input.getRank(), 1) ||
      (input.getRank() == 0 && num != den)) {
    return op->emitOpError() << "needs a tensor with a dim " << dim << " to split or gather";
  }
  if (input.getRank() == 0) {
    return success();
  }
  SmallVector<int64_t> expected(input.getShape());
  if (expected[dim] * num % den != 0) {
    return op->emitOpError() << "dim " << dim << " (" << expected[dim]
                             << ") is not divisible by the group of " << den << " ranks";
  }
  expected[dim] = expected[dim] * num / den;
  if (carried.getShape() != ArrayRef<int64_t>(expected)) {
    return op->emitOpError() << "must produce a future of "
                             << RankedTensorType::get(expected, input.getElementType())
                             << ", not of " << carried;
  }
  return success();
}

LogicalResult verifyFutureShape(Operation *op, RankedTensorType input, Type future, int64_t num,
                                int64_t den, int64_t dim = 0) {
  return verifyScaledShape(op, input, cast<FutureType>(future).getValueType(), num, den, dim);
}

} // namespace

LogicalResult AllReduceStartOp::verify() {
  StringRef reduction = getReduction();
  if (reduction != "sum" && reduction != "max") {
    return emitOpError() << "reduction must be \"sum\" or \"max\", got \"" << reduction << "\"";
  }
  auto input = cast<RankedTensorType>(getInput().getType());
  if (reduction == "max" && !input.getElementType().isF32()) {
    return emitOpError() << "a maximum over ranks takes f32 values, got " << input;
  }
  if (input.getElementType().isF64() && getAxes().size() != 1) {
    return emitOpError() << "an f64 sum runs over one mesh axis";
  }
  return success();
}

LogicalResult AllReduceStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> size = groupSize(*this, symbols, getMeshAttr(), axisNames(getAxes()));
  if (failed(size)) {
    return failure();
  }
  return verifyFutureShape(*this, cast<RankedTensorType>(getInput().getType()), getType(), 1, 1);
}

LogicalResult ReduceScatterStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> size = groupSize(*this, symbols, getMeshAttr(), axisNames(getAxes()));
  if (failed(size)) {
    return failure();
  }
  return verifyFutureShape(*this, cast<RankedTensorType>(getInput().getType()), getType(), 1, *size,
                           getDim());
}

LogicalResult AllGatherStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> size = groupSize(*this, symbols, getMeshAttr(), axisNames(getAxes()));
  if (failed(size)) {
    return failure();
  }
  return verifyFutureShape(*this, cast<RankedTensorType>(getInput().getType()), getType(), *size, 1,
                           getDim());
}

LogicalResult AllToAllStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> size = groupSize(*this, symbols, getMeshAttr(), axisNames(getAxes()));
  if (failed(size)) {
    return failure();
  }
  auto input = cast<RankedTensorType>(getInput().getType());
  if (input.getRank() == 0 || input.getDimSize(0) % *size != 0) {
    return emitOpError() << "dim 0 of " << input << " must split into " << *size << " slices";
  }
  return verifyFutureShape(*this, input, getType(), 1, 1);
}

/// Message tags every MPI implementation supports (MPI_TAG_UB is at least 32767).
static LogicalResult verifyTag(Operation *op, int64_t tag) {
  if (tag < 0 || tag > 32767) {
    return op->emitOpError() << "tag " << tag << " is outside [0, 32767]";
  }
  return success();
}

LogicalResult SendStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(groupSize(*this, symbols, getMeshAttr(), {getAxis()}))) {
    return failure();
  }
  if (getShift() == 0 || !isa<NoneType>(getType().getValueType())) {
    return emitOpError() << "needs a non-zero shift and produces !dist.future<none>";
  }
  return verifyTag(*this, getTag());
}

LogicalResult RecvStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(groupSize(*this, symbols, getMeshAttr(), {getAxis()}))) {
    return failure();
  }
  if (getShift() == 0 || !isa<RankedTensorType>(getType().getValueType())) {
    return emitOpError() << "needs a non-zero shift and produces a future of a tensor";
  }
  return verifyTag(*this, getTag());
}

LogicalResult DoneOp::verify() {
  Type carried = getFuture().getType().getValueType();
  if (isa<NoneType>(carried) ? getResult() != nullptr
                             : (!getResult() || getResult().getType() != carried)) {
    return emitOpError() << "must yield exactly what its future carries (" << carried << ")";
  }
  if (!getFuture().hasOneUse()) {
    return emitOpError() << "must be the only use of its future";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Tensor-parallel regions
//===----------------------------------------------------------------------===//

LogicalResult CopyToRegionOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return groupSize(*this, symbols, getMeshAttr(), axisNames(getAxes()));
}

LogicalResult ReduceFromRegionOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return groupSize(*this, symbols, getMeshAttr(), axisNames(getAxes()));
}

LogicalResult CopyToRegionOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ReduceFromRegionOp::create(b, getLoc(), grads[0], getMeshAttr(), getAxesAttr()));
  return success();
}

LogicalResult ReduceFromRegionOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                           SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      CopyToRegionOp::create(b, getLoc(), grads[0], getMeshAttr(), getAxesAttr()));
  return success();
}

LogicalResult ReduceScatterRegionOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> size = groupSize(*this, symbols, getMeshAttr(), axisNames(getAxes()));
  if (failed(size)) {
    return failure();
  }
  return verifyScaledShape(*this, cast<RankedTensorType>(getInput().getType()), getType(), 1, *size,
                           getDim());
}

LogicalResult AllGatherRegionOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> size = groupSize(*this, symbols, getMeshAttr(), axisNames(getAxes()));
  if (failed(size)) {
    return failure();
  }
  return verifyScaledShape(*this, cast<RankedTensorType>(getInput().getType()), getType(), *size, 1,
                           getDim());
}

LogicalResult ReduceScatterRegionOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                              SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(AllGatherRegionOp::create(b, getLoc(), getInput().getType(), grads[0],
                                                   getMeshAttr(), getAxesAttr(), getDimAttr()));
  return success();
}

LogicalResult AllGatherRegionOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                          SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ReduceScatterRegionOp::create(b, getLoc(), getInput().getType(), grads[0],
                                                       getMeshAttr(), getAxesAttr(), getDimAttr()));
  return success();
}

LogicalResult LocalShardOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> size = groupSize(*this, symbols, getMeshAttr(), {getAxis()});
  if (failed(size)) {
    return failure();
  }
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (input.getRank() != 1 || result.getRank() != 1 ||
      input.getElementType() != result.getElementType() || input.getDimSize(0) % *size != 0 ||
      result.getDimSize(0) != input.getDimSize(0) / *size) {
    return emitOpError() << "keeps 1/" << *size << " of a 1-D tensor: " << input << " -> " << result
                         << " is not that";
  }
  return success();
}

FailureOr<mlperf::dist::ParameterSplit> mlperf::dist::parameterSplit(tg::ParamOp param,
                                                                     StringRef pass) {
  ParameterSplit split;
  auto sharding = param->getAttrOfType<ShardingAttr>("dist.sharding");
  if (!sharding) {
    return split;
  }
  auto mesh =
      dyn_cast_or_null<MeshOp>(SymbolTable::lookupNearestSymbolFrom(param, sharding.getMesh()));
  for (auto [dim, axes] : llvm::enumerate(sharding.getDims())) {
    auto names = cast<ArrayAttr>(axes);
    if (names.empty()) {
      continue;
    }
    if (split.axis || names.size() != 1 || !mesh) {
      return param.emitError() << pass
                               << ": a parameter can be split along one dim over one mesh axis";
    }
    split.axis = cast<StringAttr>(names[0]);
    split.dim = static_cast<int64_t>(dim);
    split.count = mesh.getAxisSize(split.axis.getValue());
  }
  split.blocks = sharding.getBlocks();
  return split;
}
