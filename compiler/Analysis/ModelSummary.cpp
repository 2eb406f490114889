//===- ModelSummary.cpp - Sizes, memory and FLOPs of a model ----*- C++ -*-===//

#include "compiler/Analysis/ModelSummary.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"

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
struct FunctionCost {
  double flops = 0;
  std::map<std::string, int64_t> ops;
};

class CostModel {
public:
  explicit CostModel(tg::ModelOp model) : model(model) {}

  const FunctionCost &cost(func::FuncOp func) {
    auto it = cache.find(func);
    if (it != cache.end()) {
      return it->second;
    }
    FunctionCost total;
    func.walk([&](Operation *op) {
      if (op == func.getOperation()) {
        return;
      }
      ++total.ops[op->getName().getStringRef().str()];
      if (isa<tg::MatmulOp, tg::AttentionOp, tg::LinearCrossEntropyOp>(op)) {
        total.flops += modelFlops(op);
      } else if (auto layers = dyn_cast<tg::RepeatLayersOp>(op)) {
        addCallee(total, layers.getCallee(), layers.getCountAttr().getInt());
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        addCallee(total, call.getCallee(), 1);
      }
    });
    return cache[func] = std::move(total);
  }

private:
  void addCallee(FunctionCost &total, StringRef name, int64_t times) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        model, StringAttr::get(model.getContext(), name));
    if (!callee) {
      return; // The verifier rejects unknown callees; nothing to count.
    }
    const FunctionCost &inner = cost(callee);
    total.flops += static_cast<double>(times) * inner.flops;
    for (const auto &[op, count] : inner.ops) {
      total.ops[op] += times * count;
    }
  }

  tg::ModelOp model;
  llvm::DenseMap<Operation *, FunctionCost> cache;
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
    // AdamW's first and second moments, fp32.
    summary.bytes["optimizer_state"]["f32"] += 2 * count * 4;
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
    summary.trainFlopsPerToken = 3.0 * summary.forwardFlopsPerToken;
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
