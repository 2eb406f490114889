//===- CudaDeviceTest.cpp - Tests that need a GPU (ctest label `gpu`) -----===//
//
// Exits 77 when no usable GPU is present so that ctest reports the test as skipped.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Device.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace mlperf::rt;

namespace {

constexpr int kSkipReturnCode = 77;

TEST(CudaDevice, SelfTestPassesOnEverySupportedDevice) {
  std::vector<cuda::DeviceInfo> devices;
  Status status = cuda::listDevices(devices);
  ASSERT_TRUE(status.isOk()) << status.toString();
  for (const cuda::DeviceInfo &info : devices) {
    if (!cuda::isSupportedArchitecture(info)) {
      continue;
    }
    Status selfTest = cuda::runDeviceSelfTest(info.ordinal);
    EXPECT_TRUE(selfTest.isOk()) << info.name << ": " << selfTest.toString();
  }
}

TEST(CudaDevice, InvalidOrdinalIsAnErrorNotACrash) {
  std::vector<cuda::DeviceInfo> devices;
  ASSERT_TRUE(cuda::listDevices(devices).isOk());
  Status status = cuda::runDeviceSelfTest(static_cast<int>(devices.size()) + 7);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("cudaSetDevice"), std::string::npos) << status.toString();
}

} // namespace

int main(int argc, char **argv) {
  std::vector<cuda::DeviceInfo> devices;
  Status status = cuda::listDevices(devices);
  bool anySupported = false;
  for (const cuda::DeviceInfo &info : devices) {
    anySupported |= cuda::isSupportedArchitecture(info);
  }
  if (!status.isOk() || !anySupported) {
    std::printf("skipped: no sm_90/sm_100 GPU available (%s)\n",
                status.isOk() ? "no supported device" : status.toString().c_str());
    return kSkipReturnCode;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
