//===- RunReference.cpp - mlperfc run-reference ----------------*- C++ -*-===//
//
// Runs a model on the CPU reference interpreter: one micro-batch's loss (and gradients), or
// whole optimizer steps. These are the numbers every pass, backend and the external oracle
// are compared with.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "compiler/Interpreter/ReferenceTrainer.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"
#include "runtime/checkpoint/Safetensors.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/data/GPTBatches.h"
#include "runtime/plan/StepRoles.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <functional>
#include <memory>

namespace cl = llvm::cl;

namespace mlperf::cli {

cl::SubCommand
    runReferenceCommand("run-reference",
                        "Run a micro-batch or whole train steps on the CPU reference interpreter");

static cl::opt<std::string> refModel(cl::Positional, cl::Required, cl::sub(runReferenceCommand),
                                     cl::desc("<model.mlir>"), cl::cat(mlperfcCategory()));
static cl::opt<std::string>
    refFunction("function", cl::sub(runReferenceCommand), cl::init("forward"),
                cl::desc("forward (loss) or forward_backward (loss and every parameter gradient)"),
                cl::cat(mlperfcCategory()));
static cl::opt<int64_t> refTrainSteps(
    "train-steps", cl::sub(runReferenceCommand), cl::init(0),
    cl::desc("Train this many optimizer steps instead; --inputs then holds tokens and labels of "
             "shape [steps, global_batch, seq]"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> refPrecision("precision", cl::sub(runReferenceCommand),
                                         cl::init("bf16"), cl::desc("bf16 (as declared) or fp32"),
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
                  cl::desc("Write the initial parameters (after initialization) to this file"),
                  cl::cat(mlperfcCategory()));
static cl::opt<std::string>
    refInputs("inputs", cl::sub(runReferenceCommand), cl::value_desc("BATCH.safetensors"),
              cl::desc("Integer tensors 'tokens' and 'labels': [micro_batch, seq], or [steps, "
                       "global_batch, seq] with --train-steps"),
              cl::cat(mlperfcCategory()));
static cl::opt<std::string>
    refOutput("o", cl::sub(runReferenceCommand), cl::value_desc("OUT.safetensors"),
              cl::desc("Write 'loss' and 'grad.<parameter>' tensors; with --train-steps, the final "
                       "parameters and optimizer state"),
              cl::cat(mlperfcCategory()));

static cl::opt<std::string> refData(
    "data", cl::sub(runReferenceCommand), cl::value_desc("PREFIX"),
    cl::desc("With --train-steps: train on a Megatron indexed dataset (PREFIX.bin/.idx) instead "
             "of --inputs, global_batch_size GPT samples per step"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string>
    refDataOrder("data-order", cl::sub(runReferenceCommand), cl::init("shuffled"),
                 cl::desc("shuffled (by --seed, as training does) or sequential (file order)"),
                 cl::cat(mlperfcCategory()));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "mlperfc run-reference") << message << "\n";
  return 1;
}

/// The integer tensor `name` of `inputs` with the given shape, or an error naming it.
static mlir::FailureOr<rt::HostTensor> integerInput(const rt::TensorFile &inputs, const char *name,
                                                    const std::vector<int64_t> &shape,
                                                    rt::DType dtype) {
  auto it = inputs.tensors.find(name);
  auto describe = [&] {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
      text += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return text + "]";
  };
  if (it == inputs.tensors.end()) {
    fail(refInputs + " has no tensor '" + name + "'");
    return mlir::failure();
  }
  if (rt::isFloat(it->second.dtype) || it->second.shape != shape) {
    fail(refInputs + ": '" + name + "' is " + it->second.describe() + ", expected integers of " +
         "shape " + describe());
    return mlir::failure();
  }
  rt::HostTensor tensor = it->second;
  tensor.dtype = dtype; // token files are often int64 while models take int32
  return tensor;
}

/// The batch's 'tokens' and 'labels', both of `shape`.
static mlir::FailureOr<std::pair<rt::HostTensor, rt::HostTensor>>
tokensAndLabels(const rt::TensorFile &inputs, const std::vector<int64_t> &shape, rt::DType dtype) {
  mlir::FailureOr<rt::HostTensor> tokens = integerInput(inputs, "tokens", shape, dtype);
  if (failed(tokens)) {
    return mlir::failure();
  }
  mlir::FailureOr<rt::HostTensor> labels = integerInput(inputs, "labels", shape, dtype);
  if (failed(labels)) {
    return mlir::failure();
  }
  return std::make_pair(std::move(*tokens), std::move(*labels));
}

static rt::HostTensor stepSlice(const rt::HostTensor &all, int64_t step) {
  rt::HostTensor slice = rt::HostTensor::zeros(all.dtype, {all.shape[1], all.shape[2]});
  int64_t size = slice.numElements();
  std::copy_n(all.ints.begin() + step * size, size, slice.ints.begin());
  return slice;
}

/// Optimizer state saved by --train-steps -o (or an empty state when none was loaded).
struct LoadedOptimizerState {
  std::map<std::string, ParamValues> byRole; // as TrainState::optimizer
  int64_t step = 0;
  bool present = false;
};

/// Fills one step's [global_batch, seq] tokens and labels, or fails after printing why.
using BatchSource =
    std::function<mlir::LogicalResult(int64_t step, rt::HostTensor &, rt::HostTensor &)>;

/// Batches from the [steps, global_batch, seq] tensors of an --inputs file.
static mlir::FailureOr<BatchSource> tensorBatches(tg::ModelOp model, const rt::TensorFile &inputs,
                                                  rt::DType idType) {
  auto batch = *model.getBody().front().getOps<tg::BatchOp>().begin();
  std::vector<int64_t> shape{refTrainSteps, batch.getGlobalBatchSizeAttr().getInt(),
                             batch.getSeqLenAttr().getInt()};
  auto batchTensors = tokensAndLabels(inputs, shape, idType);
  if (failed(batchTensors)) {
    return mlir::failure();
  }
  auto tensors =
      std::make_shared<std::pair<rt::HostTensor, rt::HostTensor>>(std::move(*batchTensors));
  return BatchSource([tensors](int64_t step, rt::HostTensor &tokens, rt::HostTensor &labels) {
    tokens = stepSlice(tensors->first, step);
    labels = stepSlice(tensors->second, step);
    return mlir::success();
  });
}

/// Batches of GPT samples (seq_len + 1 tokens: inputs and next-token labels) from an indexed
/// dataset; each epoch is visited in a new order (seed + epoch) when shuffled.
static mlir::FailureOr<BatchSource> datasetBatches(tg::ModelOp model, rt::DType idType) {
  auto batch = *model.getBody().front().getOps<tg::BatchOp>().begin();
  int64_t globalBatch = batch.getGlobalBatchSizeAttr().getInt();
  int64_t seq = batch.getSeqLenAttr().getInt();
  if (refDataOrder != "shuffled" && refDataOrder != "sequential") {
    fail("--data-order must be shuffled or sequential, got '" + refDataOrder + "'");
    return mlir::failure();
  }
  rt::SampleOrder order =
      refDataOrder == "shuffled" ? rt::SampleOrder::kShuffled : rt::SampleOrder::kSequential;
  auto batches = std::make_shared<rt::GPTBatches>();
  rt::Status status = rt::GPTBatches::open(refData, seq, order, refSeed, *batches);
  if (!status.isOk()) {
    fail(status.message());
    return mlir::failure();
  }
  return BatchSource([=](int64_t step, rt::HostTensor &tokens, rt::HostTensor &labels) {
    tokens = rt::HostTensor::zeros(idType, {globalBatch, seq});
    labels = rt::HostTensor::zeros(idType, {globalBatch, seq});
    rt::Status read = batches->fill(step * globalBatch, globalBatch, tokens.ints, labels.ints);
    if (!read.isOk()) {
      fail(read.message());
      return mlir::failure();
    }
    return mlir::success();
  });
}

static int trainSteps(tg::ModelOp model, ParamValues params, const BatchSource &nextBatch,
                      LoadedOptimizerState loaded) {
  ReferenceTrainer trainer(model);
  // As the plan starts it (@init_optimizer): masters and moments for the trained parameters
  // only, none for a frozen one.
  mlir::FailureOr<TrainState> initial = trainer.initialState(std::move(params));
  if (failed(initial)) {
    return 1;
  }
  TrainState state = std::move(*initial);
  state.seed = refSeed;
  if (loaded.present) {
    // Resume: every piece of optimizer state the step starts needs its saved value, of the
    // same type and shape.
    for (const auto &[role, values] : state.optimizer) {
      for (const auto &[name, initial] : values) {
        auto group = loaded.byRole.find(role);
        auto it = group == loaded.byRole.end() ? ParamValues::iterator() : group->second.find(name);
        if (group == loaded.byRole.end() || it == group->second.end() ||
            it->second.dtype != initial.dtype || it->second.shape != initial.shape) {
          return fail(refParams + ": no usable '" + rt::role::stateKey(role, name) +
                      "' (the optimizer's " + role + " state, " + initial.describe() + ")");
        }
      }
    }
    for (const auto &[role, values] : loaded.byRole) {
      if (!state.optimizer.count(role)) {
        return fail(refParams + ": holds '" + role +
                    "' optimizer state, which this model's "
                    "optimizer does not have");
      }
    }
    state.optimizer = std::move(loaded.byRole);
    state.step = loaded.step;
  }
  for (int64_t step = 0; step < refTrainSteps; ++step) {
    rt::HostTensor tokens, labels;
    if (failed(nextBatch(step, tokens, labels))) {
      return 1;
    }
    auto start = std::chrono::steady_clock::now();
    mlir::FailureOr<StepMetrics> metrics = trainer.step(state, tokens, labels);
    if (failed(metrics)) {
      return 1;
    }
    double milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    llvm::outs() << llvm::format("step %lld loss %.9g lr %.9g grad_norm %.9g time_ms %.1f\n",
                                 static_cast<long long>(metrics->step), metrics->loss, metrics->lr,
                                 metrics->gradNorm, milliseconds);
    llvm::outs().flush();
  }
  if (!refOutput.empty()) {
    // Parameters by Hugging Face name; optimizer state as optimizer.<role>.<name>.
    rt::TensorFile out;
    out.metadata = {{"format", "mlperfc train state"}, {"step", std::to_string(state.step)}};
    for (auto &[name, value] : state.params) {
      out.tensors[name] = value;
    }
    // A frozen parameter has no optimizer state: its value is all mlperf-run saves of it.
    for (const auto &[role, values] : state.optimizer) {
      for (const auto &[name, value] : values) {
        out.tensors[rt::role::stateKey(role, name)] = value;
      }
    }
    rt::Status written = rt::writeSafetensors(refOutput, out);
    if (!written.isOk()) {
      return fail(written.message());
    }
  }
  return 0;
}

int runRunReference() {
  if (refFunction != "forward" && refFunction != "forward_backward") {
    return fail("--function must be forward or forward_backward, got '" + refFunction + "'");
  }
  if (refPrecision != "bf16" && refPrecision != "fp32") {
    return fail("--precision must be bf16 or fp32, got '" + refPrecision + "'");
  }
  if (refTrainSteps < 0) {
    return fail("--train-steps must be >= 0");
  }
  if (mlperf::rt::Status threads = mlperf::rt::cpu::checkCpuThreadsSetting(); !threads.isOk()) {
    return fail(threads.message());
  }
  // BLIS picks its kernels (Gemm.h sets BLIS_ARCH_TYPE) while the process has one thread.
  mlperf::rt::cpu::gemmDescription();
  std::unique_ptr<mlir::MLIRContext> contextOwner = createModelContext();
  ModelFile modelFile(*contextOwner, refModel);
  mlir::OwningOpRef<mlir::ModuleOp> module = modelFile.load();
  if (!module) {
    return 1;
  }
  tg::ModelOp model = getModel(*module);
  TrainStepOptions options;
  options.precision = refPrecision;
  // A lone forward_backward call is one micro-batch: its loss gradient, unscaled.
  options.accumulationSteps = refTrainSteps > 0 ? accumulationStepsOnOneRank(model) : 1;
  // Draw before lowering: the reference draws in the declared type (bf16) even when the run
  // computes in fp32, whose master weights then start from those bf16 values.
  ParamValues drawn;
  if (refParams.empty()) {
    mlir::FailureOr<ParamValues> values = initializeParameters(model, refSeed);
    if (failed(values)) {
      return 1;
    }
    drawn = std::move(*values);
  }
  mlir::PassManager pm(contextOwner.get());
  buildTrainStepPipeline(pm, options);
  if (failed(pm.run(*module))) {
    return fail("could not build the train step (errors above)");
  }

  ParamValues params;
  LoadedOptimizerState optimizerState;
  if (!refParams.empty()) {
    rt::TensorFile file;
    rt::Status status = rt::readSafetensors(refParams, file);
    if (!status.isOk()) {
      return fail(status.message());
    }
    // A train-state file holds the optimizer state next to the parameters.
    for (auto &[name, tensor] : file.tensors) {
      if (auto key = rt::role::parseStateKey(name)) {
        optimizerState.byRole[key->first][key->second] = std::move(tensor);
      } else if (rt::role::isOptimizerStateKey(name)) {
        return fail(refParams + ": '" + name + "' is no optimizer.<role>.<parameter> name");
      } else {
        params[name] = std::move(tensor);
      }
    }
    optimizerState.present = !optimizerState.byRole.empty();
    auto step = file.metadata.find("step");
    if (optimizerState.present &&
        (step == file.metadata.end() ||
         llvm::StringRef(step->second).getAsInteger(10, optimizerState.step) ||
         optimizerState.step < 0)) {
      return fail(refParams + ": optimizer state without a valid 'step' in its metadata");
    }
  } else {
    params = std::move(drawn);
  }
  if (refPrecision == "fp32") {
    // bf16 and fp8 values are exact in f32: an fp32 run starts from the same numbers.
    for (auto &entry : params) {
      if (rt::isFloat(entry.second.dtype)) {
        entry.second.dtype = rt::DType::kF32;
      }
    }
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

  if (refData.empty() == refInputs.empty()) {
    return fail(refData.empty() ? "give the batch with --inputs (or --data with --train-steps)"
                                : "--inputs and --data are alternatives: give one");
  }
  if (!refData.empty() && refTrainSteps == 0) {
    return fail("--data feeds training: give --train-steps");
  }
  rt::TensorFile inputs;
  if (!refInputs.empty()) {
    rt::Status status = rt::readSafetensors(refInputs, inputs);
    if (!status.isOk()) {
      return fail(status.message());
    }
  }
  auto func = llvm::cast<mlir::func::FuncOp>(mlir::SymbolTable::lookupSymbolIn(model, refFunction));
  auto tokenType = llvm::cast<mlir::RankedTensorType>(func.getFunctionType().getInput(0));
  rt::DType idType = *toDType(tokenType.getElementType());
  if (refTrainSteps > 0) {
    mlir::FailureOr<BatchSource> source =
        refData.empty() ? tensorBatches(model, inputs, idType) : datasetBatches(model, idType);
    if (failed(source)) {
      return 1;
    }
    return trainSteps(model, std::move(params), *source, std::move(optimizerState));
  }

  std::vector<int64_t> shape(tokenType.getShape().begin(), tokenType.getShape().end());
  auto batchTensors = tokensAndLabels(inputs, shape, idType);
  if (failed(batchTensors)) {
    return 1;
  }
  const auto &[tokens, labels] = *batchTensors;
  TGInterpreter interpreter(model, params);
  mlir::FailureOr<std::vector<rt::HostTensor>> results = interpreter.call(func, {tokens, labels});
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
