//===- Device.h - CUDA device discovery and self-test ---------*- C++ -*-===//

#ifndef MLPERFC_RUNTIME_CUDA_DEVICE_H
#define MLPERFC_RUNTIME_CUDA_DEVICE_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlperf::rt::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0;
  int computeMinor = 0;
  int multiprocessors = 0;
  uint64_t totalMemoryBytes = 0;
};

/// Lists the visible CUDA devices. A machine with no GPU or no driver yields UNAVAILABLE (the
/// caller decides whether that is an error); any other CUDA failure yields INTERNAL.
Status listDevices(std::vector<DeviceInfo> &devices);

/// True when this build's device code (sm_90a, sm_100a) can run on `info`.
bool isSupportedArchitecture(const DeviceInfo &info);

/// Launches a small kernel on `ordinal` and checks its result on the host: proves that the
/// driver, the context and this build's device code work together before a plan runs.
Status runDeviceSelfTest(int ordinal);

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_DEVICE_H
