//===- mlperf-prepare-data.cpp - Text files to an indexed dataset -*- C++ -*-===//
//
// Two inputs, one dataset format (docs/runtime.md, "Datasets"):
//  - text files: byte-level tokenization (token = byte value, 0..255) into a Megatron indexed
//    dataset, for tests and demos on small corpora. Each file is one document, or with
//    --split-on LINE, the lines equal to LINE separate documents (the fortune database format
//    uses "%"). Empty documents are dropped.
//  - Parquet tables (files named *.parquet) of pre-tokenized rows, as the llama2_70b_lora
//    reference's GovReport files: the token column (input_ids) becomes PREFIX.bin/.idx, one
//    document per row, and the label column (labels, -100 where no loss is taken) becomes
//    PREFIX.labels.bin/.idx, shifted as Hugging Face's causal-LM loss shifts it: the label of
//    position i is the table's label i + 1, and the last position has none (-100).
//
//===----------------------------------------------------------------------===//

#include "runtime/data/GPTBatches.h"
#include "runtime/data/IndexedDataset.h"
#include "runtime/data/ParquetColumns.h"
#include "runtime/support/CommandLine.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string_view>
#include <sys/stat.h>

using namespace mlperf::rt;

namespace {

constexpr int64_t kIgnoredLabel = -100; // Hugging Face's ignore_index

bool isParquet(const std::string &path) {
  return path.size() > 8 && path.compare(path.size() - 8, 8, ".parquet") == 0;
}

/// The smallest Megatron token type that holds [lowest, highest].
TokenType typeFor(int64_t lowest, int64_t highest) {
  if (lowest >= 0) {
    return highest < 256     ? TokenType::kUInt8
           : highest < 65536 ? TokenType::kUInt16
                             : TokenType::kInt32;
  }
  return lowest >= -32768 && highest < 32768 ? TokenType::kInt16 : TokenType::kInt32;
}

const char *typeName(TokenType type) {
  switch (type) {
  case TokenType::kUInt8:
    return "uint8";
  case TokenType::kUInt16:
    return "uint16";
  case TokenType::kInt16:
    return "int16";
  case TokenType::kInt32:
    return "int32";
  default:
    return "int64";
  }
}

int prepareParquet(CommandLine &cli, const std::vector<std::string> &inputs,
                   const std::string &output, const std::string &tokensColumn,
                   const std::string &labelsColumn) {
  if (!parquetSupported()) {
    return cli.error("this build reads no Parquet: pyarrow was not found when it was "
                     "configured (run scripts/setup.sh, then configure and build again)");
  }
  std::vector<std::vector<std::vector<int64_t>>> columns;
  for (const std::string &path : inputs) {
    size_t before = columns.empty() ? 0 : columns[0].size();
    Status status = readParquetIntegerLists(path, {tokensColumn, labelsColumn}, columns);
    if (!status.isOk()) {
      return cli.error(status.message());
    }
    std::fprintf(stderr, "mlperf-prepare-data: %s: %zu rows\n", path.c_str(),
                 columns[0].size() - before);
  }
  std::vector<std::vector<int64_t>> &tokens = columns[0], &labels = columns[1];
  if (tokens.empty()) {
    return cli.error("the input holds no rows");
  }
  int64_t tokenLow = 0, tokenHigh = 0, labelLow = kIgnoredLabel, labelHigh = 0, counted = 0;
  for (size_t row = 0; row < tokens.size(); ++row) {
    if (labels[row].size() != tokens[row].size()) {
      return cli.error("row " + std::to_string(row) + " has " + std::to_string(tokens[row].size()) +
                       " " + tokensColumn + " but " + std::to_string(labels[row].size()) + " " +
                       labelsColumn);
    }
    // Hugging Face's shift: position i predicts label i + 1; the last position predicts none.
    std::vector<int64_t> &rowLabels = labels[row];
    rowLabels.erase(rowLabels.begin());
    rowLabels.push_back(kIgnoredLabel);
    for (size_t i = 0; i < tokens[row].size(); ++i) {
      int64_t token = tokens[row][i], label = rowLabels[i];
      if (token < 0 || (label < 0 && label != kIgnoredLabel)) {
        return cli.error("row " + std::to_string(row) + " position " + std::to_string(i) +
                         ": token " + std::to_string(token) + ", label " + std::to_string(label) +
                         " (tokens are >= 0, labels >= 0 or -100)");
      }
      tokenLow = std::min(tokenLow, token);
      tokenHigh = std::max(tokenHigh, token);
      labelLow = std::min(labelLow, label);
      labelHigh = std::max(labelHigh, label);
      counted += label != kIgnoredLabel;
    }
  }
  TokenType tokenType = typeFor(tokenLow, tokenHigh), labelType = typeFor(labelLow, labelHigh);
  Status status = writeIndexedDataset(output, tokens, tokenType);
  if (status.isOk()) {
    status = writeIndexedDataset(labelsPrefix(output), labels, labelType);
  }
  if (!status.isOk()) {
    return cli.error(status.message());
  }
  int64_t positions = 0;
  for (const auto &row : tokens) {
    positions += static_cast<int64_t>(row.size());
  }
  std::printf("mlperf-prepare-data: %zu Parquet file(s) -> %zu rows, %lld tokens (%s), %lld "
              "with a label (%s): %s.bin/.idx, %s.bin/.idx\n",
              inputs.size(), tokens.size(), static_cast<long long>(positions), typeName(tokenType),
              static_cast<long long>(counted), typeName(labelType), output.c_str(),
              labelsPrefix(output).c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string output, splitOn, tokensColumn = "input_ids", labelsColumn = "labels";
  int64_t eod = -1;
  std::vector<std::string> inputs;
  CommandLine cli("mlperf-prepare-data",
                  "mlperf-prepare-data: text files (byte-level tokens) or Parquet tables of "
                  "tokenized rows with labels to an indexed dataset");
  cli.addString("output", &output, "PREFIX", "Write PREFIX.bin and PREFIX.idx (required)");
  cli.addString("split-on", &splitOn, "LINE",
                "A line equal to LINE ends a document (e.g. % for fortune files)");
  cli.addInt("eod", &eod,
             "Append this end-of-document token to every document (>= 256 makes "
             "the tokens 16-bit)");
  cli.addString("tokens-column", &tokensColumn, "NAME",
                "Parquet input: the list column of token ids (default input_ids)");
  cli.addString("labels-column", &labelsColumn, "NAME",
                "Parquet input: the list column of labels, -100 where no loss is taken "
                "(default labels)");
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

  size_t parquetInputs = std::count_if(inputs.begin(), inputs.end(), isParquet);
  if (parquetInputs > 0) {
    if (parquetInputs != inputs.size()) {
      return cli.error("give either Parquet tables (*.parquet) or text files, not both");
    }
    if (!splitOn.empty() || eod >= 0) {
      return cli.error("--split-on and --eod apply to text files, not to Parquet tables");
    }
    return prepareParquet(cli, inputs, output, tokensColumn, labelsColumn);
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
              static_cast<long long>(tokens), typeName(type), output.c_str(), output.c_str());
  return 0;
}
