//===- DistShardParameters.cpp - ZeRO-3 / FSDP parameter shards -*- C++ -*-===//
//
// Holds every parameter as this rank's shard (1/dp, or 1/hsdp) and gathers it where it is read:
// once for a function's forward half and once for its backward half, so that a full parameter lives
// only while its layer runs. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/ForwardBackward.h"
#include "compiler/Support/PerModelPass.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/GatherBuckets.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <string>

#define DEBUG_TYPE "dist-shard-parameters"

namespace mlperf {
#define GEN_PASS_DEF_DISTSHARDPARAMETERSPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

constexpr StringLiteral kMesh = "mesh";

struct DistShardParametersPass
    : PerModelPass<DistShardParametersPass, impl::DistShardParametersPassBase> {
  using PerModelPass::PerModelPass;

  LogicalResult runOnModel(tg::ModelOp model) {
    auto mesh = dyn_cast_or_null<dist::MeshOp>(SymbolTable::lookupSymbolIn(model, kMesh));
    if (!mesh || mesh.getZero() != 3 || mesh.getAxisSize(mesh.getZeroShardAxis()) == 1) {
      return success(); // nothing is sharded
    }
    axis = mesh.getZeroShardAxis();
    shards = mesh.getAxisSize(axis);
    // The shard and full (local) type of every parameter, by name.
    llvm::StringMap<std::pair<RankedTensorType, RankedTensorType>> sharded;
    Builder builder(model.getContext());
    for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
      if (param->hasAttr(dist::kZeroShardAttr)) {
        return param.emitError() << "dist-shard-parameters: already sharded";
      }
      RankedTensorType local = param.getTensorType();
      int64_t elements = local.getNumElements();
      if (elements % shards != 0) {
        return param.emitError() << "dist-shard-parameters: zero=3 shards every parameter over "
                                 << axis << "=" << shards << ", but " << param.getSymName()
                                 << " has " << elements << " elements on each rank";
      }
      auto shard = RankedTensorType::get({elements / shards}, local.getElementType());
      param.setType(shard);
      param->setAttr(dist::kZeroShardAttr, builder.getStringAttr(axis));
      param->setAttr(dist::kUnshardedTypeAttr, TypeAttr::get(local));
      sharded[param.getSymName()] = {shard, local};
    }
    for (auto func : model.getBody().front().getOps<func::FuncOp>()) {
      gatherWhereRead(func, sharded);
    }
    return success();
  }

  StringRef axis;     // what ZeRO shards over: dp, or dp_shard under hybrid sharding
  int64_t shards = 1; // its size

  /// Gives each parameter read of `func` the shard and gathers it before its first use in the
  /// forward half and before its first use in the backward half.
  void
  gatherWhereRead(func::FuncOp func,
                  const llvm::StringMap<std::pair<RankedTensorType, RankedTensorType>> &sharded) {
    if (func.isExternal()) {
      return;
    }
    Block &body = func.getBody().front();
    llvm::DenseMap<Operation *, int64_t> position;
    for (auto [index, op] : llvm::enumerate(body)) {
      position[&op] = static_cast<int64_t>(index);
    }
    // Ops after the one computing the first result are the backward (none in @forward).
    int64_t end = forwardEnd(func);
    SmallVector<tg::ParamRefOp> refs(body.getOps<tg::ParamRefOp>());
    // The gathers of each half by FSDP unit (a layer's parameters), packed into one below.
    std::map<std::pair<bool, std::string>, SmallVector<std::pair<Gather, tg::ParamRefOp>>> units;
    for (tg::ParamRefOp ref : refs) {
      auto found = sharded.find(ref.getName());
      if (found == sharded.end()) {
        continue;
      }
      auto [shard, local] = found->second;
      // The reads of each half, in order; a read nested in a region counts where its
      // ancestor in the entry block is.
      SmallVector<OpOperand *> halves[2];
      for (OpOperand &use : ref.getResult().getUses()) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        bool backward = end >= 0 && position.lookup(user) > end;
        halves[backward].push_back(&use);
      }
      ref.getResult().setType(shard);
      for (auto [backward, uses] : llvm::enumerate(halves)) {
        if (uses.empty()) {
          continue;
        }
        Operation *first = nullptr;
        for (OpOperand *use : uses) {
          Operation *user = body.findAncestorOpInBlock(*use->getOwner());
          if (!first || position.lookup(user) < position.lookup(first)) {
            first = user;
          }
        }
        OpBuilder builder(first);
        Location loc = ref.getLoc();
        auto flat = RankedTensorType::get({local.getNumElements()}, local.getElementType());
        auto future = dist::AllGatherStartOp::create(
            builder, loc, dist::FutureType::get(builder.getContext(), flat), ref.getResult(),
            FlatSymbolRefAttr::get(builder.getContext(), kMesh), builder.getStrArrayAttr({axis}));
        auto done = dist::DoneOp::create(builder, loc, flat, future);
        Value full = done.getResult();
        if (flat != local) {
          full = tg::ReshapeOp::create(builder, loc, local, full);
        }
        for (OpOperand *use : uses) {
          use->set(full);
        }
        units[{backward == 1, fsdpUnit(ref.getName())}].push_back({{future, done}, ref});
      }
    }
    // One gather per unit and half, before the first read of any of its parameters (their
    // shards, pure reads, move up to it).
    for (auto &[key, members] : units) {
      llvm::stable_sort(
          members, [](auto &a, auto &b) { return a.first.first->isBeforeInBlock(b.first.first); });
      SmallVector<Gather> gathers;
      for (auto &[gather, ref] : members) {
        if (packableGather(gather.first, axis)) {
          gathers.push_back(gather);
          if (members.front().first.first->isBeforeInBlock(ref)) {
            ref->moveBefore(members.front().first.first);
          }
        }
      }
      if (gathers.size() > 1) {
        packGathers(gathers, shards);
      }
    }
  }

  /// FSDP's unit of a parameter: its layer (the name up to its first all-digit component,
  /// `model.layers.3.`), or the parameter alone.
  static std::string fsdpUnit(StringRef name) {
    SmallVector<StringRef> parts;
    name.split(parts, '.');
    std::string unit;
    for (StringRef part : parts) {
      unit += part.str() + ".";
      if (!part.empty() && llvm::all_of(part, llvm::isDigit)) {
        return unit;
      }
    }
    return name.str();
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "dist-shard-parameters", kExact,
    "parameters held as dp shards and all-gathered before their forward and backward reads");
