//===- GemmLayout.h - A row-major matmul as a column-major cuBLASLt call -*- C++ -*-===//
//
// cuBLASLt multiplies column-major matrices: D = op(X) · op(Y). A plan's matmul is row-major,
// C [m, n] = op(A) · op(B), and a row-major matrix read column-major is its transpose, so the
// backend computes Cᵀ = op(B)ᵀ · op(A)ᵀ with X = B's bytes and Y = A's bytes. This header says
// exactly which dimensions, leading dimensions, transposes and batch strides that takes. It is
// plain C++, so a test checks it here, without a GPU, through interpretGemmLayout (a naive
// column-major GEMM that reads memory exactly as cuBLASLt's documentation says it does)
// against cpu::matmul on random shapes.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CUDA_GEMMLAYOUT_H
#define MLPERFC_RUNTIME_CUDA_GEMMLAYOUT_H

#include "runtime/cpu/Kernels.h" // cpu::MatmulShape

#include <cstdint>

namespace mlperf::rt::cuda {

/// One matrix as cublasLtMatrixLayoutCreate sees it: column-major, `rows` x `columns` as
/// stored, leading dimension `ld`, and `batchStride` elements between the matrices of a batch
/// (0: one matrix shared by every batch entry).
struct LtMatrix {
  int64_t rows = 0, columns = 0, ld = 0, batchStride = 0;
};

/// The cuBLASLt call for a row-major matmul: D = op(X) · op(Y), with op(X) [m, k] and op(Y)
/// [k, n] in cuBLASLt's column-major terms (m, n, k here are cuBLASLt's, not the plan's).
struct GemmLayout {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transposeX = false, transposeY = false;
  LtMatrix x; // the plan's B operand
  LtMatrix y; // the plan's A operand
  LtMatrix d; // the plan's result
};

/// The layout of `shape` (a plan matmul: A [batch, m, k] or [batch, k, m], B likewise or one
/// shared matrix, C [batch, m, n]). A B shared by the batch with an untransposed A folds the
/// batch into one GEMM of batch·m rows.
GemmLayout gemmLayoutFor(const cpu::MatmulShape &shape);

/// D = op(X) · op(Y) computed naively in f64 from the layout alone (each element of X is
/// read at x.ld·column + row + b·x.batchStride, ...): what cuBLASLt computes, up to the order
/// of its sums. `planA`/`planB` are the plan's operands (Y and X).
void interpretGemmLayout(const GemmLayout &layout, const float *planA, const float *planB,
                         float *planC);

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_GEMMLAYOUT_H
