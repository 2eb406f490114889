//===- Device.cu - CUDA device discovery and self-test --------*- C++ -*-===//

#include "runtime/cuda/CudaStatus.h"
#include "runtime/cuda/Device.h"

#include <cuda_runtime.h>

namespace mlperf::rt::cuda {
namespace {

/// out[i] = i * scale + offset: every element depends on its index, so a kernel that did not
/// run, ran partially or wrote the wrong place is caught by the host check.
__global__ void affineIotaKernel(float *out, int count, float scale, float offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    out[i] = static_cast<float>(i) * scale + offset;
  }
}

/// Frees device memory on every exit path of the self-test.
struct DeviceBuffer {
  float *ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr != nullptr) {
      cudaFree(ptr);
    }
  }
};

} // namespace

Status listDevices(std::vector<DeviceInfo> &devices) {
  devices.clear();
  int count = 0;
  MLPERF_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp prop{};
    MLPERF_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, ordinal));
    DeviceInfo info;
    info.ordinal = ordinal;
    info.name = prop.name;
    info.computeMajor = prop.major;
    info.computeMinor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    info.totalMemoryBytes = prop.totalGlobalMem;
    devices.push_back(std::move(info));
  }
  return Status::ok();
}

bool isSupportedArchitecture(const DeviceInfo &info) {
  // Arch-specific cubins (sm_90a, sm_100a) run only on exactly those major/minor pairs.
  return (info.computeMajor == 9 && info.computeMinor == 0) ||
         (info.computeMajor == 10 && info.computeMinor == 0);
}

Status runDeviceSelfTest(int ordinal) {
  constexpr int kCount = 4096;
  constexpr float kScale = 0.5f;
  constexpr float kOffset = 3.0f;
  MLPERF_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal));
  DeviceBuffer buffer;
  MLPERF_CUDA_RETURN_IF_ERROR(cudaMalloc(&buffer.ptr, kCount * sizeof(float)));
  MLPERF_CUDA_RETURN_IF_ERROR(cudaMemset(buffer.ptr, 0xff, kCount * sizeof(float)));
  constexpr int kThreads = 256;
  affineIotaKernel<<<(kCount + kThreads - 1) / kThreads, kThreads>>>(buffer.ptr, kCount, kScale,
                                                                     kOffset);
  MLPERF_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  std::vector<float> host(kCount);
  MLPERF_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(host.data(), buffer.ptr, kCount * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kCount; ++i) {
    float expected = static_cast<float>(i) * kScale + kOffset;
    if (host[i] != expected) {
      return Status(StatusCode::kInternal,
                    "device self-test on GPU " + std::to_string(ordinal) + ": element " +
                        std::to_string(i) + " is " + std::to_string(host[i]) + ", expected " +
                        std::to_string(expected),
                    __FILE__, __LINE__);
    }
  }
  return Status::ok();
}

} // namespace mlperf::rt::cuda
