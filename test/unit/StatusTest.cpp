//===- StatusTest.cpp - runtime Status ------------------------------------===//

#include "runtime/support/Status.h"

#include <gtest/gtest.h>

using mlperf::rt::Status;
using mlperf::rt::StatusCode;

namespace {

Status failsWith(StatusCode code) { return Status(code, "bad thing", "some/file.cpp", 42); }

Status propagates(StatusCode code, bool *reachedEnd) {
  MLPERF_RETURN_IF_ERROR(failsWith(code));
  *reachedEnd = true;
  return Status::ok();
}

TEST(Status, DefaultIsOk) {
  Status status;
  EXPECT_TRUE(status.isOk());
  EXPECT_EQ(status.toString(), "OK");
  EXPECT_TRUE(status.where().empty());
}

TEST(Status, ErrorCarriesCodeMessageAndLocation) {
  Status status = failsWith(StatusCode::kDataLoss);
  EXPECT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(status.where(), "some/file.cpp:42");
  EXPECT_EQ(status.toString(), "DATA_LOSS: bad thing [some/file.cpp:42]");
}

TEST(Status, ReturnIfErrorStopsAtFirstFailure) {
  bool reachedEnd = false;
  Status status = propagates(StatusCode::kInvalidArgument, &reachedEnd);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(reachedEnd);
}

TEST(Status, EveryCodeHasAName) {
  for (StatusCode code : {StatusCode::kOk, StatusCode::kInvalidArgument, StatusCode::kNotFound,
                          StatusCode::kUnavailable, StatusCode::kInternal, StatusCode::kDataLoss}) {
    EXPECT_STRNE(mlperf::rt::statusCodeName(code), "UNKNOWN");
  }
}

} // namespace
