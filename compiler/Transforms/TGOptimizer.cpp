//===- TGOptimizer.cpp - Build @optimizer_step from the metadata -*- C++ -*-===//

#include "compiler/Support/OptimizerPrograms.h"
#include "compiler/Support/PerModelPass.h"
#include "compiler/Support/RewriteClass.h"
#include "compiler/Support/StepRoles.h"
#include "compiler/Transforms/Passes.h"
#include "runtime/plan/StepRoles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "tg-optimizer"

namespace mlperf {
#define GEN_PASS_DEF_TGOPTIMIZERPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

struct TGOptimizerPass : PerModelPass<TGOptimizerPass, impl::TGOptimizerPassBase> {
  using PerModelPass::PerModelPass;

  LogicalResult runOnModel(tg::ModelOp model) {
    if (SymbolTable::lookupSymbolIn(model, "optimizer_step")) {
      return model.emitError() << "tg-optimizer: model already has an @optimizer_step";
    }
    Block &body = model.getBody().front();
    auto optimizer = *body.getOps<tg::OptimizerOp>().begin();
    auto schedule = *body.getOps<tg::LRScheduleOp>().begin();
    SmallVector<tg::ParamOp> params;
    for (auto param : body.getOps<tg::ParamOp>()) {
      if (param.getRepeat()) {
        return param.emitError() << "tg-optimizer needs concrete parameters: run "
                                    "tg-inline-layers first";
      }
      if (!param.getFrozen()) {
        params.push_back(param); // a frozen parameter has no optimizer state
      }
    }
    if (params.empty()) {
      return model.emitError() << "tg-optimizer: every parameter is frozen: nothing to train";
    }

    OpBuilder builder(model.getContext());
    Location loc = optimizer.getLoc();
    bool adamw = optimizer.getName() == "adamw";
    // The per-parameter state, one argument group per role, and how each starts: the f32
    // master weight as the parameter; AdamW's moments at zero; Adagrad's sum of squares at
    // its initial accumulator value.
    SmallVector<std::pair<StringRef, Attribute>> stateGroups{
        {optimizer_role::kMaster, builder.getStringAttr(kInitFromParam)}};
    if (adamw) {
      stateGroups.push_back({optimizer_role::kExpAvg, builder.getStringAttr(kInitZeros)});
      stateGroups.push_back({optimizer_role::kExpAvgSq, builder.getStringAttr(kInitZeros)});
    } else {
      double initial = optimizer.getInitialAccumulatorValue()
                           ? optimizer.getInitialAccumulatorValue()->convertToDouble()
                           : 0.0;
      stateGroups.push_back({optimizer_role::kSum, builder.getF64FloatAttr(initial)});
    }
    const size_t groups = stateGroups.size();
    auto f32 = builder.getF32Type();
    auto stepType = RankedTensorType::get({}, builder.getI64Type());
    auto scalarType = RankedTensorType::get({}, f32);
    SmallVector<Type> inputs{stepType}, stateTypes, paramTypes;
    for (tg::ParamOp param : params) {
      inputs.push_back(param.getType());
      paramTypes.push_back(param.getType());
      stateTypes.push_back(RankedTensorType::get(param.getTensorType().getShape(), f32));
    }
    for (size_t group = 0; group < groups; ++group) {
      inputs.append(stateTypes);
    }
    SmallVector<Type> results(paramTypes);
    for (size_t group = 0; group < groups; ++group) {
      results.append(stateTypes);
    }
    results.append({scalarType, scalarType});

    builder.setInsertionPointToEnd(&body);
    auto func = func::FuncOp::create(builder, loc, "optimizer_step",
                                     builder.getFunctionType(inputs, results));
    Block *entry = func.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    size_t n = params.size();
    Value step = entry->getArgument(0);
    // Group 0 holds the gradients, group 1 + k the state of stateGroups[k].
    auto arg = [&](size_t group, size_t index) {
      return entry->getArgument(1 + group * n + index);
    };

    SmallVector<Value> grads;
    for (size_t i = 0; i < n; ++i) {
      grads.push_back(arg(0, i));
    }
    Value norm = tg::GlobalNormOp::create(builder, loc, scalarType, grads);
    Value clip;
    if (optimizer.getClipGradNormAttr()) {
      clip = tg::ClipCoefficientOp::create(builder, loc, scalarType, norm,
                                           optimizer.getClipGradNormAttr());
    }
    Value lr = tg::LRValueOp::create(builder, loc, scalarType, step, schedule.getKindAttr(),
                                     schedule.getBaseLrAttr(), schedule.getEndLrAttr(),
                                     schedule.getWarmupStepsAttr(), schedule.getMaxStepsAttr());
    // AdamW's bias corrections 1 − β^t of this step, once for every parameter.
    tg::ElementwiseOp corrections;
    if (adamw) {
      corrections = tg::ElementwiseOp::create(
          builder, loc, TypeRange{scalarType, scalarType}, ValueRange{step},
          builder.getStringAttr(adamwCorrectionsProgram(optimizer.getBeta1()->convertToDouble(),
                                                        optimizer.getBeta2()->convertToDouble())),
          builder.getStringAttr("f64"));
    }
    bool decayAll = optimizer.getWeightDecayParams() == "all";
    // newState[k][i]: parameter i's new state of stateGroups[k] (k = 0: the master).
    SmallVector<SmallVector<Value>> newState(groups);
    SmallVector<Value> newParams;
    for (size_t i = 0; i < n; ++i) {
      // The reference's parameter groups: every parameter decays ("all", as NeMo 2.1 runs
      // Llama 3.1), or only matrices.
      bool decays = decayAll || params[i].getTensorType().getRank() >= 2;
      double weightDecay = decays ? optimizer.getWeightDecay().convertToDouble() : 0.0;
      if (adamw) {
        auto update = tg::ElementwiseOp::create(
            builder, loc, TypeRange{stateTypes[i], stateTypes[i], stateTypes[i]},
            ValueRange{arg(1, i), arg(2, i), arg(3, i), grads[i], lr, clip,
                       corrections->getResult(0), corrections->getResult(1)},
            builder.getStringAttr(adamwProgram(
                optimizer.getBeta1()->convertToDouble(), optimizer.getBeta2()->convertToDouble(),
                optimizer.getEpsilon().convertToDouble(), weightDecay)),
            StringAttr());
        newState[0].push_back(update.getResult(0));
        newState[1].push_back(update.getResult(1));
        newState[2].push_back(update.getResult(2));
      } else {
        SmallVector<Value> operands{arg(1, i), arg(2, i), grads[i], lr};
        if (clip) {
          operands.push_back(clip);
        }
        auto update = tg::ElementwiseOp::create(
            builder, loc, TypeRange{stateTypes[i], stateTypes[i]}, operands,
            builder.getStringAttr(adagradProgram(clip != nullptr, weightDecay,
                                                 optimizer.getEpsilon().convertToDouble())),
            StringAttr());
        newState[0].push_back(update.getResult(1));
        newState[1].push_back(update.getResult(0));
      }
      Value master = newState[0].back();
      newParams.push_back(
          paramTypes[i] == master.getType()
              ? master
              : tg::ConvertOp::create(builder, loc, paramTypes[i], master).getResult());
    }
    SmallVector<Value> returned(newParams);
    for (const SmallVector<Value> &group : newState) {
      returned.append(group);
    }
    returned.append({lr, norm});
    func::ReturnOp::create(builder, loc, returned);
    SmallVector<Attribute> names;
    for (tg::ParamOp param : params) {
      names.push_back(FlatSymbolRefAttr::get(param.getSymNameAttr()));
    }
    func->setAttr("tg.parameters", builder.getArrayAttr(names));
    // What each argument and result is, so later passes find them by role.
    namespace role = rt::role;
    SmallVector<std::optional<StepRole>> argRoles(func.getNumArguments()),
        resultRoles(func.getNumResults());
    argRoles[0] = StepRole{std::string(role::kStep), ""};
    for (size_t i = 0; i < n; ++i) {
      std::string name = params[i].getSymName().str();
      argRoles[1 + i] = StepRole{std::string(role::kGrad), name};
      resultRoles[i] = StepRole{std::string(role::kParam), name};
      for (size_t group = 0; group < groups; ++group) {
        std::string kind = stateGroups[group].first.str();
        argRoles[1 + (group + 1) * n + i] = StepRole{kind, name};
        resultRoles[(group + 1) * n + i] = StepRole{kind, name};
      }
    }
    resultRoles[(groups + 1) * n] = StepRole{std::string(role::kLr), ""};
    resultRoles[(groups + 1) * n + 1] = StepRole{std::string(role::kGradNorm), ""};
    // How the state starts (tg-train-step's @init_optimizer).
    setAllRoles(func, /*arguments=*/true, argRoles, [&](unsigned i, NamedAttrList &attrs) {
      if (i > n) {
        attrs.set(kInitAttr, stateGroups[(i - 1) / n - 1].second);
      }
    });
    setAllRoles(func, /*arguments=*/false, resultRoles);
    return success();
  }
};

} // namespace
} // namespace mlperf

MLPERF_DECLARE_REWRITE_CLASS(
    "tg-optimizer", kExact,
    "adds @optimizer_step from the declared optimizer, clipping and LR schedule");
