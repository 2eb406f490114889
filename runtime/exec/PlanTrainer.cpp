//===- PlanTrainer.cpp - Train steps from an execution plan ----*- C++ -*-===//

#include "runtime/exec/PlanTrainer.h"

#include "runtime/cpu/Numerics.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/StepRoles.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace mlperf::rt {
namespace {

namespace role = rt::role;

Status invalid(const std::string &message) { return Status(StatusCode::kInvalidArgument, message); }

std::vector<int64_t> shapeOf(const plan::Buffer &buffer) {
  return {buffer.shape().begin(), buffer.shape().end()};
}

} // namespace

Status PlanTrainer::create(const plan::Plan &plan, Backend &backend, Communicator &communicator,
                           std::unique_ptr<PlanTrainer> &trainer) {
  trainer.reset(new PlanTrainer(plan, backend, communicator));
  PlanTrainer &t = *trainer;
  for (auto [name, index] : {std::pair{"train_step", &t.trainProgram},
                             {"eval_step", &t.evalProgram},
                             {"eval_finish", &t.evalFinishProgram},
                             {"init_params", &t.initParamsProgram},
                             {"init_optimizer", &t.initOptimizerProgram}}) {
    for (int i = 0; i < plan.programs_size(); ++i) {
      if (plan.programs(i).name() == name) {
        *index = i;
      }
    }
    if (*index < 0) {
      return invalid(std::string("the plan has no program ") + name +
                     ": it is not a train-step plan of this runtime's format");
    }
  }
  MeshShape mesh = communicator.mesh();
  int64_t stage = plan.pipeline_stage();
  if (stage != communicator.coordinates().pp) {
    return invalid("the plan is for pipeline stage " + std::to_string(stage) + " but rank " +
                   std::to_string(communicator.rank()) + " runs stage " +
                   std::to_string(communicator.coordinates().pp));
  }
  const plan::ModelInfo &model = plan.model();
  t.microRows = model.micro_batch_size();
  t.seq = model.seq_len();
  t.accumulation = model.gradient_accumulation_steps();
  t.dataParallel = mesh.dp;
  if (t.accumulation < 1 || t.microRows < 1 || t.seq < 1 ||
      model.global_batch_size() != t.accumulation * t.microRows * t.dataParallel ||
      model.eval_samples() < 0 || model.eval_every_samples() < 0) {
    return invalid("the plan's batch (global " + std::to_string(model.global_batch_size()) + ", " +
                   std::to_string(t.accumulation) + " micro-batches of " +
                   std::to_string(t.microRows) + " rows on each of " +
                   std::to_string(t.dataParallel) +
                   " data-parallel ranks) or eval counts are inconsistent");
  }
  // The batch layout: every micro-batch of the global batch read by exactly one rank once.
  const auto &layout = model.train_micro_batches();
  int64_t count = t.accumulation * t.dataParallel;
  if (layout.size() != count) {
    return invalid(layout.empty()
                       ? std::string("the plan records no batch layout (which micro-batch of the "
                                     "global batch each rank reads): recompile it")
                       : "the plan's batch layout has " + std::to_string(layout.size()) +
                             " entries, not one per micro-batch of the global batch (" +
                             std::to_string(count) + ")");
  }
  std::vector<bool> seen(count, false);
  for (int64_t g : layout) {
    if (g < 0 || g >= count || seen[g]) {
      return invalid("the plan's batch layout reads micro-batch " + std::to_string(g) +
                     " of the global batch " +
                     (g < 0 || g >= count ? "(there are " + std::to_string(count) + ")"
                                          : std::string("twice")) +
                     ": each must be read once");
    }
    seen[g] = true;
  }
  t.batchLayout.assign(layout.begin(), layout.end());
  // The programs' inputs and outputs by role: what this runtime feeds and reads.
  auto byRole = [&](const plan::Program &program, bool input, std::string_view role) {
    const auto &roles = input ? program.input_roles() : program.output_roles();
    const auto &ids = input ? program.inputs() : program.outputs();
    for (int i = 0; i < roles.size(); ++i) {
      if (roles[i] == role) {
        return ids[i];
      }
    }
    return kNoBuffer;
  };
  const plan::Program &train = plan.programs(t.trainProgram);
  const plan::Program &eval = plan.programs(t.evalProgram);
  t.trainTokens = byRole(train, true, role::kTokens);
  t.trainLabels = byRole(train, true, role::kLabels);
  t.stepBuffer = byRole(train, true, role::kStep);
  t.lrBuffer = byRole(train, false, role::kLr);
  t.normBuffer = byRole(train, false, role::kGradNorm);
  t.lossesBuffer = byRole(train, false, role::kLosses);
  t.evalTokens = byRole(eval, true, role::kTokens);
  t.evalLabels = byRole(eval, true, role::kLabels);
  t.evalLossBuffer = byRole(plan.programs(t.evalFinishProgram), false, role::kLoss);
  t.seedBuffer = byRole(plan.programs(t.initParamsProgram), true, role::kSeed);
  if (t.seedBuffer == kNoBuffer || plan.buffers(t.seedBuffer).shape_size() != 0 ||
      plan.buffers(t.seedBuffer).dtype() != plan::I64) {
    return invalid("init_params does not take an i64 scalar seed (role 'seed')");
  }
  if (t.stepBuffer == kNoBuffer || t.lrBuffer == kNoBuffer || t.normBuffer == kNoBuffer) {
    return invalid("train_step does not take the step and return lr and grad_norm (roles "
                   "'step', 'lr', 'grad_norm')");
  }
  auto isBatch = [&](uint32_t id, std::vector<int64_t> shape) {
    return id == kNoBuffer || (shapeOf(plan.buffers(id)) == shape &&
                               !isFloat(fromPlanDType(plan.buffers(id).dtype())));
  };
  if (!isBatch(t.trainTokens, {t.accumulation, t.microRows, t.seq}) ||
      !isBatch(t.trainLabels, {t.accumulation, t.microRows, t.seq}) ||
      !isBatch(t.evalTokens, {t.microRows, t.seq}) ||
      !isBatch(t.evalLabels, {t.microRows, t.seq})) {
    return invalid(
        "the plan's tokens and labels are not integer [micro_batches, micro_batch, seq] = [" +
        std::to_string(t.accumulation) + ", " + std::to_string(t.microRows) + ", " +
        std::to_string(t.seq) + "] (train_step) and [micro_batch, seq] (eval_step)");
  }
  if (t.lossesBuffer != kNoBuffer && (shapeOf(plan.buffers(t.lossesBuffer)) !=
                                          std::vector<int64_t>{t.accumulation * t.dataParallel} ||
                                      plan.buffers(t.lossesBuffer).dtype() != plan::F32)) {
    return invalid("train_step's losses are not f32 [" +
                   std::to_string(t.accumulation * t.dataParallel) +
                   "] (every micro-batch of the global batch)");
  }
  // Rank 0 logs the global batch's loss.
  if (communicator.rank() == 0 && t.lossesBuffer == kNoBuffer) {
    return invalid("train_step of the plan rank 0 runs does not return the losses");
  }
  // The train state: float tensors (their shapes the compiler's; the loader checked shards).
  for (const plan::StateTensor &state : plan.state()) {
    if (!isFloat(fromPlanDType(plan.buffers(state.buffer()).dtype()))) {
      return invalid("state tensor '" + state.name() + "' does not hold floats");
    }
  }
  for (uint32_t id : {t.lrBuffer, t.normBuffer}) {
    if (plan.buffers(id).shape_size() != 0 || plan.buffers(id).dtype() != plan::F32) {
      return invalid("buffer '" + plan.buffers(id).name() + "' should be an f32 scalar");
    }
  }
  if (t.evalLossBuffer == kNoBuffer || plan.buffers(t.evalLossBuffer).shape_size() != 0 ||
      plan.buffers(t.evalLossBuffer).dtype() != plan::F64) {
    return invalid("eval_finish does not return the evaluation loss as an f64 scalar (role "
                   "'loss')");
  }
  if (plan.buffers(t.stepBuffer).shape_size() != 0 ||
      plan.buffers(t.stepBuffer).dtype() != plan::I64) {
    return invalid("the step buffer should be an i64 scalar");
  }
  return Status::ok();
}

Status PlanTrainer::initialize(uint64_t seed) {
  // The plan draws the parameters (init_params) and derives the optimizer state from them
  // (init_optimizer); a parameter it does not draw must come from a file.
  const plan::Program &init = plan.programs(initParamsProgram);
  for (const plan::StateTensor &state : plan.state()) {
    if (state.role() == role::kParam && std::find(init.outputs().begin(), init.outputs().end(),
                                                  state.buffer()) == init.outputs().end()) {
      return invalid("parameter '" + state.param() +
                     "' is initialized from a checkpoint: give --init-from W.safetensors");
    }
  }
  MLPERF_RETURN_IF_ERROR(setSeed(seed));
  MLPERF_RETURN_IF_ERROR(backend.execute(initParamsProgram));
  MLPERF_RETURN_IF_ERROR(backend.execute(initOptimizerProgram));
  steps = 0;
  return Status::ok();
}

Status PlanTrainer::setSeed(uint64_t seed) {
  HostTensor seedTensor = HostTensor::zeros(DType::kI64, {});
  seedTensor.ints[0] = static_cast<int64_t>(seed);
  return backend.write(seedBuffer, seedTensor);
}

namespace {

/// Whether `source` holds every one of `state`'s checkpoint parts (a fused tensor stored
/// apart).
bool hasParts(const WeightSource &source, const plan::StateTensor &state) {
  return state.checkpoint_parts_size() > 0 &&
         std::all_of(state.checkpoint_parts().begin(), state.checkpoint_parts().end(),
                     [&](const std::string &part) { return source.contains(part); });
}

/// The parameter stacked from its parts along dim 0 (same dtype and trailing dims).
Status stackParts(const WeightSource &source, const plan::StateTensor &state, HostTensor &out) {
  out = HostTensor();
  for (int k = 0; k < state.checkpoint_parts_size(); ++k) {
    const std::string &part = state.checkpoint_parts(k);
    HostTensor piece;
    MLPERF_RETURN_IF_ERROR(source.read(part, piece));
    if (k < state.checkpoint_part_rows_size() && !piece.shape.empty() &&
        piece.shape[0] != state.checkpoint_part_rows(k)) {
      return Status(StatusCode::kInvalidArgument,
                    "'" + part + "' is " + piece.describe() + ", but its block of '" +
                        state.name() + "' has " + std::to_string(state.checkpoint_part_rows(k)) +
                        " rows");
    }
    if (piece.shape.empty() ||
        (!out.shape.empty() &&
         (piece.dtype != out.dtype || !std::equal(piece.shape.begin() + 1, piece.shape.end(),
                                                  out.shape.begin() + 1, out.shape.end())))) {
      return Status(StatusCode::kInvalidArgument,
                    "'" + part + "' is " + piece.describe() + ", which does not stack with " +
                        state.checkpoint_parts(0) + " into '" + state.name() + "'");
    }
    if (out.shape.empty()) {
      out.dtype = piece.dtype;
      out.shape = piece.shape;
      out.shape[0] = 0;
    }
    out.shape[0] += piece.shape[0];
    out.values.insert(out.values.end(), piece.values.begin(), piece.values.end());
    out.ints.insert(out.ints.end(), piece.ints.begin(), piece.ints.end());
  }
  return Status::ok();
}

} // namespace

Status PlanTrainer::load(const WeightSource &file, bool withOptimizerState) {
  // --init-from: the parameters the plan draws (init_params, from the seed setSeed wrote) may
  // be absent from the file, as a LoRA run's adapters are from the base model's checkpoint;
  // a parameter declared `checkpoint` must be in it.
  const plan::Program &drawn = plan.programs(initParamsProgram);
  auto drawnByPlan = [&](const plan::StateTensor &state) {
    return std::find(drawn.outputs().begin(), drawn.outputs().end(), state.buffer()) !=
           drawn.outputs().end();
  };
  // A fused parameter the file holds some parts of but not all is a broken checkpoint, not a
  // parameter to draw.
  for (const plan::StateTensor &state : plan.state()) {
    int64_t found = std::count_if(state.checkpoint_parts().begin(), state.checkpoint_parts().end(),
                                  [&](const std::string &part) { return file.contains(part); });
    if (!withOptimizerState && !file.contains(state.name()) && found > 0 &&
        found < state.checkpoint_parts_size()) {
      std::string missing;
      for (const std::string &part : state.checkpoint_parts()) {
        if (!file.contains(part)) {
          missing += (missing.empty() ? "" : ", ") + part;
        }
      }
      return invalid("no tensor '" + state.name() + "' and only some of its parts: " + missing +
                     " missing");
    }
  }
  bool drawMissing = false;
  if (!withOptimizerState) {
    for (const plan::StateTensor &state : plan.state()) {
      drawMissing |= state.role() == role::kParam && drawnByPlan(state) &&
                     !file.contains(state.name()) && !hasParts(file, state);
    }
    if (drawMissing) {
      MLPERF_RETURN_IF_ERROR(backend.execute(initParamsProgram));
    }
  }
  if (!withOptimizerState) {
    // --init-from writes the parameters and runs init_optimizer: every other state tensor
    // must be one init_optimizer starts (fp8 plans start masters and scaling state in
    // init_params, from the draw).
    const plan::Program &init = plan.programs(initOptimizerProgram);
    for (const plan::StateTensor &state : plan.state()) {
      if (state.role() != role::kParam && std::find(init.outputs().begin(), init.outputs().end(),
                                                    state.buffer()) == init.outputs().end()) {
        return invalid("this plan cannot start from weights alone: its " + state.role() +
                       " state '" + state.name() + "' starts only with the plan's own " +
                       "initialization (an fp8 plan's master weights and scaling state); " +
                       "train from --seed or resume a train-state checkpoint of this plan");
      }
    }
  }
  // --init-from an f32 checkpoint into a bf16 parameter: the checkpoint's exact values (this
  // rank's tensor-parallel part, before a ZeRO-3 shard), for the state that starts as the
  // parameter (the f32 masters) once init_optimizer has run.
  std::map<std::string, HostTensor> widerThanParam;
  for (const plan::StateTensor &state : plan.state()) {
    bool parameter = state.role() == role::kParam;
    if (!parameter && !withOptimizerState) {
      continue; // --init-from: the plan's init_optimizer starts the rest from the parameters
    }
    bool present = file.contains(state.name());
    bool stacked = !present && parameter && !withOptimizerState && hasParts(file, state);
    const plan::Buffer &buffer = plan.buffers(state.buffer());
    if (!present && !stacked && drawMissing && parameter && drawnByPlan(state)) {
      continue; // drawn above
    }
    if (!present && !stacked) {
      if (role::isFp8State(state.role())) {
        return invalid("no tensor '" + state.name() + "': this fp8 plan resumes with its fp8 " +
                       "scaling state (amax histories and scales), which the checkpoint does " +
                       "not hold (written by a plan without fp8?)");
      }
      std::string parts;
      for (const std::string &part : state.checkpoint_parts()) {
        parts += (parts.empty() ? "" : ", ") + part;
      }
      return invalid("no tensor '" + state.name() + "'" +
                     (withOptimizerState ? " (a resume needs the optimizer state)"
                      : parts.empty()    ? ""
                                         : " (nor its parts " + parts + ")"));
    }
    // --init-from full (Hugging Face) weights on a tensor-parallel plan: this rank's slice.
    HostTensor tensor;
    MLPERF_RETURN_IF_ERROR(stacked ? stackParts(file, state, tensor)
                                   : file.read(state.name(), tensor));
    std::vector<int64_t> local = stateLocalShape(plan, state);
    if (!withOptimizerState && parameter && state.split_count() > 1 &&
        tensor.shape != shapeOf(buffer) && tensor.shape == fullShape(state, local)) {
      tensor = splitSlice(state, tensor, local);
    }
    // --init-from in another precision than the plan's: bf16 widens to f32 exactly; f32
    // rounds to bf16 (RNE), its exact values kept for the masters.
    DType planType = fromPlanDType(buffer.dtype());
    if (!withOptimizerState && parameter && tensor.dtype != planType) {
      if (tensor.dtype == DType::kBF16 && planType == DType::kF32) {
        tensor.dtype = DType::kF32; // every bf16 value is an f32 value
      } else if (tensor.dtype == DType::kF32 && planType == DType::kBF16) {
        if (!std::all_of(tensor.values.begin(), tensor.values.end(),
                         [](float v) { return std::isfinite(v); })) {
          return invalid("'" + state.name() + "' holds non-finite values");
        }
        HostTensor rounded = tensor;
        rounded.dtype = DType::kBF16;
        roundBuffer(DType::kBF16, rounded.values.data(), rounded.numElements());
        if (!std::all_of(rounded.values.begin(), rounded.values.end(),
                         [](float v) { return std::isfinite(v); })) {
          return invalid("'" + state.name() + "' holds f32 values beyond bf16's range");
        }
        widerThanParam[state.param()] = std::move(tensor);
        tensor = std::move(rounded);
      }
    }
    // --init-from on a ZeRO-3 plan: this rank's shard of the (local) parameter.
    if (!withOptimizerState && parameter && state.unsharded_shape_size() > 0 &&
        tensor.shape == local) {
      tensor = shardOf(state, tensor);
    }
    if (tensor.dtype != fromPlanDType(buffer.dtype()) || tensor.shape != shapeOf(buffer)) {
      HostTensor expectedShape = HostTensor::zeros(fromPlanDType(buffer.dtype()), {});
      expectedShape.shape = shapeOf(buffer);
      return invalid("'" + state.name() + "' is " + tensor.describe() + " but the plan holds " +
                     expectedShape.describe());
    }
    // An fp8 amax history records an infinite amax as it is (an overflowed gradient); NaN,
    // and infinities anywhere else, make the state unusable.
    bool history = state.role() == role::kFp8InputHistory ||
                   state.role() == role::kFp8GradHistory || state.role() == role::kFp8WeightHistory;
    for (float v : tensor.values) {
      if (std::isnan(v) || (!history && !std::isfinite(v))) {
        return invalid("'" + state.name() + "' holds non-finite values");
      }
    }
    MLPERF_RETURN_IF_ERROR(backend.write(state.buffer(), tensor));
  }
  if (!withOptimizerState) {
    // A fresh optimizer from these values, as the plan starts it ...
    MLPERF_RETURN_IF_ERROR(backend.execute(initOptimizerProgram));
    // ... except that state starting as a parameter the checkpoint holds at higher precision
    // starts at the checkpoint's values (a master weight is the f32 truth the bf16 weight was
    // rounded from).
    for (const plan::StateTensor &state : plan.state()) {
      auto wide = widerThanParam.find(state.param());
      if (!state.starts_as_param() || wide == widerThanParam.end()) {
        continue;
      }
      const plan::Buffer &buffer = plan.buffers(state.buffer());
      HostTensor values = state.shard_count() > 1 ? shardOf(state, wide->second) : wide->second;
      values.dtype = DType::kF32;
      if (fromPlanDType(buffer.dtype()) != DType::kF32 || values.shape != shapeOf(buffer)) {
        HostTensor expected = HostTensor::zeros(fromPlanDType(buffer.dtype()), {});
        expected.shape = shapeOf(buffer);
        return invalid("cannot start '" + state.name() + "' (" + expected.describe() +
                       ") at the checkpoint's " + wide->second.describe() + " values of '" +
                       state.param() + "'");
      }
      MLPERF_RETURN_IF_ERROR(backend.write(state.buffer(), values));
    }
  }
  for (const std::string &name : file.names()) {
    if (role::isOptimizerStateKey(name) && !withOptimizerState) {
      continue; // --init-from a train state: use its parameters only
    }
    bool known =
        std::any_of(plan.state().begin(), plan.state().end(), [&](const plan::StateTensor &s) {
          return s.name() == name ||
                 std::find(s.checkpoint_parts().begin(), s.checkpoint_parts().end(), name) !=
                     s.checkpoint_parts().end();
        });
    // A pipeline stage holds only its own parameters: the file's other tensors are other
    // stages'; every tensor of this stage was required above.
    if (!known && plan.pipeline_stage() == 0 && communicator.mesh().pp == 1) {
      return invalid("tensor '" + name + "' is not a parameter of this model");
    }
  }
  steps = 0;
  if (withOptimizerState) {
    auto it = file.metadata().find("step");
    char *end = nullptr;
    long long value = it == file.metadata().end() ? -1 : std::strtoll(it->second.c_str(), &end, 10);
    if (it == file.metadata().end() || *end != '\0' || it->second.empty() || value < 0) {
      return invalid("no valid 'step' in the checkpoint's metadata");
    }
    steps = value;
  }
  return Status::ok();
}

int64_t PlanTrainer::splitIndex(const plan::StateTensor &parameter) const {
  MeshAxis axis = MeshAxis::kTP;
  parseMeshAxis(parameter.split_axis(), axis); // the loader checked it
  return communicator.coordinates().along(axis);
}

std::vector<int64_t> PlanTrainer::fullShape(const plan::StateTensor &parameter,
                                            std::vector<int64_t> local) const {
  if (parameter.split_count() > 1) {
    local[parameter.split_dim()] *= parameter.split_count();
  }
  return local;
}

HostTensor PlanTrainer::splitSlice(const plan::StateTensor &parameter, const HostTensor &full,
                                   const std::vector<int64_t> &local) const {
  HostTensor slice = HostTensor::zeros(full.dtype, local);
  int64_t part = parameter.split_count() > 1 ? splitIndex(parameter) : 0;
  std::vector<int64_t> blocks(parameter.split_blocks().begin(), parameter.split_blocks().end());
  for (int64_t i = 0; i < slice.numElements(); ++i) {
    slice.values[i] = full.values[fullIndexOfPart(local, parameter.split_dim(),
                                                  parameter.split_count(), part, i, blocks)];
  }
  return slice;
}

int64_t PlanTrainer::shardIndex(const plan::StateTensor &state) const {
  MeshAxis axis = MeshAxis::kDP;
  parseMeshAxis(state.shard_axis(), axis); // the loader checked it
  return communicator.coordinates().along(axis);
}

HostTensor PlanTrainer::shardOf(const plan::StateTensor &state, const HostTensor &whole) const {
  int64_t size = whole.numElements() / state.shard_count();
  HostTensor shard = HostTensor::zeros(whole.dtype, {size});
  std::copy_n(whole.values.begin() + shardIndex(state) * size, size, shard.values.begin());
  return shard;
}

Status PlanTrainer::save(const std::string &path,
                         const std::map<std::string, std::string> &metadata) {
  TensorFile file;
  file.metadata = metadata;
  file.metadata["format"] = "mlperfc train state";
  file.metadata["step"] = std::to_string(steps);
  for (const plan::StateTensor &state : plan.state()) {
    MLPERF_RETURN_IF_ERROR(backend.read(state.buffer(), file.tensors[state.name()]));
    // Which part of the full tensor this rank's file holds, so a reader can reassemble it.
    if (state.split_count() > 1) {
      std::string split = "axis=" + state.split_axis() +
                          ",dim=" + std::to_string(state.split_dim()) +
                          ",parts=" + std::to_string(state.split_count()) +
                          ",part=" + std::to_string(splitIndex(state));
      for (int i = 0; i < state.split_blocks_size(); ++i) {
        split += (i == 0 ? ",blocks=" : ";") + std::to_string(state.split_blocks(i));
      }
      file.metadata["split:" + state.name()] = split;
    }
    if (state.shard_count() > 1) {
      std::string shard = "axis=" + state.shard_axis() +
                          ",parts=" + std::to_string(state.shard_count()) +
                          ",part=" + std::to_string(shardIndex(state));
      // A ZeRO-3 parameter shard: the shape of the local tensor its parts flatten.
      for (int i = 0; i < state.unsharded_shape_size(); ++i) {
        shard += (i == 0 ? ",shape=" : "x") + std::to_string(state.unsharded_shape(i));
      }
      file.metadata["shard:" + state.name()] = shard;
    }
  }
  return writeSafetensors(path, file);
}

Status PlanTrainer::writeBatch(uint32_t id, const std::vector<int64_t> &source, int64_t first,
                               std::vector<int64_t> shape) {
  if (id == kNoBuffer) {
    return Status::ok(); // a pipeline stage that does not read it
  }
  HostTensor batch = HostTensor::zeros(fromPlanDType(plan.buffers(id).dtype()), std::move(shape));
  std::copy_n(source.begin() + first, batch.numElements(), batch.ints.begin());
  return backend.write(id, batch);
}

Status PlanTrainer::readScalar(uint32_t id, double &value) const {
  HostTensor tensor;
  Status status = backend.read(id, tensor);
  value = !status.isOk()        ? 0.0
          : tensor.wide.empty() ? static_cast<double>(tensor.values[0])
                                : tensor.wide[0];
  return status;
}

Status PlanTrainer::step(const std::vector<int64_t> &tokens, const std::vector<int64_t> &labels,
                         TrainStepMetrics &metrics) {
  int64_t rows = accumulation * microRows;
  if (static_cast<int64_t>(tokens.size()) != rows * seq || labels.size() != tokens.size()) {
    return invalid("a step takes " + std::to_string(rows) + " x " + std::to_string(seq) +
                   " tokens and labels");
  }
  // The whole step is the plan's: feed this rank's micro-batches and the step, replay, read.
  std::vector<int64_t> shape{accumulation, microRows, seq};
  MLPERF_RETURN_IF_ERROR(writeBatch(trainTokens, tokens, 0, shape));
  MLPERF_RETURN_IF_ERROR(writeBatch(trainLabels, labels, 0, shape));
  HostTensor stepTensor = HostTensor::zeros(DType::kI64, {});
  stepTensor.ints[0] = steps;
  MLPERF_RETURN_IF_ERROR(backend.write(stepBuffer, stepTensor));
  backend.resetStreamTimes();
  MLPERF_RETURN_IF_ERROR(backend.execute(trainProgram));
  Backend::StreamTimes times = backend.streamTimes();
  metrics.computeSeconds = times.compute;
  metrics.communicationSeconds = times.communication;
  metrics.exposedCommunicationSeconds = times.exposedCommunication;
  MLPERF_RETURN_IF_ERROR(readScalar(lrBuffer, metrics.lr));
  MLPERF_RETURN_IF_ERROR(readScalar(normBuffer, metrics.gradNorm));
  metrics.loss = std::nan("");
  if (lossesBuffer != kNoBuffer) {
    // The global batch's loss: the mean of every micro-batch's, as the reference reports it.
    HostTensor losses;
    MLPERF_RETURN_IF_ERROR(backend.read(lossesBuffer, losses));
    double sum = 0.0;
    for (float loss : losses.values) {
      sum += loss;
    }
    metrics.loss = sum / static_cast<double>(losses.numElements());
    if (!std::isfinite(metrics.loss)) {
      return Status(StatusCode::kInvalidArgument,
                    "non-finite loss " + std::to_string(metrics.loss) + " at step " +
                        std::to_string(steps) +
                        ": training diverged or the data or parameters hold NaN/Inf; stopping");
    }
  }
  if (!std::isfinite(metrics.gradNorm)) {
    return Status(StatusCode::kInvalidArgument, "non-finite gradient norm at step " +
                                                    std::to_string(steps) +
                                                    ": the update is unusable, stopping");
  }
  metrics.step = steps++;
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
  // The plan keeps the running mean: each eval_step adds its micro-batch's loss, eval_finish
  // reduces it over the ranks, divides and starts it again.
  int64_t batches = static_cast<int64_t>(tokens.size()) / size;
  for (int64_t b = 0; b < batches; ++b) {
    MLPERF_RETURN_IF_ERROR(writeBatch(evalTokens, tokens, b * size, {microRows, seq}));
    MLPERF_RETURN_IF_ERROR(writeBatch(evalLabels, labels, b * size, {microRows, seq}));
    MLPERF_RETURN_IF_ERROR(backend.execute(evalProgram));
  }
  MLPERF_RETURN_IF_ERROR(backend.execute(evalFinishProgram));
  return readScalar(evalLossBuffer, loss);
}

} // namespace mlperf::rt
