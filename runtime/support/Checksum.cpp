//===- Checksum.cpp - CRC-32 of bytes, as text ----------------*- C++ -*-===//

#include "runtime/support/Checksum.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>

namespace mlperf::rt {

Checksum::Checksum() : crc(::crc32(0L, Z_NULL, 0)) {}

void Checksum::add(const void *bytes, size_t size) {
  const auto *cursor = static_cast<const Bytef *>(bytes);
  while (size > 0) { // zlib takes 32-bit lengths
    uInt chunk = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = ::crc32(static_cast<uLong>(crc), cursor, chunk);
    cursor += chunk;
    size -= chunk;
  }
}

std::string Checksum::hex() const {
  char text[16];
  std::snprintf(text, sizeof text, "crc32:%08lx", static_cast<unsigned long>(crc));
  return text;
}

} // namespace mlperf::rt
