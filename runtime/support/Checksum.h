//===- Checksum.h - CRC-32 of bytes, as text ------------------*- C++ -*-===//
//
// zlib's CRC-32, the one checksum of the runtime: train-state files (Safetensors.cpp) and plan
// fingerprints (PlanLoader.cpp) write it as "crc32:xxxxxxxx".
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_SUPPORT_CHECKSUM_H
#define MLPERFC_RUNTIME_SUPPORT_CHECKSUM_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace mlperf::rt {

class Checksum {
public:
  Checksum();
  void add(const void *bytes, size_t size);
  /// The text and its terminating NUL, so that ("ab", "c") and ("a", "bc") differ.
  void add(const std::string &text) { add(text.data(), text.size() + 1); }
  /// "crc32:" and eight hex digits.
  std::string hex() const;
  uint32_t value() const { return static_cast<uint32_t>(crc); }

private:
  uint64_t crc;
};

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_SUPPORT_CHECKSUM_H
