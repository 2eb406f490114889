//===- PlanTrainer.cpp - Train steps from an execution plan ----*- C++ -*-===//

#include "runtime/exec/PlanTrainer.h"

#include "runtime/cpu/Numerics.h"
#include "runtime/dist/PipelineSchedule.h"

#include <algorithm>
#include <cmath>

namespace mlperf::rt {
namespace {

Status invalid(const std::string &message) { return Status(StatusCode::kInvalidArgument, message); }

std::vector<int64_t> shapeOf(const plan::Buffer &buffer) {
  return {buffer.shape().begin(), buffer.shape().end()};
}

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    count *= d;
  }
  return count;
}

} // namespace

Status PlanTrainer::create(const plan::Plan &plan, Backend &backend, Communicator &communicator,
                           std::unique_ptr<PlanTrainer> &trainer) {
  trainer.reset(new PlanTrainer(plan, backend, communicator));
  PlanTrainer &t = *trainer;
  for (int i = 0; i < plan.programs_size(); ++i) {
    const std::string &name = plan.programs(i).name();
    if (name == "forward") {
      t.forwardProgram = i;
    } else if (name == "forward_backward") {
      t.forwardBackwardProgram = i;
    } else if (name == "optimizer_step") {
      t.optimizerProgram = i;
    }
  }
  if (t.forwardProgram < 0 || t.forwardBackwardProgram < 0 || t.optimizerProgram < 0) {
    return invalid("the plan lacks one of the programs forward, forward_backward and "
                   "optimizer_step: it is not a train-step plan");
  }
  const plan::Program &forward = plan.programs(t.forwardProgram);
  const plan::Program &fb = plan.programs(t.forwardBackwardProgram);
  const plan::Program &opt = plan.programs(t.optimizerProgram);
  size_t parameters = plan.parameters_size();
  MeshShape mesh = communicator.mesh();
  t.stages = mesh.pp;
  t.stage = plan.pipeline_stage();
  if (t.stage != communicator.coordinates().pp) {
    return invalid("the plan is for pipeline stage " + std::to_string(t.stage) + " but rank " +
                   std::to_string(communicator.rank()) + " runs stage " +
                   std::to_string(communicator.coordinates().pp));
  }
  // Inputs: the tokens (first stage) or the previous stage's activation, the labels (last
  // stage), and in forward_backward the next stage's gradient (all but the last stage).
  // Outputs: the loss (last stage) or the activation, the gradients, and the input
  // activation's gradient (all but the first stage).
  bool first = t.stage == 0, last = t.stage == t.stages - 1;
  int forwardInputs = last ? 2 : 1;
  int fbInputs = forwardInputs + (last ? 0 : 1);
  int fbOutputs = static_cast<int>(1 + parameters) + (first ? 0 : 1);
  if (forward.inputs_size() != forwardInputs || fb.inputs_size() != fbInputs ||
      fb.outputs_size() != fbOutputs ||
      opt.inputs_size() != static_cast<int>(1 + 4 * parameters) ||
      opt.outputs_size() != static_cast<int>(4 * parameters + 2)) {
    return invalid("the train-step programs do not have the inputs and outputs of "
                   "plan format version " + std::to_string(plan.format_version()) +
                   (t.stages > 1 ? " for pipeline stage " + std::to_string(t.stage) : ""));
  }
  (first ? t.tokensBuffer : t.activationBuffer) = fb.inputs(0);
  if (last) {
    t.labelsBuffer = fb.inputs(1);
  } else {
    t.cotangentBuffer = fb.inputs(fbInputs - 1);
  }
  if (!first) {
    t.inputGradBuffer = fb.outputs(fbOutputs - 1);
  }
  t.lossBuffer = fb.outputs(0); // the loss, or this stage's output activation
  t.stepBuffer = opt.inputs(0);
  t.lrBuffer = opt.outputs(4 * parameters);
  t.normBuffer = opt.outputs(4 * parameters + 1);
  t.microRows = plan.model().micro_batch_size();
  t.seq = plan.model().seq_len();
  std::vector<int64_t> batchShape{t.microRows, t.seq};
  for (uint32_t id : {t.tokensBuffer, t.labelsBuffer}) {
    if (id != kNoBuffer && (shapeOf(plan.buffers(id)) != batchShape ||
                            isFloat(fromPlanDType(plan.buffers(id).dtype())))) {
      return invalid("the plan's tokens and labels are not integer [micro_batch, seq] = [" +
                     std::to_string(t.microRows) + ", " + std::to_string(t.seq) + "]");
    }
  }
  // An activation between stages: [micro_batch, seq (or its sp slice), hidden] floats.
  if (!first && (plan.buffers(t.activationBuffer).shape_size() != 3 ||
                 plan.buffers(t.activationBuffer).shape(0) != t.microRows ||
                 !isFloat(fromPlanDType(plan.buffers(t.activationBuffer).dtype())))) {
    return invalid("the plan's input activation is not [micro_batch, seq, hidden]");
  }
  if (!last && shapeOf(plan.buffers(t.cotangentBuffer)) != shapeOf(plan.buffers(t.lossBuffer))) {
    return invalid("the plan's activation gradient input does not match its output");
  }
  t.accumulation = plan.model().gradient_accumulation_steps();
  const plan::ModelInfo &model = plan.model();
  t.dataParallel = communicator.mesh().dp;
  if (t.accumulation < 1 ||
      model.global_batch_size() != t.accumulation * t.microRows * t.dataParallel ||
      model.eval_samples() < 0 || model.eval_every_samples() < 0) {
    return invalid("the plan's batch (global " + std::to_string(model.global_batch_size()) + ", " +
                   std::to_string(t.accumulation) + " micro-batches of " +
                   std::to_string(t.microRows) + " rows on each of " +
                   std::to_string(t.dataParallel) +
                   " data-parallel ranks) or eval counts are inconsistent");
  }
  // Parameter state: a float value and gradient, f32 master and moments, all of one shape.
  for (const plan::Parameter &parameter : plan.parameters()) {
    const plan::Buffer &value = plan.buffers(parameter.value());
    bool valid = isFloat(fromPlanDType(value.dtype())) &&
                 isFloat(fromPlanDType(plan.buffers(parameter.grad()).dtype()));
    valid = valid && shapeOf(plan.buffers(parameter.grad())) == shapeOf(value);
    // Whole state has the parameter's shape; a ZeRO-1 shard is 1-D (the loader checked its size).
    std::vector<int64_t> stateShape = shapeOf(value);
    if (parameter.shard_count() > 1) {
      stateShape = {elementCount(stateShape) / parameter.shard_count()};
    }
    for (uint32_t id : {parameter.master(), parameter.exp_avg(), parameter.exp_avg_sq()}) {
      valid = valid && shapeOf(plan.buffers(id)) == stateShape;
    }
    for (uint32_t id : {parameter.master(), parameter.exp_avg(), parameter.exp_avg_sq()}) {
      valid = valid && plan.buffers(id).dtype() == plan::F32;
    }
    if (!valid) {
      return invalid("parameter '" + parameter.name() +
                     "' does not have a float value and gradient and f32 optimizer state of "
                     "one shape");
    }
  }
  for (uint32_t id : last ? std::vector<uint32_t>{t.lossBuffer, t.lrBuffer, t.normBuffer}
                          : std::vector<uint32_t>{t.lrBuffer, t.normBuffer}) {
    if (plan.buffers(id).shape_size() != 0 || plan.buffers(id).dtype() != plan::F32) {
      return invalid("buffer '" + plan.buffers(id).name() + "' should be an f32 scalar");
    }
  }
  if (plan.buffers(t.stepBuffer).shape_size() != 0 ||
      plan.buffers(t.stepBuffer).dtype() != plan::I64) {
    return invalid("the step buffer should be an i64 scalar");
  }
  return Status::ok();
}

Status PlanTrainer::initialize(uint64_t seed) {
  for (const plan::Parameter &parameter : plan.parameters()) {
    const plan::Buffer &buffer = plan.buffers(parameter.value());
    const std::string &init = parameter.init();
    if (init == "checkpoint") {
      return invalid("parameter '" + parameter.name() +
                     "' is initialized from a checkpoint: give --init-from W.safetensors");
    }
    if (init != "normal" && init != "ones" && init != "zeros") {
      return invalid("parameter '" + parameter.name() + "' has unknown init '" + init + "'");
    }
    HostTensor value = HostTensor::zeros(fromPlanDType(buffer.dtype()), shapeOf(buffer));
    uint32_t stream = parameterStreamId(parameter.name());
    for (int64_t i = 0; i < value.numElements(); ++i) {
      // Element i of this rank's slice is drawn as its element of the full parameter, so
      // every parallel layout trains the same model.
      double drawn =
          init == "ones"    ? 1.0
          : init == "zeros" ? 0.0
                            : parameter.std() * philoxNormal(seed, stream, fullIndex(parameter, value.shape, i));
      value.values[i] = static_cast<float>(roundTo(value.dtype, drawn));
    }
    HostTensor master = stateOf(parameter, value),
               zeros = HostTensor::zeros(DType::kF32, master.shape);
    for (auto [id, tensor] : {std::pair{parameter.value(), &value},
                              {parameter.master(), &master},
                              {parameter.exp_avg(), &zeros},
                              {parameter.exp_avg_sq(), &zeros}}) {
      Status status = backend.write(id, *tensor);
      if (!status.isOk()) {
        return status;
      }
    }
  }
  steps = 0;
  return Status::ok();
}

Status PlanTrainer::load(const TensorFile &file, bool withOptimizerState) {
  for (const plan::Parameter &parameter : plan.parameters()) {
    std::vector<std::pair<std::string, uint32_t>> entries{{parameter.name(), parameter.value()}};
    if (withOptimizerState) {
      entries.insert(entries.end(),
                     {{"optimizer.master." + parameter.name(), parameter.master()},
                      {"optimizer.exp_avg." + parameter.name(), parameter.exp_avg()},
                      {"optimizer.exp_avg_sq." + parameter.name(), parameter.exp_avg_sq()}});
    }
    for (const auto &[name, id] : entries) {
      auto it = file.tensors.find(name);
      const plan::Buffer &buffer = plan.buffers(id);
      if (it == file.tensors.end()) {
        return invalid("no tensor '" + name + "'" +
                       (withOptimizerState ? " (a resume needs the optimizer state)" : ""));
      }
      // --init-from full (Hugging Face) weights on a tensor-parallel plan: this rank's slice.
      HostTensor tensor = it->second;
      if (!withOptimizerState && id == parameter.value() && parameter.split_count() > 1 &&
          tensor.shape != shapeOf(buffer) &&
          tensor.shape == fullShape(parameter, shapeOf(buffer))) {
        tensor = splitSlice(parameter, tensor, shapeOf(buffer));
      }
      if (tensor.dtype != fromPlanDType(buffer.dtype()) ||
          tensor.shape != shapeOf(buffer)) {
        HostTensor expectedShape = HostTensor::zeros(fromPlanDType(buffer.dtype()), {});
        expectedShape.shape = shapeOf(buffer);
        return invalid("'" + name + "' is " + tensor.describe() + " but the plan holds " +
                       expectedShape.describe());
      }
      for (float v : tensor.values) {
        if (!std::isfinite(v)) {
          return invalid("'" + name + "' holds non-finite values");
        }
      }
      Status status = backend.write(id, tensor);
      if (!status.isOk()) {
        return status;
      }
    }
    if (!withOptimizerState) {
      // A fresh optimizer from these values: f32 masters equal to them, zero moments.
      HostTensor value;
      Status read = backend.read(parameter.value(), value); // as loaded (and sliced) above
      if (!read.isOk()) {
        return read;
      }
      HostTensor master = stateOf(parameter, value);
      HostTensor zeros = HostTensor::zeros(DType::kF32, master.shape);
      for (auto [id, tensor] : {std::pair{parameter.master(), &master},
                                {parameter.exp_avg(), &zeros},
                                {parameter.exp_avg_sq(), &zeros}}) {
        Status status = backend.write(id, *tensor);
        if (!status.isOk()) {
          return status;
        }
      }
    }
  }
  for (const auto &[name, tensor] : file.tensors) {
    bool optimizerEntry = name.rfind("optimizer.", 0) == 0;
    if (optimizerEntry && !withOptimizerState) {
      continue; // --init-from a train state: use its parameters only
    }
    bool known = std::any_of(plan.parameters().begin(), plan.parameters().end(),
                             [&](const plan::Parameter &p) {
                               return name == p.name() || name == "optimizer.master." + p.name() ||
                                      name == "optimizer.exp_avg." + p.name() ||
                                      name == "optimizer.exp_avg_sq." + p.name();
                             });
    // A pipeline stage holds only its own parameters: the file's other tensors are other
    // stages'; every parameter of this stage was required above.
    if (!known && plan.pipeline_stage() == 0 && communicator.mesh().pp == 1) {
      return invalid("tensor '" + name + "' is not a parameter of this model");
    }
  }
  steps = 0;
  if (withOptimizerState) {
    auto it = file.metadata.find("step");
    char *end = nullptr;
    long long value = it == file.metadata.end() ? -1 : std::strtoll(it->second.c_str(), &end, 10);
    if (it == file.metadata.end() || *end != '\0' || it->second.empty() || value < 0) {
      return invalid("no valid 'step' in the checkpoint's metadata");
    }
    steps = value;
  }
  return Status::ok();
}

int64_t PlanTrainer::splitIndex(const plan::Parameter &parameter) const {
  MeshAxis axis = MeshAxis::kTP;
  parseMeshAxis(parameter.split_axis(), axis); // the loader checked it
  return communicator.coordinates().along(axis);
}

std::vector<int64_t> PlanTrainer::fullShape(const plan::Parameter &parameter,
                                            std::vector<int64_t> local) const {
  if (parameter.split_count() > 1) {
    local[parameter.split_dim()] *= parameter.split_count();
  }
  return local;
}

int64_t PlanTrainer::fullIndex(const plan::Parameter &parameter,
                               const std::vector<int64_t> &local, int64_t index) const {
  if (parameter.split_count() <= 1) {
    return index;
  }
  size_t dim = parameter.split_dim();
  int64_t inner = elementCount({local.begin() + dim + 1, local.end()});
  int64_t rows = local[dim];
  int64_t outer = index / (rows * inner), row = (index / inner) % rows, column = index % inner;
  int64_t fullRows = rows * parameter.split_count();
  return (outer * fullRows + splitIndex(parameter) * rows + row) * inner + column;
}

HostTensor PlanTrainer::splitSlice(const plan::Parameter &parameter, const HostTensor &full,
                                   const std::vector<int64_t> &local) const {
  HostTensor slice = HostTensor::zeros(full.dtype, local);
  for (int64_t i = 0; i < slice.numElements(); ++i) {
    slice.values[i] = full.values[fullIndex(parameter, local, i)];
  }
  return slice;
}

Status PlanTrainer::sendFrom(uint32_t id, int64_t shift, int tag) {
  HostTensor value;
  MLPERF_RETURN_IF_ERROR(backend.read(id, value));
  return communicator.send(MeshAxis::kPP, shift, tag, value.values);
}

Status PlanTrainer::receiveInto(uint32_t id, int64_t shift, int tag) {
  const plan::Buffer &buffer = plan.buffers(id);
  HostTensor value =
      HostTensor::zeros(fromPlanDType(buffer.dtype()), {buffer.shape().begin(), buffer.shape().end()});
  // Values travel as f32, in which bf16 values are exact.
  MLPERF_RETURN_IF_ERROR(communicator.receive(MeshAxis::kPP, shift, tag, value.values));
  return backend.write(id, value);
}

Status PlanTrainer::pipelineMicroBatches(const std::vector<int64_t> &tokens,
                                         const std::vector<int64_t> &labels,
                                         const std::function<Status(int64_t)> &backwardDone) {
  // The static 1F1B schedule (runtime/dist/PipelineSchedule.h, Megatron-LM's
  // non-interleaved one). Activations go forward, their gradients back; each backward
  // recomputes its stage's forward from the stashed input activation.
  bool first = stage == 0, last = stage == stages - 1;
  std::vector<HostTensor> stash(accumulation);
  auto forwardStep = [&](int64_t a) -> Status {
    if (!first) {
      MLPERF_RETURN_IF_ERROR(receiveInto(activationBuffer, -1, kForwardTag));
      MLPERF_RETURN_IF_ERROR(backend.read(activationBuffer, stash[a]));
    }
    if (last) {
      return Status::ok(); // its backward computes the forward it needs
    }
    MLPERF_RETURN_IF_ERROR(writeInputs(tokens, labels, a));
    MLPERF_RETURN_IF_ERROR(backend.execute(forwardProgram));
    return sendFrom(lossBuffer, 1, kForwardTag);
  };
  auto backwardStep = [&](int64_t a) -> Status {
    MLPERF_RETURN_IF_ERROR(writeInputs(tokens, labels, a));
    if (!first) {
      MLPERF_RETURN_IF_ERROR(backend.write(activationBuffer, stash[a]));
    }
    if (!last) {
      MLPERF_RETURN_IF_ERROR(receiveInto(cotangentBuffer, 1, kBackwardTag));
    }
    MLPERF_RETURN_IF_ERROR(backend.execute(forwardBackwardProgram));
    stash[a] = HostTensor(); // at most the micro-batches in flight stay stashed
    if (!first) {
      MLPERF_RETURN_IF_ERROR(sendFrom(inputGradBuffer, -1, kBackwardTag));
    }
    return backwardDone(a);
  };
  std::vector<std::vector<PipelineOp>> schedule;
  MLPERF_RETURN_IF_ERROR(pipelineSchedule(stages, 1, accumulation, schedule));
  for (const PipelineOp &op : schedule[stage]) {
    MLPERF_RETURN_IF_ERROR(op.forward ? forwardStep(op.microBatch) : backwardStep(op.microBatch));
  }
  return communicator.waitForSends();
}

HostTensor PlanTrainer::stateOf(const plan::Parameter &parameter, const HostTensor &value) const {
  HostTensor state = value;
  state.dtype = DType::kF32; // bf16 values are exact in f32
  if (parameter.shard_count() > 1) {
    MeshAxis axis = MeshAxis::kDP;
    parseMeshAxis(parameter.shard_axis(), axis); // the loader checked it
    int64_t size = value.numElements() / parameter.shard_count();
    int64_t first = communicator.coordinates().along(axis) * size;
    state.values.assign(value.values.begin() + first, value.values.begin() + first + size);
    state.shape = {size};
  }
  return state;
}

Status PlanTrainer::save(const std::string &path,
                         const std::map<std::string, std::string> &metadata) {
  TensorFile file;
  file.metadata = metadata;
  file.metadata["format"] = "mlperfc train state";
  file.metadata["step"] = std::to_string(steps);
  for (const plan::Parameter &parameter : plan.parameters()) {
    for (auto [name, id] : {std::pair{parameter.name(), parameter.value()},
                            {"optimizer.master." + parameter.name(), parameter.master()},
                            {"optimizer.exp_avg." + parameter.name(), parameter.exp_avg()},
                            {"optimizer.exp_avg_sq." + parameter.name(), parameter.exp_avg_sq()}}) {
      Status status = backend.read(id, file.tensors[name]);
      if (!status.isOk()) {
        return status;
      }
    }
  }
  return writeSafetensors(path, file);
}

Status PlanTrainer::writeInputs(const std::vector<int64_t> &tokens,
                                const std::vector<int64_t> &labels, int64_t microBatch) {
  int64_t size = microRows * seq;
  for (auto [id, source] : {std::pair{tokensBuffer, &tokens}, {labelsBuffer, &labels}}) {
    if (id == kNoBuffer) {
      continue; // a pipeline stage that does not read them
    }
    HostTensor slice =
        HostTensor::zeros(fromPlanDType(plan.buffers(id).dtype()), {microRows, seq});
    std::copy_n(source->begin() + microBatch * size, size, slice.ints.begin());
    MLPERF_RETURN_IF_ERROR(backend.write(id, slice));
  }
  return Status::ok();
}

Status PlanTrainer::readScalar(uint32_t id, double &value) const {
  HostTensor tensor;
  Status status = backend.read(id, tensor);
  value = status.isOk() ? tensor.values[0] : 0.0;
  return status;
}

Status PlanTrainer::step(const std::vector<int64_t> &tokens, const std::vector<int64_t> &labels,
                         TrainStepMetrics &metrics) {
  int64_t rows = accumulation * microRows;
  if (static_cast<int64_t>(tokens.size()) != rows * seq || labels.size() != tokens.size()) {
    return invalid("a step takes " + std::to_string(rows) + " x " + std::to_string(seq) +
                   " tokens and labels");
  }
  double lossSum = 0.0;
  std::vector<HostTensor> sums;
  // One micro-batch's backward: gradients summed in their own type (bf16 in the reference:
  // grad_reduce_in_fp32 off), the loss added up on the stage that has it.
  auto backwardDone = [&](int64_t a) -> Status {
    if (stage == stages - 1) {
      double loss = 0;
      MLPERF_RETURN_IF_ERROR(readScalar(lossBuffer, loss));
      lossSum += loss;
    }
    if (accumulation == 1) {
      return Status::ok(); // the gradients stay where forward_backward wrote them
    }
    for (int p = 0; p < plan.parameters_size(); ++p) {
      HostTensor grad;
      MLPERF_RETURN_IF_ERROR(backend.read(plan.parameters(p).grad(), grad));
      if (a == 0) {
        sums.push_back(std::move(grad));
        continue;
      }
      HostTensor &sum = sums[p];
      for (int64_t e = 0; e < sum.numElements(); ++e) {
        sum.values[e] = static_cast<float>(
            roundTo(sum.dtype, static_cast<double>(sum.values[e]) + grad.values[e]));
      }
    }
    return Status::ok();
  };
  if (stages == 1) {
    for (int64_t a = 0; a < accumulation; ++a) {
      Status status = writeInputs(tokens, labels, a);
      if (status.isOk()) {
        status = backend.execute(forwardBackwardProgram);
      }
      if (status.isOk()) {
        status = backwardDone(a);
      }
      if (!status.isOk()) {
        return status;
      }
    }
  } else {
    MLPERF_RETURN_IF_ERROR(pipelineMicroBatches(tokens, labels, backwardDone));
  }
  for (int p = 0; p < static_cast<int>(sums.size()); ++p) {
    Status status = backend.write(plan.parameters(p).grad(), sums[p]);
    if (!status.isOk()) {
      return status;
    }
  }
  // The global batch's mean loss: every last-stage rank's micro-batches (tensor-parallel
  // peers hold the same losses and count as often as they are added).
  std::vector<double> reduced{lossSum, stage == stages - 1 ? static_cast<double>(accumulation)
                                                           : 0.0};
  MLPERF_RETURN_IF_ERROR(communicator.allReduceWorldSum(reduced));
  double loss = reduced[0] / reduced[1];
  if (!std::isfinite(loss)) {
    return Status(StatusCode::kInvalidArgument,
                  "non-finite loss " + std::to_string(loss) + " at step " + std::to_string(steps) +
                      ": training diverged or the data or parameters hold NaN/Inf; stopping "
                      "before the update");
  }
  HostTensor stepTensor = HostTensor::zeros(DType::kI64, {});
  stepTensor.ints[0] = steps;
  Status status = backend.write(stepBuffer, stepTensor);
  if (status.isOk()) {
    status = backend.execute(optimizerProgram);
  }
  if (status.isOk()) {
    status = readScalar(lrBuffer, metrics.lr);
  }
  if (status.isOk()) {
    status = readScalar(normBuffer, metrics.gradNorm);
  }
  if (!status.isOk()) {
    return status;
  }
  if (!std::isfinite(metrics.gradNorm)) {
    return Status(StatusCode::kInvalidArgument, "non-finite gradient norm at step " +
                                                    std::to_string(steps) +
                                                    ": the update is unusable, stopping");
  }
  metrics.step = steps++;
  metrics.loss = loss;
  return Status::ok();
}

Status PlanTrainer::evalLoss(const std::vector<int64_t> &tokens, const std::vector<int64_t> &labels,
                             double &loss) {
  int64_t size = microRows * seq;
  // A rank may hold no eval micro-batch when there are fewer than ranks.
  if ((tokens.empty() && communicator.worldSize() == 1) ||
      static_cast<int64_t>(tokens.size()) % size != 0 || labels.size() != tokens.size()) {
    return invalid("evaluation takes whole micro-batches of " + std::to_string(microRows) + " x " +
                   std::to_string(seq) + " tokens");
  }
  int64_t batches = static_cast<int64_t>(tokens.size()) / size;
  double sum = 0.0;
  bool last = stage == stages - 1;
  for (int64_t b = 0; b < batches; ++b) {
    // A pipeline evaluates stage after stage: activations flow forward only.
    MLPERF_RETURN_IF_ERROR(writeInputs(tokens, labels, b));
    if (stage > 0) {
      MLPERF_RETURN_IF_ERROR(receiveInto(activationBuffer, -1, kForwardTag));
    }
    MLPERF_RETURN_IF_ERROR(backend.execute(forwardProgram));
    if (!last) {
      MLPERF_RETURN_IF_ERROR(sendFrom(lossBuffer, 1, kForwardTag));
      continue;
    }
    double value = 0;
    MLPERF_RETURN_IF_ERROR(readScalar(lossBuffer, value));
    sum += value;
  }
  MLPERF_RETURN_IF_ERROR(communicator.waitForSends());
  // The mean over every rank's micro-batches (the last stage's).
  std::vector<double> reduced{sum, last ? static_cast<double>(batches) : 0.0};
  Status reduce = communicator.allReduceWorldSum(reduced);
  if (!reduce.isOk()) {
    return reduce;
  }
  loss = reduced[0] / reduced[1];
  return Status::ok();
}

} // namespace mlperf::rt
