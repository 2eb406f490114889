//===- CpuBackendTest.cpp - The CPU backend's buffers and commands --------===//

#include "runtime/cpu/Numerics.h"
#include "runtime/exec/Backend.h"
#include "runtime/plan/PlanBuilding.h"
#include "runtime/plan/PlanLoader.h"

#include <gtest/gtest.h>

using namespace mlperf;

namespace {

/// A CPU backend prepared on `plan` for one rank (the communicator outlives the backend).
struct PreparedBackend {
  explicit PreparedBackend(const plan::Plan &plan) : single(rt::createSingleRankCommunicator()) {
    status = rt::createBackend("cpu", backend);
    if (status.isOk()) {
      status = backend->prepare(plan, *single);
    }
  }
  std::unique_ptr<rt::Communicator> single;
  std::unique_ptr<rt::Backend> backend;
  rt::Status status = rt::Status::ok();
};

/// x: bf16[3] (persistent) -> scale by 3 -> y: bf16[3] (activations).
plan::Plan scalePlan() {
  plan::Plan p;
  p.set_format_version(rt::kPlanFormatVersion);
  for (auto cls : {plan::PERSISTENT, plan::ACTIVATIONS}) {
    plan::Buffer *b = p.add_buffers();
    b->set_id(p.buffers_size() - 1);
    b->set_name(cls == plan::PERSISTENT ? "x" : "y");
    b->set_dtype(plan::BF16);
    b->add_shape(3);
    b->set_memory_class(cls);
    b->set_size(6);
    plan::Arena *arena = p.add_arenas();
    arena->set_memory_class(cls);
    arena->set_size(256);
  }
  plan::Program *program = p.add_programs();
  program->set_name("forward");
  plan::Command *command = program->add_commands();
  command->set_op("scale");
  command->add_operands(0);
  command->add_results(1);
  plan::Attribute *factor = command->add_attributes();
  factor->set_name("factor");
  factor->set_f(3.0);
  return p;
}

TEST(CpuBackend, StoresPlanDTypesAndRoundsResultsToNearestEven) {
  plan::Plan p = scalePlan();
  ASSERT_TRUE(rt::validatePlan(p).isOk());
  PreparedBackend prepared(p);
  ASSERT_TRUE(prepared.status.isOk()) << prepared.status.toString();
  rt::Backend *backend = prepared.backend.get();
  rt::HostTensor x = rt::HostTensor::zeros(rt::DType::kF32, {3});
  x.values = {1.0f, 1.00390625f /* 1 + 2^-8: a bf16 tie, rounds to 1 */, -2.5f};
  ASSERT_TRUE(backend->write(0, x).isOk());
  rt::HostTensor stored;
  ASSERT_TRUE(backend->read(0, stored).isOk());
  EXPECT_EQ(stored.dtype, rt::DType::kBF16);
  EXPECT_EQ(stored.values, (std::vector<float>{1.0f, 1.0f, -2.5f}));
  ASSERT_TRUE(backend->execute(0).isOk());
  rt::HostTensor y;
  ASSERT_TRUE(backend->read(1, y).isOk());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(y.values[i],
              static_cast<float>(rt::roundTo(rt::DType::kBF16, 3.0 * stored.values[i])));
  }
}

TEST(CpuBackend, RejectsTensorsThatDoNotFitABuffer) {
  plan::Plan p = scalePlan();
  PreparedBackend prepared(p);
  ASSERT_TRUE(prepared.status.isOk()) << prepared.status.toString();
  rt::Backend *backend = prepared.backend.get();
  rt::Status status = backend->write(0, rt::HostTensor::zeros(rt::DType::kF32, {4}));
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("buffer 'x' cannot hold f32[4]"), std::string::npos)
      << status.toString();
  status = backend->write(0, rt::HostTensor::zeros(rt::DType::kI64, {3}));
  EXPECT_FALSE(status.isOk());
}

TEST(CpuBackend, KernelErrorsNameTheProgramAndCommand) {
  plan::Plan p = scalePlan();
  p.mutable_programs(0)->mutable_commands(0)->clear_attributes();
  PreparedBackend prepared(p);
  ASSERT_TRUE(prepared.status.isOk()) << prepared.status.toString();
  rt::Backend *backend = prepared.backend.get();
  rt::Status status = backend->execute(0);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("program 'forward', command 0 (scale): scale: missing float "
                                  "attribute 'factor'"),
            std::string::npos)
      << status.toString();
}

/// Two streams: stream 0 computes y = a·b (a large matmul, so it takes a while), records
/// event 0 and goes on; stream 1 waits for event 0, copies y to z and records event 1, which
/// stream 0 waits for before `last` reads z. The program's commands, by stream:
///   0: matmul(a, b) -> y; event_record 0; ...; event_wait 1; copy(z) -> last
///   1:                     event_wait 0; copy(y) -> z; event_record 1
plan::Plan twoStreamPlan(int64_t n) {
  plan::Plan p;
  p.set_format_version(rt::kPlanFormatVersion);
  uint64_t bytes = 4 * n * n, offset = 0;
  for (const char *name : {"a", "b", "y", "z", "last"}) {
    plan::Buffer *b = p.add_buffers();
    b->set_id(p.buffers_size() - 1);
    b->set_name(name);
    b->set_dtype(plan::F32);
    b->add_shape(n);
    b->add_shape(n);
    b->set_memory_class(plan::PERSISTENT);
    b->set_offset(offset);
    b->set_size(bytes);
    offset += (bytes + 255) / 256 * 256; // plan-memory's alignment
  }
  plan::Arena *arena = p.add_arenas();
  arena->set_memory_class(plan::PERSISTENT);
  arena->set_size(offset);
  plan::Program *program = p.add_programs();
  program->set_name("step");
  program->set_streams(2);
  auto add = [&](const char *op, uint32_t stream, std::vector<uint32_t> operands,
                 std::vector<uint32_t> results, int64_t event = -1) {
    plan::Command *command = rt::addCommand(*program, op, operands, results, stream);
    if (event >= 0) {
      command->set_event(event);
    }
  };
  add("matmul", 0, {0, 1}, {2});
  add("event_record", 0, {}, {}, 0);
  add("event_wait", 1, {}, {}, 0);
  add("copy", 1, {2}, {3});
  add("event_record", 1, {}, {}, 1);
  add("event_wait", 0, {}, {}, 1);
  add("copy", 0, {3}, {4});
  return p;
}

// The communication stream runs on a thread of its own from the moment the program starts:
// without its wait for event 0 it would copy y before the slow matmul wrote it (z = 0), and
// without stream 0's wait for event 1, `last` would read z before the copy.
TEST(CpuBackend, StreamsRunConcurrentlyAndEventsOrderThem) {
  const int64_t n = 256;
  plan::Plan p = twoStreamPlan(n);
  rt::Status valid = rt::validatePlan(p);
  ASSERT_TRUE(valid.isOk()) << valid.toString();
  PreparedBackend prepared(p);
  ASSERT_TRUE(prepared.status.isOk()) << prepared.status.toString();
  rt::Backend *backend = prepared.backend.get();
  rt::HostTensor a = rt::HostTensor::zeros(rt::DType::kF32, {n, n});
  rt::HostTensor b = a;
  for (int64_t i = 0; i < n * n; ++i) {
    a.values[i] = static_cast<float>(i % 7) - 3.0f;
    b.values[i] = static_cast<float>(i % 5) + 1.0f;
  }
  ASSERT_TRUE(backend->write(0, a).isOk());
  ASSERT_TRUE(backend->write(1, b).isOk());
  for (int repeat = 0; repeat < 3; ++repeat) {
    ASSERT_TRUE(backend->execute(0).isOk());
    rt::HostTensor y, last;
    ASSERT_TRUE(backend->read(2, y).isOk());
    ASSERT_TRUE(backend->read(4, last).isOk());
    EXPECT_NE(y.values[0], 0.0f);
    EXPECT_EQ(last.values, y.values) << "run " << repeat;
    // Cleared for the next run, so a stale copy cannot pass.
    ASSERT_TRUE(backend->write(4, rt::HostTensor::zeros(rt::DType::kF32, {n, n})).isOk());
    ASSERT_TRUE(backend->write(3, rt::HostTensor::zeros(rt::DType::kF32, {n, n})).isOk());
  }
}

// The loader refuses the plan when either wait is dropped, naming the buffer and both commands.
TEST(CpuBackend, APlanWithoutTheWaitIsRefused) {
  plan::Plan p = twoStreamPlan(4);
  p.mutable_programs(0)->mutable_commands()->DeleteSubrange(5, 1); // stream 0's wait
  rt::Status status = rt::validatePlan(p);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("command 5 ('copy') of 'step' on stream 0 reads buffer 'z' while "
                                  "command 3 ('copy') of 'step' on stream 1 writes buffer 'z'"),
            std::string::npos)
      << status.toString();
  p = twoStreamPlan(4);
  p.mutable_programs(0)->mutable_commands()->DeleteSubrange(2, 1); // stream 1's wait
  status = rt::validatePlan(p);
  EXPECT_NE(status.message().find("command 2 ('copy') of 'step' on stream 1 reads buffer 'y' while "
                                  "command 0 ('matmul') of 'step' on stream 0 writes buffer 'y'"),
            std::string::npos)
      << status.toString();
}

// A failing command on one stream stops the other instead of leaving it waiting forever.
TEST(CpuBackend, AFailingStreamStopsTheOther) {
  plan::Plan p = twoStreamPlan(4);
  plan::Command *copy = p.mutable_programs(0)->mutable_commands(3);
  copy->set_op("softmax"); // without its 'dim': fails at run time (not validated here)
  PreparedBackend prepared(p);
  ASSERT_TRUE(prepared.status.isOk()) << prepared.status.toString();
  rt::Backend *backend = prepared.backend.get();
  rt::Status status = backend->execute(0);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("command 3 (softmax)"), std::string::npos) << status.toString();
}

TEST(CpuBackend, UnknownBackendsAreNamed) {
  std::unique_ptr<rt::Backend> backend;
  EXPECT_NE(rt::createBackend("tpu", backend).message().find("unknown backend 'tpu'"),
            std::string::npos);
  EXPECT_EQ(rt::createBackend("cuda", backend).code(), rt::StatusCode::kUnavailable);
}

} // namespace
