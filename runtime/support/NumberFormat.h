//===- NumberFormat.h - Numbers as text that reads back exactly -*- C++ -*-===//

#ifndef MLPERFC_RUNTIME_SUPPORT_NUMBERFORMAT_H
#define MLPERFC_RUNTIME_SUPPORT_NUMBERFORMAT_H

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>

namespace mlperf::rt {

/// The shortest decimal that parses back to exactly `value` ("0.001", "1e-05",
/// "0.00080000001"): what users wrote, and what Python's float() reads as the same double.
/// std::to_chars in general (%g-like) style: shortest round trip, independent of the C locale.
inline std::string shortestDecimal(double value) {
  char buffer[64];
  std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::general);
  return std::string(buffer, result.ptr);
}

/// Bytes for people: "928.25 KiB", "119.66 GiB" (binary units, two decimals).
inline std::string humanBytes(uint64_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(units)) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f %s", value, units[unit]);
  return buffer;
}

/// Seconds for people: "27.674 s", "6.50 ms", "22.9 us".
inline std::string humanSeconds(double seconds) {
  char buffer[32];
  if (seconds >= 1.0) {
    std::snprintf(buffer, sizeof(buffer), "%.3f s", seconds);
  } else if (seconds >= 1e-3) {
    std::snprintf(buffer, sizeof(buffer), "%.2f ms", seconds * 1e3);
  } else {
    std::snprintf(buffer, sizeof(buffer), "%.1f us", seconds * 1e6);
  }
  return buffer;
}

/// An integer with thousands separators: "1,234,567".
inline std::string groupedNumber(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) {
      out += ',';
    }
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_SUPPORT_NUMBERFORMAT_H
