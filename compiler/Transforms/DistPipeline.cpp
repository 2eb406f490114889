//===- DistPipeline.cpp - One model per pipeline stage ---------*- C++ -*-===//
//
// Splits a model's @forward into pipeline stages on its declared layer stack (the `layer` that
// tg-inline-layers gives each copy of a tg.repeat_layers parameter; Megatron-LM's even split:
// stage k holds layers [k·L/pp, (k+1)·L/pp)). Every other parameter goes to the stage of the
// ops that use it: those before the stack (the embedding) to the first, those after it (the
// final norm, the head and the loss) to the last. Each stage becomes its own tg.model, so autodiff,
// the optimizer, partitioning and plan building run per stage unchanged and every stage gets its
// own plan (SPMD over dp and tp within the stage).
//
//===----------------------------------------------------------------------===//

#include "compiler/Support/ChunkNames.h"
#include "compiler/Support/PerModelPass.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Transforms/Passes.h"

#include "runtime/dist/Mesh.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

#include <functional>

#define DEBUG_TYPE "dist-pipeline"

namespace mlperf {
#define GEN_PASS_DEF_DISTPIPELINEPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

struct DistPipelinePass : PerModelPass<DistPipelinePass, impl::DistPipelinePassBase> {
  using PerModelPass::PerModelPass;

  LogicalResult runOnModel(tg::ModelOp model) {
    auto mesh = dyn_cast_or_null<dist::MeshOp>(SymbolTable::lookupSymbolIn(model, "mesh"));
    if (!mesh) {
      return model.emitError() << "dist-pipeline needs the model's @mesh: run "
                                  "dist-tensor-parallel first";
    }
    // Virtual stages: pp ranks × vp model chunks; virtual stage v = chunk · pp + rank.
    int64_t ranks = mesh.getAxisSize("pp"), chunks = mesh.getVpAttr().getInt();
    int64_t stages = ranks * chunks;
    if (ranks == 1) {
      return success();
    }
    auto forward = dyn_cast_or_null<func::FuncOp>(model.getForward());
    if (!forward || forward.getNumArguments() != 2) {
      return model.emitError() << "dist-pipeline needs @forward(tokens, labels) -> loss";
    }
    int64_t layers = 0;
    llvm::StringMap<int64_t> layerOf;
    for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
      if (IntegerAttr layer = param.getLayerAttr()) {
        layerOf[param.getSymName()] = layer.getInt();
        layers = std::max(layers, layer.getInt() + 1);
      }
    }
    if (layers == 0) {
      return model.emitError() << "dist-pipeline cuts stages on the layer stack, but no "
                                  "parameter has a layer index: declare the layers with "
                                  "tg.repeat_layers and run tg-inline-layers first";
    }
    if (layers < stages) {
      return model.emitError() << "dist-pipeline: " << stages << " (virtual) stages for " << layers
                               << " layers";
    }
    // Layer -> stage by the shared split (even, or Megatron's uneven one).
    std::vector<int64_t> split = rt::pipelineLayerSplit(layers, stages);
    SmallVector<int64_t> stageOfLayer;
    for (auto [stage, count] : llvm::enumerate(split)) {
      stageOfLayer.append(count, static_cast<int64_t>(stage));
    }
    // Stage of every op: a layer parameter's stage, else at least its operands'. Constants
    // (no operands) are copied into every stage that uses them (stage -1); so are, for now,
    // the references to parameters outside the layer stack, which then go to the stage of
    // their users below.
    Block &body = forward.getBody().front();
    SmallVector<Operation *> ops;
    llvm::DenseMap<Operation *, int64_t> stageOf;
    auto valueStage = [&](Value value) -> int64_t {
      Operation *def = value.getDefiningOp();
      return def ? stageOf.lookup(def) : 0;
    };
    SmallVector<tg::ParamRefOp> outsideStack;
    for (Operation &op : body.without_terminator()) {
      ops.push_back(&op);
      int64_t stage = -1;
      if (auto ref = dyn_cast<tg::ParamRefOp>(op)) {
        auto layer = layerOf.find(ref.getName());
        if (layer != layerOf.end()) {
          stage = stageOfLayer[layer->second];
        } else {
          outsideStack.push_back(ref);
        }
      } else {
        for (Value operand : op.getOperands()) {
          stage = std::max(stage, valueStage(operand));
        }
        if (op.getNumOperands() == 0) {
          stage = -1;
        }
      }
      stageOf[&op] = stage;
    }
    // A parameter outside the stack lives on the first stage that uses it (a tied weight
    // used by two stages is refused below); the ops after it then follow their operands again.
    // (by parameter, not by reference: two references to one weight are one tied weight).
    // A user that runs on every stage (stage -1: it reads only such parameters and constants,
    // like a tg.convert of the weight) passes the question on to its own users.
    std::function<int64_t(Operation *)> firstStageUsing = [&](Operation *op) {
      int64_t first = stages - 1;
      for (Operation *user : op->getUsers()) {
        int64_t stage = stageOf.lookup(user);
        first = std::min(first, stage >= 0 ? stage : firstStageUsing(user));
      }
      return first;
    };
    llvm::StringMap<int64_t> stageOfOutsideParam;
    for (tg::ParamRefOp ref : outsideStack) {
      auto [it, inserted] = stageOfOutsideParam.try_emplace(ref.getName(), stages - 1);
      it->second = std::min(it->second, firstStageUsing(ref));
    }
    for (tg::ParamRefOp ref : outsideStack) {
      stageOf[ref] = stageOfOutsideParam.lookup(ref.getName());
    }
    for (Operation *op : ops) {
      if (!isa<tg::ParamRefOp>(op) && op->getNumOperands() > 0) {
        int64_t stage = -1;
        for (Value operand : op->getOperands()) {
          stage = std::max(stage, valueStage(operand));
        }
        stageOf[op] = stage;
      }
    }
    // The one activation each stage hands to the next.
    SmallVector<Value> boundary(stages - 1);
    for (Operation *op : ops) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        int64_t from = def ? stageOf.lookup(def) : -1, to = stageOf.lookup(op);
        if (!def || from < 0 || from == to) {
          continue;
        }
        if (isa<tg::ParamRefOp>(def)) {
          return op->emitError() << "dist-pipeline: stage " << to << " reads parameter @"
                                 << cast<tg::ParamRefOp>(def).getName() << " of stage " << from
                                 << " (tied weights cannot be split over stages)";
        }
        if (isa<tg::TokenMaskOp>(def)) {
          // The mask is a function of the tokens, which only the first stage receives.
          return op->emitError()
                 << "dist-pipeline: stage " << to << " reads the loss mask stage " << from
                 << " computes from the tokens (tg.token_mask); a stage after the first has no "
                    "tokens, so a token-derived loss mask cannot be pipelined yet: use pp=1";
        }
        if (to != from + 1 || (boundary[from] && boundary[from] != operand)) {
          return op->emitError() << "dist-pipeline: stage " << to << " reads a value of stage "
                                 << from << " other than the activation passed between them";
        }
        boundary[from] = operand;
      }
    }
    for (auto [stage, value] : llvm::enumerate(boundary)) {
      if (!value) {
        return forward.emitError()
               << "dist-pipeline: nothing flows from stage " << stage << " to stage " << stage + 1;
      }
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    // One model per pipeline rank: the metadata, the mesh, the parameters of its chunks, and
    // per chunk a function: @forward (chunk 0), @"forward.chunk1", ...
    OpBuilder builder(model);
    for (int64_t rank = 0; rank < ranks; ++rank) {
      IRMapping cloned;
      auto stageModel = cast<tg::ModelOp>(builder.clone(*model, cloned));
      stageModel.setSymName((model.getSymName() + ".stage" + Twine(rank)).str());
      stageModel->setAttr("dist.stage", builder.getI64IntegerAttr(rank));
      stageModel->setAttr("dist.stages", builder.getI64IntegerAttr(ranks));
      if (chunks > 1) {
        stageModel->setAttr("dist.chunks", builder.getI64IntegerAttr(chunks));
      }
      auto oldForward = cast<func::FuncOp>(cloned.lookup(forward.getOperation()));
      llvm::StringSet<> usedParams;
      SmallVector<func::FuncOp> chunkFunctions;
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        int64_t stage = chunk * ranks + rank;
        SmallVector<Type> inputs;
        inputs.push_back(stage == 0 ? forward.getArgumentTypes()[0]
                                    : boundary[stage - 1].getType());
        if (stage == stages - 1) {
          inputs.push_back(forward.getArgumentTypes()[1]); // labels
        }
        Value output = stage == stages - 1 ? ret.getOperand(0) : boundary[stage];
        OpBuilder inModel(oldForward);
        auto newForward =
            func::FuncOp::create(inModel, forward.getLoc(), ("forward_stage" + Twine(chunk)).str(),
                                 inModel.getFunctionType(inputs, {output.getType()}));
        Block *entry = newForward.addEntryBlock();
        OpBuilder inBody = OpBuilder::atBlockEnd(entry);
        IRMapping mapping;
        if (stage == 0) {
          mapping.map(body.getArgument(0), entry->getArgument(0));
        } else {
          mapping.map(boundary[stage - 1], entry->getArgument(0));
        }
        if (stage == stages - 1) {
          mapping.map(body.getArgument(1), entry->getArgument(inputs.size() - 1));
        }
        for (Operation *op : ops) {
          // Constants (and ops of constants only, stage -1) go to every stage; the clean-up
          // after this pass removes those a stage does not use.
          int64_t opStage = stageOf.lookup(op);
          if (opStage >= 0 && opStage != stage) {
            continue;
          }
          if (auto ref = dyn_cast<tg::ParamRefOp>(op)) {
            usedParams.insert(ref.getName());
          }
          inBody.clone(*op, mapping);
        }
        func::ReturnOp::create(inBody, ret.getLoc(), mapping.lookup(output));
        chunkFunctions.push_back(newForward);
      }
      oldForward.erase();
      for (auto [chunk, function] : llvm::enumerate(chunkFunctions)) {
        function.setSymName("forward" + chunkSuffix(chunk));
      }
      for (auto param : llvm::to_vector(stageModel.getBody().front().getOps<tg::ParamOp>())) {
        if (!usedParams.contains(param.getSymName())) {
          param.erase();
        }
      }
    }
    model.erase();
    return success();
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS("dist-pipeline", kExact,
                             "one model per pipeline stage: the same ops, cut between layers");
