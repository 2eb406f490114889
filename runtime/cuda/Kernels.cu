//===- Kernels.cu - CUDA element-wise, layout and normalisation kernels ----===//
//
// Grid-stride loops around ElementMath.cuh, one thread per element or per row. Correct and
// deterministic first (each row's sums in the CPU's order, in f64); part 2 of the CUDA work
// makes them fast.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaStatus.h"
#include "runtime/cuda/GridLoop.cuh"
#include "runtime/cuda/Kernels.h"

#include <algorithm>

namespace mlperf::rt::cuda {
namespace {

__global__ void elementwiseKernel(ElementOp op, TypedPointer a, TypedPointer b, TypedPointer y,
                                  int64_t count, double factor) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    float x = a.load(i), result;
    switch (op) {
    case ElementOp::kAdd:
      result = addElement(x, b.load(i));
      break;
    case ElementOp::kMul:
      result = mulElement(x, b.load(i));
      break;
    case ElementOp::kScale:
      result = scaleElement(x, factor);
      break;
    case ElementOp::kSilu:
      result = siluElement(x);
      break;
    case ElementOp::kSiluGrad:
      result = siluGradElement(x, b.load(i));
      break;
    default: // kConvert
      result = x;
      break;
    }
    y.store(i, result);
  }
}

__global__ void fillKernel(TypedPointer y, int64_t count, float value) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    y.store(i, value);
  }
}

__global__ void swigluKernel(TypedPointer gate, TypedPointer up, TypedPointer y, int64_t count) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    y.store(i, swigluElement(gate.load(i), up.load(i), gate.type));
  }
}

__global__ void swigluGradKernel(TypedPointer gate, TypedPointer up, TypedPointer grad,
                                 TypedPointer gateGrad, TypedPointer upGrad, int64_t count) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    float dGate, dUp;
    swigluGradElement(gate.load(i), up.load(i), grad.load(i), gate.type, dGate, dUp);
    gateGrad.store(i, dGate);
    upGrad.store(i, dUp);
  }
}

struct TransposeShape {
  int rank;
  int64_t outShape[kMaxRank];
  int64_t sourceStride[kMaxRank]; // x's stride of output dimension d
};

template <typename Element>
__global__ void transposeKernel(const Element *x, Element *y, TransposeShape shape, int64_t count) {
  for (int64_t linear = firstIndex(); linear < count; linear += gridStride()) {
    int64_t rest = linear, source = 0;
    for (int d = shape.rank - 1; d >= 0; --d) {
      source += rest % shape.outShape[d] * shape.sourceStride[d];
      rest /= shape.outShape[d];
    }
    y[linear] = x[source];
  }
}

template <typename Element>
__global__ void repeatKernel(const Element *x, Element *y, int64_t n, int64_t inner, int64_t times,
                             int64_t count) {
  for (int64_t linear = firstIndex(); linear < count; linear += gridStride()) {
    int64_t i = linear % inner, row = linear / inner; // row = o · n · times + j
    int64_t o = row / (n * times), j = row % (n * times);
    y[linear] = x[(o * n + j / times) * inner + i];
  }
}

__global__ void repeatGradKernel(TypedPointer dy, TypedPointer dx, int64_t n, int64_t inner,
                                 int64_t times, int64_t count) {
  for (int64_t linear = firstIndex(); linear < count; linear += gridStride()) {
    int64_t i = linear % inner, row = linear / inner; // row = o · n + j
    dx.store(linear, repeatGradElement(dy, row / n, row % n, i, n, inner, times));
  }
}

__global__ void rmsNormKernel(TypedPointer x, TypedPointer w, TypedPointer y, int64_t rows,
                              int64_t dim, double eps) {
  for (int64_t row = firstIndex(); row < rows; row += gridStride()) {
    rmsNormRow(x, w, y, row, dim, eps);
  }
}

__global__ void inverseRmsKernel(TypedPointer x, double *inverseRms, int64_t rows, int64_t dim,
                                 double eps) {
  for (int64_t row = firstIndex(); row < rows; row += gridStride()) {
    double sumSquares = 0.0;
    for (int64_t i = 0; i < dim; ++i) {
      float v = x.load(row * dim + i);
      sumSquares += static_cast<double>(v) * v;
    }
    inverseRms[row] = 1.0 / sqrt(sumSquares / dim + eps);
  }
}

__global__ void rmsNormGradColumnsKernel(TypedPointer x, TypedPointer dy, TypedPointer dw,
                                         const double *inverseRms, int64_t rows, int64_t dim) {
  for (int64_t column = firstIndex(); column < dim; column += gridStride()) {
    dw.store(column, rmsNormGradColumn(x, dy, inverseRms, column, rows, dim));
  }
}

__global__ void rmsNormGradRowsKernel(TypedPointer x, TypedPointer w, TypedPointer dy,
                                      TypedPointer dx, int64_t rows, int64_t dim, double eps) {
  for (int64_t row = firstIndex(); row < rows; row += gridStride()) {
    rmsNormGradRow(x, w, dy, dx, row, dim, eps);
  }
}

__global__ void addRmsNormKernel(TypedPointer a, TypedPointer b, TypedPointer w, TypedPointer sum,
                                 TypedPointer y, int64_t rows, int64_t dim, double eps) {
  for (int64_t row = firstIndex(); row < rows; row += gridStride()) {
    for (int64_t i = 0; i < dim; ++i) {
      sum.store(row * dim + i, addElement(a.load(row * dim + i), b.load(row * dim + i)));
    }
    rmsNormRow(sum, w, y, row, dim, eps); // reads the sum rounded to its type
  }
}

__global__ void ropeKernel(TypedPointer x, TypedPointer y, int64_t seq, int64_t heads,
                           int64_t headDim, const float *frequencies, bool inverse, int64_t pairs) {
  const int64_t half = headDim / 2;
  for (int64_t linear = firstIndex(); linear < pairs; linear += gridStride()) {
    // linear = ((b · seq + s) · heads + h) · half + i
    int64_t i = linear % half, vector = linear / half;
    int64_t s = vector / heads % seq;
    int64_t base = vector * headDim;
    float y1, y2;
    ropePair(x.load(base + i), x.load(base + i + half), s, frequencies[i], inverse, y1, y2);
    y.store(base + i, y1);
    y.store(base + i + half, y2);
  }
}

__global__ void causalMaskKernel(TypedPointer x, TypedPointer y, int64_t n, bool gradient,
                                 int64_t count) {
  for (int64_t index = firstIndex(); index < count; index += gridStride()) {
    int64_t k = index % n, q = index / n % n;
    y.store(index, k > q ? (gradient ? 0.0f : -INFINITY) : x.load(index));
  }
}

__global__ void softmaxKernel(TypedPointer x, TypedPointer y, int64_t n, int64_t inner,
                              int64_t rows, unsigned long long *badRow, TypedPointer lse,
                              int64_t rowOffset) {
  for (int64_t row = firstIndex(); row < rows; row += gridStride()) {
    int64_t base = row / inner * n * inner + row % inner;
    float logSumExp = 0.0f;
    if (!softmaxRow(x, y, base, n, inner, lse.data ? &logSumExp : nullptr)) {
      atomicMin(badRow, static_cast<unsigned long long>(row + rowOffset));
    } else if (lse.data) {
      lse.store(row, logSumExp);
    }
  }
}

__global__ void softmaxGradKernel(TypedPointer y, TypedPointer dy, TypedPointer dx, int64_t n,
                                  int64_t inner, int64_t rows) {
  for (int64_t row = firstIndex(); row < rows; row += gridStride()) {
    softmaxGradRow(y, dy, dx, row / inner * n * inner + row % inner, n, inner);
  }
}

Status launched(const char *kernel) {
  cudaError_t error = cudaGetLastError();
  return statusFromCudaError(error, kernel, __FILE__, __LINE__);
}

/// Runs `launch` with the element type of `elementBytes` bytes.
template <typename Launch> Status withElementType(int elementBytes, const Launch &launch) {
  switch (elementBytes) {
  case 1:
    launch(uint8_t{});
    break;
  case 2:
    launch(uint16_t{});
    break;
  case 4:
    launch(uint32_t{});
    break;
  case 8:
    launch(uint64_t{});
    break;
  default:
    return Status(StatusCode::kInvalidArgument,
                  "no layout kernel for " + std::to_string(elementBytes) + "-byte elements");
  }
  return Status::ok();
}

} // namespace

Status launchElementwise(ElementOp op, TypedPointer a, TypedPointer b, TypedPointer y,
                         int64_t count, double factor, cudaStream_t stream) {
  elementwiseKernel<<<blocksFor(count), kThreads, 0, stream>>>(op, a, b, y, count, factor);
  return launched("elementwiseKernel");
}

Status launchFill(TypedPointer y, int64_t count, float value, cudaStream_t stream) {
  fillKernel<<<blocksFor(count), kThreads, 0, stream>>>(y, count, value);
  return launched("fillKernel");
}

Status launchSwiglu(TypedPointer gate, TypedPointer up, TypedPointer y, int64_t count,
                    cudaStream_t stream) {
  swigluKernel<<<blocksFor(count), kThreads, 0, stream>>>(gate, up, y, count);
  return launched("swigluKernel");
}

Status launchSwigluGrad(TypedPointer gate, TypedPointer up, TypedPointer grad,
                        TypedPointer gateGrad, TypedPointer upGrad, int64_t count,
                        cudaStream_t stream) {
  swigluGradKernel<<<blocksFor(count), kThreads, 0, stream>>>(gate, up, grad, gateGrad, upGrad,
                                                              count);
  return launched("swigluGradKernel");
}

Status launchTranspose(const void *x, void *y, const std::vector<int64_t> &shape,
                       const std::vector<int64_t> &perm, int elementBytes, cudaStream_t stream) {
  const int rank = static_cast<int>(shape.size());
  if (rank > kMaxRank || perm.size() != shape.size()) {
    return Status(StatusCode::kInvalidArgument,
                  "transpose of rank " + std::to_string(rank) + ": the CUDA kernel takes rank <= " +
                      std::to_string(kMaxRank) + " and one permutation entry per dimension");
  }
  TransposeShape s{};
  s.rank = rank;
  int64_t strides[kMaxRank], count = 1;
  for (int d = rank - 1, stride = 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape[d];
    count *= shape[d];
  }
  for (int d = 0; d < rank; ++d) {
    s.outShape[d] = shape[perm[d]];
    s.sourceStride[d] = strides[perm[d]];
  }
  if (count == 0) {
    return Status::ok();
  }
  MLPERF_RETURN_IF_ERROR(withElementType(elementBytes, [&](auto element) {
    using Element = decltype(element);
    transposeKernel<<<blocksFor(count), kThreads, 0, stream>>>(static_cast<const Element *>(x),
                                                               static_cast<Element *>(y), s, count);
  }));
  return launched("transposeKernel");
}

Status launchRepeat(const void *x, void *y, int64_t outer, int64_t n, int64_t inner, int64_t times,
                    int elementBytes, cudaStream_t stream) {
  int64_t count = outer * n * times * inner;
  if (count == 0) {
    return Status::ok();
  }
  MLPERF_RETURN_IF_ERROR(withElementType(elementBytes, [&](auto element) {
    using Element = decltype(element);
    repeatKernel<<<blocksFor(count), kThreads, 0, stream>>>(
        static_cast<const Element *>(x), static_cast<Element *>(y), n, inner, times, count);
  }));
  return launched("repeatKernel");
}

Status launchRepeatGrad(TypedPointer dy, TypedPointer dx, int64_t outer, int64_t n, int64_t inner,
                        int64_t times, cudaStream_t stream) {
  int64_t count = outer * n * inner;
  repeatGradKernel<<<blocksFor(count), kThreads, 0, stream>>>(dy, dx, n, inner, times, count);
  return launched("repeatGradKernel");
}

Status launchRmsNorm(TypedPointer x, TypedPointer w, TypedPointer y, int64_t rows, int64_t dim,
                     double eps, cudaStream_t stream) {
  rmsNormKernel<<<blocksFor(rows), kThreads, 0, stream>>>(x, w, y, rows, dim, eps);
  return launched("rmsNormKernel");
}

Status launchRmsNormGrad(TypedPointer x, TypedPointer w, TypedPointer dy, TypedPointer dx,
                         TypedPointer dw, int64_t rows, int64_t dim, double eps, double *inverseRms,
                         cudaStream_t stream) {
  // dw before dx: it reads x and dy whole, which dx (the same row's) may not overwrite first.
  inverseRmsKernel<<<blocksFor(rows), kThreads, 0, stream>>>(x, inverseRms, rows, dim, eps);
  MLPERF_RETURN_IF_ERROR(launched("inverseRmsKernel"));
  rmsNormGradColumnsKernel<<<blocksFor(dim), kThreads, 0, stream>>>(x, dy, dw, inverseRms, rows,
                                                                    dim);
  MLPERF_RETURN_IF_ERROR(launched("rmsNormGradColumnsKernel"));
  rmsNormGradRowsKernel<<<blocksFor(rows), kThreads, 0, stream>>>(x, w, dy, dx, rows, dim, eps);
  return launched("rmsNormGradRowsKernel");
}

Status launchAddRmsNorm(TypedPointer a, TypedPointer b, TypedPointer w, TypedPointer sum,
                        TypedPointer y, int64_t rows, int64_t dim, double eps,
                        cudaStream_t stream) {
  addRmsNormKernel<<<blocksFor(rows), kThreads, 0, stream>>>(a, b, w, sum, y, rows, dim, eps);
  return launched("addRmsNormKernel");
}

Status launchRope(TypedPointer x, TypedPointer y, int64_t batch, int64_t seq, int64_t heads,
                  int64_t headDim, const float *frequencies, bool inverse, cudaStream_t stream) {
  int64_t pairs = batch * seq * heads * (headDim / 2);
  if (pairs == 0) {
    return Status::ok();
  }
  ropeKernel<<<blocksFor(pairs), kThreads, 0, stream>>>(x, y, seq, heads, headDim, frequencies,
                                                        inverse, pairs);
  return launched("ropeKernel");
}

Status launchCausalMask(TypedPointer x, TypedPointer y, int64_t matrices, int64_t n, bool gradient,
                        cudaStream_t stream) {
  int64_t count = matrices * n * n;
  causalMaskKernel<<<blocksFor(count), kThreads, 0, stream>>>(x, y, n, gradient, count);
  return launched("causalMaskKernel");
}

Status launchSoftmax(TypedPointer x, TypedPointer y, int64_t outer, int64_t n, int64_t inner,
                     unsigned long long *badRow, cudaStream_t stream, TypedPointer lse,
                     int64_t rowOffset) {
  int64_t rows = outer * inner;
  softmaxKernel<<<blocksFor(rows), kThreads, 0, stream>>>(x, y, n, inner, rows, badRow, lse,
                                                          rowOffset);
  return launched("softmaxKernel");
}

Status launchSoftmaxGrad(TypedPointer y, TypedPointer dy, TypedPointer dx, int64_t outer, int64_t n,
                         int64_t inner, cudaStream_t stream) {
  int64_t rows = outer * inner;
  softmaxGradKernel<<<blocksFor(rows), kThreads, 0, stream>>>(y, dy, dx, n, inner, rows);
  return launched("softmaxGradKernel");
}

} // namespace mlperf::rt::cuda
