//===- StepRoles.h - Roles of train-step arguments and results -*- C++ -*-===//
//
// The train-step functions (@optimizer_step, @train_step) state what each argument and result
// is: `tg.role` (a name of runtime/plan/StepRoles.h) and, for per-parameter state, `tg.param`
// (the parameter's symbol). Passes and the interpreter look values up by role instead of by
// position, so a new optimizer or a frozen parameter changes no positional convention.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_SUPPORT_STEPROLES_H
#define MLPERFC_COMPILER_SUPPORT_STEPROLES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace mlperf {

constexpr llvm::StringLiteral kRoleAttr = "tg.role";
constexpr llvm::StringLiteral kRoleParamAttr = "tg.param";
// On optimizer state arguments: how the state starts, "param" (the parameter's value, in the
// state's type and layout), "zeros", or a float: every element that value.
constexpr llvm::StringLiteral kInitAttr = "tg.init";
constexpr llvm::StringLiteral kInitFromParam = "param";
constexpr llvm::StringLiteral kInitZeros = "zeros";
// On the calls and transfers of @train_step: the micro-batch they work on (for readers).
constexpr llvm::StringLiteral kMicroBatchAttr = "tg.micro_batch";
// On @train_step: the batch layout, which micro-batch of the global batch each data-parallel
// rank's micro-batch is: entry a * dp + d for rank d's micro-batch a (its tokens[a]). The plan
// records it (ModelInfo.train_micro_batches) and the runtime and the audit read it.
constexpr llvm::StringLiteral kBatchLayoutAttr = "tg.batch_layout";

/// The per-parameter optimizer state roles tg-optimizer gives @optimizer_step's arguments:
/// the f32 master weight, AdamW's moments, Adagrad's sum. Only the compiler knows them; the plan
/// names them and the runtime carries them through by name.
namespace optimizer_role {
constexpr llvm::StringLiteral kMaster = "master";
constexpr llvm::StringLiteral kExpAvg = "exp_avg";
constexpr llvm::StringLiteral kExpAvgSq = "exp_avg_sq";
constexpr llvm::StringLiteral kSum = "sum"; // Adagrad's sum of squared gradients
} // namespace optimizer_role

/// A role and, for per-parameter state, the parameter's name.
struct StepRole {
  std::string role;
  std::string param;
  bool operator==(const StepRole &other) const {
    return role == other.role && param == other.param;
  }
};

inline mlir::DictionaryAttr roleAttrs(mlir::MLIRContext *context, const StepRole &role,
                                      mlir::DictionaryAttr others = {}) {
  mlir::NamedAttrList attrs(others);
  attrs.set(kRoleAttr, mlir::StringAttr::get(context, role.role));
  if (!role.param.empty()) {
    attrs.set(kRoleParamAttr, mlir::FlatSymbolRefAttr::get(context, role.param));
  } else {
    attrs.erase(kRoleParamAttr);
  }
  return attrs.getDictionary(context);
}

/// Sets the roles of every argument (or result; none: left as it is) in one step: setting
/// them one by one rebuilds the function's whole attribute array each time, quadratic in the
/// 9,000 arguments of a 405B stage's optimizer. `more` may add attributes per index.
inline void setAllRoles(mlir::func::FuncOp func, bool arguments,
                        llvm::ArrayRef<std::optional<StepRole>> roles,
                        llvm::function_ref<void(unsigned, mlir::NamedAttrList &)> more = {}) {
  mlir::MLIRContext *context = func.getContext();
  llvm::SmallVector<mlir::DictionaryAttr> dicts;
  for (unsigned i = 0; i < roles.size(); ++i) {
    mlir::DictionaryAttr old = arguments ? func.getArgAttrDict(i) : func.getResultAttrDict(i);
    mlir::NamedAttrList attrs(roles[i] ? roleAttrs(context, *roles[i], old) : old);
    if (more) {
      more(i, attrs);
    }
    dicts.push_back(attrs.getDictionary(context));
  }
  if (arguments) {
    func.setAllArgAttrs(dicts);
  } else {
    func.setAllResultAttrs(dicts);
  }
}

inline std::optional<StepRole> roleFrom(mlir::DictionaryAttr attrs) {
  auto role = attrs ? attrs.getAs<mlir::StringAttr>(kRoleAttr) : mlir::StringAttr();
  if (!role) {
    return std::nullopt;
  }
  auto param = attrs.getAs<mlir::FlatSymbolRefAttr>(kRoleParamAttr);
  return StepRole{role.str(), param ? param.getValue().str() : std::string()};
}

inline std::optional<StepRole> argRole(mlir::func::FuncOp func, unsigned index) {
  return roleFrom(func.getArgAttrDict(index));
}

inline std::optional<StepRole> resultRole(mlir::func::FuncOp func, unsigned index) {
  return roleFrom(func.getResultAttrDict(index));
}

/// The index of the argument (or result) with `role`, if any.
inline std::optional<unsigned> findArg(mlir::func::FuncOp func, const StepRole &role) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (argRole(func, i) == role) {
      return i;
    }
  }
  return std::nullopt;
}

inline std::optional<unsigned> findResult(mlir::func::FuncOp func, const StepRole &role) {
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    if (resultRole(func, i) == role) {
      return i;
    }
  }
  return std::nullopt;
}

} // namespace mlperf

#endif // MLPERFC_COMPILER_SUPPORT_STEPROLES_H
