//===- TGInterpreter.cpp - Reference execution of tg IR --------*- C++ -*-===//

#include "compiler/Interpreter/TGInterpreter.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Optimizer.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using mlperf::rt::DType;
using mlperf::rt::HostTensor;
namespace cpu = mlperf::rt::cpu;

namespace mlperf {

std::string resolveLayerName(llvm::StringRef name, int64_t layer) {
  std::string out = name.str();
  size_t position = out.find("{i}");
  if (position != std::string::npos) {
    out.replace(position, 3, std::to_string(layer));
  }
  return out;
}

FailureOr<DType> toDType(Type type) {
  if (type.isF32()) {
    return DType::kF32;
  }
  if (type.isBF16()) {
    return DType::kBF16;
  }
  if (isa<Float8E4M3FNType>(type)) {
    return DType::kF8E4M3FN;
  }
  if (isa<Float8E5M2Type>(type)) {
    return DType::kF8E5M2;
  }
  if (type.isInteger(32)) {
    return DType::kI32;
  }
  if (type.isInteger(64)) {
    return DType::kI64;
  }
  return failure();
}

namespace {

std::vector<int64_t> shapeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return {tensor.getShape().begin(), tensor.getShape().end()};
}

/// A zero tensor of `type` (its shape and element type).
HostTensor emptyLike(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return HostTensor::zeros(*toDType(tensor.getElementType()), shapeOf(type));
}

/// Product of `shape[begin, end)`.
int64_t product(llvm::ArrayRef<int64_t> shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i) {
    result *= shape[i];
  }
  return result;
}

/// Rounds a freshly computed float result to its declared element type.
void finish(HostTensor &tensor) {
  rt::roundBuffer(tensor.dtype, tensor.values.data(), tensor.numElements());
}

bool sameSignature(const HostTensor &tensor, Type type) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType) {
    return false;
  }
  FailureOr<DType> dtype = toDType(tensorType.getElementType());
  return succeeded(dtype) && *dtype == tensor.dtype && tensor.shape == shapeOf(type);
}

} // namespace

FailureOr<ParamValues> initializeParameters(tg::ModelOp model, uint64_t seed) {
  ParamValues values;
  for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
    StringRef init = param.getInit();
    if (init == "checkpoint") {
      return param.emitError() << "parameter @\"" << param.getSymName()
                               << "\" is initialized from a checkpoint: load it (--params / "
                                  "--init-from) instead of drawing it";
    }
    double stddev = param.getStd() ? param.getStd()->convertToDouble() : 0.0;
    if (init == "scaled_normal") {
      stddev /= std::sqrt(2.0 * static_cast<double>(param.getCopies()));
    }
    for (int64_t copy = 0; copy < param.getCopies(); ++copy) {
      std::string name =
          param.getRepeat() ? resolveLayerName(param.getSymName(), copy) : param.getSymName().str();
      HostTensor tensor = emptyLike(param.getType());
      uint32_t stream = rt::parameterStreamId(name);
      for (int64_t i = 0; i < tensor.numElements(); ++i) {
        double value = init == "ones"    ? 1.0
                       : init == "zeros" ? 0.0
                                         : stddev * rt::philoxNormal(seed, stream, i);
        // Drawn in the parameter's own type, as the reference draws bf16 values.
        tensor.values[i] = static_cast<float>(rt::roundTo(tensor.dtype, value));
      }
      values.emplace(std::move(name), std::move(tensor));
    }
  }
  return values;
}

LogicalResult checkParameters(tg::ModelOp model, const ParamValues &values) {
  size_t expected = 0;
  for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
    for (int64_t copy = 0; copy < param.getCopies(); ++copy) {
      std::string name =
          param.getRepeat() ? resolveLayerName(param.getSymName(), copy) : param.getSymName().str();
      ++expected;
      auto it = values.find(name);
      if (it == values.end()) {
        return param.emitError() << "no value given for parameter '" << name << "'";
      }
      if (!sameSignature(it->second, param.getType())) {
        return param.emitError() << "parameter '" << name << "' is " << it->second.describe()
                                 << " but the model declares " << param.getType();
      }
      for (float value : it->second.values) {
        if (!std::isfinite(value)) {
          return param.emitError() << "parameter '" << name << "' holds non-finite values";
        }
      }
    }
  }
  if (values.size() != expected) {
    for (const auto &entry : values) {
      bool declared = false;
      for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
        for (int64_t copy = 0; copy < param.getCopies() && !declared; ++copy) {
          declared = entry.first == (param.getRepeat() ? resolveLayerName(param.getSymName(), copy)
                                                       : param.getSymName().str());
        }
      }
      if (!declared) {
        return model.emitError() << "value given for '" << entry.first
                                 << "', which the model does not declare";
      }
    }
  }
  return success();
}

FailureOr<std::vector<HostTensor>> TGInterpreter::call(func::FuncOp func,
                                                       std::vector<HostTensor> args) {
  FunctionType type = func.getFunctionType();
  if (args.size() != type.getNumInputs()) {
    return func.emitError() << "called with " << args.size() << " arguments, expects "
                            << type.getNumInputs();
  }
  llvm::DenseMap<Value, HostTensor> env;
  Block &entry = func.getBody().front();
  for (auto [index, arg] : llvm::enumerate(args)) {
    if (!sameSignature(arg, type.getInput(index))) {
      return func.emitError() << "argument " << index << " is " << arg.describe()
                              << " but the function expects " << type.getInput(index);
    }
    env[entry.getArgument(index)] = std::move(arg);
  }
  auto get = [&](Value value) -> const HostTensor & { return env.find(value)->second; };

  for (Operation &op : entry) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<HostTensor> results;
      for (Value value : ret.getOperands()) {
        results.push_back(get(value));
      }
      return results;
    }
    HostTensor out;
    if (op.getNumResults() == 1) {
      out = emptyLike(op.getResult(0).getType());
    }
    LogicalResult result =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](tg::ParamRefOp o) -> LogicalResult {
              auto it = params.find(o.getName().str());
              if (it == params.end()) {
                return o.emitError() << "no value for parameter @\"" << o.getName() << "\"";
              }
              out = it->second;
              return success();
            })
            .Case([&](tg::MatmulOp o) {
              const HostTensor &a = get(o.getLhs()), &b = get(o.getRhs());
              size_t rank = a.shape.size();
              cpu::MatmulShape s;
              s.transposeA = o.getTransposeLhs();
              s.transposeB = o.getTransposeRhs();
              s.batch = product(a.shape, 0, rank - 2);
              s.m = out.shape[out.shape.size() - 2];
              s.n = out.shape.back();
              s.k = a.shape[rank - (s.transposeA ? 2 : 1)];
              s.broadcastB = b.shape.size() == 2 && rank > 2;
              cpu::matmul(a.values.data(), b.values.data(), out.values.data(), s);
              return success();
            })
            .Case([&](tg::AddOp o) {
              cpu::add(get(o.getLhs()).values.data(), get(o.getRhs()).values.data(),
                       out.values.data(), out.numElements());
              return success();
            })
            .Case([&](tg::MulOp o) {
              cpu::mul(get(o.getLhs()).values.data(), get(o.getRhs()).values.data(),
                       out.values.data(), out.numElements());
              return success();
            })
            .Case([&](tg::ScaleOp o) {
              cpu::scale(get(o.getInput()).values.data(), out.values.data(), out.numElements(),
                         o.getFactor().convertToDouble());
              return success();
            })
            .Case([&](tg::SiluOp o) {
              cpu::silu(get(o.getInput()).values.data(), out.values.data(), out.numElements());
              return success();
            })
            .Case([&](tg::ConvertOp o) {
              out.values = get(o.getInput()).values;
              return success();
            })
            .Case([&](tg::RMSNormOp o) {
              int64_t dim = out.shape.back();
              cpu::rmsNorm(get(o.getInput()).values.data(), get(o.getWeight()).values.data(),
                           out.values.data(), out.numElements() / dim, dim,
                           o.getEpsilon().convertToDouble());
              return success();
            })
            .Case([&](tg::EmbeddingOp o) -> LogicalResult {
              const HostTensor &table = get(o.getTable()), &ids = get(o.getIds());
              int64_t bad = cpu::embedding(table.values.data(), ids.ints.data(), out.values.data(),
                                           ids.numElements(), table.shape[0], table.shape[1]);
              if (bad >= 0) {
                return o.emitError() << "token id " << ids.ints[bad] << " at position " << bad
                                     << " is outside the vocabulary [0, " << table.shape[0] << ")";
              }
              return success();
            })
            .Case([&](tg::RopeOp o) {
              const auto &s = out.shape;
              bool scaled = o.getScalingFactor().has_value();
              std::vector<double> frequencies =
                  cpu::ropeFrequencies(s[3], o.getTheta().convertToDouble(), scaled,
                                       scaled ? o.getScalingFactor()->convertToDouble() : 0.0,
                                       scaled ? o.getLowFreqFactor()->convertToDouble() : 0.0,
                                       scaled ? o.getHighFreqFactor()->convertToDouble() : 0.0,
                                       scaled ? o.getOriginalMaxPositionAttr().getInt() : 0);
              cpu::rope(get(o.getInput()).values.data(), out.values.data(), s[0], s[1], s[2], s[3],
                        frequencies, o.getInverse());
              return success();
            })
            .Case([&](tg::CausalMaskOp o) {
              int64_t n = out.shape.back();
              cpu::causalMask(get(o.getInput()).values.data(), out.values.data(),
                              out.numElements() / (n * n), n, o.getGradient());
              return success();
            })
            .Case([&](tg::SoftmaxOp o) -> LogicalResult {
              size_t dim = o.getDimAttr().getInt();
              int64_t bad = cpu::softmax(get(o.getInput()).values.data(), out.values.data(),
                                         product(out.shape, 0, dim), out.shape[dim],
                                         product(out.shape, dim + 1, out.shape.size()));
              if (bad >= 0) {
                return o.emitError() << "softmax row " << bad
                                     << " has no finite entry (every score masked or "
                                        "infinite/NaN inputs)";
              }
              return success();
            })
            .Case([&](tg::RepeatOp o) {
              const HostTensor &in = get(o.getInput());
              size_t dim = o.getDimAttr().getInt();
              cpu::repeat(in.values.data(), out.values.data(), product(in.shape, 0, dim),
                          in.shape[dim], product(in.shape, dim + 1, in.shape.size()),
                          o.getTimesAttr().getInt());
              return success();
            })
            .Case([&](tg::TransposeOp o) {
              const HostTensor &in = get(o.getInput());
              ArrayRef<int64_t> perm = o.getPermutation();
              cpu::transpose(in.values.data(), out.values.data(), in.shape,
                             std::vector<int64_t>(perm.begin(), perm.end()));
              return success();
            })
            .Case([&](tg::ReshapeOp o) {
              out.values = get(o.getInput()).values;
              return success();
            })
            .Case([&](tg::CrossEntropyOp o) -> LogicalResult {
              const HostTensor &logits = get(o.getLogits()), &labels = get(o.getLabels());
              const float *mask = o.getLossMask() ? get(o.getLossMask()).values.data() : nullptr;
              int64_t vocab = logits.shape.back(), bad = -1;
              double loss = cpu::crossEntropy(logits.values.data(), labels.ints.data(), mask,
                                              labels.numElements(), vocab, &bad);
              if (bad >= 0) {
                return o.emitError() << "label " << labels.ints[bad] << " at position " << bad
                                     << " is outside the vocabulary [0, " << vocab << ")";
              }
              out.values[0] = static_cast<float>(loss);
              return success();
            })
            .Case([&](tg::RepeatLayersOp o) -> LogicalResult {
              auto callee =
                  SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(o, o.getCalleeAttr());
              HostTensor hidden = get(o.getInput());
              for (int64_t layer = 0; layer < o.getCountAttr().getInt(); ++layer) {
                std::vector<HostTensor> layerArgs{std::move(hidden)};
                for (Attribute attr : o.getParams()) {
                  std::string name =
                      resolveLayerName(cast<FlatSymbolRefAttr>(attr).getValue(), layer);
                  auto it = params.find(name);
                  if (it == params.end()) {
                    return o.emitError() << "no value for parameter '" << name << "'";
                  }
                  layerArgs.push_back(it->second);
                }
                FailureOr<std::vector<HostTensor>> results = call(callee, std::move(layerArgs));
                if (failed(results)) {
                  return failure();
                }
                hidden = std::move((*results)[0]);
              }
              out = std::move(hidden);
              return success();
            })
            .Case([&](func::CallOp o) -> LogicalResult {
              auto callee =
                  SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(o, o.getCalleeAttr());
              std::vector<HostTensor> callArgs;
              for (Value operand : o.getOperands()) {
                callArgs.push_back(get(operand));
              }
              FailureOr<std::vector<HostTensor>> results = call(callee, std::move(callArgs));
              if (failed(results)) {
                return failure();
              }
              for (auto [value, tensor] : llvm::zip(o.getResults(), *results)) {
                env[value] = std::move(tensor);
              }
              return success();
            })
            .Case([&](tg::SplitOp o) {
              const HostTensor &in = get(o.getInput());
              size_t dim = o.getDimAttr().getInt();
              int64_t outer = product(in.shape, 0, dim);
              int64_t inner = product(in.shape, dim + 1, in.shape.size());
              int64_t offset = 0;
              for (auto [value, size] : llvm::zip(o.getResults(), o.getSizes())) {
                HostTensor piece = emptyLike(value.getType());
                cpu::copySlice(in.values.data(), piece.values.data(), outer, inner, in.shape[dim],
                               size, offset, 0, size);
                offset += size;
                env[value] = std::move(piece);
              }
              return success();
            })
            .Case([&](tg::ConcatOp o) {
              size_t dim = o.getDimAttr().getInt();
              int64_t outer = product(out.shape, 0, dim);
              int64_t inner = product(out.shape, dim + 1, out.shape.size());
              int64_t offset = 0;
              for (Value input : o.getInputs()) {
                const HostTensor &piece = get(input);
                cpu::copySlice(piece.values.data(), out.values.data(), outer, inner,
                               piece.shape[dim], out.shape[dim], 0, offset, piece.shape[dim]);
                offset += piece.shape[dim];
              }
              return success();
            })
            .Case([&](tg::FillOp o) {
              std::fill(out.values.begin(), out.values.end(),
                        static_cast<float>(o.getValue().convertToDouble()));
              return success();
            })
            .Case([&](tg::SiluGradOp o) {
              cpu::siluGrad(get(o.getInput()).values.data(), get(o.getGrad()).values.data(),
                            out.values.data(), out.numElements());
              return success();
            })
            .Case([&](tg::SoftmaxGradOp o) {
              size_t dim = o.getDimAttr().getInt();
              cpu::softmaxGrad(get(o.getOutput()).values.data(), get(o.getGrad()).values.data(),
                               out.values.data(), product(out.shape, 0, dim), out.shape[dim],
                               product(out.shape, dim + 1, out.shape.size()));
              return success();
            })
            .Case([&](tg::RepeatGradOp o) {
              size_t dim = o.getDimAttr().getInt();
              cpu::repeatGrad(get(o.getGrad()).values.data(), out.values.data(),
                              product(out.shape, 0, dim), out.shape[dim],
                              product(out.shape, dim + 1, out.shape.size()),
                              o.getTimesAttr().getInt());
              return success();
            })
            .Case([&](tg::EmbeddingGradOp o) {
              const HostTensor &ids = get(o.getIds());
              cpu::embeddingGrad(ids.ints.data(), get(o.getGrad()).values.data(), out.values.data(),
                                 ids.numElements(), out.shape[0], out.shape[1]);
              return success();
            })
            .Case([&](tg::CrossEntropyGradOp o) {
              const HostTensor &logits = get(o.getLogits());
              const float *mask = o.getLossMask() ? get(o.getLossMask()).values.data() : nullptr;
              cpu::crossEntropyGrad(logits.values.data(), get(o.getLabels()).ints.data(), mask,
                                    get(o.getGrad()).values[0], out.values.data(),
                                    get(o.getLabels()).numElements(), logits.shape.back());
              return success();
            })
            .Case([&](tg::RMSNormGradOp o) {
              HostTensor dx = emptyLike(o.getInputGrad().getType());
              HostTensor dw = emptyLike(o.getWeightGrad().getType());
              int64_t dim = dx.shape.back();
              cpu::rmsNormGrad(get(o.getInput()).values.data(), get(o.getWeight()).values.data(),
                               get(o.getGrad()).values.data(), dx.values.data(), dw.values.data(),
                               dx.numElements() / dim, dim, o.getEpsilon().convertToDouble());
              finish(dx);
              finish(dw);
              env[o.getInputGrad()] = std::move(dx);
              env[o.getWeightGrad()] = std::move(dw);
              return success();
            })
            .Case([&](tg::LRValueOp o) {
              rt::cpu::LRSchedule schedule{
                  o.getBaseLr().convertToDouble(), o.getEndLr().convertToDouble(),
                  o.getWarmupStepsAttr().getInt(), o.getMaxStepsAttr().getInt()};
              out.values[0] =
                  static_cast<float>(rt::cpu::learningRate(schedule, get(o.getStep()).ints[0]));
              return success();
            })
            .Case([&](tg::GlobalNormOp o) {
              double sum = 0.0;
              for (Value grad : o.getGrads()) {
                const HostTensor &g = get(grad);
                sum += rt::cpu::sumOfSquares(g.values.data(), g.numElements());
              }
              out.values[0] = static_cast<float>(std::sqrt(sum));
              return success();
            })
            .Case([&](tg::ClipCoefficientOp o) {
              out.values[0] = static_cast<float>(rt::cpu::clipCoefficient(
                  get(o.getNorm()).values[0], o.getMaxNorm().convertToDouble()));
              return success();
            })
            .Case([&](tg::AdamWOp o) {
              HostTensor master = get(o.getMaster()), m = get(o.getM()), v = get(o.getV());
              rt::cpu::AdamWHyper hyper{
                  o.getBeta1().convertToDouble(), o.getBeta2().convertToDouble(),
                  o.getEpsilon().convertToDouble(), o.getWeightDecay().convertToDouble()};
              rt::cpu::adamwUpdate(master.values.data(), m.values.data(), v.values.data(),
                                   get(o.getGrad()).values.data(), master.numElements(),
                                   get(o.getLr()).values[0], get(o.getClip()).values[0],
                                   get(o.getStep()).ints[0], hyper);
              env[o.getNewMaster()] = std::move(master);
              env[o.getNewM()] = std::move(m);
              env[o.getNewV()] = std::move(v);
              return success();
            })
            .Default([&](Operation *other) {
              return other->emitError()
                     << "the reference interpreter cannot execute '" << other->getName() << "'";
            });
    if (failed(result)) {
      return failure();
    }
    // Ops with several results (or none known in advance) store their results themselves.
    if (op.getNumResults() == 1 && !isa<func::CallOp, tg::SplitOp>(op)) {
      finish(out);
      env[op.getResult(0)] = std::move(out);
    }
  }
  return func.emitError() << "function has no return";
}

} // namespace mlperf
