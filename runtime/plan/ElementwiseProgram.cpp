//===- ElementwiseProgram.cpp - Compiling an `elementwise` program -*- C++ -*-===//

#include "runtime/plan/ElementwiseProgram.h"

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
                                      ElementwiseProgram &program) {
  using P = ElementwiseProgram;
  if (operands < 1 || operands > P::kMaxOperands) {
    return "takes 1 to " + std::to_string(P::kMaxOperands) + " operands, not " +
           std::to_string(operands);
  }
  if (results < 1 || results > P::kMaxResults) {
    return "writes 1 to " + std::to_string(P::kMaxResults) + " results, not " +
           std::to_string(results);
  }
  program = P{};
  program.operandCount = operands;
  program.resultCount = results;
  std::map<std::string, int, std::less<>> registers; // name -> register
  std::vector<bool> resultAssigned(results, false);
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
    if (looksIndexed(target, 'r')) {
      int index = indexAfter(target, 'r', results);
      if (index < 0) {
        return where + "result '" + std::string(target) + "' does not exist (the command has " +
               std::to_string(results) + ")";
      }
      if (resultAssigned[index]) {
        return where + "result '" + std::string(target) + "' is assigned twice";
      }
      resultAssigned[index] = true;
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
    if (!emit(P::kStore, reg)) {
      return tooLong;
    }
  }
  for (int k = 0; k < results; ++k) {
    if (!resultAssigned[k]) {
      return "never assigns result r" + std::to_string(k);
    }
    program.resultRegister[k] =
        static_cast<uint8_t>(registers.find("r" + std::to_string(k))->second);
  }
  return "";
}

} // namespace mlperf::rt
