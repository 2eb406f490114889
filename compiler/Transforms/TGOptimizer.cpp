//===- TGOptimizer.cpp - Build @optimizer_step from the metadata -*- C++ -*-===//

#include "compiler/Support/RewriteClass.h"
#include "compiler/Support/StepRoles.h"
#include "compiler/Transforms/Passes.h"
#include "runtime/plan/StepRoles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include <array>

#define DEBUG_TYPE "tg-optimizer"

namespace mlperf {
#define GEN_PASS_DEF_TGOPTIMIZERPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlperf

using namespace mlir;

namespace mlperf {
namespace {

struct TGOptimizerPass : impl::TGOptimizerPassBase<TGOptimizerPass> {
  void runOnOperation() override {
    for (auto model : getOperation().getOps<tg::ModelOp>()) {
      if (failed(runOnModel(model))) {
        return signalPassFailure();
      }
    }
  }

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
    auto f32 = builder.getF32Type();
    auto stepType = RankedTensorType::get({}, builder.getI64Type());
    auto scalarType = RankedTensorType::get({}, f32);
    SmallVector<Type> inputs{stepType}, stateTypes, paramTypes;
    for (tg::ParamOp param : params) {
      inputs.push_back(param.getType());
      paramTypes.push_back(param.getType());
      stateTypes.push_back(RankedTensorType::get(param.getTensorType().getShape(), f32));
    }
    for (int copy = 0; copy < 3; ++copy) { // masters, first and second moments
      inputs.append(stateTypes);
    }
    SmallVector<Type> results(paramTypes);
    for (int copy = 0; copy < 3; ++copy) {
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
    auto arg = [&](size_t group, size_t index) {
      return entry->getArgument(1 + group * n + index);
    };

    SmallVector<Value> grads;
    for (size_t i = 0; i < n; ++i) {
      grads.push_back(arg(0, i));
    }
    Value norm = tg::GlobalNormOp::create(builder, loc, scalarType, grads);
    Value clip = tg::ClipCoefficientOp::create(builder, loc, scalarType, norm,
                                               optimizer.getClipGradNormAttr());
    Value lr = tg::LRValueOp::create(builder, loc, scalarType, step, schedule.getKindAttr(),
                                     schedule.getBaseLrAttr(), schedule.getEndLrAttr(),
                                     schedule.getWarmupStepsAttr(), schedule.getMaxStepsAttr());
    bool decayAll = optimizer.getWeightDecayParams() == "all";
    SmallVector<Value> newParams, newMasters, newM, newV;
    for (size_t i = 0; i < n; ++i) {
      // The reference's parameter groups: every parameter decays ("all", as NeMo 2.1 runs
      // Llama 3.1), or only matrices.
      bool decays = decayAll || params[i].getTensorType().getRank() >= 2;
      auto update = tg::AdamWOp::create(
          builder, loc, stateTypes[i], stateTypes[i], stateTypes[i], arg(1, i), arg(2, i),
          arg(3, i), grads[i], lr, clip, step, optimizer.getBeta1Attr(), optimizer.getBeta2Attr(),
          optimizer.getEpsilonAttr(),
          builder.getF64FloatAttr(decays ? optimizer.getWeightDecay().convertToDouble() : 0.0));
      Value master = update.getNewMaster();
      newParams.push_back(
          paramTypes[i] == master.getType()
              ? master
              : tg::ConvertOp::create(builder, loc, paramTypes[i], master).getResult());
      newMasters.push_back(master);
      newM.push_back(update.getNewM());
      newV.push_back(update.getNewV());
    }
    SmallVector<Value> returned(newParams);
    returned.append(newMasters);
    returned.append(newM);
    returned.append(newV);
    returned.append({lr, norm});
    func::ReturnOp::create(builder, loc, returned);
    SmallVector<Attribute> names;
    for (tg::ParamOp param : params) {
      names.push_back(FlatSymbolRefAttr::get(param.getSymNameAttr()));
    }
    func->setAttr("tg.parameters", builder.getArrayAttr(names));
    // What each argument and result is, so later passes find them by role.
    namespace role = rt::role;
    namespace state = optimizer_role;
    SmallVector<std::optional<StepRole>> argRoles(func.getNumArguments()),
        resultRoles(func.getNumResults());
    argRoles[0] = StepRole{std::string(role::kStep), ""};
    for (size_t i = 0; i < n; ++i) {
      std::string name = params[i].getSymName().str();
      for (auto [group, kind] : llvm::enumerate(std::array<StringRef, 4>{
               role::kGrad, state::kMaster, state::kExpAvg, state::kExpAvgSq})) {
        argRoles[1 + group * n + i] = StepRole{kind.str(), name};
      }
      for (auto [group, kind] : llvm::enumerate(std::array<StringRef, 4>{
               role::kParam, state::kMaster, state::kExpAvg, state::kExpAvgSq})) {
        resultRoles[group * n + i] = StepRole{kind.str(), name};
      }
    }
    resultRoles[4 * n] = StepRole{std::string(role::kLr), ""};
    resultRoles[4 * n + 1] = StepRole{std::string(role::kGradNorm), ""};
    // How the state starts (tg-train-step's @init_optimizer): the master weight as the
    // parameter, the moments at zero.
    setAllRoles(func, /*arguments=*/true, argRoles, [&](unsigned i, NamedAttrList &attrs) {
      if (i > n) {
        attrs.set(kInitAttr, builder.getStringAttr(i <= 2 * n ? kInitFromParam : kInitZeros));
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
