//===- MLLogTest.cpp - MLPerf log lines ----------------------------------===//

#include "runtime/mllog/MLLog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <unistd.h>

using namespace mlperf::rt;

namespace {

TEST(MLLog, ValuesReadBackAsTheSameNumbers) {
  EXPECT_EQ(MLLogger::encode(1e-5), "1e-05");
  EXPECT_EQ(MLLogger::encode(0.95), "0.95");
  EXPECT_EQ(MLLogger::encode(1.0), "1.0");
  EXPECT_EQ(MLLogger::encode(8e-4), "0.0008");
  EXPECT_EQ(MLLogger::encode(int64_t{1200000}), "1200000");
  EXPECT_EQ(MLLogger::encode(std::string("cosine with linear warmup")),
            "\"cosine with linear warmup\"");
  EXPECT_EQ(MLLogger::encode(std::string("a\"b\\c\n")), "\"a\\\"b\\\\c\\n\"");
  EXPECT_EQ(MLLogger::encode(true), "true");
  EXPECT_EQ(MLLogger::encode(MLLogValue{}), "null");
  EXPECT_EQ(MLLogger::encode(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(MLLogger::encode(-std::numeric_limits<double>::infinity()), "-Infinity");
  EXPECT_EQ(MLLogger::encode(std::string("\x01")), "\"\\u0001\"");
  EXPECT_EQ(MLLogger::encode(100.0), "100.0");
}

TEST(MLLog, LineFormat) {
  std::string path = ::testing::TempDir() + "/mllog_" + std::to_string(::getpid());
  {
    MLLogger logger;
    ASSERT_TRUE(logger.open(path).isOk());
    MLLOG_POINT(logger, "eval_accuracy", 3.25, {"samples_count", int64_t{12288}});
    MLLOG_START(logger, "block_start", MLLogValue{}, {"samples_count", int64_t{0}});
  }
  std::ifstream in(path);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first.rfind(":::MLLOG {\"namespace\": \"\", \"time_ms\": ", 0), 0u) << first;
  EXPECT_NE(first.find("\"event_type\": \"POINT_IN_TIME\", \"key\": \"eval_accuracy\", "
                       "\"value\": 3.25, \"metadata\": {\"file\": \""),
            std::string::npos)
      << first;
  EXPECT_NE(first.find("MLLogTest.cpp\", \"lineno\": "), std::string::npos) << first;
  EXPECT_NE(first.find(", \"samples_count\": 12288}}"), std::string::npos) << first;
  EXPECT_NE(second.find("\"event_type\": \"INTERVAL_START\", \"key\": \"block_start\", "
                        "\"value\": null"),
            std::string::npos)
      << second;
  std::remove(path.c_str());
}

TEST(MLLog, ReopeningSwitchesFiles) {
  std::string first = ::testing::TempDir() + "/mllog_a_" + std::to_string(::getpid());
  std::string second = ::testing::TempDir() + "/mllog_b_" + std::to_string(::getpid());
  MLLogger logger;
  ASSERT_TRUE(logger.open(first).isOk());
  ASSERT_TRUE(logger.open(second).isOk());
  MLLOG_POINT(logger, "cache_clear", true);
  EXPECT_TRUE(logger.status().isOk());
  std::ifstream a(first), b(second);
  std::string line;
  EXPECT_FALSE(std::getline(a, line));
  EXPECT_TRUE(std::getline(b, line));
  std::remove(first.c_str());
  std::remove(second.c_str());
}

TEST(MLLog, UnwritablePathIsAnError) {
  MLLogger logger;
  Status status = logger.open("/nonexistent-dir/run.log");
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("/nonexistent-dir/run.log"), std::string::npos);
}

} // namespace
