//===- ElementwiseProgramTest.cpp - The `elementwise` command's programs -*- C++ -*-===//
//
// The program compiler's refusals and the CPU kernel's values, against each formula written
// out here in f32 (volatile temporaries: one rounding per operation, as the program promises).
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/ElementwiseProgram.h"
#include "runtime/cpu/Numerics.h"
#include "runtime/cpu/OpKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace mlperf::rt;

namespace {

std::string compileError(const std::string &text, int operands, int results,
                         const char *arithmetic = "f32") {
  ElementwiseProgram program;
  return compileElementwiseProgram(text, operands, results, arithmetic, program);
}

TEST(ElementwiseProgram, RefusesMalformedPrograms) {
  EXPECT_EQ(compileError("r0 = a0 a1 +", 2, 1), "");
  EXPECT_EQ(compileError("  t = a0 a0 * ; r0 = t sqrt ;", 1, 1), "");
  EXPECT_EQ(compileError("r0 = a0 +", 1, 1),
            "statement 1 'r0 = a0 +': '+' needs two values on the stack");
  EXPECT_EQ(compileError("r0 = a0 a0", 1, 1),
            "statement 1 'r0 = a0 a0': leaves 2 values on the stack, not one");
  EXPECT_EQ(compileError("r0 = a3", 2, 1),
            "statement 1 'r0 = a3': operand 'a3' does not exist (the command has 2)");
  EXPECT_EQ(compileError("r0 = a0; r0 = a0", 1, 1),
            "statement 2 'r0 = a0': result 'r0' is assigned twice");
  EXPECT_EQ(compileError("r0 = a0", 1, 2), "never assigns result r1");
  // One spelling per index (found by the plan fuzzer: "r00" was result 0 under another name).
  EXPECT_EQ(compileError("r00 = a0", 1, 1),
            "statement 1 'r00 = a0': result 'r00' does not exist (the command has 1)");
  EXPECT_EQ(compileError("r0 = a00", 1, 1),
            "statement 1 'r0 = a00': operand 'a00' does not exist (the command has 1)");
  EXPECT_EQ(compileError("r0 = a0 x *", 1, 1),
            "statement 1 'r0 = a0 x *': 'x' is used before it is assigned");
  EXPECT_EQ(compileError("r0 = a0 exp", 1, 1), "statement 1 'r0 = a0 exp': 'exp' is used "
                                               "before it is assigned");
  EXPECT_EQ(compileError("r0 = a0 1e999 *", 1, 1),
            "statement 1 'r0 = a0 1e999 *': unknown token '1e999'");
  EXPECT_EQ(compileError("r0 = a0 %", 1, 1), "statement 1 'r0 = a0 %': unknown token '%'");
  EXPECT_EQ(compileError("a0 = a0", 1, 1), "statement 1 'a0 = a0': operands cannot be assigned");
  EXPECT_EQ(compileError("r0 a0", 1, 1), "statement 1 'r0 a0': expected 'name = expression'");
  EXPECT_EQ(compileError("r0 = a0", 9, 1), "takes 1 to 8 operands, not 9");
  EXPECT_EQ(compileError("r0 = a0 2 pow", 1, 1), "statement 1 'r0 = a0 2 pow': 'pow' needs "
                                                 "arithmetic f64");
  EXPECT_EQ(compileError("r0 = a0 2 pow", 1, 1, "f64"), "");
  EXPECT_EQ(compileError("r0 = a0", 1, 1, "f16"), "has arithmetic 'f16', not f32 or f64");
  // Deeper than the evaluator's stack.
  std::string deep = "r0 =";
  for (int i = 0; i < 17; ++i) {
    deep += " a0";
  }
  for (int i = 0; i < 16; ++i) {
    deep += " +";
  }
  EXPECT_EQ(compileError(deep, 1, 1).find("needs a stack deeper than 16") != std::string::npos,
            true);
}

TEST(ElementwiseProgram, CpuKernelComputesAdagradInF32) {
  // One Adagrad update (torch.optim.Adagrad's order) with a bf16 gradient and a broadcast lr.
  const int64_t n = 257;
  HostTensor master = HostTensor::zeros(DType::kF32, {n}), sum = master, lr = master;
  HostTensor grad = HostTensor::zeros(DType::kBF16, {n});
  lr = HostTensor::zeros(DType::kF32, {});
  lr.values[0] = 3e-3f;
  for (int64_t i = 0; i < n; ++i) {
    master.values[i] = 0.01f * static_cast<float>(i % 13) - 0.05f;
    sum.values[i] = 1e-4f * static_cast<float>(i % 7);
    grad.values[i] =
        static_cast<float>(roundTo(DType::kBF16, std::sin(0.37 * static_cast<double>(i)) * 1e-2));
  }
  grad.values[5] = 0.0f; // sqrt(0) + eps in the denominator
  sum.values[5] = 0.0f;
  OpAttributes attributes;
  attributes.set("program", std::string("g = a2 a0 0.01 * +; s = a1 g g * +; r0 = s; "
                                        "r1 = a0 a3 neg g * s sqrt 1e-08 + / +"));
  std::vector<HostTensor> out{HostTensor::zeros(DType::kF32, {n}),
                              HostTensor::zeros(DType::kBF16, {n})};
  Status status = runHostOp("elementwise", attributes, {&master, &sum, &grad, &lr}, out);
  ASSERT_TRUE(status.isOk()) << status.message();
  for (int64_t i = 0; i < n; ++i) {
    volatile float decay = master.values[i] * 0.01f;
    volatile float g = grad.values[i] + decay;
    volatile float square = g * g;
    volatile float s = sum.values[i] + square;
    volatile float numerator = -lr.values[0] * g;
    volatile float denominator = std::sqrt(s) + 1e-8f;
    volatile float step = numerator / denominator;
    volatile float p = master.values[i] + step;
    EXPECT_EQ(out[0].values[i], s) << i;
    EXPECT_EQ(out[1].values[i], roundTo(DType::kBF16, p)) << i; // stored as bf16 (RNE)
  }
}

TEST(ElementwiseProgram, CpuKernelComputesF64ProgramsOfIntegers) {
  // f64 arithmetic reads the i64 operand exactly and rounds each result to f32 once.
  HostTensor step = HostTensor::zeros(DType::kI64, {});
  step.ints[0] = 41;
  OpAttributes attributes;
  attributes.set("program", std::string("t = a0 1 +; r0 = 1 0.90000000000000002 t pow -; "
                                        "r1 = 0.1 0.2 +"));
  attributes.set("arithmetic", std::string("f64"));
  std::vector<HostTensor> out{HostTensor::zeros(DType::kF32, {}),
                              HostTensor::zeros(DType::kF32, {})};
  Status status = runHostOp("elementwise", attributes, {&step}, out);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(out[0].values[0], static_cast<float>(1.0 - std::pow(0.9, 42.0)));
  EXPECT_EQ(out[1].values[0], static_cast<float>(0.1 + 0.2));
  // f32 arithmetic refuses integer operands.
  OpAttributes f32;
  f32.set("program", std::string("r0 = a0 1 +"));
  std::vector<HostTensor> one{HostTensor::zeros(DType::kF32, {})};
  status = runHostOp("elementwise", f32, {&step}, one);
  EXPECT_NE(status.message().find("holds integers: only f64 arithmetic reads them"),
            std::string::npos)
      << status.message();
}

// The CUDA kernel evaluates element by element (evaluateElementwise), the CPU block by block
// (evaluateElementwiseBlock): the same bits, in f32 and in f64, with broadcast operands and a
// partial block.
TEST(ElementwiseProgram, BlockAndElementEvaluatorsAgree) {
  auto check = [](const char *text, const char *arithmetic, auto zero) {
    using T = decltype(zero);
    ElementwiseProgram program;
    ASSERT_EQ(compileElementwiseProgram(text, 3, 2, arithmetic, program), "");
    const int64_t n = 200;
    std::vector<T> a(n), b(n), c{static_cast<T>(0.37)}, r0(n), r1(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = static_cast<T>(std::sin(0.1 * static_cast<double>(i)));
      b[i] = static_cast<T>(1.5 + std::cos(0.3 * static_cast<double>(i)));
    }
    const T *operands[3] = {a.data(), b.data(), c.data()};
    const bool broadcast[3] = {false, false, true};
    T *results[2] = {r0.data(), r1.data()};
    evaluateElementwiseBlock(program, operands, broadcast, n, results);
    for (int64_t i = 0; i < n; ++i) {
      T values[3] = {a[i], b[i], c[0]}, computed[2];
      evaluateElementwise(program, values, computed);
      ASSERT_EQ(r0[i], computed[0]) << text << " element " << i;
      ASSERT_EQ(r1[i], computed[1]) << text << " element " << i;
    }
  };
  check("t = a0 a1 *; r0 = t a2 / neg; r1 = a1 sqrt 1e-08 + a0 - 0.5 a2 * *", "f32", 0.0f);
  check("t = a1 a2 pow; r0 = 1 t -; r1 = a0 a0 * a1 / sqrt 3 *", "f64", 0.0);
}

TEST(ElementwiseProgram, CpuKernelRefusesMismatchedOperands) {
  HostTensor a = HostTensor::zeros(DType::kF32, {4}), b = HostTensor::zeros(DType::kF32, {3});
  OpAttributes attributes;
  attributes.set("program", std::string("r0 = a0 a1 -"));
  std::vector<HostTensor> out{HostTensor::zeros(DType::kF32, {4})};
  Status status = runHostOp("elementwise", attributes, {&a, &b}, out);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("operand 1 has 3 elements, not 1 or 4"), std::string::npos)
      << status.message();
  OpAttributes unknownOperand;
  unknownOperand.set("program", std::string("r0 = a0 a9 -"));
  status = runHostOp("elementwise", unknownOperand, {&a, &a}, out);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("operand 'a9' does not exist"), std::string::npos)
      << status.message();
}

} // namespace
