//===- CpuBackendTest.cpp - The CPU backend's buffers and commands --------===//

#include "runtime/cpu/Numerics.h"
#include "runtime/dist/InProcessCommunicator.h"
#include "runtime/exec/Backend.h"
#include "runtime/plan/PlanBuilding.h"
#include "runtime/plan/PlanLoader.h"

#include <gtest/gtest.h>

#include <thread>

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

/// Two data-parallel ranks exchanging rows: rows f32 [4, 2] and i32 rows per member [2]
/// (persistent) -> received [capacity, 2] and rows from each member [2] (activations).
plan::Plan allToAllPlan(int64_t capacity) {
  plan::Plan p;
  p.set_format_version(rt::kPlanFormatVersion);
  plan::Mesh *mesh = p.mutable_mesh();
  mesh->set_nodes(1);
  mesh->set_gpus_per_node(2);
  mesh->set_dp(2);
  mesh->set_tp(1);
  mesh->set_pp(1);
  mesh->set_vp(1);
  uint64_t used[2] = {0, 0};
  auto buffer = [&](const char *name, plan::DType type, std::vector<int64_t> shape,
                    plan::MemoryClass cls) {
    plan::Buffer *b = p.add_buffers();
    b->set_id(p.buffers_size() - 1);
    b->set_name(name);
    b->set_dtype(type);
    int64_t count = 1;
    for (int64_t d : shape) {
      b->add_shape(d);
      count *= d;
    }
    b->set_memory_class(cls);
    b->set_offset(used[cls == plan::PERSISTENT ? 0 : 1]);
    b->set_size(count * 4);
    used[cls == plan::PERSISTENT ? 0 : 1] += 256;
  };
  buffer("rows", plan::F32, {4, 2}, plan::PERSISTENT);
  buffer("rows_per_member", plan::I32, {2}, plan::PERSISTENT);
  buffer("received", plan::F32, {capacity, 2}, plan::ACTIVATIONS);
  buffer("received_per_member", plan::I32, {2}, plan::ACTIVATIONS);
  for (auto cls : {plan::PERSISTENT, plan::ACTIVATIONS}) {
    plan::Arena *arena = p.add_arenas();
    arena->set_memory_class(cls);
    arena->set_size(512); // two 256-byte slots each
  }
  plan::Program *program = p.add_programs();
  program->set_name("exchange");
  plan::Command *command = rt::addCommand(*program, "all_to_all", {0, 1}, {2, 3});
  plan::Attribute *axis = command->add_attributes();
  axis->set_name("axis");
  axis->set_s("dp");
  return p;
}

/// Runs the exchange on both ranks: rank r sends rows 10r + i, `split[r]` of them to rank 0.
std::vector<rt::Status> exchange(const plan::Plan &p, const int64_t split[2],
                                 std::vector<rt::HostTensor> received[2]) {
  rt::InProcessMesh ranks(rt::planMesh(p), 30);
  std::vector<rt::Status> statuses(2, rt::Status::ok());
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      std::unique_ptr<rt::Backend> backend;
      rt::Status status = rt::createBackend("cpu", backend);
      if (status.isOk()) {
        status = backend->prepare(p, ranks.communicator(rank));
      }
      rt::HostTensor rows = rt::HostTensor::zeros(rt::DType::kF32, {4, 2});
      for (int64_t i = 0; i < 8; ++i) {
        rows.values[i] = static_cast<float>(10 * rank + i / 2);
      }
      rt::HostTensor counts = rt::HostTensor::zeros(rt::DType::kI32, {2});
      counts.ints = {split[rank], 4 - split[rank]};
      if (status.isOk()) {
        status = backend->write(0, rows);
      }
      if (status.isOk()) {
        status = backend->write(1, counts);
      }
      if (status.isOk()) {
        status = backend->execute(0);
      }
      received[rank].resize(2);
      if (status.isOk()) {
        status = backend->read(2, received[rank][0]);
      }
      if (status.isOk()) {
        status = backend->read(3, received[rank][1]);
      }
      if (!status.isOk()) {
        ranks.abort(status.message());
      }
      statuses[rank] = status;
    });
  }
  for (std::thread &thread : threads) {
    thread.join();
  }
  return statuses;
}

TEST(CpuBackend, AllToAllSendsEachRanksChunksAndZeroesTheRestOfTheBuffer) {
  plan::Plan p = allToAllPlan(6);
  ASSERT_TRUE(rt::validatePlan(p).isOk()) << rt::validatePlan(p).toString();
  const int64_t split[2] = {1, 3}; // rank 0 keeps 1 row and sends 3; rank 1 sends 3, keeps 1
  std::vector<rt::HostTensor> received[2];
  std::vector<rt::Status> statuses = exchange(p, split, received);
  for (int64_t rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(statuses[rank].isOk()) << statuses[rank].toString();
  }
  // Rank 0: its row 0, then rank 1's rows 0..2; rank 1: rank 0's rows 1..3, then its row 3.
  EXPECT_EQ(received[0][0].values, (std::vector<float>{0, 0, 10, 10, 11, 11, 12, 12, 0, 0, 0, 0}));
  EXPECT_EQ(received[0][1].ints, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(received[1][0].values, (std::vector<float>{1, 1, 2, 2, 3, 3, 13, 13, 0, 0, 0, 0}));
  EXPECT_EQ(received[1][1].ints, (std::vector<int64_t>{3, 1}));
}

TEST(CpuBackend, AllToAllNeedsOneRowCountPerMember) {
  plan::Plan p = allToAllPlan(6);
  p.mutable_buffers(1)->set_shape(0, 3);
  p.mutable_buffers(1)->set_size(12);
  rt::Status status = rt::validatePlan(p);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("an all_to_all needs rows [N, d] and [R, d] and one row count "
                                  "per member of the 2, got [4x2], [6x2], [3], [2]"),
            std::string::npos)
      << status.toString();
}

TEST(CpuBackend, AllToAllBeyondTheStaticBoundStopsNamingIt) {
  plan::Plan p = allToAllPlan(3);
  const int64_t split[2] = {4, 4}; // every row to rank 0: 8 rows for a buffer of 3
  std::vector<rt::HostTensor> received[2];
  std::vector<rt::Status> statuses = exchange(p, split, received);
  ASSERT_FALSE(statuses[0].isOk());
  EXPECT_NE(statuses[0].message().find("all_to_all: rank 0 receives 8 rows, more than the 3 its "
                                       "buffer holds (the plan's static bound on routed rows)"),
            std::string::npos)
      << statuses[0].toString();
}

} // namespace
