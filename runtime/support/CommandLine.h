//===- CommandLine.h - Options for runtime tools ---------------*- C++ -*-===//
//
// A small --option parser for tools that must not link LLVM (mlperf-run, data preparation):
// declared options with help text, --help, and one clear error for unknown or malformed
// options.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_SUPPORT_COMMANDLINE_H
#define MLPERFC_RUNTIME_SUPPORT_COMMANDLINE_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mlperf::rt {

class CommandLine {
public:
  CommandLine(std::string program, std::string overview);

  void addString(const std::string &name, std::string *target, const std::string &valueName,
                 const std::string &help);
  void addInt(const std::string &name, int64_t *target, const std::string &help);
  void addFlag(const std::string &name, bool *target, const std::string &help);
  /// Arguments that are not options; at least `minimum` are required.
  void setPositional(std::vector<std::string> *target, const std::string &valueName,
                     size_t minimum);

  /// Parses argv. Returns nullopt to go on, or the exit status after printing help (0) or an
  /// error naming the bad argument (1).
  std::optional<int> parse(int argc, char **argv);

  /// Prints "<program>: error: <message>" to stderr and returns 1.
  int error(const std::string &message) const;

private:
  struct Option {
    std::string name, valueName, help;
    std::function<bool(const std::string &)> set; // null for flags
    bool *flag = nullptr;
  };
  void printHelp() const;

  std::string program, overview;
  std::vector<Option> options;
  std::vector<std::string> *positional = nullptr;
  std::string positionalName;
  size_t positionalMinimum = 0;
};

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_SUPPORT_COMMANDLINE_H
