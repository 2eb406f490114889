//===- CommandLine.cpp - Options for runtime tools -------------*- C++ -*-===//

#include "runtime/support/CommandLine.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace mlperf::rt {

CommandLine::CommandLine(std::string program, std::string overview)
    : program(std::move(program)), overview(std::move(overview)) {}

void CommandLine::addString(const std::string &name, std::string *target,
                            const std::string &valueName, const std::string &help) {
  options.push_back({name, valueName, help, [target](const std::string &value) {
                       *target = value;
                       return true;
                     }});
}

void CommandLine::addInt(const std::string &name, int64_t *target, const std::string &help) {
  options.push_back({name, "N", help, [target](const std::string &value) {
                       errno = 0;
                       char *end = nullptr;
                       // Digits with an optional '-': no spaces, no '+'.
                       bool wellFormed =
                           !value.empty() &&
                           (std::isdigit(static_cast<unsigned char>(value[0])) || value[0] == '-');
                       long long parsed = std::strtoll(value.c_str(), &end, 10);
                       if (!wellFormed || *end != '\0' || errno != 0) {
                         return false;
                       }
                       *target = parsed;
                       return true;
                     }});
}

void CommandLine::addFlag(const std::string &name, bool *target, const std::string &help) {
  Option option{name, "", help, nullptr};
  option.flag = target;
  options.push_back(std::move(option));
}

void CommandLine::setPositional(std::vector<std::string> *target, const std::string &valueName,
                                size_t minimum) {
  positional = target;
  positionalName = valueName;
  positionalMinimum = minimum;
}

int CommandLine::error(const std::string &message) const {
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), message.c_str());
  return 1;
}

void CommandLine::printHelp() const {
  std::printf("%s\n\nUSAGE: %s [options]%s%s\n\nOPTIONS:\n", overview.c_str(), program.c_str(),
              positional ? " " : "", positional ? positionalName.c_str() : "");
  for (const Option &option : options) {
    std::string left = "--" + option.name + (option.flag ? "" : " " + option.valueName);
    std::printf("  %-28s %s\n", left.c_str(), option.help.c_str());
  }
  std::printf("  %-28s %s\n", "--help", "Print this help");
}

std::optional<int> CommandLine::parse(int argc, char **argv) {
  bool optionsEnded = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!optionsEnded && arg == "--") {
      optionsEnded = true; // everything after is positional
      continue;
    }
    if (!optionsEnded && (arg == "--help" || arg == "-h")) {
      printHelp();
      return 0;
    }
    if (!optionsEnded && arg.size() > 1 && arg[0] == '-' && arg[1] != '-') {
      return error("unknown option '" + arg + "' (options are spelled --name; see --help)");
    }
    if (optionsEnded || arg.rfind("--", 0) != 0) {
      if (!positional) {
        return error("unexpected argument '" + arg + "' (see --help)");
      }
      positional->push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    bool inlineValue = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inlineValue = true;
    }
    const Option *match = nullptr;
    for (const Option &option : options) {
      match = option.name == name ? &option : match;
    }
    if (!match) {
      return error("unknown option '--" + name + "' (see --help)");
    }
    if (match->flag) {
      if (inlineValue) {
        return error("option '--" + name + "' takes no value");
      }
      *match->flag = true;
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= argc) {
        return error("option '--" + name + "' needs a value (" + match->valueName + ")");
      }
      value = argv[++i];
    }
    if (!match->set(value)) {
      return error("invalid value '" + value + "' for --" + name + " (expected " +
                   match->valueName + ")");
    }
  }
  if (positional && positional->size() < positionalMinimum) {
    return error("expected at least " + std::to_string(positionalMinimum) + " " + positionalName +
                 " argument(s) (see --help)");
  }
  return std::nullopt;
}

} // namespace mlperf::rt
