//===- PlanLoader.cpp - Read and validate execution plans ------*- C++ -*-===//

#include "runtime/plan/PlanLoader.h"

#include "runtime/plan/CommandTypes.h"
#include "runtime/plan/DTypes.h"
#include "runtime/plan/StepRoles.h"
#include "runtime/plan/StreamOrder.h"
#include "runtime/support/Checksum.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

namespace mlperf::rt {
namespace {

/// Where plan-memory starts every buffer that is not a view.
constexpr uint64_t kBufferAlignment = 256;

/// Unordered command pairs across a program's streams the loader checks for conflicts.
constexpr uint64_t kMaxConcurrentPairs = 50'000'000;

// Plans are small (the 405B train step is a few MB); a larger file is not a plan.
constexpr uint64_t kMaxPlanBytes = uint64_t{1} << 30;

Status invalid(const std::string &what) {
  return Status(StatusCode::kDataLoss, "invalid plan: " + what);
}

bool inArity(int count, int minimum, int maximum) {
  return count >= minimum && (maximum < 0 || count <= maximum);
}

} // namespace

// The one dtype table (runtime/plan/DTypes.h) speaks plan.proto's values.
static_assert(plan::F32 == 1 && plan::BF16 == 2 && plan::F8E4M3FN == 3 && plan::F8E5M2 == 4 &&
                  plan::I32 == 5 && plan::I64 == 6 && plan::F64 == 7,
              "runtime/plan/DTypes.cpp's planCode column must match plan.proto");

int64_t planDTypeBytes(plan::DType dtype) {
  const DTypeInfo *info = dtypeWithPlanCode(dtype);
  return info ? info->bytes : 0;
}

const plan::Attribute *findAttribute(const plan::Command &command, std::string_view name) {
  for (const plan::Attribute &attribute : command.attributes()) {
    if (attribute.name() == name) {
      return &attribute;
    }
  }
  return nullptr;
}

uint64_t commandBytes(const plan::Plan &plan, const plan::Command &command) {
  std::vector<uint32_t> touched(command.operands().begin(), command.operands().end());
  touched.insert(touched.end(), command.results().begin(), command.results().end());
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  uint64_t bytes = 0;
  for (uint32_t id : touched) {
    bytes += plan.buffers(id).size();
  }
  return bytes;
}

namespace {
/// The part of a plan its fingerprint covers: what it computes.
plan::Plan computedPart(const plan::Plan &plan) {
  plan::Plan computed = plan;
  computed.clear_producer();
  computed.clear_compile_options(); // how it was compiled, not what it computes
  for (plan::Program &program : *computed.mutable_programs()) {
    for (plan::Command &command : *program.mutable_commands()) {
      command.clear_origin(); // where in the declaration, not what
    }
  }
  return computed;
}
} // namespace

std::string planDifference(const plan::Plan &expected, const plan::Plan &found) {
  std::string report;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&report);
  if (differencer.Compare(computedPart(expected), computedPart(found))) {
    return "";
  }
  size_t lines = std::count(report.begin(), report.end(), '\n');
  std::string first = report.substr(0, report.find('\n'));
  return first + (lines > 1 ? " (and " + std::to_string(lines - 1) + " more differences)" : "");
}

std::string planFingerprint(const plan::Plan &plan) {
  plan::Plan computed = computedPart(plan);
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    computed.SerializeToCodedStream(&coded);
  }
  Checksum sum;
  sum.add(bytes.data(), bytes.size());
  return sum.hex();
}

namespace {

/// The state tensors against the programs that start and train them: every buffer the train
/// step reads as state, and every buffer init_optimizer starts, is a state tensor of that
/// role (or a checkpoint would not hold it); every optimizer state tensor is one the train
/// step reads (an unknown role would be saved and loaded but never trained); no parameter has
/// one role twice. Plans without a train step (test fixtures of single programs) have
/// nothing to check.
Status checkStateRoles(const plan::Plan &p) {
  std::map<uint32_t, const plan::StateTensor *> stateOfBuffer;
  std::map<std::pair<std::string, std::string>, const plan::StateTensor *> byRole;
  for (const plan::StateTensor &state : p.state()) {
    stateOfBuffer[state.buffer()] = &state;
    auto [it, added] = byRole.emplace(std::pair{state.role(), state.param()}, &state);
    if (!added) {
      return invalid("state tensors '" + it->second->name() + "' and '" + state.name() +
                     "' are both the " + state.role() + " of parameter '" + state.param() + "'");
    }
  }
  // State that starts as its parameter's value (an f32 master) needs that parameter.
  for (const plan::StateTensor &state : p.state()) {
    if (state.starts_as_param() && (state.role() == role::kParam ||
                                    !byRole.count({std::string(role::kParam), state.param()}))) {
      return invalid(
          "state tensor '" + state.name() + "' starts as parameter '" + state.param() +
          "', which " +
          (state.role() == role::kParam ? std::string("it is itself") : "the plan does not hold"));
    }
  }
  std::set<uint32_t> readAsState;
  for (const plan::Program &program : p.programs()) {
    const bool trainStep = program.name() == "train_step";
    if (!trainStep && program.name() != "init_optimizer") {
      continue;
    }
    // train_step: its inputs; init_optimizer: what it starts, its outputs.
    const auto &ids = trainStep ? program.inputs() : program.outputs();
    const auto &roles = trainStep ? program.input_roles() : program.output_roles();
    for (int i = 0; i < ids.size() && i < roles.size(); ++i) {
      const std::string &expected = roles[i];
      if (expected == role::kTokens || expected == role::kLabels || expected == role::kStep ||
          expected == role::kSeed || expected == role::kDropoutKey) {
        continue; // what the runtime writes, not train state
      }
      auto state = stateOfBuffer.find(ids[i]);
      const std::string buffer = ids[i] < static_cast<uint32_t>(p.buffers_size())
                                     ? "'" + p.buffers(ids[i]).name() + "'"
                                     : std::to_string(ids[i]);
      if (state == stateOfBuffer.end()) {
        return invalid(program.name() + (trainStep ? " reads buffer " : " starts buffer ") +
                       buffer + " as " + expected +
                       " state, but the plan records no state tensor for it (a checkpoint "
                       "would not hold it)");
      }
      if (state->second->role() != expected) {
        return invalid("state tensor '" + state->second->name() + "' has role '" +
                       state->second->role() + "' but " + program.name() +
                       (trainStep ? " reads" : " starts") + " its buffer as '" + expected + "'");
      }
      if (trainStep) {
        readAsState.insert(ids[i]);
      }
    }
    if (trainStep && !roles.empty()) {
      for (const plan::StateTensor &state : p.state()) {
        if (state.role() != role::kParam && !readAsState.count(state.buffer())) {
          return invalid("state tensor '" + state.name() + "' has role '" + state.role() +
                         "', which the plan's train step does not read as its state");
        }
      }
    }
  }
  return Status::ok();
}

} // namespace

namespace {

/// The format version, and one value per MLPerf log key.
Status validateHeader(const plan::Plan &p) {
  if (p.format_version() != kPlanFormatVersion) {
    return Status(StatusCode::kInvalidArgument,
                  "plan format version " + std::to_string(p.format_version()) +
                      ", this runtime reads version " + std::to_string(kPlanFormatVersion) +
                      ": recompile the model with a matching mlperfc (plan written by '" +
                      p.producer() + "')");
  }
  // mlperf-run logs each key once; the checker refuses a key logged twice.
  for (int a = 1; a < p.model().mllog_size(); ++a) {
    for (int b = 0; b < a; ++b) {
      if (p.model().mllog(a).name() == p.model().mllog(b).name()) {
        return invalid("the model record has log key '" + p.model().mllog(a).name() + "' twice");
      }
    }
  }
  return Status::ok();
}

/// The arenas, the mesh and stage, and every buffer: its dtype, shape and size, its place in
/// its arena, views of earlier buffers only, alignment, and persistent buffers that do not
/// share bytes; arenas no larger than their buffers need.
Status validateMemory(const plan::Plan &p) {
  uint64_t arenaSize[3] = {0, 0, 0};
  bool hasArena[3] = {false, false, false};
  for (const plan::Arena &arena : p.arenas()) {
    int cls = arena.memory_class();
    if (cls != plan::PERSISTENT && cls != plan::ACTIVATIONS) {
      return invalid("an arena has an unknown memory class");
    }
    if (hasArena[cls]) {
      return invalid("two arenas for memory class " + std::to_string(cls));
    }
    hasArena[cls] = true;
    arenaSize[cls] = arena.size();
  }
  MeshShape mesh = planMesh(p);
  if (p.has_mesh()) {
    for (int64_t value : {mesh.nodes, mesh.gpusPerNode, mesh.dp, mesh.tp, mesh.pp, mesh.vp}) {
      if (value < 1 || value > (int64_t(1) << 20)) {
        return invalid("the plan's mesh has a degree of " + std::to_string(value));
      }
    }
    if (mesh.dp * mesh.tp * mesh.pp != mesh.worldSize() || mesh.zero < 0 || mesh.zero > 3 ||
        (mesh.hsdp != 0 &&
         (mesh.zero == 0 || mesh.hsdp < 2 || mesh.hsdp >= mesh.dp || mesh.dp % mesh.hsdp != 0))) {
      return invalid("the plan's mesh (" + mesh.describe() + ") is inconsistent");
    }
  }
  if (p.pipeline_stage() < 0 || p.pipeline_stage() >= mesh.pp) {
    return invalid("the plan is for pipeline stage " + std::to_string(p.pipeline_stage()) +
                   " of a mesh with pp=" + std::to_string(mesh.pp));
  }
  const int64_t buffers = p.buffers_size();
  for (int64_t i = 0; i < buffers; ++i) {
    const plan::Buffer &b = p.buffers(static_cast<int>(i));
    std::string where = "buffer " + std::to_string(i) + " ('" + b.name() + "')";
    if (b.id() != i) {
      return invalid(where + " has id " + std::to_string(b.id()));
    }
    int64_t elementBytes = planDTypeBytes(b.dtype());
    if (elementBytes == 0) {
      return invalid(where + " has no valid dtype");
    }
    uint64_t elements = 1;
    for (int64_t dim : b.shape()) {
      // Empty dims are rejected too: no plan needs them and kernels divide by row sizes.
      if (dim <= 0 || __builtin_mul_overflow(elements, static_cast<uint64_t>(dim), &elements)) {
        return invalid(where + " has an invalid shape (every dim must be positive)");
      }
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(elementBytes), &bytes) ||
        bytes != b.size()) {
      return invalid(where + " has size " + std::to_string(b.size()) + " but its shape needs " +
                     std::to_string(bytes) + " bytes");
    }
    int cls = b.memory_class();
    if ((cls != plan::PERSISTENT && cls != plan::ACTIVATIONS) || !hasArena[cls]) {
      return invalid(where + " is in a memory class without an arena");
    }
    if (b.offset() > arenaSize[cls] || b.size() > arenaSize[cls] - b.offset()) {
      return invalid(where + " at offset " + std::to_string(b.offset()) + " (" +
                     std::to_string(b.size()) + " bytes) lies outside its " +
                     std::to_string(arenaSize[cls]) + "-byte arena");
    }
  }
  // Persistent bytes hold state for the whole run: only a declared view may share them, and
  // each buffer starts where plan-memory puts it (aligned), so a plan that moves one buffer
  // onto another's bytes is refused instead of training on wrong numbers.
  std::vector<std::pair<uint64_t, int64_t>> persistentSlots; // (offset, buffer)
  for (int64_t i = 0; i < buffers; ++i) {
    const plan::Buffer &b = p.buffers(static_cast<int>(i));
    std::string where = "buffer " + std::to_string(i) + " ('" + b.name() + "')";
    if (b.has_view_of()) {
      const plan::Buffer *source = b.view_of() < static_cast<uint64_t>(i)
                                       ? &p.buffers(static_cast<int>(b.view_of()))
                                       : nullptr;
      if (!source || source->has_view_of() || source->memory_class() != b.memory_class() ||
          source->offset() != b.offset() || source->size() < b.size()) {
        return invalid(where + " is a view of buffer " + std::to_string(b.view_of()) +
                       ", which is no earlier buffer holding its bytes");
      }
      continue;
    }
    if (b.offset() % kBufferAlignment != 0) {
      return invalid(where + " at offset " + std::to_string(b.offset()) + " is not " +
                     std::to_string(kBufferAlignment) + "-byte aligned");
    }
    if (b.memory_class() == plan::PERSISTENT) {
      persistentSlots.push_back({b.offset(), i});
    }
  }
  // Arenas as large as their buffers need (plus the last slot's alignment), not more: a
  // hostile size would only make the backend allocate what no buffer uses.
  uint64_t needed[3] = {0, 0, 0};
  for (const plan::Buffer &b : p.buffers()) {
    needed[b.memory_class()] = std::max<uint64_t>(needed[b.memory_class()], b.offset() + b.size());
  }
  for (int cls : {plan::PERSISTENT, plan::ACTIVATIONS}) {
    uint64_t bound = (needed[cls] + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    if (hasArena[cls] && arenaSize[cls] > bound) {
      return invalid("the arena of memory class " + std::to_string(cls) + " has " +
                     std::to_string(arenaSize[cls]) + " bytes, but its buffers need " +
                     std::to_string(bound));
    }
  }
  std::sort(persistentSlots.begin(), persistentSlots.end());
  for (size_t k = 1; k < persistentSlots.size(); ++k) {
    const plan::Buffer &before = p.buffers(static_cast<int>(persistentSlots[k - 1].second));
    const plan::Buffer &after = p.buffers(static_cast<int>(persistentSlots[k].second));
    if (before.offset() + before.size() > after.offset()) {
      return invalid("persistent buffers '" + before.name() + "' and '" + after.name() +
                     "' share bytes, and neither is a view of the other");
    }
  }
  return Status::ok();
}

/// One program: unique name, existing inputs and outputs with one role each, at most two
/// streams, and every command: an op this runtime runs with its arity, one value per
/// attribute, operands defined before they are read, types its kernel takes, collectives on
/// the communication stream, event commands with events, calls of earlier programs only;
/// then its streams ordered (events) wherever two commands touch the same bytes.
Status validateProgram(const plan::Plan &p, const plan::Program &program,
                       std::set<std::string> &programNames,
                       std::map<std::string, const plan::Program *> &earlierPrograms) {
  const int64_t buffers = p.buffers_size();
  auto validId = [&](uint32_t id) { return static_cast<int64_t>(id) < buffers; };
  // The buffer a view aliases (itself for a plain buffer): writing one defines the other.
  auto rootOf = [&](uint32_t id) {
    const plan::Buffer &b = p.buffers(id);
    return b.has_view_of() && validId(b.view_of()) ? b.view_of() : id;
  };
  if (!programNames.insert(program.name()).second) {
    return invalid("program '" + program.name() + "' appears twice");
  }
  // Def before use: a command reads persistent state, the program's inputs, or an
  // activation an earlier command of the program wrote (never stale scratch memory).
  std::vector<char> defined(static_cast<size_t>(buffers), 0);
  auto define = [&](uint32_t id) {
    if (validId(id)) {
      defined[id] = 1;
      defined[rootOf(id)] = 1;
    }
  };
  auto isDefined = [&](uint32_t id) {
    return p.buffers(id).memory_class() == plan::PERSISTENT || defined[id] || defined[rootOf(id)];
  };
  for (uint32_t id : program.inputs()) {
    define(id);
  }
  earlierPrograms[program.name()] = &program;
  for (uint32_t id : program.inputs()) {
    if (!validId(id)) {
      return invalid("program '" + program.name() + "' reads missing buffer " + std::to_string(id));
    }
  }
  for (uint32_t id : program.outputs()) {
    if (!validId(id)) {
      return invalid("program '" + program.name() + "' writes missing buffer " +
                     std::to_string(id));
    }
  }
  if ((program.input_roles_size() != 0 && program.input_roles_size() != program.inputs_size()) ||
      (program.output_roles_size() != 0 && program.output_roles_size() != program.outputs_size())) {
    return invalid("program '" + program.name() + "' does not give one role per input and output");
  }
  uint32_t streams = std::max<uint32_t>(program.streams(), 1);
  if (streams > 2) {
    return invalid("program '" + program.name() + "' has " + std::to_string(streams) +
                   " streams; this runtime has a compute and a communication stream");
  }
  std::vector<StreamCommand> order;
  for (int c = 0; c < program.commands_size(); ++c) {
    const plan::Command &command = program.commands(c);
    std::string where =
        "command " + std::to_string(c) + " ('" + command.op() + "') of '" + program.name() + "'";
    const PlanOpSignature *signature = findPlanOp(command.op());
    if (!signature) {
      return invalid(where + " is not an op this runtime executes");
    }
    if (!inArity(command.operands_size(), signature->minOperands, signature->maxOperands) ||
        !inArity(command.results_size(), signature->minResults, signature->maxResults)) {
      return invalid(where + " has " + std::to_string(command.operands_size()) + " operands and " +
                     std::to_string(command.results_size()) + " results");
    }
    // The backend tells a kernel this rank's place on a mesh axis under these names; a plan
    // that carried them would pass a kernel another rank's part.
    for (const plan::Attribute &attribute : command.attributes()) {
      const std::string &name = attribute.name();
      if (name == "shard_index" || name == "shard_count" || name == "part_index") {
        return invalid(where + " carries attribute '" + name +
                       "', which the backend sets from the rank's place on the mesh");
      }
      if (attribute.value_case() == plan::Attribute::VALUE_NOT_SET) {
        return invalid(where + " has attribute '" + name + "' without a value");
      }
    }
    // One value per attribute name: with two, which one a kernel reads is undefined.
    for (int a = 1; a < command.attributes_size(); ++a) {
      for (int b = 0; b < a; ++b) {
        if (command.attributes(a).name() == command.attributes(b).name()) {
          return invalid(where + " has attribute '" + command.attributes(a).name() + "' twice");
        }
      }
    }
    for (uint32_t id : command.operands()) {
      if (!validId(id)) {
        return invalid(where + " reads missing buffer " + std::to_string(id));
      }
      if (!isDefined(id)) {
        return invalid(where + " reads buffer '" + p.buffers(id).name() +
                       "' before any command of the program writes it");
      }
    }
    for (uint32_t id : command.results()) {
      if (!validId(id)) {
        return invalid(where + " writes missing buffer " + std::to_string(id));
      }
      define(id);
    }
    std::string problem = checkCommandTypes(p, command);
    if (!problem.empty()) {
      return invalid(where + ": " + problem);
    }
    if (streams == 2 && command.stream() != 1 && communicates(command.op())) {
      return invalid(where + " communicates with other ranks on stream " +
                     std::to_string(command.stream()) +
                     "; in a program with a communication stream only stream 1 does");
    }
    // What the stream rules need: kind, stream, event and the bytes it touches.
    StreamCommand ordered;
    ordered.stream = command.stream();
    ordered.kind = StreamCommand::kindOf(command.op());
    bool isEvent =
        ordered.kind == StreamCommand::Kind::kRecord || ordered.kind == StreamCommand::Kind::kWait;
    if (command.has_event() != isEvent) {
      return invalid(where +
                     (isEvent ? " needs an event" : " is no event command but names an event"));
    }
    ordered.event = isEvent ? command.event() : -1;
    auto bytes = [&](uint32_t id) {
      const plan::Buffer &b = p.buffers(id);
      return ByteRange{b.memory_class(), b.offset(), b.offset() + b.size(), id};
    };
    for (uint32_t id : command.operands()) {
      ordered.reads.push_back(bytes(id));
    }
    for (uint32_t id : command.results()) {
      ordered.writes.push_back(bytes(id));
    }
    order.push_back(std::move(ordered));
    if (command.op() == "call") {
      // Only earlier programs: the call graph has no cycle, and memory planning placed
      // every callee before its callers.
      std::string callee;
      for (const plan::Attribute &a : command.attributes()) {
        if (a.name() == "program") {
          callee = a.s(); // checkCommandTypes made sure it is a string
        }
      }
      if (callee == program.name() || !programNames.count(callee)) {
        return invalid(where + " calls program '" + callee +
                       "', which the plan does not have before it");
      }
      for (uint32_t id : earlierPrograms.at(callee)->outputs()) {
        define(id); // the callee's results, read by the caller after the call
      }
    }
  }
  StreamOrder streamOrder;
  auto describe = [&](size_t c) {
    return "command " + std::to_string(c) + " ('" + program.commands(c).op() + "') of '" +
           program.name() + "'";
  };
  if (auto broken = StreamOrder::analyze(order, streams, streamOrder)) {
    return invalid(describe(broken->command) + " " + broken->message);
  }
  // A hostile plan could leave every pair of its streams' commands unordered.
  if (streamOrder.concurrentPairs() > kMaxConcurrentPairs) {
    return invalid("program '" + program.name() + "' leaves " +
                   std::to_string(streamOrder.concurrentPairs()) +
                   " pairs of commands of its two streams unordered, more than this runtime "
                   "checks (" +
                   std::to_string(kMaxConcurrentPairs) + "): add events");
  }
  if (auto conflict = streamOrder.findConflict(order)) {
    auto access = [&](bool writes, const ByteRange &range) {
      return std::string(writes ? "writes" : "reads") + " buffer '" +
             p.buffers(range.buffer).name() + "'";
    };
    return invalid(describe(conflict->second) + " on stream " +
                   std::to_string(program.commands(conflict->second).stream()) + " " +
                   access(conflict->secondWrites, conflict->secondRange) + " while " +
                   describe(conflict->first) + " on stream " +
                   std::to_string(program.commands(conflict->first).stream()) + " " +
                   access(conflict->firstWrites, conflict->firstRange) +
                   ", and no event orders them (a missing event_wait)");
  }
  return Status::ok();
}

/// The state tensors: each names a persistent buffer of its own once; sharded (ZeRO) and
/// split (tensor-parallel) ones along axes the mesh has, with shapes that fit.
Status validateStateTensors(const plan::Plan &p) {
  MeshShape mesh = planMesh(p);
  auto validId = [&](uint32_t id) { return static_cast<int64_t>(id) < p.buffers_size(); };
  std::map<std::string, const plan::StateTensor *> paramValues; // role "param", by parameter
  std::set<std::string> stateNames;
  std::set<uint32_t> stateBuffers;
  for (const plan::StateTensor &state : p.state()) {
    if (!validId(state.buffer())) {
      return invalid("state tensor '" + state.name() + "' refers to missing buffer " +
                     std::to_string(state.buffer()));
    }
    const plan::Buffer &buffer = p.buffers(state.buffer());
    if (state.name().empty() || !stateNames.insert(state.name()).second ||
        buffer.memory_class() != plan::PERSISTENT || buffer.has_view_of()) {
      return invalid("state tensor '" + state.name() +
                     "' is unnamed, named twice or not in persistent memory of its own");
    }
    if (!stateBuffers.insert(state.buffer()).second) {
      return invalid("state tensor '" + state.name() + "' shares buffer '" + buffer.name() +
                     "' with another state tensor");
    }
    if (state.role() == "param") {
      paramValues[state.param()] = &state;
    }
    if (state.unsharded_shape_size() > 0) {
      int64_t elements = 1;
      bool valid = state.role() == "param" && state.shard_count() > 1;
      for (int64_t dim : state.unsharded_shape()) {
        valid = valid && dim > 0 && !__builtin_mul_overflow(elements, dim, &elements);
      }
      if (!valid || buffer.shape_size() != 1 || elements % state.shard_count() != 0 ||
          buffer.shape(0) != elements / state.shard_count()) {
        return invalid("state tensor '" + state.name() +
                       "' has an unsharded shape but is not a parameter's 1/" +
                       std::to_string(state.shard_count()) + " shard of that shape");
      }
    }
    std::vector<int64_t> localShape = stateLocalShape(p, state);
    if (state.split_count() > 1) {
      MeshAxis axis;
      if (!parseMeshAxis(state.split_axis(), axis) || !mesh.hasAxis(axis) ||
          state.split_count() != mesh.axisSize(axis) || state.split_dim() < 0 ||
          state.split_dim() >= static_cast<int64_t>(localShape.size())) {
        return invalid("state tensor '" + state.name() + "' is split " +
                       std::to_string(state.split_count()) + " ways along dim " +
                       std::to_string(state.split_dim()) + " over axis '" + state.split_axis() +
                       "', which the mesh or its shape does not have");
      }
      int64_t total = 0;
      for (int64_t block : state.split_blocks()) {
        if (block <= 0 || block % state.split_count() != 0) {
          return invalid("state tensor '" + state.name() + "' has a split block of " +
                         std::to_string(block) + ", not a positive multiple of its " +
                         std::to_string(state.split_count()) + " parts");
        }
        total += block;
      }
      int64_t fullDim = localShape[state.split_dim()] * state.split_count();
      if (state.split_blocks_size() > 0 && total != fullDim) {
        return invalid("state tensor '" + state.name() + "' has split blocks adding up to " +
                       std::to_string(total) + ", not to its full dim of " +
                       std::to_string(fullDim));
      }
    } else if (state.split_blocks_size() > 0) {
      return invalid("state tensor '" + state.name() + "' has split blocks but is not split");
    }
  }
  for (const plan::StateTensor &state : p.state()) {
    if (state.shard_count() <= 1) {
      continue;
    }
    MeshAxis axis;
    if (!parseMeshAxis(state.shard_axis(), axis) || !mesh.hasAxis(axis) ||
        state.shard_count() != mesh.axisSize(axis)) {
      return invalid("state tensor '" + state.name() + "' is sharded " +
                     std::to_string(state.shard_count()) + " ways over axis '" +
                     state.shard_axis() + "', which the mesh does not have");
    }
    auto value = paramValues.find(state.param());
    int64_t whole = 0;
    if (value != paramValues.end()) {
      whole = 1;
      for (int64_t d : stateLocalShape(p, *value->second)) {
        whole *= d;
      }
    }
    const plan::Buffer &shard = p.buffers(state.buffer());
    if (whole == 0 || whole % state.shard_count() != 0 || shard.shape_size() != 1 ||
        shard.shape(0) != whole / state.shard_count()) {
      return invalid("state tensor '" + state.name() + "' is not a 1/" +
                     std::to_string(state.shard_count()) + " shard of parameter '" + state.param() +
                     "'");
    }
  }
  return Status::ok();
}

} // namespace

Status validatePlan(const plan::Plan &p) {
  MLPERF_RETURN_IF_ERROR(validateHeader(p));
  MLPERF_RETURN_IF_ERROR(validateMemory(p));
  std::set<std::string> programNames;
  std::map<std::string, const plan::Program *> earlierPrograms; // for the calls' outputs
  for (const plan::Program &program : p.programs()) {
    MLPERF_RETURN_IF_ERROR(validateProgram(p, program, programNames, earlierPrograms));
  }
  MLPERF_RETURN_IF_ERROR(validateStateTensors(p));
  return checkStateRoles(p);
}

namespace {

/// One point-to-point message of a program, as its sender or receiver sees it.
struct Message {
  int64_t peer = 0, tag = 0, elements = 0;
  std::string where; // "command N ('send') of 'train_step'"
};

/// The pp sends and receives of program `index` in execution order, following calls; each
/// program's own list is computed once, so calls fanning out cannot blow up the work.
struct Transfers {
  std::vector<Message> sends, receives;
  bool tooMany = false; // more than kMaxTransfers: refused
};
constexpr size_t kMaxTransfers = size_t{1} << 24;
const Transfers &collectTransfers(const plan::Plan &plan, int64_t stage, int index,
                                  std::map<int, Transfers> &memo) {
  if (auto done = memo.find(index); done != memo.end()) {
    return done->second;
  }
  Transfers transfers;
  std::vector<Message> &sends = transfers.sends, &receives = transfers.receives;
  const plan::Program &program = plan.programs(index);
  for (int c = 0; c < program.commands_size(); ++c) {
    const plan::Command &command = program.commands(c);
    std::string axis, callee;
    int64_t shift = 0, tag = 0;
    for (const plan::Attribute &a : command.attributes()) {
      if (a.name() == "axis") {
        axis = a.s();
      } else if (a.name() == "shift") {
        shift = a.i();
      } else if (a.name() == "tag") {
        tag = a.i();
      } else if (a.name() == "program") {
        callee = a.s();
      }
    }
    if (command.op() == "call") {
      for (int p = 0; p < index; ++p) { // the loader allows earlier programs only
        if (plan.programs(p).name() == callee) {
          const Transfers &inner = collectTransfers(plan, stage, p, memo);
          transfers.tooMany |= inner.tooMany || sends.size() + inner.sends.size() +
                                                        receives.size() + inner.receives.size() >
                                                    kMaxTransfers;
          if (!transfers.tooMany) {
            sends.insert(sends.end(), inner.sends.begin(), inner.sends.end());
            receives.insert(receives.end(), inner.receives.begin(), inner.receives.end());
          }
        }
      }
      continue;
    }
    if ((command.op() != "send" && command.op() != "recv") || axis != "pp") {
      continue;
    }
    uint32_t id = command.op() == "send" ? command.operands(0) : command.results(0);
    int64_t elements = 1;
    for (int64_t d : plan.buffers(id).shape()) {
      elements *= d;
    }
    Message message{stage + shift, tag, elements,
                    "command " + std::to_string(c) + " ('" + command.op() + "') of '" +
                        program.name() + "'"};
    (command.op() == "send" ? sends : receives).push_back(std::move(message));
  }
  return memo[index] = std::move(transfers);
}

} // namespace

Status checkStageTransfers(const std::vector<plan::Plan> &stages) {
  int64_t count = static_cast<int64_t>(stages.size());
  for (const char *name : {"train_step", "eval_step"}) {
    // Per stage, its messages in order; then per (sender, receiver, tag) the two sequences.
    std::vector<std::vector<Message>> sends(count), receives(count);
    for (int64_t k = 0; k < count; ++k) {
      for (int i = 0; i < stages[k].programs_size(); ++i) {
        if (stages[k].programs(i).name() == name) {
          std::map<int, Transfers> memo;
          const Transfers &all = collectTransfers(stages[k], k, i, memo);
          if (all.tooMany) {
            return Status(StatusCode::kInvalidArgument,
                          "stage " + std::to_string(k) + "'s " + name + " makes more than " +
                              std::to_string(kMaxTransfers) + " transfers (calls fanning out)");
          }
          sends[k] = all.sends;
          receives[k] = all.receives;
        }
      }
    }
    auto describe = [&](int64_t stage, const Message &m, bool send) {
      return "stage " + std::to_string(stage) + "'s " + m.where + " " +
             (send ? "sends " : "receives ") + std::to_string(m.elements) + " values " +
             (send ? "to" : "from") + " stage " + std::to_string(m.peer) + " with tag " +
             std::to_string(m.tag);
    };
    for (int64_t a = 0; a < count; ++a) {
      for (const Message &m : sends[a]) {
        if (m.peer < 0 || m.peer >= count) {
          return Status(StatusCode::kInvalidArgument,
                        describe(a, m, true) + ", which the pipeline does not have");
        }
      }
      for (const Message &m : receives[a]) {
        if (m.peer < 0 || m.peer >= count) {
          return Status(StatusCode::kInvalidArgument,
                        describe(a, m, false) + ", which the pipeline does not have");
        }
      }
    }
    for (int64_t a = 0; a < count; ++a) {
      for (int64_t b = 0; b < count; ++b) {
        std::map<int64_t, std::vector<const Message *>> sent, received; // by tag
        for (const Message &m : sends[a]) {
          if (m.peer == b) {
            sent[m.tag].push_back(&m);
          }
        }
        for (const Message &m : receives[b]) {
          if (m.peer == a) {
            received[m.tag].push_back(&m);
          }
        }
        for (auto &[tag, out] : sent) {
          const std::vector<const Message *> &in = received[tag];
          for (size_t i = 0; i < out.size(); ++i) {
            if (i >= in.size()) {
              return Status(StatusCode::kInvalidArgument,
                            describe(a, *out[i], true) + ", which stage " + std::to_string(b) +
                                " never receives (message " + std::to_string(i + 1) +
                                " of that tag)");
            }
            if (in[i]->elements != out[i]->elements) {
              return Status(StatusCode::kInvalidArgument,
                            describe(a, *out[i], true) + ", but its receive, " +
                                describe(b, *in[i], false) + ", has another size");
            }
          }
        }
        for (auto &[tag, in] : received) {
          size_t matched = sent.count(tag) ? sent[tag].size() : 0;
          if (in.size() > matched) {
            return Status(StatusCode::kInvalidArgument, describe(b, *in[matched], false) +
                                                            ", which stage " + std::to_string(a) +
                                                            " never sends");
          }
        }
      }
    }
  }
  return Status::ok();
}

int64_t parameterCount(const plan::Plan &plan) {
  return std::count_if(plan.state().begin(), plan.state().end(),
                       [](const plan::StateTensor &state) { return state.role() == "param"; });
}

std::vector<int64_t> stateLocalShape(const plan::Plan &plan, const plan::StateTensor &state) {
  if (state.unsharded_shape_size() > 0) {
    return {state.unsharded_shape().begin(), state.unsharded_shape().end()};
  }
  const plan::Buffer &buffer = plan.buffers(state.buffer());
  return {buffer.shape().begin(), buffer.shape().end()};
}

std::string stagePlanPath(const std::string &path, int64_t stage) {
  std::string stem = path;
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".pb") == 0) {
    stem.resize(stem.size() - 3);
  }
  return stem + ".stage" + std::to_string(stage) + ".pb";
}

MeshShape planMesh(const plan::Plan &plan) {
  MeshShape mesh;
  if (!plan.has_mesh()) {
    return mesh;
  }
  const plan::Mesh &m = plan.mesh();
  mesh.nodes = m.nodes();
  mesh.gpusPerNode = m.gpus_per_node();
  mesh.dp = m.dp();
  mesh.tp = m.tp();
  mesh.pp = m.pp();
  mesh.vp = m.vp();
  mesh.sequenceParallel = m.sequence_parallel();
  mesh.zero = m.zero();
  mesh.hsdp = m.hsdp();
  return mesh;
}

namespace {
/// What libprotobuf says while parsing (invalid UTF-8 in a string field, ...), kept for our
/// error instead of printed raw to stderr. Parsing happens once per file, on one thread.
std::string protobufComplaint;
void keepProtobufComplaint(google::protobuf::LogLevel, const char *, int,
                           const std::string &message) {
  if (protobufComplaint.empty()) {
    protobufComplaint = message.substr(0, message.find_last_not_of(' ') + 1);
  }
}
} // namespace

Status loadPlan(const std::string &path, plan::Plan &plan) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return Status(StatusCode::kNotFound, "cannot open plan " + path + ": " + std::strerror(errno));
  }
  std::streamoff size = in.tellg();
  if (size < 0 || static_cast<uint64_t>(size) > kMaxPlanBytes) {
    return Status(StatusCode::kDataLoss,
                  path + " is not a plan (size " + std::to_string(size) + " bytes)");
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  if (!in) {
    return Status(StatusCode::kDataLoss, path + ": cannot read the plan file");
  }
  // The self-check first: a damaged byte anywhere is refused before anything parses it.
  constexpr size_t kSignature = 5;                       // the field's tag and its four bytes
  constexpr unsigned char kSignatureTag = (15 << 3) | 5; // file_crc32, fixed32
  if (bytes.size() < kSignature ||
      static_cast<unsigned char>(bytes[bytes.size() - kSignature]) != kSignatureTag) {
    return Status(StatusCode::kDataLoss,
                  path + " carries no plan self-check (its last bytes are not the CRC-32 that "
                         "mlperfc compile writes): not a plan of this mlperfc, or truncated");
  }
  uint32_t recorded = 0;
  for (size_t i = 0; i < 4; ++i) {
    recorded |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[bytes.size() - 4 + i]))
                << (8 * i);
  }
  Checksum sum;
  sum.add(bytes.data(), bytes.size() - kSignature);
  if (sum.value() != recorded) {
    char text[96];
    std::snprintf(text, sizeof text, "its CRC-32 is %08x, its bytes give %08x", recorded,
                  sum.value());
    return Status(StatusCode::kDataLoss,
                  path + " is damaged or was edited (" + text +
                      "): recompile it; a deliberate edit must be re-signed (docs/plan-format.md)");
  }
  Status status = parsePlan(bytes, path, plan);
  plan.clear_file_crc32();
  return status;
}

std::string signPlan(const plan::Plan &plan) {
  std::string bytes;
  if (plan.file_crc32() == 0) {
    plan.SerializeToString(&bytes); // no copy: a 405B stage's plan has 18,000 commands
  } else {
    plan::Plan unsigned_ = plan;
    unsigned_.clear_file_crc32();
    unsigned_.SerializeToString(&bytes);
  }
  Checksum sum;
  sum.add(bytes.data(), bytes.size());
  uint32_t value = sum.value();
  bytes.push_back(static_cast<char>((15 << 3) | 5));
  for (int i = 0; i < 4; ++i) {
    bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
  return bytes;
}

Status parsePlan(const std::string &bytes, const std::string &path, plan::Plan &plan) {
  protobufComplaint.clear();
  google::protobuf::LogHandler *previous = google::protobuf::SetLogHandler(keepProtobufComplaint);
  bool parsed = plan.ParseFromString(bytes);
  google::protobuf::SetLogHandler(previous);
  if (!parsed) {
    return Status(StatusCode::kDataLoss,
                  path + " is not a valid plan file (" +
                      (protobufComplaint.empty()
                           ? std::string("truncated, or not written by mlperfc")
                           : protobufComplaint) +
                      ")");
  }
  Status status = validatePlan(plan);
  if (!status.isOk()) {
    return Status(status.code(), path + ": " + status.message());
  }
  return Status::ok();
}

} // namespace mlperf::rt
