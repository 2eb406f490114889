//===- ElementwiseProgram.cpp - Compiling an `elementwise` program -*- C++ -*-===//

#include "runtime/plan/ElementwiseProgram.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <vector>

namespace mlperf::rt {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::vector<std::string_view> tokens(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    }
    size_t begin = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    }
    if (i > begin) {
      out.push_back(text.substr(begin, i - begin));
    }
  }
  return out;
}

/// `prefix` followed by a decimal number below `limit`, e.g. "a3": 3; otherwise -1.
int indexAfter(std::string_view token, char prefix, int limit) {
  if (token.size() < 2 || token.size() > 4 || token[0] != prefix) {
    return -1;
  }
  // One spelling per index: "r00" is not r0 (it would name another register).
  if (token.size() > 2 && token[1] == '0') {
    return -1;
  }
  int value = 0;
  for (char c : token.substr(1)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return -1;
    }
    value = value * 10 + (c - '0');
  }
  return value < limit ? value : -1;
}

bool isName(std::string_view token) {
  if (token.empty() || !std::islower(static_cast<unsigned char>(token[0]))) {
    return false;
  }
  for (char c : token) {
    if (!std::islower(static_cast<unsigned char>(c)) &&
        !std::isdigit(static_cast<unsigned char>(c)) && c != '_') {
      return false;
    }
  }
  return true;
}

/// Whether `token` is an operand or result reference of any index ("a12", "r0").
bool looksIndexed(std::string_view token, char prefix) {
  return token.size() >= 2 && token[0] == prefix &&
         std::isdigit(static_cast<unsigned char>(token[1]));
}

} // namespace

std::string compileElementwiseProgram(std::string_view text, int operands, int results,
                                      std::string_view arithmetic, ElementwiseProgram &program) {
  using P = ElementwiseProgram;
  if (arithmetic != "f32" && arithmetic != "f64") {
    return "has arithmetic '" + std::string(arithmetic) + "', not f32 or f64";
  }
  if (operands < 1 || operands > P::kMaxOperands) {
    return "takes 1 to " + std::to_string(P::kMaxOperands) + " operands, not " +
           std::to_string(operands);
  }
  if (results < 1 || results > P::kMaxResults) {
    return "writes 1 to " + std::to_string(P::kMaxResults) + " results, not " +
           std::to_string(results);
  }
  program = P{};
  program.f64 = arithmetic == "f64";
  program.operandCount = operands;
  program.resultCount = results;
  std::map<std::string, int, std::less<>> registers; // name -> register
  std::vector<int> resultRegister(results, -1);      // -1: not assigned yet
  int constants = 0;
  auto emit = [&](P::Code code, int index) -> bool {
    if (program.instructionCount == P::kMaxInstructions) {
      return false;
    }
    program.instructions[program.instructionCount++] = {static_cast<uint8_t>(code),
                                                        static_cast<uint8_t>(index)};
    return true;
  };
  const std::string tooLong =
      "is longer than " + std::to_string(P::kMaxInstructions) + " instructions";

  size_t position = 0;
  int statementIndex = 0;
  while (position <= text.size()) {
    size_t end = text.find(';', position);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view statement = trim(text.substr(position, end - position));
    position = end + 1;
    if (statement.empty()) {
      if (end == text.size()) {
        break;
      }
      continue;
    }
    ++statementIndex;
    std::string where =
        "statement " + std::to_string(statementIndex) + " '" + std::string(statement) + "': ";
    size_t equals = statement.find('=');
    if (equals == std::string_view::npos) {
      return where + "expected 'name = expression'";
    }
    std::string_view target = trim(statement.substr(0, equals));
    std::vector<std::string_view> expression = tokens(statement.substr(equals + 1));
    if (expression.empty()) {
      return where + "empty expression";
    }
    int depth = 0;
    for (std::string_view token : expression) {
      if (token == "+" || token == "-" || token == "*" || token == "/") {
        if (depth < 2) {
          return where + "'" + std::string(token) + "' needs two values on the stack";
        }
        --depth;
        P::Code code = token == "+"   ? P::kAdd
                       : token == "-" ? P::kSubtract
                       : token == "*" ? P::kMultiply
                                      : P::kDivide;
        if (!emit(code, 0)) {
          return tooLong;
        }
        continue;
      }
      if (token == "pow") {
        if (!program.f64) {
          return where + "'pow' needs arithmetic f64";
        }
        if (depth < 2) {
          return where + "'pow' needs two values on the stack";
        }
        --depth;
        if (!emit(P::kPower, 0)) {
          return tooLong;
        }
        continue;
      }
      if (token == "neg" || token == "sqrt") {
        if (depth < 1) {
          return where + "'" + std::string(token) + "' needs a value on the stack";
        }
        if (!emit(token == "neg" ? P::kNegate : P::kSqrt, 0)) {
          return tooLong;
        }
        continue;
      }
      bool pushed = false;
      if (looksIndexed(token, 'a')) {
        int index = indexAfter(token, 'a', operands);
        if (index < 0) {
          return where + "operand '" + std::string(token) + "' does not exist (the command has " +
                 std::to_string(operands) + ")";
        }
        pushed = emit(P::kOperand, index);
      } else if (auto it = registers.find(token); it != registers.end()) {
        pushed = emit(P::kRegister, it->second);
      } else if (isName(token)) {
        return where + "'" + std::string(token) + "' is used before it is assigned";
      } else {
        std::string literal(token);
        char *parsedEnd = nullptr;
        errno = 0;
        double value = std::strtod(literal.c_str(), &parsedEnd);
        if (parsedEnd != literal.c_str() + literal.size() || errno == ERANGE ||
            !std::isfinite(value) || std::isalpha(static_cast<unsigned char>(literal[0]))) {
          return where + "unknown token '" + literal + "'";
        }
        if (constants == P::kMaxConstants) {
          return "has more than " + std::to_string(P::kMaxConstants) + " constants";
        }
        program.constants[constants] = static_cast<float>(value);
        program.wideConstants[constants] = value;
        pushed = emit(P::kConstant, constants++);
      }
      if (!pushed) {
        return tooLong;
      }
      if (++depth > P::kMaxStack) {
        return where + "needs a stack deeper than " + std::to_string(P::kMaxStack);
      }
    }
    if (depth != 1) {
      return where + "leaves " + std::to_string(depth) + " values on the stack, not one";
    }
    if (looksIndexed(target, 'a')) {
      return where + "operands cannot be assigned";
    }
    int result = -1;
    if (looksIndexed(target, 'r')) {
      result = indexAfter(target, 'r', results);
      if (result < 0) {
        return where + "result '" + std::string(target) + "' does not exist (the command has " +
               std::to_string(results) + ")";
      }
      if (resultRegister[result] >= 0) {
        return where + "result '" + std::string(target) + "' is assigned twice";
      }
    } else if (!isName(target)) {
      return where + "'" + std::string(target) +
             "' is not a name (lower-case letters, digits, '_')";
    } else if (registers.count(target)) {
      return where + "'" + std::string(target) + "' is assigned twice";
    }
    if (static_cast<int>(registers.size()) == P::kMaxRegisters) {
      return "names more than " + std::to_string(P::kMaxRegisters) + " values";
    }
    int reg = static_cast<int>(registers.size());
    registers.emplace(std::string(target), reg);
    if (result >= 0) {
      resultRegister[result] = reg;
    }
    if (!emit(P::kStore, reg)) {
      return tooLong;
    }
  }
  for (int k = 0; k < results; ++k) {
    if (resultRegister[k] < 0) {
      return "never assigns result r" + std::to_string(k);
    }
    program.resultRegister[k] = static_cast<uint8_t>(resultRegister[k]);
  }
  return "";
}

namespace {

/// A value on the block evaluator's stack: `count` values, or one for every element.
template <typename T> struct BlockValue {
  const T *data;
  bool scalar;
};

} // namespace

template <typename T>
void evaluateElementwiseBlock(const ElementwiseProgram &program, const T *const *operand,
                              const bool *broadcast, int64_t count, T *const *result) {
  using P = ElementwiseProgram;
  alignas(64) T scratch[P::kMaxStack][kElementwiseBlock];
  alignas(64) T registers[P::kMaxRegisters][kElementwiseBlock];
  bool registerScalar[P::kMaxRegisters] = {};
  T constants[P::kMaxConstants];
  for (int i = 0; i < P::kMaxConstants; ++i) {
    constants[i] = sizeof(T) == sizeof(double) ? static_cast<T>(program.wideConstants[i])
                                               : static_cast<T>(program.constants[i]);
  }
  BlockValue<T> stack[P::kMaxStack];
  int top = 0;
  auto binary = [&](auto apply) {
    BlockValue<T> b = stack[--top], a = stack[top - 1];
    T *out = scratch[top - 1]; // may be a's own buffer: element i is read before it is written
    if (a.scalar && b.scalar) {
      out[0] = apply(a.data[0], b.data[0]);
    } else if (a.scalar) {
      const T x = a.data[0];
      for (int64_t i = 0; i < count; ++i) {
        out[i] = apply(x, b.data[i]);
      }
    } else if (b.scalar) {
      const T y = b.data[0];
      for (int64_t i = 0; i < count; ++i) {
        out[i] = apply(a.data[i], y);
      }
    } else {
      for (int64_t i = 0; i < count; ++i) {
        out[i] = apply(a.data[i], b.data[i]);
      }
    }
    stack[top - 1] = {out, a.scalar && b.scalar};
  };
  auto unary = [&](auto apply) {
    BlockValue<T> a = stack[top - 1];
    T *out = scratch[top - 1];
    int64_t n = a.scalar ? 1 : count;
    for (int64_t i = 0; i < n; ++i) {
      out[i] = apply(a.data[i]);
    }
    stack[top - 1] = {out, a.scalar};
  };
  for (int32_t at = 0; at < program.instructionCount; ++at) {
    const P::Instruction instruction = program.instructions[at];
    switch (instruction.code) {
    case P::kOperand:
      stack[top++] = {operand[instruction.index], broadcast[instruction.index]};
      break;
    case P::kRegister:
      stack[top++] = {registers[instruction.index], registerScalar[instruction.index]};
      break;
    case P::kConstant:
      stack[top++] = {&constants[instruction.index], true};
      break;
    case P::kAdd:
      binary([](T x, T y) { return x + y; });
      break;
    case P::kSubtract:
      binary([](T x, T y) { return x - y; });
      break;
    case P::kMultiply:
      binary([](T x, T y) { return x * y; });
      break;
    case P::kDivide:
      binary([](T x, T y) { return x / y; });
      break;
    case P::kPower:
      binary([](T x, T y) { return elementPower(x, y); });
      break;
    case P::kNegate:
      unary([](T x) { return -x; });
      break;
    case P::kSqrt:
      unary([](T x) { return elementSqrt(x); });
      break;
    case P::kStore: {
      BlockValue<T> value = stack[--top];
      std::copy_n(value.data, value.scalar ? 1 : count, registers[instruction.index]);
      registerScalar[instruction.index] = value.scalar;
      break;
    }
    default:
      break;
    }
  }
  for (int32_t k = 0; k < program.resultCount; ++k) {
    const int reg = program.resultRegister[k];
    if (registerScalar[reg]) {
      std::fill_n(result[k], count, registers[reg][0]);
    } else {
      std::copy_n(registers[reg], count, result[k]);
    }
  }
}

template void evaluateElementwiseBlock<float>(const ElementwiseProgram &, const float *const *,
                                              const bool *, int64_t, float *const *);
template void evaluateElementwiseBlock<double>(const ElementwiseProgram &, const double *const *,
                                               const bool *, int64_t, double *const *);

} // namespace mlperf::rt
