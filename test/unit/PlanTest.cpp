//===- PlanTest.cpp - Plan validation rejects malformed plans ------------===//

#include "runtime/plan/CommandTypes.h"
#include "runtime/plan/PlanBuilding.h"
#include "runtime/plan/PlanLoader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <unistd.h>

using namespace mlperf;

namespace {

/// A small valid plan: two f32[4] buffers (persistent, activations) and one scale command.
plan::Plan validPlan() {
  plan::Plan p;
  p.set_format_version(rt::kPlanFormatVersion);
  p.set_producer("test");
  for (auto [cls, offset] : {std::pair{plan::PERSISTENT, 0}, std::pair{plan::ACTIVATIONS, 0}}) {
    plan::Buffer *b = p.add_buffers();
    b->set_id(p.buffers_size() - 1);
    b->set_name("b");
    b->set_dtype(plan::F32);
    b->add_shape(4);
    b->set_memory_class(cls);
    b->set_offset(offset);
    b->set_size(16);
  }
  for (auto cls : {plan::PERSISTENT, plan::ACTIVATIONS}) {
    plan::Arena *arena = p.add_arenas();
    arena->set_memory_class(cls);
    arena->set_size(256);
  }
  plan::Program *program = p.add_programs();
  program->set_name("forward");
  program->add_inputs(0);
  program->add_outputs(1);
  plan::Command *command = program->add_commands();
  command->set_op("scale");
  command->add_operands(0);
  command->add_results(1);
  return p;
}

TEST(Plan, ValidPlanPasses) {
  rt::Status status = rt::validatePlan(validPlan());
  EXPECT_TRUE(status.isOk()) << status.toString();
  // A declared view shares its source's bytes.
  plan::Plan withView = validPlan();
  plan::Buffer *view = withView.add_buffers();
  *view = withView.buffers(0);
  view->set_id(2);
  view->set_view_of(0);
  status = rt::validatePlan(withView);
  EXPECT_TRUE(status.isOk()) << status.toString();
}

TEST(Plan, MalformedPlansAreRejectedWithTheReason) {
  struct Case {
    std::function<void(plan::Plan &)> mutate;
    std::string expected;
  };
  // The first command made an all-reduce over `axis`.
  auto allReduceOver = [](std::string axis) {
    return [axis](plan::Plan &p) {
      plan::Command *command = p.mutable_programs(0)->mutable_commands(0);
      command->set_op("all_reduce");
      command->clear_attributes();
      plan::Attribute *attribute = command->add_attributes();
      attribute->set_name("axis");
      attribute->set_s(axis);
    };
  };
  std::vector<Case> cases = {
      {[](plan::Plan &p) { p.set_format_version(99); }, "plan format version 99"},
      {[](plan::Plan &p) { p.mutable_buffers(1)->set_offset(250); }, "lies outside its 256-byte"},
      {[](plan::Plan &p) { p.mutable_buffers(1)->set_offset(UINT64_MAX - 4); }, "lies outside"},
      {[](plan::Plan &p) { p.mutable_buffers(0)->set_size(12); },
       "has size 12 but its shape needs 16"},
      {[](plan::Plan &p) { p.mutable_buffers(0)->add_shape(-1); }, "invalid shape"},
      {[](plan::Plan &p) {
         p.mutable_buffers(0)->set_shape(0, 0);
         p.mutable_buffers(0)->set_size(0);
       },
       "every dim must be positive"},
      {[](plan::Plan &p) { p.mutable_buffers(0)->set_dtype(plan::DTYPE_UNSPECIFIED); },
       "no valid dtype"},
      {[](plan::Plan &p) { p.mutable_buffers(1)->set_id(7); }, "has id 7"},
      {[](plan::Plan &p) { p.mutable_arenas()->RemoveLast(); }, "memory class without an arena"},
      {[](plan::Plan &p) { p.mutable_programs(0)->mutable_commands(0)->set_op("launch_rocket"); },
       "is not an op this runtime executes"},
      {[](plan::Plan &p) { p.mutable_programs(0)->mutable_commands(0)->add_operands(0); },
       "has 2 operands and 1 results"},
      {[](plan::Plan &p) { p.mutable_programs(0)->mutable_commands(0)->set_results(0, 9); },
       "writes missing buffer 9"},
      {[](plan::Plan &p) { p.mutable_programs(0)->add_inputs(42); }, "reads missing buffer 42"},
      // Def before use: the command reads the activation buffer nothing wrote (stale
      // scratch memory), not the program's input.
      {[](plan::Plan &p) {
         plan::Command *command = p.mutable_programs(0)->mutable_commands(0);
         command->set_operands(0, 1);
         command->set_results(0, 1);
       },
       "command 0 ('scale') of 'forward' reads buffer 'b' before any command of the program "
       "writes it"},
      {[](plan::Plan &p) { *p.add_programs() = p.programs(0); }, "appears twice"},
      {[](plan::Plan &p) {
         for (int64_t rank : {16, 32}) {
           plan::Attribute *key = p.mutable_model()->add_mllog();
           key->set_name("lora_rank");
           key->set_i(rank);
         }
       },
       "the model record has log key 'lora_rank' twice"},
      // A command with one attribute name twice: which value a kernel reads is undefined.
      {[](plan::Plan &p) {
         plan::Command *command = p.mutable_programs(0)->mutable_commands(0);
         for (double factor : {2.0, 3.0}) {
           plan::Attribute *attribute = command->add_attributes();
           attribute->set_name("factor");
           attribute->set_f(factor);
         }
       },
       "command 0 ('scale') of 'forward' has attribute 'factor' twice"},
      // An attribute without a value: a kernel would find it missing, the loader says why.
      {[](plan::Plan &p) {
         p.mutable_programs(0)->mutable_commands(0)->add_attributes()->set_name("factor");
       },
       "command 0 ('scale') of 'forward' has attribute 'factor' without a value"},
      // The backend's own attributes (this rank's place on an axis) cannot come from a file.
      {[](plan::Plan &p) {
         plan::Attribute *attribute = p.mutable_programs(0)->mutable_commands(0)->add_attributes();
         attribute->set_name("shard_index");
         attribute->set_i(1);
       },
       "command 0 ('scale') of 'forward' carries attribute 'shard_index', which the backend "
       "sets from the rank's place on the mesh"},
      {[](plan::Plan &p) {
         plan::StateTensor *state = p.add_state();
         state->set_name("w");
         state->set_buffer(3);
       },
       "state tensor 'w' refers to missing buffer 3"},
      {[](plan::Plan &p) {
         plan::StateTensor *state = p.add_state();
         state->set_name("w");
         state->set_buffer(1); // in the activation arena
       },
       "state tensor 'w' is unnamed, named twice or not in persistent memory"},
      {[](plan::Plan &p) {
         plan::Buffer *master = p.add_buffers();
         *master = p.buffers(0);
         master->set_id(2);
         master->set_offset(256);
         p.mutable_arenas(0)->set_size(512);
         for (const char *role : {"param", "master"}) {
           plan::StateTensor *state = p.add_state();
           state->set_name(role);
           state->set_role(role);
           state->set_param("w");
           state->set_buffer(role == std::string("param") ? 0 : 2);
         }
         p.mutable_state(1)->set_shard_axis("dp");
         p.mutable_state(1)->set_shard_count(1 + 1);
         p.mutable_mesh()->set_nodes(1);
         p.mutable_mesh()->set_gpus_per_node(2);
         p.mutable_mesh()->set_dp(2);
         p.mutable_mesh()->set_tp(1);
         p.mutable_mesh()->set_pp(1);
         p.mutable_mesh()->set_vp(1);
       },
       "state tensor 'master' is not a 1/2 shard of parameter 'w'"},
      // Operand and result types: a backend indexes buffers by these without further checks.
      {[](plan::Plan &p) {
         p.mutable_buffers(1)->set_shape(0, 2);
         p.mutable_buffers(1)->set_size(8);
       },
       "shapes [4] and [2] must be equal"},
      {[](plan::Plan &p) { p.mutable_buffers(1)->set_dtype(plan::I32); },
       "buffer 'b' must hold floats"},
      {[](plan::Plan &p) { p.mutable_programs(0)->mutable_commands(0)->set_op("softmax"); },
       "attribute 'dim' must be an integer in [0, 1)"},
      {[](plan::Plan &p) {
         plan::Command *command = p.mutable_programs(0)->mutable_commands(0);
         command->set_op("embedding");
         command->add_operands(0);
       },
       "must hold integers"},
      {[](plan::Plan &p) {
         plan::Command *command = p.mutable_programs(0)->mutable_commands(0);
         command->set_op("matmul");
         command->add_operands(0);
       },
       "do not form a matmul"},
      // Streams and events.
      {[](plan::Plan &p) { p.mutable_programs(0)->mutable_commands(0)->set_stream(1); },
       "is on stream 1 of a program with 1"},
      {[](plan::Plan &p) { p.mutable_programs(0)->set_streams(3); }, "has 3 streams"},
      {[](plan::Plan &p) {
         p.mutable_programs(0)->set_streams(2);
         plan::Command *wait = p.mutable_programs(0)->add_commands();
         wait->set_op("event_wait");
         wait->set_stream(1);
         wait->set_event(4);
       },
       "waits for event 4, which no other stream recorded before it"},
      {[](plan::Plan &p) {
         plan::Command *record = p.mutable_programs(0)->add_commands();
         record->set_op("event_record");
       },
       "command 1 ('event_record') of 'forward' needs an event"},
      {[](plan::Plan &p) {
         plan::Command *record = p.mutable_programs(0)->add_commands();
         record->set_op("event_record");
         record->set_event(-2);
       },
       "needs an event >= 0"},
      {[](plan::Plan &p) { p.mutable_programs(0)->mutable_commands(0)->set_event(0); },
       "command 0 ('scale') of 'forward' is no event command but names an event"},
      // A command on the communication stream reads what stream 0 writes with no event
      // between them (the scale on stream 0 writes activation b, a copy on stream 1 reads it).
      {[](plan::Plan &p) {
         plan::Program *program = p.mutable_programs(0);
         program->set_streams(2);
         plan::Command *copy = program->add_commands();
         copy->set_op("copy");
         copy->set_stream(1);
         copy->add_operands(1);
         copy->add_results(0);
       },
       "command 1 ('copy') of 'forward' on stream 1 reads buffer 'b' while command 0 ('scale') "
       "of 'forward' on stream 0 writes buffer 'b', and no event orders them"},
      // Persistent bytes: no two buffers share them unless one is a declared view, aligned.
      {[](plan::Plan &p) {
         plan::Buffer *other = p.add_buffers();
         *other = p.buffers(0);
         other->set_id(2);
         other->set_name("lm_head.weight");
         other->set_offset(0);
       },
       "persistent buffers 'b' and 'lm_head.weight' share bytes, and neither is a view of the "
       "other"},
      {[](plan::Plan &p) {
         plan::Buffer *view = p.add_buffers();
         *view = p.buffers(0);
         view->set_id(2);
         view->set_view_of(1); // in the other arena
       },
       "buffer 2 ('b') is a view of buffer 1, which is no earlier buffer holding its bytes"},
      {[](plan::Plan &p) { p.mutable_buffers(1)->set_offset(16); },
       "buffer 1 ('b') at offset 16 is not 256-byte aligned"},
      {[](plan::Plan &p) { p.mutable_arenas(0)->set_size(uint64_t{1} << 63); },
       "the arena of memory class 1 has 9223372036854775808 bytes, but its buffers need 256"},
      {[](plan::Plan &p) {
         for (const char *name : {"w", "optimizer.exp_avg.w"}) {
           plan::StateTensor *state = p.add_state();
           state->set_name(name);
           state->set_buffer(0);
         }
       },
       "state tensor 'optimizer.exp_avg.w' shares buffer 'b' with another state tensor"},
      // With a communication stream, only it talks to other ranks (one order on every rank).
      {[](plan::Plan &p) {
         p.mutable_programs(0)->set_streams(2);
         plan::Command *command = p.mutable_programs(0)->mutable_commands(0);
         command->set_op("all_reduce");
         plan::Attribute *axis = command->add_attributes();
         axis->set_name("axis");
         axis->set_s("dp");
       },
       "command 0 ('all_reduce') of 'forward' communicates with other ranks on stream 0; in a "
       "program with a communication stream only stream 1 does"},
      // Programs call earlier programs only; roles pair with inputs and outputs.
      {[](plan::Plan &p) {
         plan::Command *call = p.mutable_programs(0)->add_commands();
         call->set_op("call");
         plan::Attribute *callee = call->add_attributes();
         callee->set_name("program");
         callee->set_s("no_such_program");
       },
       "calls program 'no_such_program', which the plan does not have before it"},
      {[](plan::Plan &p) {
         p.mutable_programs(0)->add_input_roles("tokens");
         p.mutable_programs(0)->add_input_roles("labels");
       },
       "does not give one role per input and output"},
      {[](plan::Plan &p) {
         plan::Command *send = p.mutable_programs(0)->mutable_commands(0);
         send->set_op("send");
         send->clear_results();
         for (auto [name, value] : {std::pair{"shift", 1}, {"tag", 3}}) {
           plan::Attribute *attr = send->add_attributes();
           attr->set_name(name);
           attr->set_i(value);
         }
         plan::Attribute *axis = send->add_attributes();
         axis->set_name("axis");
         axis->set_s("pp");
       },
       "attribute 'shift' must be a non-zero integer within the 1 ranks of axis pp"},
      // Distribution.
      {[](plan::Plan &p) {
         plan::Mesh *mesh = p.mutable_mesh();
         mesh->set_nodes(1);
         mesh->set_gpus_per_node(4);
         mesh->set_dp(2);
         mesh->set_tp(1);
         mesh->set_pp(1);
         mesh->set_vp(1);
       },
       "is inconsistent"},
      {allReduceOver("xp"), "attribute 'axis' must name an axis of the mesh"},
      // Hybrid sharding's axes exist only on a mesh with hsdp.
      {allReduceOver("dp_replicate"), "attribute 'axis' must name an axis of the mesh"},
      {[](plan::Plan &p) { p.set_pipeline_stage(1); }, "pipeline stage 1 of a mesh with pp=1"},
      {[](plan::Plan &p) {
         plan::StateTensor *state = p.add_state();
         state->set_name("w");
         state->set_split_axis("tp");
         state->set_split_count(2);
       },
       "is split 2 ways along dim 0 over axis 'tp'"},
  };
  for (const Case &c : cases) {
    plan::Plan p = validPlan();
    c.mutate(p);
    rt::Status status = rt::validatePlan(p);
    EXPECT_FALSE(status.isOk()) << c.expected;
    EXPECT_NE(status.message().find(c.expected), std::string::npos) << status.toString();
  }
}

TEST(Plan, TruncatedAndForeignFilesAreRejected) {
  std::string path = ::testing::TempDir() + "/plan_" + std::to_string(::getpid());
  std::string bytes = rt::signPlan(validPlan());
  {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  plan::Plan loaded;
  rt::Status status = rt::loadPlan(path, loaded);
  EXPECT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(loaded.file_crc32(), 0u); // a property of the file, not of the plan
  std::string unsignedBytes;
  ASSERT_TRUE(validPlan().SerializeToString(&unsignedBytes));
  // An edit that still parses and validates (a buffer renamed), not re-signed.
  plan::Plan edited = validPlan();
  edited.mutable_buffers(0)->set_name("c");
  std::string flipped = rt::signPlan(edited);
  flipped.replace(flipped.size() - 4, 4, bytes.substr(bytes.size() - 4));
  for (const std::string &broken :
       {bytes.substr(0, bytes.size() / 2), std::string("MMIDIDX\0\0 not a plan", 20), unsignedBytes,
        flipped}) {
    {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << broken;
    }
    status = rt::loadPlan(path, loaded);
    EXPECT_FALSE(status.isOk());
    EXPECT_EQ(status.code(), rt::StatusCode::kDataLoss) << status.toString();
  }
  EXPECT_NE(status.message().find("is damaged or was edited"), std::string::npos)
      << status.toString();
  EXPECT_EQ(rt::loadPlan(path + ".missing", loaded).code(), rt::StatusCode::kNotFound);
  std::remove(path.c_str());
}

} // namespace

namespace {

/// Stage `stage` of two whose train_step sends (stage 0) or receives (stage 1) buffer 0.
plan::Plan transferStage(int64_t stage, int64_t tag) {
  plan::Plan p = validPlan();
  p.set_pipeline_stage(stage);
  plan::Program *program = p.mutable_programs(0);
  program->set_name("train_step");
  plan::Command *command = program->mutable_commands(0);
  command->clear_operands();
  command->clear_results();
  command->set_op(stage == 0 ? "send" : "recv");
  (stage == 0 ? command->add_operands(0) : command->add_results(0));
  for (auto [name, value] : {std::pair{"shift", stage == 0 ? 1 : -1}, {"tag", tag}}) {
    plan::Attribute *attr = command->add_attributes();
    attr->set_name(name);
    attr->set_i(value);
  }
  plan::Attribute *axis = command->add_attributes();
  axis->set_name("axis");
  axis->set_s("pp");
  return p;
}

} // namespace

TEST(Plan, StagesMustAgreeOnTheirTransfers) {
  EXPECT_TRUE(rt::checkStageTransfers({transferStage(0, 18), transferStage(1, 18)}).isOk());
  rt::Status status = rt::checkStageTransfers({transferStage(0, 18), transferStage(1, 20)});
  EXPECT_NE(status.message().find("stage 0's command 0 ('send') of 'train_step' sends 4 values to "
                                  "stage 1 with tag 18, which stage 1 never receives"),
            std::string::npos)
      << status.toString();
  std::vector<plan::Plan> sizes{transferStage(0, 18), transferStage(1, 18)};
  sizes[1].mutable_buffers(0)->set_shape(0, 2);
  status = rt::checkStageTransfers(sizes);
  EXPECT_NE(status.message().find("but its receive, stage 1's command 0 ('recv') of 'train_step' "
                                  "receives 2 values from stage 0 with tag 18, has another size"),
            std::string::npos)
      << status.toString();
  std::vector<plan::Plan> extra{transferStage(0, 18), transferStage(1, 18)};
  *extra[1].mutable_programs(0)->add_commands() = extra[1].programs(0).commands(0);
  status = rt::checkStageTransfers(extra);
  EXPECT_NE(status.message().find("receives 4 values from stage 0 with tag 18, which stage 0 never "
                                  "sends"),
            std::string::npos)
      << status.toString();
  status = rt::checkStageTransfers({transferStage(1, 18)});
  EXPECT_NE(status.message().find("from stage -1 with tag 18, which the pipeline does not have"),
            std::string::npos)
      << status.toString();
}

// The fp8 commands' type rules (runtime/plan/CommandTypes.cpp): what a loader refuses in an
// edited or foreign plan before a backend indexes its buffers.
// The loader's per-op type rules (runtime/plan/CommandTypes.h) for the fp8 ops, the element
// program and evaluation's running mean.
TEST(Plan, CommandsCheckTheirTypes) {
  plan::Plan p;
  auto buffer = [&](plan::DType dtype, std::vector<int64_t> shape) {
    plan::Buffer *b = p.add_buffers();
    b->set_id(p.buffers_size() - 1);
    b->set_name("b" + std::to_string(b->id()));
    b->set_dtype(dtype);
    for (int64_t d : shape) {
      b->add_shape(d);
    }
    return static_cast<uint32_t>(b->id());
  };
  uint32_t x = buffer(plan::BF16, {2, 4}), scale = buffer(plan::F32, {}),
           q = buffer(plan::F8E4M3FN, {2, 4}), wide = buffer(plan::F32, {2, 4}),
           w = buffer(plan::F8E4M3FN, {3, 4}), y = buffer(plan::BF16, {2, 3}),
           history = buffer(plan::F32, {4}), bad = buffer(plan::BF16, {}),
           running = buffer(plan::F64, {2}), mean = buffer(plan::F64, {}),
           narrow = buffer(plan::F32, {2}), three = buffer(plan::F64, {3});
  auto check = [&](const char *op, std::vector<uint32_t> operands, std::vector<uint32_t> results,
                   std::vector<std::pair<std::string, double>> floats = {},
                   std::vector<std::pair<std::string, std::string>> strings = {}) {
    plan::Program program;
    plan::Command &command = *rt::addCommand(program, op, operands, results);
    for (auto &[name, value] : floats) {
      plan::Attribute *a = command.add_attributes();
      a->set_name(name);
      a->set_f(value);
    }
    for (auto &[name, value] : strings) {
      plan::Attribute *a = command.add_attributes();
      a->set_name(name);
      a->set_s(value);
    }
    plan::Attribute *t = command.add_attributes();
    t->set_name("transpose_rhs");
    t->set_i(1);
    return rt::checkCommandTypes(p, command);
  };
  EXPECT_EQ(check("fp8_quantize", {x, scale}, {q}), "");
  EXPECT_NE(check("fp8_quantize", {x, scale}, {wide}).find("casts f32 or bf16 to an fp8"),
            std::string::npos);
  EXPECT_NE(check("fp8_quantize", {x, bad}, {q}).find("scale must be f32"), std::string::npos);
  EXPECT_EQ(check("fp8_matmul", {q, w, scale, scale}, {y}), "");
  EXPECT_NE(check("fp8_matmul", {x, w, scale, scale}, {y}).find("fp8 operands"), std::string::npos);
  EXPECT_NE(check("fp8_matmul", {q, w, scale, scale}, {wide}).find("cannot give"),
            std::string::npos);
  EXPECT_EQ(check("amax", {x, q}, {scale}), "");
  EXPECT_NE(check("amax", {x}, {bad}).find("amax is an f32 scalar"), std::string::npos);
  std::vector<std::pair<std::string, double>> recipe{{"fp8_max", 448.0}, {"margin", 0.0}};
  EXPECT_EQ(check("fp8_scale_update", {history, scale, scale}, {history, scale}, recipe,
                  {{"amax_compute_algo", "most_recent"}}),
            "");
  EXPECT_NE(check("fp8_scale_update", {history, scale, scale}, {history, scale}, recipe,
                  {{"amax_compute_algo", "mean"}})
                .find("amax_compute_algo"),
            std::string::npos);
  EXPECT_NE(check("fp8_scale_update", {history, scale, scale}, {history, scale},
                  {{"fp8_max", -1.0}, {"margin", 0.0}}, {{"amax_compute_algo", "max"}})
                .find("fp8_max"),
            std::string::npos);
  EXPECT_EQ(check("fp8_current_scale", {scale}, {scale}, {{"fp8_max", 57344.0}}), "");
  EXPECT_NE(check("fp8_current_scale", {x}, {scale}, {{"fp8_max", 57344.0}}).find("scalar"),
            std::string::npos);
  // The element program (runtime/plan/ElementwiseProgram.h): compiled at load; operands of
  // the results' shape or one element; f32 or bf16 only.
  EXPECT_EQ(check("elementwise", {x, scale}, {wide}, {}, {{"program", "r0 = a0 a1 *"}}), "");
  EXPECT_NE(check("elementwise", {x, scale}, {wide}, {}, {{"program", "r0 = a0 a1"}})
                .find("program statement 1 'r0 = a0 a1': leaves 2 values on the stack"),
            std::string::npos);
  EXPECT_NE(check("elementwise", {x}, {wide}).find("attribute 'program'"), std::string::npos);
  EXPECT_NE(check("elementwise", {x, history}, {wide}, {}, {{"program", "r0 = a0 a1 *"}})
                .find("must have one element or the results' shape [2x4]"),
            std::string::npos);
  EXPECT_NE(
      check("elementwise", {q}, {wide}, {}, {{"program", "r0 = a0"}}).find("must hold f32 or bf16"),
      std::string::npos);
  // Evaluation's running mean: f64 [sum, count], an f32 scalar added, an f64 mean.
  EXPECT_EQ(check("mean_accumulate", {running, scale}, {running}), "");
  EXPECT_EQ(check("mean_finish", {running}, {mean, running}), "");
  EXPECT_NE(check("mean_accumulate", {narrow, scale}, {running}).find("must hold the running mean"),
            std::string::npos);
  EXPECT_NE(check("mean_accumulate", {running, scale}, {three}).find("f64 [2] (sum, count)"),
            std::string::npos);
  EXPECT_NE(check("mean_accumulate", {running, history}, {running}).find("f32 scalar to add"),
            std::string::npos);
  EXPECT_NE(check("mean_finish", {running}, {scale, running}).find("f64 scalar mean"),
            std::string::npos);
}

// One op table says which ops talk to other ranks, for the loader, plan-from-tg and the cost
// model alike: only the collectives and transfers (a loss over a split vocabulary is local
// pieces around all-reduces).
TEST(PlanOps, TheTableSaysWhichOpsCommunicateAndWhatTheyCost) {
  using mlperf::rt::communicates;
  for (const char *loss :
       {"cross_entropy", "cross_entropy_grad", "linear_cross_entropy", "linear_cross_entropy_grad",
        "vocab_max", "linear_vocab_max", "vocab_stats", "linear_vocab_stats", "vocab_loss",
        "vocab_cross_entropy_grad", "linear_vocab_cross_entropy_grad"}) {
    EXPECT_FALSE(communicates(loss)) << loss;
  }
  for (const char *collective : {"all_reduce", "reduce_scatter", "all_gather", "send", "recv"}) {
    EXPECT_TRUE(communicates(collective)) << collective;
  }
  EXPECT_FALSE(communicates("matmul"));
  EXPECT_FALSE(communicates("no_such_op"));
  EXPECT_EQ(mlperf::rt::findPlanOp("linear_vocab_stats")->cost,
            mlperf::rt::OpCost::kLinearCrossEntropy);
  EXPECT_EQ(mlperf::rt::findPlanOp("fp8_matmul")->cost, mlperf::rt::OpCost::kGemm);
  EXPECT_EQ(mlperf::rt::findPlanOp("call")->cost, mlperf::rt::OpCost::kNone);
  EXPECT_STREQ(mlperf::rt::partAxisAttribute("dropout_key"), "data_parallel_axis");
  EXPECT_EQ(mlperf::rt::partAxisAttribute("matmul"), nullptr);
}
