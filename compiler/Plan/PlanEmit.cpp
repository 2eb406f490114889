//===- PlanEmit.cpp - plan dialect to plan.pb ------------------*- C++ -*-===//

#include "compiler/Plan/PlanEmit.h"

#include "runtime/plan/StepRoles.h"

#include "dialects/Plan/IR/ElementTypes.h"
#include "runtime/plan/PlanLoader.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace mlperf {

/// "llama31_8b.mlir:41" from the first file location inside `loc` (the declaration op the
/// command was lowered from), with " (recomputed)" when tg-recompute named it so.
static std::string commandOrigin(Location loc) {
  std::string where;
  bool recomputed = false;
  loc->walk([&](Location inner) {
    if (auto name = dyn_cast<NameLoc>(inner); name && name.getName() == "recomputed") {
      recomputed = true;
    }
    if (auto file = dyn_cast<FileLineColLoc>(inner); file && where.empty()) {
      where = llvm::sys::path::filename(file.getFilename().getValue()).str() + ":" +
              std::to_string(file.getLine());
    }
    return WalkResult::advance();
  });
  return where.empty() ? where : where + (recomputed ? " (recomputed)" : "");
}

LogicalResult encodeAttribute(Operation *op, NamedAttribute attr, plan::Attribute *out) {
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
    plan::IntList *list = out->mutable_ints(); // set even when empty: a value, no elements
    for (int64_t v : ints.asArrayRef()) {
      list->add_values(v);
    }
  } else {
    return op->emitError() << "attribute '" << attr.getName()
                           << "' has no plan encoding (float, integer, unit, string or i64 array)";
  }
  return success();
}

namespace {

FailureOr<plan::DType> planDType(Type type) {
  const rt::DTypeInfo *info = planDTypeInfo(type);
  if (!info) {
    return failure();
  }
  return static_cast<plan::DType>(info->planCode);
}

/// ModelInfo from the plan's `model` dictionary (missing fields stay at their defaults).
LogicalResult fillModelInfo(plan_ir::PlanOp planOp, plan::ModelInfo &info) {
  DictionaryAttr model = planOp.getModel();
  auto str = [&](StringRef key) {
    auto value = model.getAs<StringAttr>(key);
    return value ? value.str() : std::string();
  };
  auto integer = [&](StringRef key) -> int64_t {
    auto value = model.getAs<IntegerAttr>(key);
    return value ? value.getInt() : 0;
  };
  auto real = [&](StringRef key) {
    auto value = model.getAs<FloatAttr>(key);
    return value ? value.getValueAsDouble() : 0.0;
  };
  info.set_name(str("name"));
  info.set_benchmark(str("benchmark"));
  info.set_precision(str("precision"));
  info.set_global_batch_size(integer("global_batch_size"));
  info.set_micro_batch_size(integer("micro_batch_size"));
  info.set_seq_len(integer("seq_len"));
  info.set_gradient_accumulation_steps(integer("gradient_accumulation_steps"));
  info.set_eval_every_samples(integer("eval_every_samples"));
  info.set_eval_samples(integer("eval_samples"));
  info.set_target_metric(str("target_metric"));
  info.set_target_value(real("target_value"));
  info.set_optimizer(str("optimizer"));
  info.set_lr_schedule(str("lr_schedule"));
  info.set_base_lr(real("base_lr"));
  info.set_end_lr(real("end_lr"));
  info.set_warmup_steps(integer("warmup_steps"));
  info.set_decay_steps(integer("decay_steps"));
  info.set_max_steps(integer("max_steps"));
  info.set_eval_skip(integer("eval_skip"));
  if (auto layout = model.getAs<DenseI64ArrayAttr>("train_micro_batches")) {
    info.mutable_train_micro_batches()->Add(layout.asArrayRef().begin(), layout.asArrayRef().end());
  }
  if (auto mllog = model.getAs<DictionaryAttr>("mllog")) {
    for (NamedAttribute entry : mllog) {
      if (failed(encodeAttribute(planOp, entry, info.add_mllog()))) {
        return failure();
      }
    }
  }
  return success();
}

} // namespace

plan_ir::PlanOp getPlan(ModuleOp module) {
  auto plans = module.getOps<plan_ir::PlanOp>();
  return plans.empty() ? plan_ir::PlanOp() : *plans.begin();
}

FailureOr<plan::Plan> emitPlan(plan_ir::PlanOp planOp) {
  plan::Plan result;
  result.set_format_version(static_cast<uint32_t>(planOp.getFormatVersion()));
  result.set_producer("mlperfc " MLPERFC_VERSION_STRING);
  if (failed(fillModelInfo(planOp, *result.mutable_model()))) {
    return failure();
  }
  if (auto stage = planOp->getAttrOfType<IntegerAttr>("stage")) {
    result.set_pipeline_stage(stage.getInt());
  }
  if (std::optional<DictionaryAttr> mesh = planOp.getMesh()) {
    auto field = [&](StringRef name) {
      auto value = mesh->getAs<IntegerAttr>(name);
      return value ? value.getInt() : 0;
    };
    plan::Mesh *out = result.mutable_mesh();
    out->set_nodes(field("nodes"));
    out->set_gpus_per_node(field("gpus_per_node"));
    out->set_dp(field("dp"));
    out->set_tp(field("tp"));
    out->set_pp(field("pp"));
    out->set_vp(field("vp"));
    out->set_sequence_parallel(field("sequence_parallel") != 0);
    out->set_zero(field("zero"));
    out->set_hsdp(field("hsdp"));
  }
  Block &body = planOp.getBody().front();
  llvm::StringMap<plan::MemoryClass> classOf;
  for (auto arena : body.getOps<plan_ir::ArenaOp>()) {
    plan::MemoryClass cls = arena.getMemoryClass() == plan_ir::MemoryClass::persistent
                                ? plan::PERSISTENT
                                : plan::ACTIVATIONS;
    classOf[arena.getSymName()] = cls;
    plan::Arena *out = result.add_arenas();
    out->set_memory_class(cls);
    out->set_size(arena.getSize());
    out->set_lower_bound(arena.getLowerBound());
  }
  llvm::DenseMap<Attribute, uint32_t> idOf; // by name attribute: uniqued, a pointer hash
  for (auto buffer : body.getOps<plan_ir::BufferOp>()) {
    if (!buffer.getOffsetAttr()) {
      return buffer.emitError() << "plan-emit: buffer @" << buffer.getSymName()
                                << " has no offset: run plan-memory first";
    }
    auto tensor = cast<RankedTensorType>(buffer.getType());
    FailureOr<plan::DType> dtype = planDType(tensor.getElementType());
    if (failed(dtype)) {
      return buffer.emitError() << "plan-emit: no plan type for " << tensor;
    }
    uint32_t id = static_cast<uint32_t>(result.buffers_size());
    idOf[buffer.getSymNameAttr()] = id;
    plan::Buffer *out = result.add_buffers();
    out->set_id(id);
    out->set_name(buffer.getSymName().str());
    out->set_dtype(*dtype);
    for (int64_t dim : tensor.getShape()) {
      out->add_shape(dim);
    }
    out->set_memory_class(classOf.lookup(buffer.getArena()));
    out->set_offset(buffer.getOffsetAttr().getInt());
    out->set_size(buffer.getStorageBytes());
    if (buffer.getViewOf()) {
      out->set_view_of(idOf.lookup(buffer.getViewOfAttr().getAttr())); // views follow their source
    }
  }
  auto id = [&](Attribute ref) { return idOf.lookup(cast<FlatSymbolRefAttr>(ref).getAttr()); };
  // The train state, by checkpoint name: per parameter its value, then the state tensors
  // (optimizer state and tg-fp8's scaling state) in the plan's order.
  for (Operation &op : body) {
    if (auto parameter = dyn_cast<plan_ir::ParameterOp>(op)) {
      plan::StateTensor *out = result.add_state();
      out->set_name(parameter.getName().str());
      out->set_buffer(id(parameter.getValueAttr()));
      out->set_role(std::string(rt::role::kParam));
      out->set_param(parameter.getName().str());
      // --init-from slices full weights into the parameter; its state starts from it.
      if (parameter.getSplitAxis()) {
        out->set_split_axis(parameter.getSplitAxis()->str());
        out->set_split_dim(*parameter.getSplitDim());
        out->set_split_count(*parameter.getSplitCount());
        if (std::optional<llvm::ArrayRef<int64_t>> blocks = parameter.getSplitBlocks()) {
          for (int64_t block : *blocks) {
            out->add_split_blocks(block);
          }
        }
      }
      if (std::optional<ArrayAttr> parts = parameter.getCheckpointParts()) {
        for (Attribute part : *parts) {
          out->add_checkpoint_parts(cast<StringAttr>(part).str());
        }
        if (std::optional<llvm::ArrayRef<int64_t>> rows = parameter.getCheckpointPartRows()) {
          for (int64_t count : *rows) {
            out->add_checkpoint_part_rows(count);
          }
        }
      }
      // A ZeRO-3 value is a shard of the (tensor-parallel local) parameter.
      if (std::optional<llvm::ArrayRef<int64_t>> valueShardOf = parameter.getValueShardOf()) {
        out->set_shard_axis(parameter.getShardAxis()->str());
        out->set_shard_count(*parameter.getShardCount());
        for (int64_t dim : *valueShardOf) {
          out->add_unsharded_shape(dim);
        }
      }
    } else if (auto state = dyn_cast<plan_ir::StateOp>(op)) {
      plan::StateTensor *out = result.add_state();
      out->set_name(state.getName().str());
      out->set_buffer(id(state.getBufferAttr()));
      out->set_role(state.getRole().str());
      out->set_param(state.getParam().str());
      out->set_starts_as_param(state.getStartsAsParam());
      if (std::optional<StringRef> axis = state.getShardAxis()) {
        out->set_shard_axis(axis->str());
        out->set_shard_count(*state.getShardCount());
      }
    }
  }
  for (auto program : body.getOps<plan_ir::ProgramOp>()) {
    plan::Program *out = result.add_programs();
    out->set_name(program.getSymName().str());
    out->set_streams(static_cast<uint32_t>(program.getStreams()));
    for (Attribute ref : program.getInputs()) {
      out->add_inputs(id(ref));
    }
    for (Attribute ref : program.getOutputs()) {
      out->add_outputs(id(ref));
    }
    if (ArrayAttr roles = program.getInputRolesAttr()) {
      for (Attribute role : roles) {
        out->add_input_roles(cast<StringAttr>(role).str());
      }
    }
    if (ArrayAttr roles = program.getOutputRolesAttr()) {
      for (Attribute role : roles) {
        out->add_output_roles(cast<StringAttr>(role).str());
      }
    }
    for (auto command : program.getBody().front().getOps<plan_ir::CommandOp>()) {
      plan::Command *emitted = out->add_commands();
      emitted->set_op(command.getKernel().str());
      emitted->set_stream(static_cast<uint32_t>(command.getStream()));
      if (IntegerAttr event = command.getEventAttr()) {
        emitted->set_event(event.getInt());
      }
      if (IntegerAttr microBatch = command.getMicroBatchAttr()) {
        emitted->set_micro_batch(microBatch.getInt());
      }
      emitted->set_origin(commandOrigin(command.getLoc()));
      for (Attribute ref : command.getOperands()) {
        emitted->add_operands(id(ref));
      }
      for (Attribute ref : command.getResults()) {
        emitted->add_results(id(ref));
      }
      for (NamedAttribute attr : command.getKernelAttrs()) {
        if (failed(encodeAttribute(command, attr, emitted->add_attributes()))) {
          return failure();
        }
      }
    }
  }
  rt::Status status = rt::validatePlan(result);
  if (!status.isOk()) {
    return planOp.emitError() << "plan-emit produced an invalid plan (a compiler bug): "
                              << status.message();
  }
  return result;
}

} // namespace mlperf
