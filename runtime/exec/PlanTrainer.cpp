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
  auto findProgram = [&](const std::string &name) {
    for (int i = 0; i < plan.programs_size(); ++i) {
      if (plan.programs(i).name() == name) {
        return i;
      }
    }
    return -1;
  };
  t.optimizerProgram = findProgram("optimizer_step");
  // One (forward, forward_backward) pair per model chunk: `forward`, then `forward.chunk1`, ...
  for (int chunk = 0;; ++chunk) {
    std::string suffix = chunk == 0 ? "" : ".chunk" + std::to_string(chunk);
    int forward = findProgram("forward" + suffix), fb = findProgram("forward_backward" + suffix);
    if (forward < 0 && chunk > 0) {
      break;
    }
    if (forward < 0 || fb < 0) {
      return invalid("the plan lacks one of the programs forward" + suffix +
                     ", forward_backward" + suffix + " and optimizer_step: it is not a "
                     "train-step plan");
    }
    Chunk c;
    c.forwardProgram = forward;
    c.forwardBackwardProgram = fb;
    t.chunks.push_back(c);
  }
  if (t.optimizerProgram < 0) {
    return invalid("the plan lacks the program optimizer_step: it is not a train-step plan");
  }
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
  if ((static_cast<int64_t>(t.chunks.size()) != mesh.vp &&
       !(mesh.vp <= 1 && t.chunks.size() == 1)) ||
      (t.chunks.size() > 1 && t.stages == 1)) {
    return invalid("the plan has " + std::to_string(t.chunks.size()) +
                   " model chunks but its mesh says pp=" + std::to_string(mesh.pp) +
                   ", vp=" + std::to_string(mesh.vp) + " (chunks need pp > 1)");
  }
  if (opt.inputs_size() != static_cast<int>(1 + 4 * parameters) ||
      opt.outputs_size() != static_cast<int>(4 * parameters + 2)) {
    return invalid("the optimizer_step program does not have the inputs and outputs of plan "
                   "format version " + std::to_string(plan.format_version()));
  }
  t.microRows = plan.model().micro_batch_size();
  t.seq = plan.model().seq_len();
  std::vector<int64_t> batchShape{t.microRows, t.seq};
  std::vector<int> written(parameters, 0); // how many chunks write each gradient
  for (size_t index = 0; index < t.chunks.size(); ++index) {
    Chunk &c = t.chunks[index];
    // Virtual stage v = chunk · pp + rank: inputs are the tokens (v = 0) or the previous
    // virtual stage's activation, the labels (last), and in forward_backward the next one's
    // gradient (all but the last). Outputs: the loss (last) or the activation, this chunk's
    // gradients, and the input activation's gradient (all but the first).
    int64_t virtualStage = static_cast<int64_t>(index) * t.stages + t.stage;
    bool first = virtualStage == 0;
    bool last = virtualStage == t.stages * static_cast<int64_t>(t.chunks.size()) - 1;
    const plan::Program &forward = plan.programs(c.forwardProgram);
    const plan::Program &fb = plan.programs(c.forwardBackwardProgram);
    int forwardInputs = last ? 2 : 1;
    int fbInputs = forwardInputs + (last ? 0 : 1);
    int gradients = fb.outputs_size() - 1 - (first ? 0 : 1);
    if (forward.inputs_size() != forwardInputs || forward.outputs_size() != 1 ||
        fb.inputs_size() != fbInputs || gradients < 0 ||
        (t.chunks.size() == 1 && gradients != static_cast<int>(parameters))) {
      return invalid("program '" + fb.name() + "' does not have the inputs and outputs of plan "
                     "format version " + std::to_string(plan.format_version()) +
                     (t.stages > 1 ? " for pipeline stage " + std::to_string(t.stage) : ""));
    }
    (first ? c.tokensBuffer : c.activationBuffer) = fb.inputs(0);
    if (last) {
      c.labelsBuffer = fb.inputs(1);
    } else {
      c.cotangentBuffer = fb.inputs(fbInputs - 1);
    }
    if (!first) {
      c.inputGradBuffer = fb.outputs(fb.outputs_size() - 1);
    }
    c.outputBuffer = fb.outputs(0); // the loss, or this chunk's output activation
    bool sameInputs = true;
    for (int i = 0; i < forwardInputs; ++i) {
      sameInputs = sameInputs && forward.inputs(i) == fb.inputs(i);
    }
    if (forward.outputs(0) != c.outputBuffer || !sameInputs) {
      return invalid("programs '" + forward.name() + "' and '" + fb.name() +
                     "' do not share their input and result buffers");
    }
    for (int g = 0; g < gradients; ++g) {
      uint32_t id = fb.outputs(1 + g);
      auto owner = std::find_if(plan.parameters().begin(), plan.parameters().end(),
                                [&](const plan::Parameter &p) { return p.grad() == id; });
      if (owner == plan.parameters().end()) {
        return invalid("program '" + fb.name() + "' writes buffer '" + plan.buffers(id).name() +
                       "' as a gradient, but it is no parameter's");
      }
      int p = static_cast<int>(owner - plan.parameters().begin());
      c.parameters.push_back(p);
      ++written[p];
    }
    for (uint32_t id : {c.tokensBuffer, c.labelsBuffer}) {
      if (id != kNoBuffer && (shapeOf(plan.buffers(id)) != batchShape ||
                              isFloat(fromPlanDType(plan.buffers(id).dtype())))) {
        return invalid("the plan's tokens and labels are not integer [micro_batch, seq] = [" +
                       std::to_string(t.microRows) + ", " + std::to_string(t.seq) + "]");
      }
    }
    // An activation between stages: [micro_batch, seq (or its sp slice), hidden] floats.
    if (!first && (plan.buffers(c.activationBuffer).shape_size() != 3 ||
                   plan.buffers(c.activationBuffer).shape(0) != t.microRows ||
                   !isFloat(fromPlanDType(plan.buffers(c.activationBuffer).dtype())))) {
      return invalid("the plan's input activation is not [micro_batch, seq, hidden]");
    }
    if (!last &&
        shapeOf(plan.buffers(c.cotangentBuffer)) != shapeOf(plan.buffers(c.outputBuffer))) {
      return invalid("the plan's activation gradient input does not match its output");
    }
    if (last) {
      t.lossBuffer = c.outputBuffer;
    }
  }
  if (std::any_of(written.begin(), written.end(), [](int n) { return n != 1; })) {
    return invalid("every parameter's gradient must be written by exactly one program");
  }
  t.stepBuffer = opt.inputs(0);
  t.lrBuffer = opt.outputs(4 * parameters);
  t.normBuffer = opt.outputs(4 * parameters + 1);
  bool hasLoss = t.stage == t.stages - 1;
  t.accumulation = plan.model().gradient_accumulation_steps();
  if (t.chunks.size() > 1 && t.accumulation % t.stages != 0) {
    return invalid("the interleaved schedule needs the " + std::to_string(t.accumulation) +
                   " micro-batches per rank to be a multiple of pp=" + std::to_string(t.stages));
  }
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
  for (uint32_t id : hasLoss ? std::vector<uint32_t>{t.lossBuffer, t.lrBuffer, t.normBuffer}
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

int64_t PlanTrainer::virtualStage(size_t chunk) const {
  return static_cast<int64_t>(chunk) * stages + stage;
}

int64_t PlanTrainer::shiftTo(int64_t otherVirtualStage) const {
  return otherVirtualStage % stages - stage; // the rank holding it, relative to this one
}

int PlanTrainer::tagFor(int64_t receiverVirtualStage, bool forward) {
  return static_cast<int>(2 * receiverVirtualStage + (forward ? 0 : 1)) + kFirstPipelineTag;
}

Status PlanTrainer::pipelineMicroBatches(const std::vector<int64_t> &tokens,
                                         const std::vector<int64_t> &labels,
                                         const std::function<Status(const Chunk &)> &backwardDone) {
  // The static schedule (runtime/dist/PipelineSchedule.h): Megatron-LM's 1F1B, or with
  // several model chunks per rank its interleaved variant. Activations go to the next
  // virtual stage, their gradients back; a backward recomputes its chunk's forward from the
  // stashed input activation.
  int64_t virtualStages = stages * static_cast<int64_t>(chunks.size());
  std::vector<std::vector<HostTensor>> stash(chunks.size(),
                                             std::vector<HostTensor>(accumulation));
  auto forwardStep = [&](int64_t a, size_t index) -> Status {
    const Chunk &chunk = chunks[index];
    int64_t v = virtualStage(index);
    if (v > 0) {
      MLPERF_RETURN_IF_ERROR(receiveInto(chunk.activationBuffer, shiftTo(v - 1), tagFor(v, true)));
      MLPERF_RETURN_IF_ERROR(backend.read(chunk.activationBuffer, stash[index][a]));
    }
    if (v == virtualStages - 1) {
      return Status::ok(); // its backward computes the forward it needs
    }
    MLPERF_RETURN_IF_ERROR(writeInputs(chunk, tokens, labels, a));
    MLPERF_RETURN_IF_ERROR(backend.execute(chunk.forwardProgram));
    return sendFrom(chunk.outputBuffer, shiftTo(v + 1), tagFor(v + 1, true));
  };
  auto backwardStep = [&](int64_t a, size_t index) -> Status {
    const Chunk &chunk = chunks[index];
    int64_t v = virtualStage(index);
    MLPERF_RETURN_IF_ERROR(writeInputs(chunk, tokens, labels, a));
    if (v > 0) {
      MLPERF_RETURN_IF_ERROR(backend.write(chunk.activationBuffer, stash[index][a]));
    }
    if (v < virtualStages - 1) {
      MLPERF_RETURN_IF_ERROR(
          receiveInto(chunk.cotangentBuffer, shiftTo(v + 1), tagFor(v, false)));
    }
    MLPERF_RETURN_IF_ERROR(backend.execute(chunk.forwardBackwardProgram));
    stash[index][a] = HostTensor(); // at most the micro-batches in flight stay stashed
    if (v > 0) {
      MLPERF_RETURN_IF_ERROR(sendFrom(chunk.inputGradBuffer, shiftTo(v - 1), tagFor(v - 1, false)));
    }
    return backwardDone(chunk);
  };
  std::vector<std::vector<PipelineOp>> schedule;
  MLPERF_RETURN_IF_ERROR(pipelineSchedule(stages, static_cast<int64_t>(chunks.size()),
                                          accumulation, schedule));
  for (const PipelineOp &op : schedule[stage]) {
    size_t index = static_cast<size_t>(op.chunk);
    MLPERF_RETURN_IF_ERROR(op.forward ? forwardStep(op.microBatch, index)
                                      : backwardStep(op.microBatch, index));
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

Status PlanTrainer::writeInputs(const Chunk &chunk, const std::vector<int64_t> &tokens,
                                const std::vector<int64_t> &labels, int64_t microBatch) {
  int64_t size = microRows * seq;
  for (auto [id, source] :
       {std::pair{chunk.tokensBuffer, &tokens}, {chunk.labelsBuffer, &labels}}) {
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
  // Gradient sums per parameter, in the gradients' own type (bf16 in the reference:
  // grad_reduce_in_fp32 off); a chunk's backward adds its own parameters' gradients.
  std::vector<HostTensor> sums(accumulation > 1 ? plan.parameters_size() : 0);
  std::vector<bool> summed(sums.size(), false);
  auto backwardDone = [&](const Chunk &chunk) -> Status {
    if (chunk.outputBuffer == lossBuffer && stage == stages - 1) {
      double loss = 0;
      MLPERF_RETURN_IF_ERROR(readScalar(lossBuffer, loss));
      lossSum += loss;
    }
    if (accumulation == 1) {
      return Status::ok(); // the gradients stay where forward_backward wrote them
    }
    for (int p : chunk.parameters) {
      HostTensor grad;
      MLPERF_RETURN_IF_ERROR(backend.read(plan.parameters(p).grad(), grad));
      if (!summed[p]) {
        sums[p] = std::move(grad);
        summed[p] = true;
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
    const Chunk &chunk = chunks.front();
    for (int64_t a = 0; a < accumulation; ++a) {
      MLPERF_RETURN_IF_ERROR(writeInputs(chunk, tokens, labels, a));
      MLPERF_RETURN_IF_ERROR(backend.execute(chunk.forwardBackwardProgram));
      MLPERF_RETURN_IF_ERROR(backwardDone(chunk));
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
  int64_t virtualStages = stages * static_cast<int64_t>(chunks.size());
  for (int64_t b = 0; b < batches; ++b) {
    // A pipeline evaluates virtual stage after virtual stage: activations flow forward only.
    for (size_t index = 0; index < chunks.size(); ++index) {
      const Chunk &chunk = chunks[index];
      int64_t v = virtualStage(index);
      MLPERF_RETURN_IF_ERROR(writeInputs(chunk, tokens, labels, b));
      if (v > 0) {
        MLPERF_RETURN_IF_ERROR(
            receiveInto(chunk.activationBuffer, shiftTo(v - 1), tagFor(v, true)));
      }
      MLPERF_RETURN_IF_ERROR(backend.execute(chunk.forwardProgram));
      if (v < virtualStages - 1) {
        MLPERF_RETURN_IF_ERROR(sendFrom(chunk.outputBuffer, shiftTo(v + 1), tagFor(v + 1, true)));
        continue;
      }
      double value = 0;
      MLPERF_RETURN_IF_ERROR(readScalar(lossBuffer, value));
      sum += value;
    }
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
