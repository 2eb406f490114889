//===- Gemm.h - f32 GEMM on BLIS's micro-kernel ----------------*- C++ -*-===//
//
// The CPU backend's f32 matrix product. BLIS's tuned micro-kernel (one AVX2/FMA
// micro-kernel for every x86-64 CPU that has those instructions) computes each micro-tile of C
// over one slice of 256 products with f32 accumulation; the slices' partial sums are added in
// f64, in order, and the sum rounded to f32 once. An element's bits therefore depend only on its
// row of op(A), its column of op(B) and K: not on the matrix shape, its position in it, the
// thread count or timing, so a kernel that computes part of a product (fused attention,
// chunked cross-entropy) reproduces the whole product's bits. docs/runtime.md says why BLIS
// and not OpenBLAS's sgemm.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_GEMM_H
#define MLPERFC_RUNTIME_CPU_GEMM_H

#include <cstdint>
#include <string>

namespace mlperf::rt::cpu {

/// Products per f32 partial sum (one micro-kernel call) before it is added in f64.
constexpr int64_t kGemmSliceK = 256;

/// C [m, n] = op(A) · op(B), all row-major and dense: A is [m, k] ([k, m] when transposeA), B
/// [k, n] ([n, k] when transposeB). Runs on the CPU thread pool when the product is large.
void gemmF32(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
             bool transposeA, bool transposeB);

/// "BLIS 0.9.0, haswell sgemm micro-kernel 6x16": what computes the products on this machine.
/// The first call (or product) initializes BLIS: tools make it before starting threads.
std::string gemmDescription();

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_GEMM_H
