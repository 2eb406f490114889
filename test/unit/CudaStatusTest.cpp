//===- CudaStatusTest.cpp - CUDA error paths that need no GPU -------------===//

#include "runtime/cuda/CudaStatus.h"
#include "runtime/cuda/Device.h"

#include <gtest/gtest.h>

using namespace mlperf::rt;

namespace {

Status allocateWithBadArgument() {
  // Stands for any failing CUDA call: the macro must return its status from this function.
  MLPERF_CUDA_RETURN_IF_ERROR(cudaErrorInvalidValue);
  return Status::ok();
}

TEST(CudaStatus, SuccessIsOk) {
  EXPECT_TRUE(cuda::statusFromCudaError(cudaSuccess, "x", __FILE__, __LINE__).isOk());
}

TEST(CudaStatus, FailureNamesCallErrorAndLocation) {
  Status status = allocateWithBadArgument();
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find("cudaErrorInvalidValue failed: cudaErrorInvalidValue"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.where().find("CudaStatusTest.cpp:"), std::string::npos) << status.where();
}

TEST(CudaStatus, MissingGpuOrDriverIsUnavailable) {
  for (cudaError_t error : {cudaErrorNoDevice, cudaErrorInsufficientDriver}) {
    Status status = cuda::statusFromCudaError(error, "cudaGetDeviceCount(&n)", "f.cu", 1);
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.toString();
  }
}

TEST(CudaDevice, ListingEitherSucceedsOrSaysNoGpu) {
  std::vector<cuda::DeviceInfo> devices;
  Status status = cuda::listDevices(devices);
  if (status.isOk()) {
    for (const cuda::DeviceInfo &info : devices) {
      EXPECT_FALSE(info.name.empty());
      EXPECT_GT(info.totalMemoryBytes, 0u);
    }
  } else {
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.toString();
    EXPECT_TRUE(devices.empty());
  }
}

TEST(CudaDevice, SupportedArchitectures) {
  cuda::DeviceInfo info;
  info.computeMajor = 9;
  info.computeMinor = 0;
  EXPECT_TRUE(cuda::isSupportedArchitecture(info));
  info.computeMajor = 10;
  EXPECT_TRUE(cuda::isSupportedArchitecture(info));
  info.computeMajor = 8;
  EXPECT_FALSE(cuda::isSupportedArchitecture(info));
}

} // namespace
