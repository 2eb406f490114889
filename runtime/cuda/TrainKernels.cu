//===- TrainKernels.cu - CUDA kernels of part 1b: draws, optimizer, losses, embeddings -===//
//
// The rest of a training step's element math, each the twin of a CPU kernel: Philox draws and
// the optimizers' element programs through the very functions the CPU calls
// (runtime/cpu/Philox.h, Optimizer.h, runtime/plan/ElementwiseProgram.h), sums in a fixed order,
// embedding gradients summed per id in token order after a stable sort. Bad ids and labels are
// recorded on the device and reported after the program.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Fp8.h"
#include "runtime/cpu/Optimizer.h"
#include "runtime/cpu/Philox.h"
#include "runtime/cuda/CudaStatus.h"
#include "runtime/cuda/GridLoop.cuh"
#include "runtime/cuda/Kernels.h"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>

namespace mlperf::rt::cuda {
namespace {

/// Elements per block of the sum of squares: each of 256 threads sums 16, in order.
constexpr int64_t kSumBlock = kThreads * 16;

Status launched(const char *kernel) {
  return statusFromCudaError(cudaGetLastError(), kernel, __FILE__, __LINE__);
}

__global__ void roundToKernel(float *x, int64_t count, DType type) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    x[i] = roundToStorage(type, x[i]);
  }
}

__global__ void randomKernel(TypedPointer y, int64_t count, IntPointer seed, uint32_t streamId,
                             double scale, bool normal) {
  const auto key = static_cast<uint64_t>(seed.load(0));
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    double drawn = normal ? scale * philoxNormalDraw(key, streamId, static_cast<uint64_t>(i))
                          : scale * (2.0 * philoxUnit(philoxDraw(key, streamId, i, 0).w[0]) - 1.0);
    y.storeDouble(i, drawn);
  }
}

__global__ void sumSquaresKernel(TypedPointer x, int64_t count, double *partials) {
  __shared__ double sums[kThreads];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kSumBlock;
  double sum = 0.0;
  for (int64_t i = begin + threadIdx.x; i < begin + kSumBlock && i < count; i += kThreads) {
    double v = x.load(i);
    sum += v * v;
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) { // a fixed tree: deterministic
    if (threadIdx.x < width) {
      sums[threadIdx.x] += sums[threadIdx.x + width];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = sums[0];
  }
}

__global__ void finishSumKernel(const double *partials, int64_t count, bool root,
                                TypedPointer out) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    sum += partials[i];
  }
  out.store(0, static_cast<float>(root ? sqrt(sum) : sum));
}

__global__ void scalarSqrtKernel(TypedPointer x, TypedPointer out) {
  out.store(0, static_cast<float>(sqrt(static_cast<double>(x.load(0)))));
}

__global__ void lrValueKernel(IntPointer step, TypedPointer out, cpu::LRSchedule schedule) {
  out.store(0, static_cast<float>(cpu::learningRate(schedule, step.load(0))));
}

__global__ void meanAccumulateKernel(const double *running, TypedPointer value, double *out) {
  const double sum = running[0], count = running[1];
  out[0] = sum + static_cast<double>(value.load(0));
  out[1] = count + 1.0;
}

__global__ void meanFinishKernel(const double *running, double *mean, double *restart) {
  const double sum = running[0], count = running[1];
  mean[0] = sum / count;
  restart[0] = 0.0;
  restart[1] = 0.0;
}

__global__ void clipCoefficientKernel(TypedPointer norm, TypedPointer out, double maxNorm) {
  out.store(0, static_cast<float>(cpu::clipCoefficient(norm.load(0), maxNorm)));
}

template <typename T>
__global__ void elementwiseProgramKernel(ElementwiseProgram program, ElementwiseBuffers buffers,
                                         int64_t count) {
  T values[ElementwiseProgram::kMaxOperands];
  T computed[ElementwiseProgram::kMaxResults];
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    for (int32_t n = 0; n < program.operandCount; ++n) {
      int64_t at = buffers.broadcast[n] ? 0 : i;
      values[n] = buffers.integer[n] ? static_cast<T>(buffers.integers[n].load(at))
                                     : static_cast<T>(buffers.operands[n].load(at));
    }
    evaluateElementwise(program, values, computed);
    for (int32_t k = 0; k < program.resultCount; ++k) {
      buffers.results[k].store(i, static_cast<float>(computed[k]));
    }
  }
}

__global__ void recordBadValueKernel(IntPointer ids, BadIdWords *words) {
  if (words->position != ~0ull) {
    words->value = ids.load(static_cast<int64_t>(words->position));
  }
}

__global__ void embeddingKernel(TypedPointer table, IntPointer ids, TypedPointer y, int64_t tokens,
                                int64_t vocab, int64_t dim, BadIdWords *bad) {
  for (int64_t index = firstIndex(); index < tokens * dim; index += gridStride()) {
    int64_t t = index / dim, d = index % dim, id = ids.load(t);
    if (id < 0 || id >= vocab) {
      if (d == 0) {
        atomicMin(&bad->position, static_cast<unsigned long long>(t));
      }
      continue;
    }
    y.store(index, table.load(id * dim + d));
  }
}

/// Keys (ids, clamped into range after recording bad ones) and positions for the sort.
__global__ void sortInputsKernel(IntPointer ids, int64_t tokens, int64_t vocab, uint32_t *keys,
                                 uint32_t *positions, BadIdWords *bad) {
  for (int64_t t = firstIndex(); t < tokens; t += gridStride()) {
    int64_t id = ids.load(t);
    if (id < 0 || id >= vocab) {
      atomicMin(&bad->position, static_cast<unsigned long long>(t));
      id = 0;
    }
    keys[t] = static_cast<uint32_t>(id);
    positions[t] = static_cast<uint32_t>(t);
  }
}

/// Thread (i, d): when i starts a run of one id in the sorted keys, the column sum of that run
/// (its tokens in increasing position: the sort is stable) into dtable[id, d].
__global__ void embeddingGradKernel(const uint32_t *keys, const uint32_t *positions,
                                    TypedPointer dy, TypedPointer dtable, int64_t tokens,
                                    int64_t dim) {
  for (int64_t index = firstIndex(); index < tokens * dim; index += gridStride()) {
    int64_t i = index / dim, d = index % dim;
    if (i > 0 && keys[i] == keys[i - 1]) {
      continue;
    }
    double sum = 0.0;
    for (int64_t j = i; j < tokens && keys[j] == keys[i]; ++j) {
      sum += dy.load(static_cast<int64_t>(positions[j]) * dim + d);
    }
    dtable.store(static_cast<int64_t>(keys[i]) * dim + d, static_cast<float>(sum));
  }
}

__global__ void crossEntropyRowsKernel(TypedPointer logits, LossLabels labels, int64_t first,
                                       int64_t tokens, int64_t vocab, double *losses,
                                       double *weights, BadIdWords *bad) {
  for (int64_t t = firstIndex(); t < tokens; t += gridStride()) {
    LossToken token =
        lossToken(labels.labels, labels.mask, labels.hasIgnore, labels.ignoreIndex, first + t);
    weights[first + t] = token.weight;
    if (token.label < 0 || token.label >= vocab) {
      atomicMin(&bad->position, static_cast<unsigned long long>(first + t));
      losses[first + t] = 0.0;
      continue;
    }
    RowStats stats = rowMaxAndExpSum(logits, t, vocab);
    losses[first + t] = stats.maximum + log(stats.sum) - logits.load(t * vocab + token.label);
  }
}

__global__ void finishCrossEntropyKernel(const double *losses, const double *weights,
                                         int64_t tokens, TypedPointer out) {
  double total = 0.0, weight = 0.0;
  for (int64_t t = 0; t < tokens; ++t) {
    total += weights[t] * losses[t];
    weight += weights[t];
  }
  out.store(0, static_cast<float>(weight > 0 ? total / weight : 0.0));
}

__global__ void lossNormalizerKernel(LossLabels labels, int64_t tokens, double *normalizer) {
  double weight = 0.0;
  for (int64_t t = 0; t < tokens; ++t) {
    weight += lossToken(labels.labels, labels.mask, labels.hasIgnore, labels.ignoreIndex, t).weight;
  }
  *normalizer = weight;
}

__global__ void rowStatsKernel(TypedPointer logits, int64_t tokens, int64_t vocab,
                               RowStats *stats) {
  for (int64_t t = firstIndex(); t < tokens; t += gridStride()) {
    stats[t] = rowMaxAndExpSum(logits, t, vocab);
  }
}

__global__ void crossEntropyGradKernel(TypedPointer logits, LossLabels labels, int64_t first,
                                       int64_t tokens, int64_t vocab, TypedPointer dloss,
                                       const double *normalizer, TypedPointer dlogits,
                                       const RowStats *stats) {
  const double scale = dloss.load(0), total = *normalizer;
  for (int64_t index = firstIndex(); index < tokens * vocab; index += gridStride()) {
    int64_t t = index / vocab, v = index % vocab;
    LossToken token =
        lossToken(labels.labels, labels.mask, labels.hasIgnore, labels.ignoreIndex, first + t);
    double coefficient = total > 0 ? scale * token.weight / total : 0.0;
    double probability = exp(logits.load(index) - stats[t].maximum) / stats[t].sum;
    dlogits.store(index,
                  static_cast<float>(coefficient * (probability - (v == token.label ? 1.0 : 0.0))));
  }
}

__global__ void dropoutKernel(TypedPointer x, IntPointer key, TypedPointer y, int64_t count,
                              uint32_t streamId, uint64_t threshold, float scale, BadIdWords *bad) {
  const int64_t counter = key.load(1);
  const auto seed = static_cast<uint64_t>(key.load(0));
  if (counter > static_cast<int64_t>(0xffffffffu)) {
    if (firstIndex() == 0) {
      bad->position = 0;
      bad->value = counter;
    }
    return;
  }
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    if (counter < 0) {
      y.store(i, x.load(i));
      continue;
    }
    bool keep =
        philoxDraw(seed, streamId, static_cast<uint64_t>(i), static_cast<uint32_t>(counter)).w[0] >=
        threshold;
    y.store(i, keep ? x.load(i) * scale : 0.0f);
  }
}

__global__ void dropoutKeyKernel(IntPointer seed, IntPointer step, IntPointer key,
                                 int64_t microBatches, int64_t microBatch, int64_t dataParallel,
                                 int64_t rank, BadIdWords *bad) {
  if (!seed.data) { // the evaluation key
    key.store(0, 0);
    key.store(1, -1);
    return;
  }
  const int64_t at = step.load(0);
  if (at < 0) {
    bad->position = 0;
    bad->value = at;
    return;
  }
  key.store(0, seed.load(0));
  key.store(1, (at * microBatches + microBatch) * dataParallel + rank);
}

__global__ void fp8QuantizeKernel(TypedPointer x, TypedPointer scale, TypedPointer y,
                                  int64_t count) {
  const float factor = scale.load(0);
  const bool e4m3 = y.type == DType::kF8E4M3FN;
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    y.store(i, cpu::quantizeFp8Value(e4m3, x.load(i), factor));
  }
}

__global__ void amaxKernel(TypedPointer x, int64_t count, double *partials) {
  __shared__ float maxima[kThreads];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kSumBlock;
  float result = 0.0f;
  for (int64_t i = begin + threadIdx.x; i < begin + kSumBlock && i < count; i += kThreads) {
    result = fmaxf(result, fabsf(x.load(i)));
  }
  maxima[threadIdx.x] = result;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      maxima[threadIdx.x] = fmaxf(maxima[threadIdx.x], maxima[threadIdx.x + width]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = maxima[0];
  }
}

__global__ void finishMaxKernel(const double *partials, int64_t count, TypedPointer out) {
  float result = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    result = fmaxf(result, static_cast<float>(partials[i]));
  }
  out.store(0, result);
}

__global__ void fp8CurrentScaleKernel(TypedPointer amax, TypedPointer out, double fp8Max) {
  out.store(0, cpu::fp8CurrentScale(amax.load(0), fp8Max));
}

__global__ void fp8ScaleUpdateKernel(float *history, int64_t length, TypedPointer amax,
                                     TypedPointer scale, double fp8Max, double margin, bool useMax,
                                     float *newHistory, TypedPointer newScale) {
  float updated = 0.0f;
  cpu::fp8ScaleUpdate(history, length, amax.load(0), scale.load(0), fp8Max, margin,
                      useMax ? cpu::AmaxAlgo::kMax : cpu::AmaxAlgo::kMostRecent, newHistory,
                      updated);
  newScale.store(0, updated);
}

__global__ void dequantizeProductKernel(const float *c, TypedPointer scaleA, TypedPointer scaleB,
                                        TypedPointer y, int64_t count) {
  const float factor = (1.0f / scaleA.load(0)) * (1.0f / scaleB.load(0));
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    y.store(i, c[i] * factor);
  }
}

} // namespace

Status launchFp8Quantize(TypedPointer x, TypedPointer scale, TypedPointer y, int64_t count,
                         cudaStream_t stream) {
  fp8QuantizeKernel<<<blocksFor(count), kThreads, 0, stream>>>(x, scale, y, count);
  return launched("fp8QuantizeKernel");
}

Status launchAmaxPartials(TypedPointer x, int64_t count, double *partials, cudaStream_t stream) {
  amaxKernel<<<static_cast<unsigned>(sumSquaresPartials(count)), kThreads, 0, stream>>>(x, count,
                                                                                        partials);
  return launched("amaxKernel");
}

Status launchFinishMax(const double *partials, int64_t count, TypedPointer out,
                       cudaStream_t stream) {
  finishMaxKernel<<<1, 1, 0, stream>>>(partials, count, out);
  return launched("finishMaxKernel");
}

Status launchFp8CurrentScale(TypedPointer amax, TypedPointer out, double fp8Max,
                             cudaStream_t stream) {
  fp8CurrentScaleKernel<<<1, 1, 0, stream>>>(amax, out, fp8Max);
  return launched("fp8CurrentScaleKernel");
}

Status launchFp8ScaleUpdate(float *history, int64_t length, TypedPointer amax, TypedPointer scale,
                            double fp8Max, double margin, bool useMax, float *newHistory,
                            TypedPointer newScale, cudaStream_t stream) {
  fp8ScaleUpdateKernel<<<1, 1, 0, stream>>>(history, length, amax, scale, fp8Max, margin, useMax,
                                            newHistory, newScale);
  return launched("fp8ScaleUpdateKernel");
}

Status launchDequantizeProduct(const float *c, TypedPointer scaleA, TypedPointer scaleB,
                               TypedPointer y, int64_t count, cudaStream_t stream) {
  dequantizeProductKernel<<<blocksFor(count), kThreads, 0, stream>>>(c, scaleA, scaleB, y, count);
  return launched("dequantizeProductKernel");
}

Status launchDropout(TypedPointer x, IntPointer key, TypedPointer y, int64_t count,
                     uint32_t streamId, uint64_t threshold, float scale, BadIdWords *bad,
                     cudaStream_t stream) {
  dropoutKernel<<<blocksFor(count), kThreads, 0, stream>>>(x, key, y, count, streamId, threshold,
                                                           scale, bad);
  return launched("dropoutKernel");
}

Status launchDropoutKey(IntPointer seed, IntPointer step, IntPointer key, int64_t microBatches,
                        int64_t microBatch, int64_t dataParallel, int64_t rank, BadIdWords *bad,
                        cudaStream_t stream) {
  dropoutKeyKernel<<<1, 1, 0, stream>>>(seed, step, key, microBatches, microBatch, dataParallel,
                                        rank, bad);
  return launched("dropoutKeyKernel");
}

Status launchRoundTo(float *x, int64_t count, DType type, cudaStream_t stream) {
  roundToKernel<<<blocksFor(count), kThreads, 0, stream>>>(x, count, type);
  return launched("roundToKernel");
}

Status launchRandomNormal(TypedPointer y, int64_t count, IntPointer seed, uint32_t streamId,
                          double stddev, cudaStream_t stream) {
  randomKernel<<<blocksFor(count), kThreads, 0, stream>>>(y, count, seed, streamId, stddev, true);
  return launched("randomKernel");
}

Status launchRandomUniform(TypedPointer y, int64_t count, IntPointer seed, uint32_t streamId,
                           double bound, cudaStream_t stream) {
  randomKernel<<<blocksFor(count), kThreads, 0, stream>>>(y, count, seed, streamId, bound, false);
  return launched("randomKernel");
}

int64_t sumSquaresPartials(int64_t count) {
  return std::max<int64_t>(1, (count + kSumBlock - 1) / kSumBlock);
}

Status launchSumSquaresPartials(TypedPointer x, int64_t count, double *partials,
                                cudaStream_t stream) {
  sumSquaresKernel<<<static_cast<unsigned>(sumSquaresPartials(count)), kThreads, 0, stream>>>(
      x, count, partials);
  return launched("sumSquaresKernel");
}

Status launchFinishSum(const double *partials, int64_t count, bool root, TypedPointer out,
                       cudaStream_t stream) {
  finishSumKernel<<<1, 1, 0, stream>>>(partials, count, root, out);
  return launched("finishSumKernel");
}

Status launchScalarSqrt(TypedPointer x, TypedPointer out, cudaStream_t stream) {
  scalarSqrtKernel<<<1, 1, 0, stream>>>(x, out);
  return launched("scalarSqrtKernel");
}

Status launchLrValue(IntPointer step, TypedPointer out, double baseLr, double endLr,
                     int64_t warmupSteps, int64_t maxSteps, cudaStream_t stream) {
  lrValueKernel<<<1, 1, 0, stream>>>(step, out,
                                     cpu::LRSchedule{baseLr, endLr, warmupSteps, maxSteps});
  return launched("lrValueKernel");
}

Status launchMeanAccumulate(const double *running, TypedPointer value, double *out,
                            cudaStream_t stream) {
  meanAccumulateKernel<<<1, 1, 0, stream>>>(running, value, out);
  return launched("meanAccumulateKernel");
}

Status launchMeanFinish(const double *running, double *mean, double *restart, cudaStream_t stream) {
  meanFinishKernel<<<1, 1, 0, stream>>>(running, mean, restart);
  return launched("meanFinishKernel");
}

Status launchClipCoefficient(TypedPointer norm, TypedPointer out, double maxNorm,
                             cudaStream_t stream) {
  clipCoefficientKernel<<<1, 1, 0, stream>>>(norm, out, maxNorm);
  return launched("clipCoefficientKernel");
}

Status launchElementwiseProgram(const ElementwiseProgram &program,
                                const ElementwiseBuffers &buffers, int64_t count,
                                cudaStream_t stream) {
  if (program.f64) {
    elementwiseProgramKernel<double>
        <<<blocksFor(count), kThreads, 0, stream>>>(program, buffers, count);
  } else {
    elementwiseProgramKernel<float>
        <<<blocksFor(count), kThreads, 0, stream>>>(program, buffers, count);
  }
  return launched("elementwiseProgramKernel");
}

Status launchRecordBadValue(IntPointer ids, BadIdWords *words, cudaStream_t stream) {
  recordBadValueKernel<<<1, 1, 0, stream>>>(ids, words);
  return launched("recordBadValueKernel");
}

Status launchEmbedding(TypedPointer table, IntPointer ids, TypedPointer y, int64_t tokens,
                       int64_t vocab, int64_t dim, BadIdWords *bad, cudaStream_t stream) {
  embeddingKernel<<<blocksFor(tokens * dim), kThreads, 0, stream>>>(table, ids, y, tokens, vocab,
                                                                    dim, bad);
  MLPERF_RETURN_IF_ERROR(launched("embeddingKernel"));
  return launchRecordBadValue(ids, bad, stream);
}

namespace {

/// The scratch of launchEmbeddingGrad: keys and positions, in and out of the sort, then CUB's.
struct EmbeddingGradScratch {
  uint32_t *keys, *positions, *sortedKeys, *sortedPositions;
  void *sort;
  size_t sortBytes;
};

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

int keyBits(int64_t vocab) {
  int bits = 1;
  while (bits < 32 && (int64_t{1} << bits) < vocab) {
    ++bits;
  }
  return bits;
}

size_t cubSortBytes(int64_t tokens, int64_t vocab) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const uint32_t *>(nullptr), static_cast<uint32_t *>(nullptr),
      static_cast<const uint32_t *>(nullptr), static_cast<uint32_t *>(nullptr),
      static_cast<int>(tokens), 0, keyBits(vocab));
  return bytes;
}

EmbeddingGradScratch carve(void *scratch, int64_t tokens, int64_t vocab) {
  auto *base = static_cast<uint8_t *>(scratch);
  const size_t array = aligned(tokens * sizeof(uint32_t));
  EmbeddingGradScratch s;
  s.keys = reinterpret_cast<uint32_t *>(base);
  s.positions = reinterpret_cast<uint32_t *>(base + array);
  s.sortedKeys = reinterpret_cast<uint32_t *>(base + 2 * array);
  s.sortedPositions = reinterpret_cast<uint32_t *>(base + 3 * array);
  s.sort = base + 4 * array;
  s.sortBytes = cubSortBytes(tokens, vocab);
  return s;
}

} // namespace

size_t embeddingGradScratchBytes(int64_t tokens, int64_t vocab) {
  return 4 * aligned(tokens * sizeof(uint32_t)) + aligned(cubSortBytes(tokens, vocab));
}

Status launchEmbeddingGrad(IntPointer ids, TypedPointer dy, TypedPointer dtable, int64_t tokens,
                           int64_t vocab, int64_t dim, void *scratch, size_t scratchBytes,
                           BadIdWords *bad, cudaStream_t stream) {
  if (scratchBytes < embeddingGradScratchBytes(tokens, vocab)) {
    return Status(StatusCode::kInternal, "embedding_grad scratch too small");
  }
  EmbeddingGradScratch s = carve(scratch, tokens, vocab);
  MLPERF_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(dtable.data, 0, vocab * dim * (dtable.type == DType::kBF16 ? 2 : 4), stream));
  if (tokens == 0) {
    return Status::ok();
  }
  sortInputsKernel<<<blocksFor(tokens), kThreads, 0, stream>>>(ids, tokens, vocab, s.keys,
                                                               s.positions, bad);
  MLPERF_RETURN_IF_ERROR(launched("sortInputsKernel"));
  MLPERF_RETURN_IF_ERROR(launchRecordBadValue(ids, bad, stream));
  size_t sortBytes = s.sortBytes;
  MLPERF_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
      s.sort, sortBytes, s.keys, s.sortedKeys, s.positions, s.sortedPositions,
      static_cast<int>(tokens), 0, keyBits(vocab), stream));
  embeddingGradKernel<<<blocksFor(tokens * dim), kThreads, 0, stream>>>(
      s.sortedKeys, s.sortedPositions, dy, dtable, tokens, dim);
  return launched("embeddingGradKernel");
}

Status launchCrossEntropyRows(TypedPointer logits, LossLabels labels, int64_t first, int64_t tokens,
                              int64_t vocab, double *losses, double *weights, BadIdWords *bad,
                              cudaStream_t stream) {
  crossEntropyRowsKernel<<<blocksFor(tokens), kThreads, 0, stream>>>(logits, labels, first, tokens,
                                                                     vocab, losses, weights, bad);
  MLPERF_RETURN_IF_ERROR(launched("crossEntropyRowsKernel"));
  return launchRecordBadValue(labels.labels, bad, stream);
}

Status launchFinishCrossEntropy(const double *losses, const double *weights, int64_t tokens,
                                TypedPointer out, cudaStream_t stream) {
  finishCrossEntropyKernel<<<1, 1, 0, stream>>>(losses, weights, tokens, out);
  return launched("finishCrossEntropyKernel");
}

Status launchLossNormalizer(LossLabels labels, int64_t tokens, double *normalizer,
                            cudaStream_t stream) {
  lossNormalizerKernel<<<1, 1, 0, stream>>>(labels, tokens, normalizer);
  return launched("lossNormalizerKernel");
}

Status launchCrossEntropyGradRows(TypedPointer logits, LossLabels labels, int64_t first,
                                  int64_t tokens, int64_t vocab, TypedPointer dloss,
                                  const double *normalizer, TypedPointer dlogits, RowStats *stats,
                                  cudaStream_t stream) {
  rowStatsKernel<<<blocksFor(tokens), kThreads, 0, stream>>>(logits, tokens, vocab, stats);
  MLPERF_RETURN_IF_ERROR(launched("rowStatsKernel"));
  crossEntropyGradKernel<<<blocksFor(tokens * vocab), kThreads, 0, stream>>>(
      logits, labels, first, tokens, vocab, dloss, normalizer, dlogits, stats);
  return launched("crossEntropyGradKernel");
}

} // namespace mlperf::rt::cuda
