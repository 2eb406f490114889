//===- Kernels.h - CPU reference kernels -----------------------*- C++ -*-===//
//
// The CPU reference implementation of every tg op, forward and backward. One implementation:
// the tg interpreter (compiler tests, oracle checks) and the CPU backend of mlperf-run call
// these. Templated on the storage type (float for runs, double for finite-difference checks);
// reductions accumulate in double. Callers round results to narrower element types
// (Numerics.h) where the IR says so.
//
// Layouts are row-major. Shapes are passed explicitly; no kernel allocates.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_KERNELS_H
#define MLPERFC_RUNTIME_CPU_KERNELS_H

#include "runtime/cpu/Gemm.h"

#include <cstdint>
#include <vector>

namespace mlperf::rt::cpu {

/// C[b] = op(A[b]) · op(B[b]) for b < batch, op = identity or transpose of the stored matrix.
/// A is [batch, m, k] ([batch, k, m] when transposeA); B likewise [k, n] or [n, k]; when
/// `broadcastB`, B is one matrix shared by every batch entry.
/// f32 products are gemmF32's (Gemm.h): f32 partial sums of kGemmSliceK products added in f64.
/// Fused kernels that split a contraction into pieces (Attention.cpp) cut it at multiples of
/// kGemmSliceK, so that their sums are the same as one matmul's.

struct MatmulShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transposeA = false, transposeB = false, broadcastB = false;
};
/// `batch` [m, k] · [k, n] products with the given transposes.
inline MatmulShape matmulShape(int64_t m, int64_t n, int64_t k, bool transposeA = false,
                               bool transposeB = false, int64_t batch = 1) {
  MatmulShape shape;
  shape.batch = batch;
  shape.m = m;
  shape.n = n;
  shape.k = k;
  shape.transposeA = transposeA;
  shape.transposeB = transposeB;
  return shape;
}
/// The shape of a plan or tg matmul from its operand and result shapes (A [..., m, k], B [k, n]
/// or [..., k, n], C [..., m, n], before transposes): the one reading every backend uses.
MatmulShape matmulShapeOf(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                          const std::vector<int64_t> &c, bool transposeA, bool transposeB);
template <typename T> void matmul(const T *a, const T *b, T *c, const MatmulShape &shape);

/// y = x / sqrt(mean(x²) + eps) · w over rows of length `dim`.
template <typename T>
void rmsNorm(const T *x, const T *w, T *y, int64_t rows, int64_t dim, double eps);
/// dx for dy, and dw (accumulated over rows) for the same inputs.
template <typename T>
void rmsNormGrad(const T *x, const T *w, const T *dy, T *dx, T *dw, int64_t rows, int64_t dim,
                 double eps);

template <typename T> void add(const T *a, const T *b, T *y, int64_t count);
template <typename T> void mul(const T *a, const T *b, T *y, int64_t count);
template <typename T> void scale(const T *x, T *y, int64_t count, double factor);
template <typename T> void silu(const T *x, T *y, int64_t count);
/// dx = dy · d silu(x)/dx.
template <typename T> void siluGrad(const T *x, const T *dy, T *dx, int64_t count);
/// silu(x) and sigmoid(x) from one exp(−x) per element: the same bits as silu and as the
/// sigmoid siluGrad computes (fused SwiGLU's backward needs both and pays for one exp).
void siluAndSigmoid(const float *x, float *y, double *sigmoid, int64_t count);
/// siluGrad with the sigmoid already computed (siluAndSigmoid): the same bits.
void siluGradFromSigmoid(const float *x, const double *sigmoid, const float *dy, float *dx,
                         int64_t count);

/// y[t, :] = table[ids[t], :]; returns the index of the first id outside [0, vocab), or -1.
template <typename T>
int64_t embedding(const T *table, const int64_t *ids, T *y, int64_t tokens, int64_t vocab,
                  int64_t dim);
/// dtable (zeroed first) += dy rows scattered to their ids. Returns the position of the first
/// id outside [0, vocab) (writing nothing), or -1.
template <typename T>
int64_t embeddingGrad(const int64_t *ids, const T *dy, T *dtable, int64_t tokens, int64_t vocab,
                      int64_t dim);

/// Rotary embedding on [batch, seq, heads, headDim]. The frequency table comes from
/// ropeFrequencies; `inverse` rotates by the negative angle (the VJP of the rotation).
std::vector<double> ropeFrequencies(int64_t headDim, double theta, bool llama31Scaling,
                                    double factor, double lowFreqFactor, double highFreqFactor,
                                    int64_t originalMaxPosition);
template <typename T>
void rope(const T *x, T *y, int64_t batch, int64_t seq, int64_t heads, int64_t headDim,
          const std::vector<double> &frequencies, bool inverse);

/// Scores [matrices, n, n]: y = x with -inf above the diagonal and, with a `window` W >= 0,
/// below the W-th subdiagonal (key < query - W). `forGradient` writes 0 there.
template <typename T>
void causalMask(const T *x, T *y, int64_t matrices, int64_t n, bool forGradient,
                int64_t window = -1);

/// Softmax along a dimension of size `n` with `inner` elements between consecutive entries
/// (the product of the dimensions after it); `outer` = product of dimensions before it.
/// Returns -1, or the index (outer * inner + i) of the first row with no finite entry, whose
/// output is undefined (a fully masked row is an error, not a NaN to train on).
/// With `logSumExp`, also each row's max + log(Σ exp(x − max)) (outer × inner of them).
template <typename T>
int64_t softmax(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, T *logSumExp = nullptr);
/// dx = y · (dy − Σ dy·y) along the same dimension.
template <typename T>
void softmaxGrad(const T *y, const T *dy, T *dx, int64_t outer, int64_t n, int64_t inner);

/// Repeats each slice along a dimension `times` times in place: [outer, n, inner] ->
/// [outer, n·times, inner], y[o, j, i] = x[o, j / times, i].
template <typename T>
void repeat(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, int64_t times);
/// dx[o, j, i] = Σ_r dy[o, j·times + r, i].
template <typename T>
void repeatGrad(const T *dy, T *dx, int64_t outer, int64_t n, int64_t inner, int64_t times);

/// General permutation of dimensions: y dimension d is x dimension perm[d].
template <typename T>
void transpose(const T *x, T *y, const std::vector<int64_t> &shape,
               const std::vector<int64_t> &perm);

/// Copies slices [offset, offset + size) along a dimension (split), or writes them (concat).
template <typename T>
void copySlice(const T *x, T *y, int64_t outer, int64_t inner, int64_t srcDim, int64_t dstDim,
               int64_t srcOffset, int64_t dstOffset, int64_t size);

/// Mean token cross-entropy of logits [tokens, vocab] against labels (optionally weighted by
/// mask; the mean is then Σ l·m / Σ m). Returns the loss, or NaN with *badLabel set to the
/// first token whose label is outside [0, vocab).
template <typename T>
double crossEntropy(const T *logits, const int64_t *labels, const T *mask, int64_t tokens,
                    int64_t vocab, int64_t *badLabel);
/// dlogits = dloss · (softmax(logits) − onehot(label)) · weight / normalizer.
template <typename T>
void crossEntropyGrad(const T *logits, const int64_t *labels, const T *mask, double dloss,
                      T *dlogits, int64_t tokens, int64_t vocab);

/// The pieces of the two above for kernels that visit tokens in chunks (LinearCrossEntropy.h)
/// and must give the same sums: crossEntropy adds each token's weighted loss to `total` and
/// its weight to `weight`, in token order (false, with *badLabel set, on a bad label);
/// crossEntropyGrad's rows with the normalizer of all tokens given.
/// The loss normalizer: Σ mask over the tokens, in order (the token count without a mask).
template <typename T> double crossEntropyWeight(const T *mask, int64_t tokens);
template <typename T>
bool addCrossEntropy(const T *logits, const int64_t *labels, const T *mask, int64_t tokens,
                     int64_t vocab, double &total, double &weight, int64_t *badLabel);
template <typename T>
void crossEntropyGradRows(const T *logits, const int64_t *labels, const T *mask, double dloss,
                          double normalizer, T *dlogits, int64_t tokens, int64_t vocab);

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_KERNELS_H
