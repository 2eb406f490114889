//===- PerModelPass.h - A pass run on every tg.model of a module -*- C++ -*-===//
//
// After dist-pipeline a module holds one tg.model per pipeline stage; most passes transform
// each on its own. Derive from PerModelPass<YourPass, impl::YourPassBase> and define
// `LogicalResult runOnModel(tg::ModelOp)`: the first failure fails the pass.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_SUPPORT_PERMODELPASS_H
#define MLPERFC_COMPILER_SUPPORT_PERMODELPASS_H

#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"

namespace mlperf {

template <typename Derived, template <typename> class GeneratedBase>
class PerModelPass : public GeneratedBase<Derived> {
public:
  using GeneratedBase<Derived>::GeneratedBase;

  void runOnOperation() override {
    // A copy of the list: a pass may add models next to the one it runs on.
    for (tg::ModelOp model : llvm::to_vector(this->getOperation().template getOps<tg::ModelOp>())) {
      if (mlir::failed(static_cast<Derived *>(this)->runOnModel(model))) {
        return this->signalPassFailure();
      }
    }
  }
};

} // namespace mlperf

#endif // MLPERFC_COMPILER_SUPPORT_PERMODELPASS_H
