//===- CpuBackendTest.cpp - The CPU backend's buffers and commands --------===//

#include "runtime/cpu/Numerics.h"
#include "runtime/exec/Backend.h"
#include "runtime/plan/PlanLoader.h"

#include <gtest/gtest.h>

using namespace mlperf;

namespace {

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
  std::unique_ptr<rt::Backend> backend;
  ASSERT_TRUE(rt::createBackend("cpu", backend).isOk());
  std::unique_ptr<rt::Communicator> single = rt::createSingleRankCommunicator();
  ASSERT_TRUE(backend->prepare(p, *single).isOk());
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
  std::unique_ptr<rt::Backend> backend;
  ASSERT_TRUE(rt::createBackend("cpu", backend).isOk());
  std::unique_ptr<rt::Communicator> single = rt::createSingleRankCommunicator();
  ASSERT_TRUE(backend->prepare(p, *single).isOk());
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
  std::unique_ptr<rt::Backend> backend;
  ASSERT_TRUE(rt::createBackend("cpu", backend).isOk());
  std::unique_ptr<rt::Communicator> single = rt::createSingleRankCommunicator();
  ASSERT_TRUE(backend->prepare(p, *single).isOk());
  rt::Status status = backend->execute(0);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("program 'forward', command 0 (scale): scale: missing float "
                                  "attribute 'factor'"),
            std::string::npos)
      << status.toString();
}

TEST(CpuBackend, UnknownBackendsAreNamed) {
  std::unique_ptr<rt::Backend> backend;
  EXPECT_NE(rt::createBackend("tpu", backend).message().find("unknown backend 'tpu'"),
            std::string::npos);
  EXPECT_EQ(rt::createBackend("cuda", backend).code(), rt::StatusCode::kUnavailable);
}

} // namespace
