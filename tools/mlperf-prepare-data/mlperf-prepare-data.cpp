//===- mlperf-prepare-data.cpp - Text files to an indexed dataset -*- C++ -*-===//
//
// Byte-level tokenization (token = byte value, 0..255) of text files into a Megatron indexed
// dataset, for tests and demos on small corpora. Each file is one document, or with
// --split-on LINE, the lines equal to LINE separate documents (the fortune database format
// uses "%"). Empty documents are dropped.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/IndexedDataset.h"
#include "runtime/support/CommandLine.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string_view>
#include <sys/stat.h>

using namespace mlperf::rt;

int main(int argc, char **argv) {
  std::string output, splitOn;
  int64_t eod = -1;
  std::vector<std::string> inputs;
  CommandLine cli("mlperf-prepare-data",
                  "mlperf-prepare-data: text files to a byte-level Megatron indexed dataset");
  cli.addString("output", &output, "PREFIX", "Write PREFIX.bin and PREFIX.idx (required)");
  cli.addString("split-on", &splitOn, "LINE",
                "A line equal to LINE ends a document (e.g. % for fortune files)");
  cli.addInt("eod", &eod,
             "Append this end-of-document token to every document (>= 256 makes "
             "the tokens 16-bit)");
  cli.setPositional(&inputs, "FILE...", 1);
  if (std::optional<int> exit = cli.parse(argc, argv)) {
    return *exit;
  }
  if (output.empty()) {
    return cli.error("--output PREFIX is required");
  }
  if (eod < -1 || eod > 65535) {
    return cli.error("--eod must be a token in [0, 65535]");
  }

  std::vector<std::vector<int64_t>> documents;
  auto addDocument = [&](const std::string &text) {
    if (text.empty()) {
      return;
    }
    std::vector<int64_t> tokens(text.begin(), text.end());
    for (int64_t &token : tokens) {
      token = static_cast<unsigned char>(token);
    }
    if (eod >= 0) {
      tokens.push_back(eod);
    }
    documents.push_back(std::move(tokens));
  };
  int64_t bytes = 0;
  for (const std::string &path : inputs) {
    struct stat info{};
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
      return cli.error("cannot read " + path + ": not a regular file");
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream contents;
    contents << in.rdbuf();
    if (!in || in.bad()) {
      return cli.error("cannot read " + path);
    }
    std::string text = contents.str();
    bytes += static_cast<int64_t>(text.size());
    if (splitOn.empty()) {
      addDocument(text);
      continue;
    }
    // Line endings are kept as they are; a separator line may end in "\r\n".
    std::string current;
    size_t begin = 0;
    while (begin < text.size()) {
      size_t newline = text.find('\n', begin);
      size_t end = newline == std::string::npos ? text.size() : newline + 1;
      std::string_view line(text.data() + begin, end - begin);
      std::string_view content = line;
      while (!content.empty() && (content.back() == '\n' || content.back() == '\r')) {
        content.remove_suffix(1);
      }
      if (content == splitOn) {
        addDocument(current);
        current.clear();
      } else {
        current.append(line);
      }
      begin = end;
    }
    addDocument(current);
  }
  if (documents.empty()) {
    return cli.error("the input holds no non-empty document");
  }
  TokenType type = eod >= 256 ? TokenType::kUInt16 : TokenType::kUInt8;
  Status status = writeIndexedDataset(output, documents, type);
  if (!status.isOk()) {
    return cli.error(status.message());
  }
  int64_t tokens = 0;
  for (const auto &document : documents) {
    tokens += static_cast<int64_t>(document.size());
  }
  std::printf("mlperf-prepare-data: %zu file(s), %lld bytes -> %zu documents, %lld tokens "
              "(%s): %s.bin, %s.idx\n",
              inputs.size(), static_cast<long long>(bytes), documents.size(),
              static_cast<long long>(tokens), type == TokenType::kUInt8 ? "uint8" : "uint16",
              output.c_str(), output.c_str());
  return 0;
}
