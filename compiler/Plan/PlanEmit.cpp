//===- PlanEmit.cpp - Train step to execution plan -------------*- C++ -*-===//

#include "compiler/Plan/PlanEmit.h"

#include "compiler/Analysis/MemoryPlan.h"
#include "runtime/plan/PlanLoader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace mlperf {
namespace {

constexpr int64_t kAlignment = 256;

int64_t alignUp(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

FailureOr<plan::DType> planDType(Type type) {
  if (type.isF32()) {
    return plan::F32;
  }
  if (type.isBF16()) {
    return plan::BF16;
  }
  if (isa<Float8E4M3FNType>(type)) {
    return plan::F8E4M3FN;
  }
  if (isa<Float8E5M2Type>(type)) {
    return plan::F8E5M2;
  }
  if (type.isInteger(32)) {
    return plan::I32;
  }
  if (type.isInteger(64)) {
    return plan::I64;
  }
  return failure();
}

class Emitter {
public:
  explicit Emitter(tg::ModelOp model) : model(model) {}

  /// A buffer of `type`; persistent ones get the next slot of their arena.
  FailureOr<uint32_t> addBuffer(const std::string &name, Type type, plan::MemoryClass cls,
                                int64_t offset = -1) {
    auto tensor = cast<RankedTensorType>(type);
    FailureOr<plan::DType> dtype = planDType(tensor.getElementType());
    if (failed(dtype)) {
      return model.emitError() << "plan-emit: no plan type for " << type;
    }
    plan::Buffer *buffer = result.add_buffers();
    uint32_t id = static_cast<uint32_t>(result.buffers_size() - 1);
    buffer->set_id(id);
    buffer->set_name(name);
    buffer->set_dtype(*dtype);
    for (int64_t dim : tensor.getShape()) {
      buffer->add_shape(dim);
    }
    buffer->set_memory_class(cls);
    int64_t bytes = tensor.getNumElements() * rt::planDTypeBytes(*dtype);
    buffer->set_size(bytes);
    if (cls == plan::PERSISTENT) {
      buffer->set_offset(persistentBytes);
      persistentBytes += alignUp(bytes);
    } else {
      buffer->set_offset(offset);
    }
    return id;
  }

  LogicalResult emitProgram(func::FuncOp func, ArrayRef<uint32_t> inputs,
                            ArrayRef<uint32_t> outputs) {
    plan::Program *program = result.add_programs();
    program->set_name(func.getSymName().str());
    llvm::DenseMap<Value, uint32_t> bufferOf;
    Block &body = func.getBody().front();
    for (auto [arg, id] : llvm::zip(body.getArguments(), inputs)) {
      bufferOf[arg] = id;
      program->add_inputs(id);
    }
    // Returned values are written straight into the program's output buffers.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    llvm::DenseMap<Value, uint32_t> outputOf;
    for (auto [value, id] : llvm::zip(ret.getOperands(), outputs)) {
      outputOf.try_emplace(value, id);
      program->add_outputs(id);
    }
    MemoryPlan memory = planFunctionMemory(func, kAlignment);
    activationBytes = std::max(activationBytes, memory.arenaBytes);
    activationLowerBound = std::max(activationLowerBound, memory.lowerBoundBytes);
    llvm::DenseMap<Value, int64_t> offsetOf;
    for (const PlannedBuffer &planned : memory.buffers) {
      offsetOf[planned.value] = planned.offset;
    }

    for (Operation &op : body.without_terminator()) {
      if (auto ref = dyn_cast<tg::ParamRefOp>(op)) {
        bufferOf[ref.getResult()] = parameterValue.lookup(ref.getName());
        continue;
      }
      plan::Command *command = program->add_commands();
      command->set_op(op.getName().stripDialect().str());
      for (Value operand : op.getOperands()) {
        command->add_operands(bufferOf.lookup(operand));
      }
      for (Value value : op.getResults()) {
        uint32_t id;
        if (auto it = outputOf.find(value); it != outputOf.end()) {
          id = it->second;
        } else if (isa<tg::ReshapeOp>(op) && !offsetOf.count(value)) {
          // A view of its input's buffer (planned, or an output): same bytes, its own shape.
          const plan::Buffer &source = result.buffers(bufferOf.lookup(op.getOperand(0)));
          plan::MemoryClass cls = source.memory_class();
          int64_t offset = source.offset();
          FailureOr<uint32_t> view =
              addBuffer(func.getSymName().str() + ".view", value.getType(), cls, 0);
          if (failed(view)) {
            return failure();
          }
          result.mutable_buffers(*view)->set_offset(offset);
          if (cls == plan::PERSISTENT) {
            persistentBytes -= alignUp(result.buffers(*view).size()); // no new slot
          }
          offsetOf[value] = offset;
          id = *view;
        } else {
          auto it = offsetOf.find(value);
          int64_t offset = it != offsetOf.end() ? it->second : -1;
          if (offset < 0) {
            return op.emitError() << "plan-emit: no buffer was planned for this result";
          }
          FailureOr<uint32_t> buffer =
              addBuffer(func.getSymName().str() + "." + op.getName().stripDialect().str(),
                        value.getType(), plan::ACTIVATIONS, offset);
          if (failed(buffer)) {
            return failure();
          }
          id = *buffer;
        }
        bufferOf[value] = id;
        command->add_results(id);
      }
      for (NamedAttribute attr : op.getAttrs()) {
        if (failed(addAttribute(op, *command, attr))) {
          return failure();
        }
      }
    }
    // A returned value produced elsewhere (an argument, a parameter, a value returned twice)
    // is copied into its output buffer.
    for (auto [value, id] : llvm::zip(ret.getOperands(), outputs)) {
      uint32_t source = bufferOf.lookup(value);
      if (source != id) {
        plan::Command *copy = program->add_commands();
        copy->set_op("copy");
        copy->add_operands(source);
        copy->add_results(id);
      }
    }
    return success();
  }

  LogicalResult addAttribute(Operation &op, plan::Command &command, NamedAttribute attr) {
    plan::Attribute *out = command.add_attributes();
    out->set_name(attr.getName().str());
    Attribute value = attr.getValue();
    if (auto f = dyn_cast<FloatAttr>(value)) {
      out->set_f(f.getValueAsDouble());
    } else if (auto i = dyn_cast<IntegerAttr>(value)) {
      out->set_i(i.getInt());
    } else if (isa<UnitAttr>(value)) {
      out->set_i(1);
    } else if (auto s = dyn_cast<StringAttr>(value)) {
      out->set_s(s.str());
    } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(value)) {
      for (int64_t v : ints.asArrayRef()) {
        out->mutable_ints()->add_values(v);
      }
    } else {
      return op.emitError() << "plan-emit: attribute '" << attr.getName()
                            << "' has no plan encoding";
    }
    return success();
  }

  FailureOr<plan::Plan> run(StringRef precision, int64_t accumulation);

private:
  tg::ModelOp model;
  plan::Plan result;
  int64_t persistentBytes = 0, activationBytes = 0, activationLowerBound = 0;
  llvm::StringMap<uint32_t> parameterValue;
};

FailureOr<plan::Plan> Emitter::run(StringRef precision, int64_t accumulation) {
  Block &body = model.getBody().front();
  auto forward = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward"));
  auto forwardBackward =
      dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward_backward"));
  auto optimizerStep =
      dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "optimizer_step"));
  if (!forward || !forwardBackward || !optimizerStep) {
    return model.emitError() << "plan-emit needs @forward, @forward_backward and "
                                "@optimizer_step: run the train-step pipeline first";
  }
  result.set_format_version(rt::kPlanFormatVersion);
  result.set_producer("mlperfc " MLPERFC_VERSION_STRING);
  plan::ModelInfo *info = result.mutable_model();
  info->set_name(model.getSymName().str());
  info->set_precision(precision.str());
  info->set_gradient_accumulation_steps(accumulation);
  for (auto benchmark : body.getOps<tg::BenchmarkOp>()) {
    info->set_benchmark(benchmark.getName().str());
    info->set_eval_every_samples(benchmark.getEvalEverySamplesAttr().getInt());
    info->set_eval_samples(benchmark.getEvalSamplesAttr().getInt());
    info->set_target_metric(benchmark.getTargetMetric().str());
    info->set_target_value(benchmark.getTargetValue().convertToDouble());
  }
  for (auto batch : body.getOps<tg::BatchOp>()) {
    info->set_global_batch_size(batch.getGlobalBatchSizeAttr().getInt());
    info->set_micro_batch_size(batch.getMicroBatchSizeAttr().getInt());
    info->set_seq_len(batch.getSeqLenAttr().getInt());
  }
  for (auto optimizer : body.getOps<tg::OptimizerOp>()) {
    info->set_optimizer(optimizer.getName().str());
    info->set_beta1(optimizer.getBeta1().convertToDouble());
    info->set_beta2(optimizer.getBeta2().convertToDouble());
    info->set_epsilon(optimizer.getEpsilon().convertToDouble());
    info->set_weight_decay(optimizer.getWeightDecay().convertToDouble());
    info->set_clip_grad_norm(optimizer.getClipGradNorm().convertToDouble());
  }
  for (auto schedule : body.getOps<tg::LRScheduleOp>()) {
    info->set_lr_schedule(schedule.getKind().str());
    info->set_base_lr(schedule.getBaseLr().convertToDouble());
    info->set_end_lr(schedule.getEndLr().convertToDouble());
    info->set_warmup_steps(schedule.getWarmupStepsAttr().getInt());
    info->set_decay_steps(schedule.getDecayStepsAttr().getInt());
    info->set_max_steps(schedule.getMaxStepsAttr().getInt());
  }

  // Persistent memory: per parameter its value, gradient and optimizer state.
  Builder builder(model.getContext());
  SmallVector<uint32_t> values, grads, masters, moments, squares;
  for (auto param : body.getOps<tg::ParamOp>()) {
    std::string name = param.getSymName().str();
    auto f32 = RankedTensorType::get(param.getTensorType().getShape(), builder.getF32Type());
    FailureOr<uint32_t> value = addBuffer(name, param.getType(), plan::PERSISTENT);
    FailureOr<uint32_t> grad = addBuffer("grad." + name, param.getType(), plan::PERSISTENT);
    FailureOr<uint32_t> master = addBuffer("optimizer.master." + name, f32, plan::PERSISTENT);
    FailureOr<uint32_t> m = addBuffer("optimizer.exp_avg." + name, f32, plan::PERSISTENT);
    FailureOr<uint32_t> v = addBuffer("optimizer.exp_avg_sq." + name, f32, plan::PERSISTENT);
    if (failed(value) || failed(grad) || failed(master) || failed(m) || failed(v)) {
      return failure();
    }
    parameterValue[name] = *value;
    values.push_back(*value);
    grads.push_back(*grad);
    masters.push_back(*master);
    moments.push_back(*m);
    squares.push_back(*v);
    plan::Parameter *entry = result.add_parameters();
    entry->set_name(name);
    entry->set_value(*value);
    entry->set_grad(*grad);
    entry->set_master(*master);
    entry->set_exp_avg(*m);
    entry->set_exp_avg_sq(*v);
    entry->set_init(param.getInit().str());
    entry->set_std(param.getStd() ? param.getStd()->convertToDouble() : 0.0);
  }
  FunctionType fbType = forwardBackward.getFunctionType();
  FailureOr<uint32_t> tokens = addBuffer("input.tokens", fbType.getInput(0), plan::PERSISTENT);
  FailureOr<uint32_t> labels = addBuffer("input.labels", fbType.getInput(1), plan::PERSISTENT);
  auto scalarF32 = RankedTensorType::get({}, builder.getF32Type());
  FailureOr<uint32_t> loss = addBuffer("loss", scalarF32, plan::PERSISTENT);
  FailureOr<uint32_t> step =
      addBuffer("step", RankedTensorType::get({}, builder.getI64Type()), plan::PERSISTENT);
  FailureOr<uint32_t> lr = addBuffer("lr", scalarF32, plan::PERSISTENT);
  FailureOr<uint32_t> norm = addBuffer("grad_norm", scalarF32, plan::PERSISTENT);
  if (failed(tokens) || failed(labels) || failed(loss) || failed(step) || failed(lr) ||
      failed(norm)) {
    return failure();
  }

  SmallVector<uint32_t> fbOutputs{*loss};
  fbOutputs.append(grads);
  SmallVector<uint32_t> optInputs{*step};
  for (ArrayRef<uint32_t> group : {ArrayRef<uint32_t>(grads), ArrayRef<uint32_t>(masters),
                                   ArrayRef<uint32_t>(moments), ArrayRef<uint32_t>(squares)}) {
    optInputs.append(group.begin(), group.end());
  }
  SmallVector<uint32_t> optOutputs(values);
  for (ArrayRef<uint32_t> group :
       {ArrayRef<uint32_t>(masters), ArrayRef<uint32_t>(moments), ArrayRef<uint32_t>(squares)}) {
    optOutputs.append(group.begin(), group.end());
  }
  optOutputs.append({*lr, *norm});
  if (failed(emitProgram(forward, {*tokens, *labels}, {*loss})) ||
      failed(emitProgram(forwardBackward, {*tokens, *labels}, fbOutputs)) ||
      failed(emitProgram(optimizerStep, optInputs, optOutputs))) {
    return failure();
  }
  plan::Arena *persistent = result.add_arenas();
  persistent->set_memory_class(plan::PERSISTENT);
  persistent->set_size(persistentBytes);
  plan::Arena *activations = result.add_arenas();
  activations->set_memory_class(plan::ACTIVATIONS);
  activations->set_size(activationBytes);
  activations->set_lower_bound(activationLowerBound);
  return result;
}

} // namespace

FailureOr<plan::Plan> emitPlan(tg::ModelOp model, StringRef precision, int64_t accumulationSteps) {
  Emitter emitter(model);
  FailureOr<plan::Plan> result = emitter.run(precision, accumulationSteps);
  if (failed(result)) {
    return failure();
  }
  rt::Status status = rt::validatePlan(*result);
  if (!status.isOk()) {
    return model.emitError() << "plan-emit produced an invalid plan (a compiler bug): "
                             << status.message();
  }
  return result;
}

} // namespace mlperf
