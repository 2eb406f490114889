//===- CudnnAttention.h - tg.attention through cuDNN's fused SDPA -*- C++ -*-===//
//
// cuDNN's scaled-dot-product attention graph (FlashAttention on Hopper and later: the scores
// never leave the chip) for tg.attention and tg.attention_grad, built with the header-only
// cudnn-frontend (pinned from PyPI by scripts/setup.sh). libcudnn.so.9 is opened at run time,
// not linked: a node without it runs the project's own attention kernel instead, and says so.
// The frontend's headers stay inside CudnnAttention.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CUDA_CUDNNATTENTION_H
#define MLPERFC_RUNTIME_CUDA_CUDNNATTENTION_H

#include "runtime/support/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

namespace mlperf::rt::cuda {

/// One attention command's shape: query [batch, heads, queries, headDim], key and value
/// [batch, kvHeads, keys, headDim], lse [batch, heads, queries], all dense; bf16 tensors and
/// an f32 lse (the callers check the types).
struct SdpaShape {
  int64_t batch = 0, heads = 0, kvHeads = 0, queries = 0, keys = 0, headDim = 0;
  bool causal = false;
  double scale = 1.0;
  bool backward = false;
  /// backward: o is the forward's output transposed, [batch, queries, heads, headDim]
  /// (tg.attention_grad's output_tokens_major).
  bool outputTokensMajor = false;
  bool operator<(const SdpaShape &other) const;
};

/// A built SDPA graph: the forward (q, k, v -> o, lse) or the deterministic backward
/// (q, k, v, o, lse, dO -> dq, dk, dv).
class SdpaGraph {
public:
  virtual ~SdpaGraph() = default;
  virtual int64_t workspaceBytes() const = 0;
  /// Forward tensors in the order q, k, v, o, lse; backward q, k, v, o, lse, dO, dq, dk, dv.
  virtual Status run(cudaStream_t stream, void *const *tensors, void *workspace) const = 0;
};

/// libcudnn and one handle for GPU 0.
class Cudnn {
public:
  /// Opens libcudnn.so.9 and makes a handle; nullptr with `why` set when it cannot.
  static std::unique_ptr<Cudnn> open(std::string &why);
  ~Cudnn();
  Cudnn(const Cudnn &) = delete;
  Cudnn &operator=(const Cudnn &) = delete;

  /// "9.19.0": the library's own version.
  std::string version() const;
  /// The graph for `shape`, built once per distinct shape; nullptr with `why` set when cuDNN
  /// has no engine for it on this GPU.
  std::shared_ptr<const SdpaGraph> sdpa(const SdpaShape &shape, std::string &why);

private:
  struct State;
  explicit Cudnn(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

} // namespace mlperf::rt::cuda

#endif // MLPERFC_RUNTIME_CUDA_CUDNNATTENTION_H
