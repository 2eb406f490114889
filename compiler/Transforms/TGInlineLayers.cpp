//===- TGInlineLayers.cpp - Unroll layer stacks, inline calls ---*- C++ -*-===//

#include "compiler/Support/PerModelPass.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include <cmath>

#define DEBUG_TYPE "tg-inline-layers"

namespace mlperf {
#define GEN_PASS_DEF_TGINLINELAYERSPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

std::string layerName(StringRef name, int64_t layer) {
  std::string out = name.str();
  out.replace(out.find("{i}"), 3, std::to_string(layer));
  return out;
}

/// Replaces each per-layer parameter template by one parameter per layer.
void expandParameters(tg::ModelOp model) {
  OpBuilder builder(model.getContext());
  for (auto param : llvm::make_early_inc_range(model.getBody().front().getOps<tg::ParamOp>())) {
    if (!param.getRepeat()) {
      continue;
    }
    int64_t layers = param.getCopies();
    builder.setInsertionPoint(param);
    for (int64_t layer = 0; layer < layers; ++layer) {
      auto copy = cast<tg::ParamOp>(builder.clone(*param));
      copy.setSymName(layerName(param.getSymName(), layer));
      copy.removeRepeatAttr();
      if (std::optional<ArrayAttr> parts = param.getCheckpointParts()) {
        SmallVector<StringRef> names;
        std::vector<std::string> storage;
        for (Attribute part : *parts) {
          storage.push_back(layerName(cast<StringAttr>(part).getValue(), layer));
        }
        for (const std::string &name : storage) {
          names.push_back(name);
        }
        copy.setCheckpointPartsAttr(builder.getStrArrayAttr(names));
      }
      if (param.getInit() == "scaled_normal") {
        // The same distribution, stated without the layer count the copy no longer carries.
        copy.setInit("normal");
        copy.setStdAttr(builder.getF64FloatAttr(param.getStd()->convertToDouble() /
                                                std::sqrt(2.0 * static_cast<double>(layers))));
      }
    }
    param.erase();
  }
}

/// Clones `callee`'s body before `anchor` with its arguments bound to `args`; returns the
/// values its return yields. In layer `layer` of a stack, a dropout named per layer (`{i}`)
/// gets that layer's name, which keys its mask.
SmallVector<Value> inlineBody(OpBuilder &builder, func::FuncOp callee, ValueRange args,
                              std::optional<int64_t> layer = std::nullopt) {
  IRMapping mapping;
  Block &body = callee.getBody().front();
  mapping.map(body.getArguments(), args);
  SmallVector<Value> results;
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value value : ret.getOperands()) {
        results.push_back(mapping.lookup(value));
      }
      break;
    }
    Operation *copy = builder.clone(op, mapping);
    if (auto dropout = dyn_cast<tg::DropoutOp>(copy);
        dropout && layer && dropout.getName().contains("{i}")) {
      dropout.setName(layerName(dropout.getName(), *layer));
    }
  }
  return results;
}

struct TGInlineLayersPass : PerModelPass<TGInlineLayersPass, impl::TGInlineLayersPassBase> {
  using PerModelPass::PerModelPass;

  LogicalResult runOnModel(tg::ModelOp model) {
    OpBuilder builder(model.getContext());
    int64_t nextLayer = 0;
    expandParameters(model);
    SymbolTable symbols(model); // after the expansion: it caches names
    for (auto func : model.getBody().front().getOps<func::FuncOp>()) {
      if (func.isPrivate()) {
        continue;
      }
      // Inlining can expose further calls (a layer calling a helper): repeat until none.
      bool changed = true;
      while (changed) {
        changed = false;
        SmallVector<Operation *> calls;
        func.walk([&](Operation *op) {
          if (isa<tg::RepeatLayersOp, func::CallOp>(op)) {
            calls.push_back(op);
          }
        });
        for (Operation *call : calls) {
          builder.setInsertionPoint(call);
          if (auto layers = dyn_cast<tg::RepeatLayersOp>(call)) {
            Value hidden = layers.getInput();
            // Layers are numbered across every stack of the model, in program order, so
            // dist-pipeline cuts one sequence of layers.
            int64_t firstLayer = nextLayer;
            nextLayer += layers.getCountAttr().getInt();
            for (int64_t layer = 0; layer < layers.getCountAttr().getInt(); ++layer) {
              SmallVector<Value> args{hidden};
              for (StringRef name : layers.getParamNames()) {
                std::string concrete = layerName(name, layer);
                auto param = symbols.lookup<tg::ParamOp>(concrete);
                if (!param) {
                  return layers.emitError() << "tg-inline-layers: no parameter '" << concrete
                                            << "' after expanding the per-layer declarations";
                }
                auto index = builder.getI64IntegerAttr(firstLayer + layer);
                if (param.getLayerAttr() && param.getLayerAttr() != index) {
                  return layers.emitError()
                         << "tg-inline-layers: parameter '" << concrete
                         << "' is read by two layers of the stack ("
                         << param.getLayerAttr().getInt() << " and " << index.getInt()
                         << "): a layer's parameters are its own";
                }
                param.setLayerAttr(index);
                args.push_back(
                    tg::ParamRefOp::create(builder, layers.getLoc(), param.getType(), concrete));
              }
              auto callee = symbols.lookup<func::FuncOp>(layers.getLayerCallee(layer));
              hidden = inlineBody(builder, callee, args, layer).front();
            }
            layers.getResult().replaceAllUsesWith(hidden);
          } else {
            auto callOp = cast<func::CallOp>(call);
            auto callee = symbols.lookup<func::FuncOp>(callOp.getCallee());
            callOp.replaceAllUsesWith(inlineBody(builder, callee, callOp.getOperands()));
          }
          call->erase();
          changed = true;
        }
      }
    }
    for (auto func : llvm::make_early_inc_range(model.getBody().front().getOps<func::FuncOp>())) {
      if (func.isPrivate() && SymbolTable::symbolKnownUseEmpty(func, model)) {
        func.erase();
      }
    }
    return success();
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "tg-inline-layers", kExact,
    "unrolls layer stacks and inlines calls: the same ops in the same order");
