//===- ModelSummary.cpp - Sizes, memory and FLOPs of a model ----*- C++ -*-===//

#include "compiler/Analysis/ModelSummary.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <vector>

using namespace mlir;

namespace mlperf {
namespace {

std::string elementTypeName(Type type) {
  std::string name;
  llvm::raw_string_ostream os(name);
  os << type;
  return name;
}

int64_t elementBytes(Type type) { return (type.getIntOrFloatBitWidth() + 7) / 8; }

/// True when `value` reaches a tg.causal_mask through scales and conversions: the scores of
/// causal attention, half of which are masked away.
bool feedsCausalMask(Value value) {
  for (Operation *user : value.getUsers()) {
    if (isa<tg::CausalMaskOp>(user)) {
      return true;
    }
    if (isa<tg::ScaleOp, tg::ConvertOp>(user) && feedsCausalMask(user->getResult(0))) {
      return true;
    }
  }
  return false;
}

/// True when `value` is (a conversion of) a softmax over causally masked scores: the
/// probabilities of causal attention, half of which are zero.
bool isCausalProbabilities(Value value) {
  Operation *def = value.getDefiningOp();
  while (def && isa<tg::ConvertOp>(def)) {
    def = def->getOperand(0).getDefiningOp();
  }
  auto softmax = dyn_cast_or_null<tg::SoftmaxOp>(def);
  if (!softmax) {
    return false;
  }
  Operation *input = softmax.getInput().getDefiningOp();
  while (input && isa<tg::ScaleOp, tg::ConvertOp>(input)) {
    input = input->getOperand(0).getDefiningOp();
  }
  return input && isa<tg::CausalMaskOp>(input);
}

double matmulFlops(tg::MatmulOp matmul) {
  auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
  auto result = cast<RankedTensorType>(matmul.getType());
  int64_t k = lhs.getDimSize(lhs.getRank() - (matmul.getTransposeLhs() ? 2 : 1));
  double flops = 2.0 * static_cast<double>(result.getNumElements()) * static_cast<double>(k);
  // Causal attention computes (about) half of the score matrix; Megatron's MFU counts it so.
  if (feedsCausalMask(matmul.getResult()) || isCausalProbabilities(matmul.getLhs())) {
    flops *= 0.5;
  }
  return flops;
}

} // namespace

double modelFlops(Operation *op) {
  if (auto matmul = dyn_cast<tg::MatmulOp>(op)) {
    return matmulFlops(matmul);
  }
  if (auto attention = dyn_cast<tg::AttentionOp>(op)) {
    // The two matmuls of the unfused graph: scores [b, h, sq, sk] over d, and their product
    // with the values; causal at half, as above.
    auto query = cast<RankedTensorType>(attention.getQuery().getType());
    auto key = cast<RankedTensorType>(attention.getKey().getType());
    double flops = 4.0 * static_cast<double>(query.getNumElements()) *
                   static_cast<double>(key.getDimSize(key.getRank() - 2));
    return attention.getCausal() ? flops * 0.5 : flops;
  }
  if (auto head = dyn_cast<tg::LinearCrossEntropyOp>(op)) {
    // The logits matmul [tokens, hidden] x [hidden, vocab rows].
    auto hidden = cast<RankedTensorType>(head.getOperand(0).getType());
    auto weight = cast<RankedTensorType>(head.getOperand(1).getType());
    return 2.0 * static_cast<double>(hidden.getNumElements()) *
           static_cast<double>(weight.getDimSize(0));
  }
  return 0.0;
}

namespace {

/// FLOPs and op counts of one call of a function, recursing into layer stacks and calls.
/// `train` is what the training step computes for it: forward, input gradient and weight
/// gradient, 3x forward, except that a matmul with a frozen weight has no weight gradient
/// (2x forward: a LoRA base).
struct FunctionCost {
  double flops = 0, train = 0;
  std::map<std::string, int64_t> ops;
};

class CostModel {
public:
  explicit CostModel(tg::ModelOp model) : model(model) {}

  /// The cost of `func` when its arguments flagged in `frozenArgs` are frozen parameters.
  const FunctionCost &cost(func::FuncOp func, const std::vector<bool> &frozenArgs = {}) {
    auto key = std::make_pair(func.getOperation(), frozenArgs);
    auto it = cache.find(key);
    if (it != cache.end()) {
      return it->second;
    }
    FunctionCost total;
    auto frozen = [&](Value value) { return isFrozenWeight(value, func, frozenArgs); };
    func.walk([&](Operation *op) {
      if (op == func.getOperation()) {
        return;
      }
      ++total.ops[op->getName().getStringRef().str()];
      if (auto matmul = dyn_cast<tg::MatmulOp>(op)) {
        double flops = modelFlops(op);
        total.flops += flops;
        total.train += flops * (frozen(matmul.getLhs()) || frozen(matmul.getRhs()) ? 2 : 3);
      } else if (auto head = dyn_cast<tg::LinearCrossEntropyOp>(op)) {
        double flops = modelFlops(op);
        total.flops += flops;
        total.train += flops * (frozen(head.getOperand(1)) ? 2 : 3);
      } else if (isa<tg::AttentionOp>(op)) {
        total.flops += modelFlops(op);
        total.train += 3 * modelFlops(op);
      } else if (auto layers = dyn_cast<tg::RepeatLayersOp>(op)) {
        std::vector<bool> mask{false}; // the activation, then the layer's parameters
        for (StringRef name : layers.getParamNames()) {
          mask.push_back(isFrozenParam(name));
        }
        // Each function of the cycle for the layers that call it.
        SmallVector<StringRef> callees = layers.getCallees();
        int64_t count = layers.getCountAttr().getInt(), cycle = callees.size();
        for (int64_t i = 0; i < cycle; ++i) {
          addCallee(total, callees[i], count / cycle + (i < count % cycle ? 1 : 0), mask);
        }
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        std::vector<bool> mask;
        for (Value operand : call.getOperands()) {
          mask.push_back(frozen(operand));
        }
        addCallee(total, call.getCallee(), 1, mask);
      }
    });
    return cache[key] = std::move(total);
  }

private:
  bool isFrozenParam(StringRef name) {
    auto param = SymbolTable::lookupNearestSymbolFrom<tg::ParamOp>(
        model, StringAttr::get(model.getContext(), name));
    return param && param.getFrozen();
  }

  /// Whether `value` is a frozen parameter, possibly converted, transposed or reshaped: a
  /// chain of one-operand ops back to its tg.param_ref or to a frozen argument of `func`.
  bool isFrozenWeight(Value value, func::FuncOp func, const std::vector<bool> &frozenArgs) {
    while (Operation *def = value.getDefiningOp()) {
      if (auto ref = dyn_cast<tg::ParamRefOp>(def)) {
        return isFrozenParam(ref.getName());
      }
      if (def->getNumOperands() != 1 || def->getNumResults() != 1) {
        return false;
      }
      value = def->getOperand(0);
    }
    auto argument = cast<BlockArgument>(value);
    return argument.getOwner()->getParentOp() == func.getOperation() &&
           argument.getArgNumber() < frozenArgs.size() && frozenArgs[argument.getArgNumber()];
  }

  void addCallee(FunctionCost &total, StringRef name, int64_t times,
                 const std::vector<bool> &frozenArgs) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        model, StringAttr::get(model.getContext(), name));
    if (!callee) {
      return; // The verifier rejects unknown callees; nothing to count.
    }
    const FunctionCost &inner = cost(callee, frozenArgs);
    total.flops += static_cast<double>(times) * inner.flops;
    total.train += static_cast<double>(times) * inner.train;
    for (const auto &[op, count] : inner.ops) {
      total.ops[op] += times * count;
    }
  }

  tg::ModelOp model;
  std::map<std::pair<Operation *, std::vector<bool>>, FunctionCost> cache;
};

} // namespace

ModelSummary summarizeModel(tg::ModelOp model) {
  ModelSummary summary;
  summary.name = model.getSymName().str();
  Block &body = model.getBody().front();
  for (auto benchmark : body.getOps<tg::BenchmarkOp>()) {
    summary.benchmark = benchmark.getName().str();
  }
  for (auto batch : body.getOps<tg::BatchOp>()) {
    summary.globalBatch = batch.getGlobalBatchSizeAttr().getInt();
    summary.microBatch = batch.getMicroBatchSizeAttr().getInt();
    summary.seqLen = batch.getSeqLenAttr().getInt();
  }

  // f32 optimizer state tensors per trainable parameter besides its master weight.
  int64_t statePerElement = 2; // AdamW's moments
  for (auto optimizer : body.getOps<tg::OptimizerOp>()) {
    statePerElement = optimizer.getName() == "adagrad" ? 1 : 2; // Adagrad's sum of squares
  }
  for (auto param : body.getOps<tg::ParamOp>()) {
    RankedTensorType type = param.getTensorType();
    int64_t count = type.getNumElements() * param.getCopies();
    summary.parameters += count;
    summary.parameterTensors += param.getCopies();
    Type element = type.getElementType();
    std::string name = elementTypeName(element);
    summary.bytes["parameters"][name] += count * elementBytes(element);
    if (param.getFrozen()) {
      continue; // no gradient, no master weight, no moments
    }
    summary.trainableParameters += count;
    // Gradients are kept and reduced in the parameters' type, as the reference does.
    summary.bytes["gradients"][name] += count * elementBytes(element);
    // fp32 master weights exist only when the parameters are stored in lower precision.
    if (!element.isF32()) {
      summary.bytes["master_weights"]["f32"] += count * 4;
    }
    // AdamW's first and second moments, Adagrad's sum of squares: fp32.
    summary.bytes["optimizer_state"]["f32"] += statePerElement * count * 4;
  }

  if (auto forward = dyn_cast_or_null<func::FuncOp>(model.getForward())) {
    CostModel costs(model);
    const FunctionCost &cost = costs.cost(forward);
    summary.forwardOps = cost.ops;
    summary.forwardFlopsPerMicroBatch = cost.flops;
    double tokensPerMicroBatch = static_cast<double>(summary.microBatch * summary.seqLen);
    if (tokensPerMicroBatch > 0) {
      summary.forwardFlopsPerToken = cost.flops / tokensPerMicroBatch;
    }
    summary.trainFlopsPerToken = tokensPerMicroBatch > 0 ? cost.train / tokensPerMicroBatch : 0;
    summary.trainFlopsPerStep =
        summary.trainFlopsPerToken * static_cast<double>(summary.globalBatch * summary.seqLen);
  }
  return summary;
}

/// Sizes a parallel strategy must divide, read from the declaration: the batch, the layers of
/// its tg.repeat_layers stacks (dist-pipeline cuts them as one sequence) and every dim, and
/// every block of a dim, a parameter declares split over tp.
rt::ModelDims parallelDims(tg::ModelOp model) {
  rt::ModelDims dims;
  Block &body = model.getBody().front();
  auto batch = *body.getOps<tg::BatchOp>().begin();
  dims.globalBatch = batch.getGlobalBatchSizeAttr().getInt();
  dims.microBatch = batch.getMicroBatchSizeAttr().getInt();
  dims.seqLen = batch.getSeqLenAttr().getInt();
  model.walk([&](tg::RepeatLayersOp stack) { dims.layers += stack.getCountAttr().getInt(); });
  for (auto param : body.getOps<tg::ParamOp>()) {
    int64_t dim = param.getDeclaredSplitDim();
    if (dim < 0) {
      continue;
    }
    std::string unit = dim == 0   ? "rows"
                       : dim == 1 ? "columns"
                                  : "entries of dim " + std::to_string(dim);
    dims.tensorSplits.push_back(
        {param.getTensorType().getDimSize(dim),
         unit + " of " + param.getSymName().str() + " (declared split over tp)"});
    for (auto [block, size] :
         llvm::enumerate(param.getShardBlocks().value_or(llvm::ArrayRef<int64_t>()))) {
      dims.tensorSplits.push_back({size, unit + " of block " + std::to_string(block) + " of " +
                                             param.getSymName().str() +
                                             " (declared split over tp)"});
    }
  }
  return dims;
}

} // namespace mlperf
