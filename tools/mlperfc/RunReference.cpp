//===- RunReference.cpp - mlperfc run-reference ----------------*- C++ -*-===//
//
// Runs a model's @forward or @forward_backward on the CPU reference interpreter: the numbers
// every pass, backend and the external oracle are compared with.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "compiler/Interpreter/TGInterpreter.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"
#include "compiler/Transforms/Passes.h"
#include "runtime/checkpoint/Safetensors.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

namespace mlperf::cli {

cl::SubCommand
    runReferenceCommand("run-reference",
                        "Run @forward or @forward_backward on the CPU reference interpreter");

static cl::opt<std::string> refModel(cl::Positional, cl::Required, cl::sub(runReferenceCommand),
                                     cl::desc("<model.mlir>"), cl::cat(mlperfcCategory()));
static cl::opt<std::string>
    refFunction("function", cl::sub(runReferenceCommand), cl::init("forward"),
                cl::desc("forward (loss) or forward_backward (loss and every parameter gradient)"),
                cl::cat(mlperfcCategory()));
static cl::opt<std::string> refParams("params", cl::sub(runReferenceCommand),
                                      cl::value_desc("W.safetensors"),
                                      cl::desc("Parameter values by Hugging Face name (default: "
                                               "draw them from the declared init with --seed)"),
                                      cl::cat(mlperfcCategory()));
static cl::opt<uint64_t> refSeed("seed", cl::sub(runReferenceCommand), cl::init(0),
                                 cl::desc("Seed of the parameter initialization"),
                                 cl::cat(mlperfcCategory()));
static cl::opt<std::string>
    refSaveParams("save-params", cl::sub(runReferenceCommand), cl::value_desc("W.safetensors"),
                  cl::desc("Write the parameters used (after initialization) to this file"),
                  cl::cat(mlperfcCategory()));
static cl::opt<std::string>
    refInputs("inputs", cl::sub(runReferenceCommand), cl::Required,
              cl::value_desc("BATCH.safetensors"),
              cl::desc("Tensors 'tokens' and 'labels', [micro_batch, seq] integers"),
              cl::cat(mlperfcCategory()));
static cl::opt<std::string>
    refOutput("o", cl::sub(runReferenceCommand), cl::value_desc("OUT.safetensors"),
              cl::desc("Write 'loss' and, for forward_backward, 'grad.<parameter>' tensors"),
              cl::cat(mlperfcCategory()));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "mlperfc run-reference") << message << "\n";
  return 1;
}

/// Converts integer data to the integer type the function declares (token files are often
/// int64 while models take int32).
static rt::HostTensor asDeclared(rt::HostTensor tensor, mlir::Type declared) {
  auto type = llvm::cast<mlir::RankedTensorType>(declared);
  mlir::FailureOr<rt::DType> dtype = toDType(type.getElementType());
  if (succeeded(dtype) && !rt::isFloat(tensor.dtype) && !rt::isFloat(*dtype)) {
    tensor.dtype = *dtype;
  }
  return tensor;
}

int runRunReference() {
  if (refFunction != "forward" && refFunction != "forward_backward") {
    return fail("--function must be forward or forward_backward, got '" + refFunction + "'");
  }
  std::unique_ptr<mlir::MLIRContext> contextOwner = createModelContext();
  ModelFile modelFile(*contextOwner, refModel);
  mlir::OwningOpRef<mlir::ModuleOp> module = modelFile.load();
  if (!module) {
    return 1;
  }
  mlir::PassManager pm(contextOwner.get());
  pm.addPass(createTGInlineLayersPass());
  if (refFunction == "forward_backward") {
    pm.addPass(createTGAutodiffPass());
  }
  if (failed(pm.run(*module))) {
    return fail("could not prepare " + refFunction + " (errors above)");
  }
  tg::ModelOp model = getModel(*module);

  ParamValues params;
  if (!refParams.empty()) {
    rt::TensorFile file;
    rt::Status status = rt::readSafetensors(refParams, file);
    if (!status.isOk()) {
      return fail(status.message());
    }
    params = std::move(file.tensors);
  } else {
    mlir::FailureOr<ParamValues> drawn = initializeParameters(model, refSeed);
    if (failed(drawn)) {
      return 1;
    }
    params = std::move(*drawn);
  }
  if (failed(checkParameters(model, params))) {
    return 1;
  }
  if (!refSaveParams.empty()) {
    rt::TensorFile file{params,
                        {{"format", "mlperfc parameters"}, {"seed", std::to_string(refSeed)}}};
    rt::Status status = rt::writeSafetensors(refSaveParams, file);
    if (!status.isOk()) {
      return fail(status.message());
    }
  }

  rt::TensorFile inputs;
  rt::Status status = rt::readSafetensors(refInputs, inputs);
  if (!status.isOk()) {
    return fail(status.message());
  }
  auto func = llvm::cast<mlir::func::FuncOp>(mlir::SymbolTable::lookupSymbolIn(model, refFunction));
  std::vector<rt::HostTensor> args;
  const char *const argumentNames[] = {"tokens", "labels"};
  for (auto [index, name] : llvm::enumerate(argumentNames)) {
    auto it = inputs.tensors.find(name);
    if (it == inputs.tensors.end()) {
      return fail(refInputs + " has no tensor '" + llvm::Twine(name) + "'");
    }
    args.push_back(asDeclared(it->second, func.getFunctionType().getInput(index)));
  }
  TGInterpreter interpreter(model, params);
  mlir::FailureOr<std::vector<rt::HostTensor>> results = interpreter.call(func, std::move(args));
  if (failed(results)) {
    return 1;
  }
  llvm::outs() << llvm::format("loss %.9g\n", (*results)[0].values[0]);
  if (!refOutput.empty()) {
    rt::TensorFile out;
    out.metadata["function"] = refFunction;
    out.tensors["loss"] = (*results)[0];
    if (auto names = func->getAttrOfType<mlir::ArrayAttr>("tg.gradients")) {
      for (auto [name, grad] : llvm::zip(names, llvm::drop_begin(*results))) {
        out.tensors["grad." + llvm::cast<mlir::FlatSymbolRefAttr>(name).getValue().str()] = grad;
      }
    }
    rt::Status written = rt::writeSafetensors(refOutput, out);
    if (!written.isOk()) {
      return fail(written.message());
    }
  }
  return 0;
}

} // namespace mlperf::cli
