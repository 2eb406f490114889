//===- ElementwiseProgram.h - The `elementwise` command's program -*- C++ -*-===//
//
// The `elementwise` command computes up to kMaxResults tensors element by element from up to
// kMaxOperands tensors with a small program the compiler writes, e.g. one Adagrad update:
//
//   "s = a1 a2 a2 * +; r0 = s; r1 = a0 a3 neg a2 * s sqrt 1e-08 + / +"
//
// Statements run in order, separated by ';'. Each is `name = <postfix expression>`; `rK`
// names result K (each assigned exactly once), any other lower-case name a temporary; an
// expression reads operands `aN`, earlier names and decimal constants and applies `+ - * /`
// (on the two values below the top of the stack, left operand first), `neg`, `sqrt` and, in
// f64 arithmetic, `pow` (left operand raised to the top one). The arithmetic is f32 (the
// default) or f64 (attribute `arithmetic = "f64"`), with IEEE rounding and no contraction:
// constants are rounded to it once, operand values are read in it (bf16 widened exactly;
// integer operands only in f64, converted exactly below 2^53), a one-element operand is
// broadcast, and a result is rounded to its element type once, when stored. The runtime
// knows no optimizer: the compiler writes each optimizer's formula here (tg-optimizer), and
// the CPU loop and the CUDA kernel both run `evaluateElementwise`, so the two backends give
// the same bits (f64 `pow` as far as the device's and glibc's agree).
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
    kPower, // f64 only
    kStore, // pop into register `index`
  };
  struct Instruction {
    uint8_t code, index;
  };

  Instruction instructions[kMaxInstructions];
  float constants[kMaxConstants];      // f32 arithmetic
  double wideConstants[kMaxConstants]; // f64 arithmetic
  bool f64 = false;
  int32_t instructionCount = 0;
  int32_t operandCount = 0, resultCount = 0;
  /// The register holding each result after the program ran.
  uint8_t resultRegister[kMaxResults];
};

/// Compiles `text` for `operands` operands and `results` results in `arithmetic` ("f32" or
/// "f64"); returns an empty string, or what is wrong with the program (naming the
/// statement), leaving `program` unspecified.
std::string compileElementwiseProgram(std::string_view text, int operands, int results,
                                      std::string_view arithmetic, ElementwiseProgram &program);

MLPERF_HD inline float elementSqrt(float x) { return sqrtf(x); }
MLPERF_HD inline double elementSqrt(double x) { return sqrt(x); }
// The compiler refuses `pow` in f32 programs; the overload keeps the template whole.
MLPERF_HD inline float elementPower(float x, float y) { return powf(x, y); }
MLPERF_HD inline double elementPower(double x, double y) { return pow(x, y); }
/// Runs `program` on one element in T (float for f32 arithmetic, double for f64):
/// `operand[n]` is operand n's value at this element; writes `result[k]` for every result.
template <typename T>
MLPERF_HD inline void evaluateElementwise(const ElementwiseProgram &program, const T *operand,
                                          T *result) {
  T stack[ElementwiseProgram::kMaxStack];
  T registers[ElementwiseProgram::kMaxRegisters];
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
      stack[top++] = sizeof(T) == sizeof(double)
                         ? static_cast<T>(program.wideConstants[instruction.index])
                         : static_cast<T>(program.constants[instruction.index]);
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
      stack[top - 1] = elementSqrt(stack[top - 1]);
      break;
    case ElementwiseProgram::kPower:
      --top;
      stack[top - 1] = elementPower(stack[top - 1], stack[top]);
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

/// Elements the host evaluates at once (evaluateElementwiseBlock).
constexpr int64_t kElementwiseBlock = 256;

/// Runs `program` on `count` <= kElementwiseBlock elements at once on the host, one
/// instruction over all of them before the next, so the dispatch costs once per block and
/// each instruction's loop vectorizes: operand n's values are operand[n][0, count), or
/// operand[n][0] for every element where broadcast[n]; result k goes to result[k][0, count).
/// Every element gets exactly evaluateElementwise's operations in its order: the same bits.
template <typename T>
void evaluateElementwiseBlock(const ElementwiseProgram &program, const T *const *operand,
                              const bool *broadcast, int64_t count, T *const *result);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_PLAN_ELEMENTWISEPROGRAM_H
