//===- HostDevice.h - Functions both the CPU and the GPU compile -*- C++ -*-===//
//
// MLPERF_HD marks a function that the CPU kernels and the CUDA kernels share: `__host__
// __device__` under nvcc, nothing for the host compiler. The math that must be the same bits on
// both backends (Philox draws, the element programs of the optimizers' updates, the element
// math of the CUDA kernels) is written once with it.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_SUPPORT_HOSTDEVICE_H
#define MLPERFC_RUNTIME_SUPPORT_HOSTDEVICE_H

#if defined(__CUDACC__)
#define MLPERF_HD __host__ __device__
#else
#define MLPERF_HD
#endif

#endif // MLPERFC_RUNTIME_SUPPORT_HOSTDEVICE_H
