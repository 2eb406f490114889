//===- TGInterpreter.cpp - Reference execution of tg IR --------*- C++ -*-===//

#include "compiler/Interpreter/TGInterpreter.h"
#include "compiler/Plan/PlanEmit.h"

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Plan/IR/ElementTypes.h"
#include "runtime/cpu/Numerics.h"
#include "runtime/cpu/OpKernels.h"
#include "runtime/plan/AttributeCodec.h"
#include "runtime/plan/PlanOps.h"

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
  const rt::DTypeInfo *info = planDTypeInfo(type);
  if (!info) {
    return failure();
  }
  return info->type;
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

/// Zero tensors of `op`'s result types, for a kernel to write.
std::vector<HostTensor> resultTensors(Operation &op) {
  std::vector<HostTensor> results;
  for (Value value : op.getResults()) {
    results.push_back(emptyLike(value.getType()));
  }
  return results;
}

/// An op's attributes as a plan command carries them: encoded as plan-emit writes them and
/// decoded as the backends read them (one codec).
FailureOr<rt::OpAttributes> kernelAttributes(Operation &op) {
  rt::OpAttributes attributes;
  for (NamedAttribute attr : op.getAttrs()) {
    plan::Attribute encoded;
    if (failed(encodeAttribute(&op, attr, &encoded))) {
      return failure();
    }
    rt::decodeAttribute(encoded, attributes);
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
    // kaiming_uniform: PyTorch's nn.Linear default, U(-b, b) with b = 1 / sqrt(fan_in).
    double bound = 1.0 / std::sqrt(static_cast<double>(param.getTensorType().getShape().back()));
    for (int64_t copy = 0; copy < param.getCopies(); ++copy) {
      std::string name =
          param.getRepeat() ? resolveLayerName(param.getSymName(), copy) : param.getSymName().str();
      HostTensor tensor = emptyLike(param.getType());
      uint32_t stream = rt::parameterStreamId(name);
      for (int64_t i = 0; i < tensor.numElements(); ++i) {
        double value = init == "ones"    ? 1.0
                       : init == "zeros" ? 0.0
                       : init == "kaiming_uniform"
                           ? bound * (2.0 * rt::philoxUniform(seed, stream, i) - 1.0)
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
    if (isa<dist::DistDialect>(op.getDialect()) || op.hasAttr("vocab_shard_axis")) {
      if (failed(runDistributed(op, env))) {
        return failure();
      }
      continue;
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
              HostTensor hidden = get(o.getInput());
              for (int64_t layer = 0; layer < o.getCountAttr().getInt(); ++layer) {
                auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                    o, FlatSymbolRefAttr::get(o.getContext(), o.getLayerCallee(layer)));
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
                if (!env.count(operand)) {
                  return other->emitError() << "operand without a value";
                }
                operands.push_back(&get(operand));
              }
              HostTensor defaultKey;
              if (isa<tg::DropoutOp>(other) && operands.size() == 1 && keylessDropoutKey) {
                defaultKey = HostTensor::zeros(rt::DType::kI64, {2});
                defaultKey.ints = {keylessDropoutKey->first, keylessDropoutKey->second};
                operands.push_back(&defaultKey);
              }
              std::vector<HostTensor> results = resultTensors(*other);
              FailureOr<rt::OpAttributes> attributes = kernelAttributes(*other);
              if (failed(attributes)) {
                return failure();
              }
              // A part of a split tensor (a dropout mask) or a dropout key's data-parallel
              // rank: this rank's index on the axis, as the CPU backend gives it.
              StringRef name = other->getName().stripDialect();
              if (const char *axisAttribute = rt::partAxisAttribute(name)) {
                if (auto axisName = other->getAttrOfType<StringAttr>(axisAttribute)) {
                  rt::MeshAxis axis = rt::MeshAxis::kDP;
                  if (!communicator || !rt::parseMeshAxis(axisName.getValue(), axis)) {
                    return other->emitError()
                           << "runs on mesh axis '" << axisName.getValue()
                           << "': the interpreter needs that rank's communicator";
                  }
                  attributes->set("part_index", communicator->coordinates().along(axis));
                }
              }
              rt::Status status = rt::runHostOp(name, *attributes, operands, results);
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

namespace {

/// The mesh axes an op names (`axes`, or the one `axis`).
FailureOr<std::vector<rt::MeshAxis>> opAxes(Operation &op) {
  std::vector<rt::MeshAxis> axes;
  std::vector<StringRef> names;
  if (auto list = op.getAttrOfType<ArrayAttr>("axes")) {
    for (Attribute axis : list) {
      names.push_back(cast<StringAttr>(axis).getValue());
    }
  } else if (auto axis = op.getAttrOfType<StringAttr>("axis")) {
    names.push_back(axis.getValue());
  } else if (auto axis = op.getAttrOfType<StringAttr>("vocab_shard_axis")) {
    names.push_back(axis.getValue());
  }
  for (StringRef name : names) {
    rt::MeshAxis axis;
    if (!rt::parseMeshAxis(name.str(), axis)) {
      return op.emitError() << "unknown mesh axis '" << name << "'";
    }
    axes.push_back(axis);
  }
  return axes;
}

/// The extents outside, along and inside dim `dim` of `shape`.
std::array<int64_t, 3> aroundDim(const std::vector<int64_t> &shape, int64_t dim) {
  std::array<int64_t, 3> extents{1, shape.empty() ? 1 : shape[dim], 1};
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim) {
      extents[0] *= shape[d];
    } else if (d > dim) {
      extents[2] *= shape[d];
    }
  }
  return extents;
}

} // namespace

LogicalResult TGInterpreter::runDistributed(Operation &op, llvm::DenseMap<Value, HostTensor> &env) {
  if (!communicator) {
    return op.emitError() << "a per-rank program of a multi-rank mesh: the interpreter needs "
                             "the ranks' communicator to run '"
                          << op.getName() << "'";
  }
  auto get = [&](Value value) -> const HostTensor & { return env.find(value)->second; };
  auto status = [&](rt::Status result) -> LogicalResult {
    if (!result.isOk()) {
      return op.emitError() << result.message();
    }
    return success();
  };
  FailureOr<std::vector<rt::MeshAxis>> axes = opAxes(op);
  if (failed(axes)) {
    return failure();
  }
  // A future holds the collective's result: the op's value type.
  auto resultOf = [&](Value value) {
    Type type = value.getType();
    if (auto future = dyn_cast<dist::FutureType>(type)) {
      type = future.getValueType();
    }
    return emptyLike(type);
  };
  auto store = [&](Value value, HostTensor tensor) {
    finish(tensor);
    env[value] = std::move(tensor);
  };
  // A sum (or, with reduction = "max", the maxima) over the axes, as the CPU backend's
  // all_reduce computes it: f32 through float, f64 through double.
  bool maximum = false;
  if (auto reduction = op.getAttrOfType<StringAttr>("reduction")) {
    maximum = reduction.getValue() == "max";
  }
  auto allReduce = [&](HostTensor tensor) -> FailureOr<HostTensor> {
    for (rt::MeshAxis axis : *axes) {
      rt::Status reduced = tensor.dtype == DType::kF64
                               ? communicator->allReduceSum(axis, tensor.wide)
                           : maximum ? communicator->allReduceMax(axis, tensor.values)
                                     : communicator->allReduceSum(axis, tensor.values);
      if (failed(status(reduced))) {
        return failure();
      }
    }
    return tensor;
  };
  int64_t dim = 0;
  if (auto attr = op.getAttrOfType<IntegerAttr>("dim")) {
    dim = attr.getInt();
  }
  // Concatenation along `dim` of every member's tensor, and its inverse sum.
  auto allGather = [&](const HostTensor &input, HostTensor out) -> FailureOr<HostTensor> {
    if (axes->size() != 1) {
      return op.emitError() << "an all-gather over one mesh axis only";
    }
    std::vector<float> gathered;
    if (failed(status(communicator->allGather(axes->front(), input.values, gathered)))) {
      return failure();
    }
    auto [outer, along, inner] = aroundDim(input.shape, dim);
    int64_t members = communicator->mesh().axisSize(axes->front());
    int64_t block = along * inner, part = outer * block;
    for (int64_t m = 0; m < members; ++m) {
      for (int64_t o = 0; o < outer; ++o) {
        std::copy_n(gathered.begin() + m * part + o * block, block,
                    out.values.begin() + (o * members + m) * block);
      }
    }
    return out;
  };
  auto reduceScatter = [&](const HostTensor &input, HostTensor out) -> FailureOr<HostTensor> {
    if (axes->size() != 1) {
      return op.emitError() << "a reduce-scatter over one mesh axis only";
    }
    auto [outer, along, inner] = aroundDim(out.shape, dim);
    int64_t members = communicator->mesh().axisSize(axes->front());
    int64_t block = along * inner;
    // Each member's slice along `dim`, contiguous in member order.
    std::vector<float> ordered(input.values.size());
    for (int64_t m = 0; m < members; ++m) {
      for (int64_t o = 0; o < outer; ++o) {
        std::copy_n(input.values.begin() + (o * members + m) * block, block,
                    ordered.begin() + (m * outer + o) * block);
      }
    }
    if (failed(status(communicator->reduceScatterSum(axes->front(), ordered, out.values)))) {
      return failure();
    }
    return out;
  };

  // A collective's result (its future's value), or its failure.
  auto storeCollective = [&](Operation *o, FailureOr<HostTensor> result) -> LogicalResult {
    if (failed(result)) {
      return failure();
    }
    store(o->getResult(0), std::move(*result));
    return success();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case([&](dist::CopyToRegionOp o) {
        HostTensor value = get(o.getInput()); // a copy: inserting may move the map's values
        env[o.getResult()] = std::move(value);
        return success();
      })
      .Case<dist::ReduceFromRegionOp, dist::AllReduceStartOp>(
          [&](Operation *o) { return storeCollective(o, allReduce(get(o->getOperand(0)))); })
      .Case<dist::AllGatherRegionOp, dist::AllGatherStartOp>([&](Operation *o) {
        return storeCollective(o, allGather(get(o->getOperand(0)), resultOf(o->getResult(0))));
      })
      .Case<dist::ReduceScatterRegionOp, dist::ReduceScatterStartOp>([&](Operation *o) {
        return storeCollective(o, reduceScatter(get(o->getOperand(0)), resultOf(o->getResult(0))));
      })
      .Case([&](dist::LocalShardOp o) {
        HostTensor out = resultOf(o.getResult());
        const HostTensor &input = get(o.getInput());
        int64_t index = communicator->coordinates().along(axes->front());
        int64_t count = out.numElements();
        std::copy_n(input.values.begin() + index * count, count, out.values.begin());
        store(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](dist::SendStartOp o) {
        env[o.getFuture()] = HostTensor();
        return status(communicator->send(axes->front(), o.getShift(), static_cast<int>(o.getTag()),
                                         get(o.getInput()).values));
      })
      .Case([&](dist::RecvStartOp o) {
        HostTensor out = resultOf(o.getFuture());
        if (failed(status(communicator->receive(axes->front(), o.getShift(),
                                                static_cast<int>(o.getTag()), out.values)))) {
          return failure();
        }
        store(o.getFuture(), std::move(out));
        return success();
      })
      .Case([&](dist::DoneOp o) {
        if (o.getResult()) {
          HostTensor value = get(o.getFuture());
          env[o.getResult()] = std::move(value);
        }
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        if (!other->hasAttr("vocab_shard_axis")) {
          return other->emitError() << "the interpreter has no rule for this dist op";
        }
        // An op on this rank's slice of a vocabulary split over a mesh axis.
        std::vector<const HostTensor *> operands;
        for (Value operand : other->getOperands()) {
          operands.push_back(&get(operand));
        }
        std::vector<HostTensor> results = resultTensors(*other);
        FailureOr<rt::OpAttributes> attributes = kernelAttributes(*other);
        if (failed(attributes)) {
          return failure();
        }
        rt::MeshAxis axis = axes->front();
        std::string name = other->getName().stripDialect().str();
        attributes->set("shard_index", communicator->coordinates().along(axis));
        attributes->set("shard_count", communicator->mesh().axisSize(axis));
        rt::Status result = isa<tg::CrossEntropyOp, tg::CrossEntropyGradOp,
                                tg::LinearCrossEntropyOp, tg::LinearCrossEntropyGradOp>(other)
                                ? runSplitLoss(name, axis, *attributes, operands, results)
                                : rt::runHostOp(name, *attributes, operands, results);
        if (!result.isOk()) {
          return other->emitError() << result.message();
        }
        for (auto [value, tensor] : llvm::zip(other->getResults(), results)) {
          store(value, std::move(tensor));
        }
        return success();
      });
}

rt::Status TGInterpreter::runSplitLoss(const std::string &op, rt::MeshAxis axis,
                                       const rt::OpAttributes &attributes,
                                       const std::vector<const HostTensor *> &operands,
                                       std::vector<HostTensor> &results) {
  // A whole loss on this rank's slice of the vocabulary (the IR between dist-tensor-parallel
  // and dist-lower-vocab-loss): the pieces and collectives that pass puts in its place.
  const bool linear = op.rfind("linear_", 0) == 0;
  const bool gradient = op.size() > 5 && op.compare(op.size() - 5, 5, "_grad") == 0;
  const size_t inputs = linear ? 2 : 1; // the logits, or the hidden states and the weight
  const HostTensor &labels = *operands[inputs];
  std::vector<const HostTensor *> logits(operands.begin(), operands.begin() + inputs);
  std::vector<HostTensor> maxima{HostTensor::zeros(DType::kF32, labels.shape)};
  std::vector<int64_t> statsShape{2};
  statsShape.insert(statsShape.end(), labels.shape.begin(), labels.shape.end());
  std::vector<HostTensor> stats{HostTensor::zeros(DType::kF64, statsShape)};
  std::string prefix = linear ? "linear_" : "";
  MLPERF_RETURN_IF_ERROR(rt::runHostOp(prefix + "vocab_max", attributes, logits, maxima));
  MLPERF_RETURN_IF_ERROR(communicator->allReduceMax(axis, maxima[0].values));
  std::vector<const HostTensor *> statsOperands = logits;
  statsOperands.push_back(&labels);
  statsOperands.push_back(&maxima[0]);
  MLPERF_RETURN_IF_ERROR(rt::runHostOp(prefix + "vocab_stats", attributes, statsOperands, stats));
  MLPERF_RETURN_IF_ERROR(communicator->allReduceSum(axis, stats[0].wide));
  // The mask, if any, is the operand after the labels (and the gradient's seed).
  const size_t maskAt = inputs + (gradient ? 2 : 1);
  const HostTensor *mask = operands.size() > maskAt ? operands[maskAt] : nullptr;
  std::vector<const HostTensor *> pieces;
  if (gradient) {
    pieces = logits;
    pieces.insert(pieces.end(), {&labels, operands[inputs + 1], &maxima[0], &stats[0]});
  } else {
    pieces = {&maxima[0], &stats[0], &labels};
  }
  if (mask) {
    pieces.push_back(mask);
  }
  return rt::runHostOp(gradient ? prefix + "vocab_cross_entropy_grad" : "vocab_loss", attributes,
                       pieces, results);
}

FailureOr<ParamValues> rankParameters(tg::ModelOp model, const ParamValues &full,
                                      const rt::RankCoordinates &coordinates) {
  ParamValues values;
  for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
    std::string name = param.getSymName().str();
    auto it = full.find(name);
    if (it == full.end()) {
      return param.emitError() << "no full value for parameter '" << name << "'";
    }
    FailureOr<dist::ParameterSplit> split = dist::parameterSplit(param, "interpreter");
    if (failed(split)) {
      return failure();
    }
    HostTensor slice = it->second;
    if (split->axis) {
      rt::MeshAxis axis;
      if (!rt::parseMeshAxis(split->axis.getValue().str(), axis)) {
        return param.emitError() << "unknown mesh axis '" << split->axis.getValue() << "'";
      }
      slice = emptyLike(param.getUnshardedType());
      std::vector<int64_t> blocks;
      if (split->blocks) {
        blocks.assign(split->blocks.asArrayRef().begin(), split->blocks.asArrayRef().end());
      }
      for (int64_t i = 0; i < slice.numElements(); ++i) {
        slice.values[i] = it->second.values[rt::fullIndexOfPart(
            slice.shape, split->dim, split->count, coordinates.along(axis), i, blocks)];
      }
    }
    // ZeRO-3: this rank's 1-D shard of its (local) parameter.
    if (auto shardAxis = param->getAttrOfType<StringAttr>(dist::kZeroShardAttr)) {
      rt::MeshAxis axis;
      if (!rt::parseMeshAxis(shardAxis.getValue().str(), axis)) {
        return param.emitError() << "unknown mesh axis '" << shardAxis.getValue() << "'";
      }
      HostTensor shard = emptyLike(param.getType());
      int64_t first = coordinates.along(axis) * shard.numElements();
      std::copy_n(slice.values.begin() + first, shard.numElements(), shard.values.begin());
      slice = std::move(shard);
    }
    values[name] = std::move(slice);
  }
  return values;
}

} // namespace mlperf
