//===- NumericsTest.cpp - Rounding and Philox against independent data ---===//

#include "runtime/cpu/Numerics.h"
#include "runtime/plan/PlanOps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

using namespace mlperf::rt;

namespace {

float fromBits(const std::string &hex) {
  if (hex == "nan") {
    return std::nanf("");
  }
  uint32_t bits = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

bool sameValue(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Golden data written by test/oracle/rounding_cases.py with ml_dtypes.
TEST(Numerics, RoundingMatchesMlDtypes) {
  std::ifstream file(MLPERFC_SOURCE_DIR "/test/oracle/data/rounding.txt");
  ASSERT_TRUE(file.good()) << "missing test/oracle/data/rounding.txt";
  std::string line;
  std::getline(file, line);
  ASSERT_NE(line.find("rounding cases v1"), std::string::npos) << line;
  int cases = 0;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    std::string input, bf16, e4m3, e5m2;
    fields >> input >> bf16 >> e4m3 >> e5m2;
    double x = fromBits(input);
    EXPECT_TRUE(sameValue(roundTo(DType::kBF16, x), fromBits(bf16))) << "bf16 of " << input;
    float buffered = fromBits(input); // roundBuffer's bit-level bf16 path
    roundBuffer(DType::kBF16, &buffered, 1);
    EXPECT_TRUE(sameValue(buffered, fromBits(bf16))) << "roundBuffer bf16 of " << input;
    EXPECT_TRUE(sameValue(roundTo(DType::kF8E4M3FN, x), fromBits(e4m3))) << "e4m3 of " << input;
    EXPECT_TRUE(sameValue(roundTo(DType::kF8E5M2, x), fromBits(e5m2))) << "e5m2 of " << input;
    ++cases;
  }
  EXPECT_GT(cases, 4000);
}

// Golden data written by test/oracle/fp8_cases.py with numpy and ml_dtypes: the scaled,
// saturating cast of tg.fp8_quantize on both sides of every rounding boundary of both formats
// (at scale 1 and at scales whose f32 product rounding matters), and every bf16 value.
TEST(Numerics, Fp8QuantizeMatchesMlDtypes) {
  std::ifstream file(MLPERFC_SOURCE_DIR "/test/oracle/data/fp8_quantize.txt");
  ASSERT_TRUE(file.good()) << "missing test/oracle/data/fp8_quantize.txt";
  std::string line;
  std::getline(file, line);
  ASSERT_NE(line.find("fp8 quantize cases v1"), std::string::npos) << line;
  auto check = [](DType type, float x, float scale, uint32_t expected) {
    float q = quantizeFp8(type, x, scale);
    if (expected == 0xFF) {
      return std::isnan(q);
    }
    return !std::isnan(q) && encodeBits(type, q) == expected;
  };
  int cases = 0, exhaustive = 0;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "case") {
      std::string x, scale, e4m3, e5m2;
      fields >> x >> scale >> e4m3 >> e5m2;
      EXPECT_TRUE(
          check(DType::kF8E4M3FN, fromBits(x), fromBits(scale), std::stoul(e4m3, nullptr, 16)))
          << "e4m3 of " << x << " * " << scale;
      EXPECT_TRUE(
          check(DType::kF8E5M2, fromBits(x), fromBits(scale), std::stoul(e5m2, nullptr, 16)))
          << "e5m2 of " << x << " * " << scale;
      ++cases;
    } else if (kind == "bf16") {
      std::string scale, format, codes;
      fields >> scale >> format;
      DType type = DType::kF32;
      ASSERT_TRUE(dtypeFromName(format, type)) << format;
      for (uint32_t pattern = 0; pattern < 65536;) {
        ASSERT_TRUE(std::getline(file, codes)) << "truncated bf16 section";
        for (size_t i = 0; i + 1 < codes.size(); i += 2, ++pattern) {
          uint32_t expected = std::stoul(codes.substr(i, 2), nullptr, 16);
          float x = fromBits([&] {
            char hex[9];
            std::snprintf(hex, sizeof hex, "%08x", pattern << 16);
            return std::string(hex);
          }());
          ASSERT_TRUE(check(type, x, fromBits(scale), expected))
              << format << " of bf16 pattern " << pattern << " * " << scale;
          ++exhaustive;
        }
      }
    }
  }
  EXPECT_GT(cases, 10000);
  EXPECT_EQ(exhaustive, 2 * 65536);
}

// The bit-level fp8 rounding equals roundTo's for every float: one in 4099 of the whole
// encoding space, and every float within 2^13 ulps of each fp8 value and rounding midpoint.
TEST(Numerics, Fp8FloatRoundingEqualsRoundTo) {
  int64_t checked = 0;
  for (DType type : {DType::kF8E4M3FN, DType::kF8E5M2}) {
    auto check = [&](uint32_t bits) {
      float value;
      std::memcpy(&value, &bits, sizeof value);
      ASSERT_TRUE(sameValue(roundFloatToFp8(type, value), roundTo(type, value)))
          << dtypeName(type) << " " << std::hex << bits;
      ++checked;
    };
    for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 4099) {
      check(static_cast<uint32_t>(bits));
    }
    for (uint32_t code = 0; code < 256; ++code) {
      double value = decodeBits(type, code), next = decodeBits(type, (code + 1) & 0xff);
      for (double point : {value, (value + next) / 2}) {
        float f = static_cast<float>(point);
        if (!std::isfinite(f)) {
          continue;
        }
        uint32_t bits;
        std::memcpy(&bits, &f, sizeof bits);
        for (uint32_t delta = 0; delta < (1u << 13); delta += 7) {
          check(bits + delta);
          check(bits - delta);
        }
      }
    }
  }
  EXPECT_GT(checked, 2000000);
}

// Every fp8 code decodes to a value that encodes back to it (NaN codes to a NaN).
TEST(Numerics, Fp8EncodingRoundTrips) {
  for (DType type : {DType::kF8E4M3FN, DType::kF8E5M2}) {
    for (uint32_t bits = 0; bits < 256; ++bits) {
      double value = decodeBits(type, bits);
      if (std::isnan(value)) {
        EXPECT_TRUE(std::isnan(decodeBits(type, encodeBits(type, value))));
        continue;
      }
      EXPECT_EQ(encodeBits(type, value), bits) << dtypeName(type) << " code " << bits;
    }
  }
}

// roundBuffer's bf16 path rounds the encoding; roundTo rounds the value: the same for every
// float. One float in 4099 of the whole encoding space, plus the neighbours of every power of
// two (where rounding carries into the exponent).
TEST(Numerics, Bf16BufferRoundingEqualsRoundTo) {
  int64_t checked = 0;
  auto check = [&](uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    float buffered = value;
    roundBuffer(DType::kBF16, &buffered, 1);
    ASSERT_TRUE(sameValue(buffered, roundTo(DType::kBF16, value))) << std::hex << bits;
    ++checked;
  };
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 4099) {
    check(static_cast<uint32_t>(bits));
  }
  for (uint32_t exponent = 0; exponent < 256; ++exponent) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      uint32_t power = sign | (exponent << 23);
      for (uint32_t delta = 0; delta < 0x20000u; delta += 0x7FFFu) {
        check(power + delta);
        check(power - delta);
      }
    }
  }
  EXPECT_GT(checked, 1000000);
}

// Known-answer vectors of the Random123 distribution (kat_vectors, philox4x32 10 rounds).
TEST(Numerics, PhiloxKnownAnswers) {
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Numerics, PhiloxNormalsAreStandardNormal) {
  constexpr int kCount = 200000;
  double sum = 0, sumSquares = 0;
  for (int i = 0; i < kCount; ++i) {
    double z = philoxNormal(1234, parameterStreamId("model.embed_tokens.weight"), i);
    sum += z;
    sumSquares += z * z;
  }
  double mean = sum / kCount, variance = sumSquares / kCount - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01); // 4.5 standard errors
  EXPECT_NEAR(variance, 1.0, 0.015);
  // Same key, same value; another stream or seed, another value.
  EXPECT_EQ(philoxNormal(1, 7, 99), philoxNormal(1, 7, 99));
  EXPECT_NE(philoxNormal(1, 7, 99), philoxNormal(1, 8, 99));
  EXPECT_NE(philoxNormal(1, 7, 99), philoxNormal(2, 7, 99));
}

} // namespace
