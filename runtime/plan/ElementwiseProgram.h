//===- ElementwiseProgram.h - The `elementwise` command's f32 program -*- C++ -*-===//
//
// The `elementwise` command computes up to kMaxResults tensors element by element from up to
// kMaxOperands tensors with a small program the compiler writes, e.g. one Adagrad update:
//
//   "s = a1 a2 a2 * +; r0 = s; r1 = a0 a3 neg a2 * s sqrt 1e-08 + / +"
//
// Statements run in order, separated by ';'. Each is `name = <postfix expression>`; `rK`
// names result K (each assigned exactly once), any other lower-case name a temporary; an
// expression reads operands `aN`, earlier names, f32 constants (decimal literals, rounded to
// f32 once) and applies `+ - * /` (on the two values below the top of the stack, left operand
// first), `neg` and `sqrt`. Arithmetic is f32 with IEEE rounding and no contraction, operand
// values are read as f32 (bf16 widened exactly), a one-element operand is broadcast, and a
// result is rounded to its element type when stored. The runtime knows no optimizer: the
// compiler writes the optimizer's formula here (tg-optimizer, plan-from-tg), and the CPU loop
// and the CUDA kernel both run `evaluateElementwise`, so the two backends give the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_PLAN_ELEMENTWISEPROGRAM_H
#define MLPERFC_RUNTIME_PLAN_ELEMENTWISEPROGRAM_H

#include "runtime/support/HostDevice.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace mlperf::rt {

/// A compiled program: postfix byte code over a value stack and named registers.
struct ElementwiseProgram {
  static constexpr int kMaxOperands = 8;
  static constexpr int kMaxResults = 4;
  static constexpr int kMaxInstructions = 96;
  static constexpr int kMaxConstants = 16;
  static constexpr int kMaxRegisters = 16;
  static constexpr int kMaxStack = 16;

  enum Code : uint8_t {
    kOperand,  // push operand `index`
    kRegister, // push register `index`
    kConstant, // push constants[index]
    kAdd,
    kSubtract,
    kMultiply,
    kDivide,
    kNegate,
    kSqrt,
    kStore, // pop into register `index`
  };
  struct Instruction {
    uint8_t code, index;
  };

  Instruction instructions[kMaxInstructions];
  float constants[kMaxConstants];
  int32_t instructionCount = 0;
  int32_t operandCount = 0, resultCount = 0;
  /// The register holding each result after the program ran.
  uint8_t resultRegister[kMaxResults];
};

/// Compiles `text` for `operands` operands and `results` results; returns an empty string, or
/// what is wrong with the program (naming the statement), leaving `program` unspecified.
std::string compileElementwiseProgram(std::string_view text, int operands, int results,
                                      ElementwiseProgram &program);

/// Runs `program` on one element: `operand[n]` is operand n's value at this element; writes
/// `result[k]` for every result.
MLPERF_HD inline void evaluateElementwise(const ElementwiseProgram &program, const float *operand,
                                          float *result) {
  float stack[ElementwiseProgram::kMaxStack];
  float registers[ElementwiseProgram::kMaxRegisters];
  int top = 0; // the compiler proved it stays within [0, kMaxStack]
  for (int32_t i = 0; i < program.instructionCount; ++i) {
    const ElementwiseProgram::Instruction instruction = program.instructions[i];
    switch (instruction.code) {
    case ElementwiseProgram::kOperand:
      stack[top++] = operand[instruction.index];
      break;
    case ElementwiseProgram::kRegister:
      stack[top++] = registers[instruction.index];
      break;
    case ElementwiseProgram::kConstant:
      stack[top++] = program.constants[instruction.index];
      break;
    case ElementwiseProgram::kAdd:
      --top;
      stack[top - 1] = stack[top - 1] + stack[top];
      break;
    case ElementwiseProgram::kSubtract:
      --top;
      stack[top - 1] = stack[top - 1] - stack[top];
      break;
    case ElementwiseProgram::kMultiply:
      --top;
      stack[top - 1] = stack[top - 1] * stack[top];
      break;
    case ElementwiseProgram::kDivide:
      --top;
      stack[top - 1] = stack[top - 1] / stack[top];
      break;
    case ElementwiseProgram::kNegate:
      stack[top - 1] = -stack[top - 1];
      break;
    case ElementwiseProgram::kSqrt:
      stack[top - 1] = sqrtf(stack[top - 1]);
      break;
    case ElementwiseProgram::kStore:
      registers[instruction.index] = stack[--top];
      break;
    default:
      break;
    }
  }
  for (int32_t k = 0; k < program.resultCount; ++k) {
    result[k] = registers[program.resultRegister[k]];
  }
}

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_PLAN_ELEMENTWISEPROGRAM_H
