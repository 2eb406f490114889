//===- TGInterpreter.cpp - Reference execution of tg IR --------*- C++ -*-===//

#include "compiler/Interpreter/TGInterpreter.h"

#include "runtime/cpu/Numerics.h"
#include "runtime/cpu/OpKernels.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using mlperf::rt::DType;
using mlperf::rt::HostTensor;

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

/// An op's attributes in the runtime's form (the same encoding plan-emit writes).
FailureOr<rt::OpAttributes> kernelAttributes(Operation &op) {
  rt::OpAttributes attributes;
  for (NamedAttribute attr : op.getAttrs()) {
    Attribute value = attr.getValue();
    std::string name = attr.getName().str();
    if (auto f = dyn_cast<FloatAttr>(value)) {
      attributes.set(name, f.getValueAsDouble());
    } else if (auto i = dyn_cast<IntegerAttr>(value)) {
      attributes.set(name, i.getInt());
    } else if (isa<UnitAttr>(value)) {
      attributes.set(name, int64_t{1});
    } else if (auto s = dyn_cast<StringAttr>(value)) {
      attributes.set(name, s.str());
    } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(value)) {
      attributes.set(name,
                     std::vector<int64_t>(ints.asArrayRef().begin(), ints.asArrayRef().end()));
    } else {
      return op.emitError() << "attribute '" << attr.getName() << "' has no kernel encoding";
    }
  }
  return attributes;
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

FailureOr<ParamValues> initializeParameters(tg::ModelOp model, uint64_t seed,
                                            std::optional<double> checkpointStd) {
  ParamValues values;
  for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
    StringRef init = param.getInit();
    if (init == "checkpoint" && !checkpointStd) {
      return param.emitError() << "parameter @\"" << param.getSymName()
                               << "\" is initialized from a checkpoint: load it (--params / "
                                  "--init-from) instead of drawing it";
    }
    double stddev = init == "checkpoint" ? *checkpointStd
                    : param.getStd()     ? param.getStd()->convertToDouble()
                                         : 0.0;
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
            .Default([&](Operation *other) -> LogicalResult {
              // Every other op is a kernel: the one dispatch shared with the CPU backend.
              std::vector<const HostTensor *> operands;
              for (Value operand : other->getOperands()) {
                operands.push_back(&get(operand));
              }
              std::vector<HostTensor> results;
              for (Value value : other->getResults()) {
                results.push_back(emptyLike(value.getType()));
              }
              FailureOr<rt::OpAttributes> attributes = kernelAttributes(*other);
              if (failed(attributes)) {
                return failure();
              }
              rt::Status status =
                  rt::runHostOp(other->getName().stripDialect(), *attributes, operands, results);
              if (!status.isOk()) {
                return other->emitError() << status.message();
              }
              for (auto [value, tensor] : llvm::zip(other->getResults(), results)) {
                env[value] = std::move(tensor);
              }
              return success();
            });
    if (failed(result)) {
      return failure();
    }
    // Kernels and calls store their results themselves.
    if (isa<tg::ParamRefOp, tg::RepeatLayersOp>(op)) {
      finish(out);
      env[op.getResult(0)] = std::move(out);
    }
  }
  return func.emitError() << "function has no return";
}

} // namespace mlperf
