//===- GemmAlgorithmCache.cpp - cuBLASLt algorithms chosen by timing, kept in a file -===//

#include "runtime/cuda/GemmAlgorithmCache.h"

#include "runtime/support/FileOutput.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mlperf::rt::cuda {

std::string gemmCacheKey(const std::string &gpu, const GemmLayout &layout, const std::string &a,
                         const std::string &b, const std::string &c) {
  std::string name = gpu;
  for (char &ch : name) {
    if (ch == ' ' || ch == '\t') {
      ch = '_';
    }
  }
  std::ostringstream key;
  key << name << ":m" << layout.m << ":n" << layout.n << ":k" << layout.k << ":b" << layout.batch
      << ":t" << layout.transposeX << layout.transposeY << ":ld" << layout.x.ld << ","
      << layout.y.ld << "," << layout.d.ld << ":s" << layout.x.batchStride << ","
      << layout.y.batchStride << "," << layout.d.batchStride << ":" << a << "," << b << "," << c;
  return key.str();
}

Status GemmAlgorithmCache::load(const std::string &path, GemmAlgorithmCache &cache) {
  cache.entries.clear();
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) {
      return Status::ok(); // no cache yet: every GEMM is timed and the file written
    }
    return Status(StatusCode::kNotFound,
                  "cannot read GEMM algorithm cache " + path + ": " + std::strerror(errno));
  }
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) {
      continue;
    }
    std::istringstream fields(line);
    std::string key;
    AlgorithmWords words{};
    bool good = static_cast<bool>(fields >> key);
    for (uint64_t &word : words) {
      std::string hex;
      good = good && (fields >> hex) && hex.size() == 16 &&
             hex.find_first_not_of("0123456789abcdef") == std::string::npos;
      if (good) {
        word = std::stoull(hex, nullptr, 16);
      }
    }
    std::string extra;
    if (!good || (fields >> extra)) {
      return Status(StatusCode::kDataLoss,
                    "GEMM algorithm cache " + path + ", line " + std::to_string(number) +
                        ": expected a key and 8 words of 16 hex digits; delete the file to time "
                        "every GEMM again");
    }
    cache.entries[key] = words;
  }
  return Status::ok();
}

Status GemmAlgorithmCache::save(const std::string &path) const {
  std::string text;
  for (const auto &[key, words] : entries) {
    text += key;
    for (uint64_t word : words) {
      char hex[20];
      std::snprintf(hex, sizeof hex, " %016llx", static_cast<unsigned long long>(word));
      text += hex;
    }
    text += '\n';
  }
  return writeFileAtomically(path, {text});
}

const AlgorithmWords *GemmAlgorithmCache::find(const std::string &key) const {
  auto it = entries.find(key);
  return it == entries.end() ? nullptr : &it->second;
}

} // namespace mlperf::rt::cuda
