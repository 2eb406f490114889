//===- GatherBuckets.cpp - Several dp all-gathers as one --------*- C++ -*-===//

#include "compiler/Transforms/GatherBuckets.h"

#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace mlperf {

dist::DoneOp packableGather(dist::AllGatherStartOp start, StringRef axis) {
  auto type = cast<RankedTensorType>(start.getInput().getType());
  Type element = type.getElementType();
  ArrayAttr axes = start.getAxes();
  if (axes.size() != 1 || cast<StringAttr>(axes[0]).getValue() != axis || type.getRank() != 1 ||
      start.getDim() != 0 || !(element.isF32() || element.isBF16()) ||
      !start->getResult(0).hasOneUse()) {
    return {};
  }
  auto done = dyn_cast<dist::DoneOp>(*start->getResult(0).getUsers().begin());
  return done && done.getResult() ? done : dist::DoneOp();
}

bool packGathers(SmallVectorImpl<Gather> &gathers, int64_t members) {
  dist::AllGatherStartOp firstStart = gathers.front().first, lastStart = gathers.back().first;
  // Early when every shard is there before the first gather (ZeRO-3's parameter shards);
  // otherwise after the last shard's gather (ZeRO-1's, each computed by its update).
  bool early = llvm::all_of(gathers, [&](Gather &gather) {
    Operation *def = gather.first.getInput().getDefiningOp();
    return !def || def->isBeforeInBlock(firstStart);
  });
  llvm::DenseSet<Operation *> waits;
  for (Gather &gather : gathers) {
    waits.insert(gather.second.getOperation());
  }
  // Built late, the ops before it that read a gathered tensor (directly or through each
  // other) move after it, in order.
  llvm::DenseSet<Operation *> dependent;
  SmallVector<Operation *> moved;
  if (!early) {
    for (Operation *op = firstStart->getNextNode(); op != lastStart.getOperation();
         op = op->getNextNode()) {
      bool reads = llvm::any_of(op->getOperands(), [&](Value operand) {
        Operation *def = operand.getDefiningOp();
        return def && (dependent.count(def) || waits.count(def));
      });
      if (reads) {
        dependent.insert(op);
        moved.push_back(op);
      }
    }
    for (Gather &gather : gathers) {
      if (Operation *def = gather.first.getInput().getDefiningOp(); def && dependent.count(def)) {
        return false;
      }
    }
  }
  OpBuilder builder(firstStart);
  if (!early) {
    builder.setInsertionPointAfter(lastStart);
  }
  Location loc = firstStart.getLoc();
  Type element = cast<RankedTensorType>(firstStart.getInput().getType()).getElementType();
  SmallVector<Value> shards;
  SmallVector<int64_t> widths;
  int64_t columns = 0;
  for (Gather &gather : gathers) {
    shards.push_back(gather.first.getInput());
    widths.push_back(cast<RankedTensorType>(gather.first.getInput().getType()).getNumElements());
    columns += widths.back();
  }
  Value concat = tg::ConcatOp::create(builder, loc, RankedTensorType::get({columns}, element),
                                      shards, builder.getI64IntegerAttr(0));
  auto gatheredType = RankedTensorType::get({members * columns}, element);
  auto future = dist::AllGatherStartOp::create(
      builder, loc, dist::FutureType::get(builder.getContext(), gatheredType), concat,
      firstStart.getMeshAttr(), firstStart.getAxesAttr(), builder.getI64IntegerAttr(0));
  Value gathered = dist::DoneOp::create(builder, loc, gatheredType, future).getResult();
  Value rows = tg::ReshapeOp::create(builder, loc,
                                     RankedTensorType::get({members, columns}, element), gathered);
  SmallVector<Type> pieceTypes;
  for (int64_t width : widths) {
    pieceTypes.push_back(RankedTensorType::get({members, width}, element));
  }
  auto split = tg::SplitOp::create(builder, loc, pieceTypes, rows, builder.getI64IntegerAttr(1),
                                   builder.getDenseI64ArrayAttr(widths));
  Operation *last = split;
  for (auto [index, gather] : llvm::enumerate(gathers)) {
    dist::DoneOp done = gather.second;
    // Row r of a [members, n/members] piece is rank r's shard: flattened, the whole tensor.
    auto piece =
        tg::ReshapeOp::create(builder, loc, done.getResult().getType(), split.getResult(index));
    done.getResult().replaceAllUsesWith(piece.getResult());
    last = piece;
  }
  for (Operation *op : moved) {
    op->moveAfter(last);
    last = op;
  }
  for (Gather &gather : gathers) {
    gather.second->erase();
    gather.first->erase();
  }
  return true;
}

} // namespace mlperf
