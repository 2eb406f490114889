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

/// The tg.causal_mask `value` reaches through scales and conversions (the scores of causal
/// attention), or null.
tg::CausalMaskOp maskFedBy(Value value) {
  for (Operation *user : value.getUsers()) {
    if (auto mask = dyn_cast<tg::CausalMaskOp>(user)) {
      return mask;
    }
    if (isa<tg::ScaleOp, tg::ConvertOp>(user)) {
      if (tg::CausalMaskOp mask = maskFedBy(user->getResult(0))) {
        return mask;
      }
    }
  }
  return {};
}

/// The tg.causal_mask whose softmax `value` is (a conversion of): the probabilities of causal
/// attention, or null.
tg::CausalMaskOp maskOfProbabilities(Value value) {
  Operation *def = value.getDefiningOp();
  while (def && isa<tg::ConvertOp>(def)) {
    def = def->getOperand(0).getDefiningOp();
  }
  auto softmax = dyn_cast_or_null<tg::SoftmaxOp>(def);
  if (!softmax) {
    return {};
  }
  Operation *input = softmax.getInput().getDefiningOp();
  while (input && isa<tg::ScaleOp, tg::ConvertOp>(input)) {
    input = input->getOperand(0).getDefiningOp();
  }
  return dyn_cast_or_null<tg::CausalMaskOp>(input);
}

std::optional<int64_t> windowOf(tg::CausalMaskOp mask) {
  if (IntegerAttr window = mask.getWindowAttr()) {
    return window.getInt();
  }
  return std::nullopt;
}

double matmulFlops(tg::MatmulOp matmul) {
  auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
  auto result = cast<RankedTensorType>(matmul.getType());
  int64_t k = lhs.getDimSize(lhs.getRank() - (matmul.getTransposeLhs() ? 2 : 1));
  double flops = 2.0 * static_cast<double>(result.getNumElements()) * static_cast<double>(k);
  // Causal attention computes (about) half of the score matrix; Megatron's MFU counts it so.
  tg::CausalMaskOp mask = maskFedBy(matmul.getResult());
  if (!mask) {
    mask = maskOfProbabilities(matmul.getLhs());
  }
  if (mask) {
    auto scores = cast<RankedTensorType>(mask.getType());
    flops *= causalScoreShare(windowOf(mask), scores.getDimSize(scores.getRank() - 1));
  }
  return flops;
}

} // namespace

double causalScoreShare(std::optional<int64_t> window, int64_t seq) {
  if (!window || *window >= seq) {
    return 0.5;
  }
  double s = static_cast<double>(seq), w = static_cast<double>(*window);
  return ((w + 1.0) * s - w * (w + 1.0) / 2.0) / (s * s);
}

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
    std::optional<int64_t> window;
    if (IntegerAttr attr = attention.getWindowAttr()) {
      window = attr.getInt();
    }
    return attention.getCausal()
               ? flops * causalScoreShare(window, key.getDimSize(key.getRank() - 2))
               : flops;
  }
  if (auto grouped = dyn_cast<tg::GroupedMatmulOp>(op)) {
    // Each of the N routed rows meets one expert's [K, M] matrix: 2·N·K·M.
    auto lhs = cast<RankedTensorType>(grouped.getLhs().getType());
    auto result = cast<RankedTensorType>(grouped.getType());
    return 2.0 * static_cast<double>(result.getNumElements()) *
           static_cast<double>(lhs.getDimSize(1));
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

/// The expert weights of the model's mixture-of-experts layers, by declared name, each with the
/// share of it one token uses: top_k / E for the rhs of a tg.grouped_matmul (E its leading
/// dim, top_k the tg.moe_route's of the same function).
llvm::StringMap<double> expertParameterShares(tg::ModelOp model) {
  llvm::StringMap<double> shares;
  auto visit = [&](func::FuncOp func, std::function<StringRef(BlockArgument)> paramOf) {
    int64_t topK = 0;
    func.walk([&](tg::MoeRouteOp route) { topK = route.getTopKAttr().getInt(); });
    func.walk([&](tg::GroupedMatmulOp grouped) {
      auto weights = cast<RankedTensorType>(grouped.getRhs().getType());
      double share = topK > 0 ? static_cast<double>(topK) / weights.getDimSize(0) : 1.0;
      StringRef name;
      if (auto ref = grouped.getRhs().getDefiningOp<tg::ParamRefOp>()) {
        name = ref.getName();
      } else if (auto arg = dyn_cast<BlockArgument>(grouped.getRhs()); arg && paramOf) {
        name = paramOf(arg);
      }
      if (!name.empty()) {
        shares[name] = share;
      }
    });
  };
  model.walk([&](tg::RepeatLayersOp layers) {
    SmallVector<StringRef> params = layers.getParamNames();
    for (StringRef callee : layers.getCallees()) {
      auto func = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          model, StringAttr::get(model.getContext(), callee));
      if (!func) {
        continue;
      }
      visit(func, [&](BlockArgument arg) -> StringRef {
        unsigned index = arg.getArgNumber(); // the hidden state, then the parameters
        return index >= 1 && index <= params.size() ? params[index - 1] : StringRef();
      });
    }
  });
  for (auto func : model.getBody().front().getOps<func::FuncOp>()) {
    if (!func.isPrivate()) {
      visit(func, nullptr);
    }
  }
  return shares;
}

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
      } else if (auto grouped = dyn_cast<tg::GroupedMatmulOp>(op)) {
        double flops = modelFlops(op);
        total.flops += flops;
        total.train += flops * (frozen(grouped.getRhs()) ? 2 : 3);
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
  llvm::StringMap<double> expertShare = expertParameterShares(model);
  for (auto param : body.getOps<tg::ParamOp>()) {
    RankedTensorType type = param.getTensorType();
    int64_t count = type.getNumElements() * param.getCopies();
    summary.parameters += count;
    auto share = expertShare.find(param.getSymName());
    summary.activeParametersPerToken +=
        share == expertShare.end()
            ? count
            : static_cast<int64_t>(std::llround(static_cast<double>(count) * share->second));
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
