//===- DatasetFuzzer.cpp - libFuzzer harness for Megatron indexed datasets --===//
//
// The input is an index file and a token file: a little-endian u32 length of the .idx bytes,
// the .idx bytes, then the .bin bytes. They are written to a per-process temporary prefix and
// opened as a dataset; every document it reports is then read, which must succeed or fail
// cleanly.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/IndexedDataset.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) {
    return 0;
  }
  uint32_t indexBytes = uint32_t(data[0]) | uint32_t(data[1]) << 8 | uint32_t(data[2]) << 16 |
                        uint32_t(data[3]) << 24;
  indexBytes = std::min<uint32_t>(indexBytes, static_cast<uint32_t>(size - 4));
  static const std::string prefix = "/tmp/mlperfc-dataset-fuzz." + std::to_string(getpid());
  std::ofstream(prefix + ".idx", std::ios::binary)
      .write(reinterpret_cast<const char *>(data + 4), indexBytes);
  std::ofstream(prefix + ".bin", std::ios::binary)
      .write(reinterpret_cast<const char *>(data + 4 + indexBytes), size - 4 - indexBytes);
  mlperf::rt::IndexedDataset dataset;
  if (mlperf::rt::IndexedDataset::open(prefix, dataset).isOk()) {
    for (int64_t document = 0; document < std::min<int64_t>(dataset.numDocuments(), 64);
         ++document) {
      std::vector<int64_t> tokens;
      int64_t length = dataset.documentLength(document);
      (void)dataset.readDocument(document, 0, std::min<int64_t>(length, 4096), tokens);
    }
  }
  return 0;
}
