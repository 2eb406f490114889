//===- Kernels.h - Launchers of the CUDA element-wise, layout and norm kernels -*- C++ -*-===//
//
// Each launcher enqueues one kernel on `stream` and returns the launch's status. The element
// math is ElementMath.cuh's (shared with the host tests); these are the grid loops around it.
// Plain C++ declarations: the backend (CudaBackend.cpp) is compiled by the host compiler.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CUDA_KERNELS_H
#define MLPERFC_RUNTIME_CUDA_KERNELS_H

#include "runtime/cuda/ElementMath.cuh"
#include "runtime/support/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace mlperf::rt::cuda {

enum class ElementOp { kAdd, kMul, kScale, kSilu, kSiluGrad, kConvert };

/// y[i] = op(a[i], b[i]) (b unused for the unary ops; `factor` for kScale).
Status launchElementwise(ElementOp op, TypedPointer a, TypedPointer b, TypedPointer y,
                         int64_t count, double factor, cudaStream_t stream);
Status launchFill(TypedPointer y, int64_t count, float value, cudaStream_t stream);
Status launchSwiglu(TypedPointer gate, TypedPointer up, TypedPointer y, int64_t count,
                    cudaStream_t stream);
Status launchSwigluGrad(TypedPointer gate, TypedPointer up, TypedPointer grad,
                        TypedPointer gateGrad, TypedPointer upGrad, int64_t count,
                        cudaStream_t stream);

/// Dimension permutation of elements of `elementBytes` bytes (1, 2, 4 or 8): y dimension d is
/// x dimension perm[d]; at most kMaxRank dimensions.
constexpr int kMaxRank = 8;
Status launchTranspose(const void *x, void *y, const std::vector<int64_t> &shape,
                       const std::vector<int64_t> &perm, int elementBytes, cudaStream_t stream);
/// [outer, n, inner] -> [outer, n·times, inner], y[o, j, i] = x[o, j / times, i].
Status launchRepeat(const void *x, void *y, int64_t outer, int64_t n, int64_t inner, int64_t times,
                    int elementBytes, cudaStream_t stream);
Status launchRepeatGrad(TypedPointer dy, TypedPointer dx, int64_t outer, int64_t n, int64_t inner,
                        int64_t times, cudaStream_t stream);

Status launchRmsNorm(TypedPointer x, TypedPointer w, TypedPointer y, int64_t rows, int64_t dim,
                     double eps, cudaStream_t stream);
/// `inverseRms`: device scratch of `rows` doubles.
Status launchRmsNormGrad(TypedPointer x, TypedPointer w, TypedPointer dy, TypedPointer dx,
                         TypedPointer dw, int64_t rows, int64_t dim, double eps, double *inverseRms,
                         cudaStream_t stream);
/// sum = a + b (rounded to its type), y = rms_norm(sum, w).
Status launchAddRmsNorm(TypedPointer a, TypedPointer b, TypedPointer w, TypedPointer sum,
                        TypedPointer y, int64_t rows, int64_t dim, double eps, cudaStream_t stream);
/// x, y [batch, seq, heads, headDim]; `frequencies`: headDim / 2 floats on the device.
Status launchRope(TypedPointer x, TypedPointer y, int64_t batch, int64_t seq, int64_t heads,
                  int64_t headDim, const float *frequencies, bool inverse, cudaStream_t stream);
Status launchCausalMask(TypedPointer x, TypedPointer y, int64_t matrices, int64_t n, bool gradient,
                        cudaStream_t stream);
/// `badRow`: a device word the kernel lowers (atomicMin) to the first row with no finite
/// entry; the caller sets it to UINT64_MAX before and reads it after the program.
Status launchSoftmax(TypedPointer x, TypedPointer y, int64_t outer, int64_t n, int64_t inner,
                     unsigned long long *badRow, cudaStream_t stream);
Status launchSoftmaxGrad(TypedPointer y, TypedPointer dy, TypedPointer dx, int64_t outer, int64_t n,
                         int64_t inner, cudaStream_t stream);

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_KERNELS_H
