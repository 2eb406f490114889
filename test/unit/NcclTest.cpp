//===- NcclTest.cpp - NCCL collectives on a GPU (ctest label `gpu`) -------===//
//
// One rank: the job communicator and its per-axis splits come up, a bf16 all-reduce, a
// reduce-scatter and an all-gather over a group of one leave the data as it was, and a bad
// peer is an error, not a hang. Exits 77 (skipped) without a GPU. Multi-rank NCCL runs go
// through mpirun on a GPU machine (docs/distributed.md).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Device.h"
#include "runtime/nccl/NcclCommunicator.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace mlperf::rt;

namespace {

constexpr int kSkipReturnCode = 77;

TEST(Nccl, SingleRankCollectivesKeepTheData) {
  MeshShape mesh; // 1x1
  std::unique_ptr<NcclCommunicator> nccl;
  Status status = NcclCommunicator::create(mesh, 0, 0, nccl);
  ASSERT_TRUE(status.isOk()) << status.toString();
  std::vector<float> host = {1.0f, -2.5f, 3.25f, 4.0f};
  float *device = nullptr, *other = nullptr;
  ASSERT_EQ(cudaMalloc(&device, host.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&other, host.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  EXPECT_TRUE(nccl->allReduceSum(MeshAxis::kDP, device, host.size(), DType::kF32, nullptr).isOk());
  EXPECT_TRUE(
      nccl->reduceScatterSum(MeshAxis::kTP, device, other, host.size(), DType::kF32, nullptr)
          .isOk());
  EXPECT_TRUE(
      nccl->allGather(MeshAxis::kPP, other, device, host.size(), DType::kF32, nullptr).isOk());
  std::vector<float> back(host.size());
  ASSERT_EQ(cudaMemcpy(back.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(back, host);
  Status bad = nccl->send(MeshAxis::kPP, 1, device, 1, DType::kF32, nullptr);
  EXPECT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("no pp neighbour"), std::string::npos) << bad.toString();
  cudaFree(device);
  cudaFree(other);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<cuda::DeviceInfo> devices;
  Status status = cuda::listDevices(devices);
  if (!status.isOk() || devices.empty()) {
    std::printf("skipped: no GPU available for NCCL (%s)\n",
                status.isOk() ? "no device" : status.message().c_str());
    return kSkipReturnCode;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
