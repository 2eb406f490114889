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
#include "runtime/plan/ElementwiseProgram.h"
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
/// entry (plus `rowOffset`); the caller sets it to UINT64_MAX before and reads it after the
/// program. With `lse.data`, also each row's max + log(Σ exp(x − max)).
Status launchSoftmax(TypedPointer x, TypedPointer y, int64_t outer, int64_t n, int64_t inner,
                     unsigned long long *badRow, cudaStream_t stream, TypedPointer lse = {},
                     int64_t rowOffset = 0);
Status launchSoftmaxGrad(TypedPointer y, TypedPointer dy, TypedPointer dx, int64_t outer, int64_t n,
                         int64_t inner, cudaStream_t stream);

// Part 1b: draws, optimizer, losses, embeddings.

/// x rounded in place (f32 storage) to `type`'s values: the unfused graph's tg.convert between
/// two f32 steps of a fused op.
Status launchRoundTo(float *x, int64_t count, DType type, cudaStream_t stream);

/// y[i] = std · philoxNormal(seed, stream, i), or bound · (2u − 1), rounded once to y's type.
Status launchRandomNormal(TypedPointer y, int64_t count, IntPointer seed, uint32_t streamId,
                          double stddev, cudaStream_t stream);
Status launchRandomUniform(TypedPointer y, int64_t count, IntPointer seed, uint32_t streamId,
                           double bound, cudaStream_t stream);

/// Σ x² of each operand in fixed blocks (f64 partials, a fixed tree in each block), then the
/// partials in order: deterministic. `partials` holds sumSquaresPartials(count) doubles.
int64_t sumSquaresPartials(int64_t count);
Status launchSumSquaresPartials(TypedPointer x, int64_t count, double *partials,
                                cudaStream_t stream);
/// out = Σ partials (in order), its square root when `root`.
Status launchFinishSum(const double *partials, int64_t count, bool root, TypedPointer out,
                       cudaStream_t stream);
/// out = sqrt(x) of one element in f64.
Status launchScalarSqrt(TypedPointer x, TypedPointer out, cudaStream_t stream);
/// Evaluation's running mean [sum, count] (f64): out = running + [value, 1]; and the mean
/// sum / count with the running mean started again ([0, 0]). One thread: running and out may
/// be the same buffer.
Status launchMeanAccumulate(const double *running, TypedPointer value, double *out,
                            cudaStream_t stream);
Status launchMeanFinish(const double *running, double *mean, double *restart, cudaStream_t stream);
Status launchLrValue(IntPointer step, TypedPointer out, double baseLr, double endLr,
                     int64_t warmupSteps, int64_t maxSteps, cudaStream_t stream);
Status launchClipCoefficient(TypedPointer norm, TypedPointer out, double maxNorm,
                             cudaStream_t stream);
/// The buffers of an `elementwise` command: a broadcast operand is read at element 0; an
/// integer operand (f64 arithmetic only) through `integers`.
struct ElementwiseBuffers {
  TypedPointer operands[ElementwiseProgram::kMaxOperands];
  IntPointer integers[ElementwiseProgram::kMaxOperands];
  bool integer[ElementwiseProgram::kMaxOperands] = {};
  bool broadcast[ElementwiseProgram::kMaxOperands] = {};
  TypedPointer results[ElementwiseProgram::kMaxResults];
};
/// results[k][i] = program's result k on the operands' element i, for i < count.
Status launchElementwiseProgram(const ElementwiseProgram &program,
                                const ElementwiseBuffers &buffers, int64_t count,
                                cudaStream_t stream);

/// The error words of the id checks: the first bad position (atomicMin; UINT64_MAX when none)
/// and the id found there, which launchRecordBadValue copies once the position is known.
struct BadIdWords {
  unsigned long long position;
  long long value;
};
Status launchRecordBadValue(IntPointer ids, BadIdWords *words, cudaStream_t stream);

/// y[t, :] = table[ids[t], :]; ids outside [0, vocab) are recorded in `bad`.
Status launchEmbedding(TypedPointer table, IntPointer ids, TypedPointer y, int64_t tokens,
                       int64_t vocab, int64_t dim, BadIdWords *bad, cudaStream_t stream);
/// dtable = Σ over tokens (in token order, f64) of dy rows scattered to their ids: ids sorted
/// stably (CUB radix sort) with their positions, each (id, column) summing its run of tokens.
/// Scratch: embeddingGradScratchBytes(tokens) bytes.
size_t embeddingGradScratchBytes(int64_t tokens, int64_t vocab);
Status launchEmbeddingGrad(IntPointer ids, TypedPointer dy, TypedPointer dtable, int64_t tokens,
                           int64_t vocab, int64_t dim, void *scratch, size_t scratchBytes,
                           BadIdWords *bad, cudaStream_t stream);

/// The loss inputs of a cross-entropy op.
struct LossLabels {
  IntPointer labels;
  TypedPointer mask; // data null: no mask
  bool hasIgnore = false;
  int64_t ignoreIndex = 0;
};
/// Per token t of logits [tokens, vocab] (rows `first`.. of the op): its weight and weighted
/// loss term into weights/losses[first + t] (f64); labels outside [0, vocab) recorded in `bad`.
Status launchCrossEntropyRows(TypedPointer logits, LossLabels labels, int64_t first, int64_t tokens,
                              int64_t vocab, double *losses, double *weights, BadIdWords *bad,
                              cudaStream_t stream);
/// out = Σ losses / Σ weights over `tokens` (in order; 0 when no token counts).
Status launchFinishCrossEntropy(const double *losses, const double *weights, int64_t tokens,
                                TypedPointer out, cudaStream_t stream);
/// normalizer = Σ weights of every token, in order (cpu::crossEntropyWeight).
Status launchLossNormalizer(LossLabels labels, int64_t tokens, double *normalizer,
                            cudaStream_t stream);
/// dlogits [tokens, vocab] of rows `first`.. = dloss · w_t / normalizer · (softmax − onehot);
/// `stats` is scratch of `tokens` RowStats.
Status launchCrossEntropyGradRows(TypedPointer logits, LossLabels labels, int64_t first,
                                  int64_t tokens, int64_t vocab, TypedPointer dloss,
                                  const double *normalizer, TypedPointer dlogits, RowStats *stats,
                                  cudaStream_t stream);

/// Inverted dropout under key [seed, counter] (the identity for a negative counter): element i
/// kept when Philox word 0 of (i, stream, counter) is at least `threshold`, then scaled by
/// `scale` in f32. A counter beyond 2^32 − 1 is recorded in `bad` (position 0, the counter).
Status launchDropout(TypedPointer x, IntPointer key, TypedPointer y, int64_t count,
                     uint32_t streamId, uint64_t threshold, float scale, BadIdWords *bad,
                     cudaStream_t stream);
/// [seed, (step · microBatches + microBatch) · dataParallel + rank]; a negative step recorded in
/// `bad` (position 0, the step). `seed`/`step` null: the evaluation key [0, −1].
Status launchDropoutKey(IntPointer seed, IntPointer step, IntPointer key, int64_t microBatches,
                        int64_t microBatch, int64_t dataParallel, int64_t rank, BadIdWords *bad,
                        cudaStream_t stream);

// fp8 (tg-fp8): the scaled cast, amax, the scaling updates; fp8_matmul's epilogue.

/// y = quantize(x · scale) into y's fp8 format (saturating).
Status launchFp8Quantize(TypedPointer x, TypedPointer scale, TypedPointer y, int64_t count,
                         cudaStream_t stream);
/// max |x| of each operand in fixed blocks (fmaxf: NaN skipped), partials as sums of squares.
Status launchAmaxPartials(TypedPointer x, int64_t count, double *partials, cudaStream_t stream);
Status launchFinishMax(const double *partials, int64_t count, TypedPointer out,
                       cudaStream_t stream);
Status launchFp8CurrentScale(TypedPointer amax, TypedPointer out, double fp8Max,
                             cudaStream_t stream);
/// cpu::fp8ScaleUpdate on f32 history [length] (TypedPointer data of f32 buffers).
Status launchFp8ScaleUpdate(float *history, int64_t length, TypedPointer amax, TypedPointer scale,
                            double fp8Max, double margin, bool useMax, float *newHistory,
                            TypedPointer newScale, cudaStream_t stream);
/// y = c · (1 / scaleA) · (1 / scaleB) in f32, rounded to y's type (fp8_matmul's epilogue).
Status launchDequantizeProduct(const float *c, TypedPointer scaleA, TypedPointer scaleB,
                               TypedPointer y, int64_t count, cudaStream_t stream);

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_KERNELS_H
