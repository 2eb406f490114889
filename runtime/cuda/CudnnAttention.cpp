//===- CudnnAttention.cpp - tg.attention through cuDNN's fused SDPA -------===//
//
// Built with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING: every cuDNN call goes through a symbol
// looked up in the library this file opens, so the binary has no link-time dependency on
// libcudnn (runtime/CMakeLists.txt). The frontend throws when a symbol is missing; every
// entry point here catches and reports instead.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudnnAttention.h"

#include <cudnn_frontend.h>

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

namespace cudnn_frontend {
// The library handle the frontend's dynamic-loading shim resolves cuDNN's symbols in.
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend

namespace mlperf::rt::cuda {
namespace {

namespace fe = cudnn_frontend;

// Variant-pack ids of the graph's tensors.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

std::vector<int64_t> denseStrides(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

class FrontendSdpaGraph final : public SdpaGraph {
public:
  FrontendSdpaGraph(std::shared_ptr<fe::graph::Graph> graph, int64_t workspace, bool backward,
                    cudnnHandle_t handle)
      : graph(std::move(graph)), workspace(workspace), backward(backward), handle(handle) {}

  int64_t workspaceBytes() const override { return workspace; }

  Status run(cudaStream_t stream, void *const *tensors, void *workspacePointer) const override {
    static constexpr Uid forward[] = {kQ, kK, kV, kO, kStats};
    static constexpr Uid backwardUids[] = {kQ, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV};
    std::unordered_map<int64_t, void *> pack;
    if (backward) {
      for (int i = 0; i < 9; ++i) {
        pack[backwardUids[i]] = tensors[i];
      }
    } else {
      for (int i = 0; i < 5; ++i) {
        pack[forward[i]] = tensors[i];
      }
    }
    try {
      cudnnStatus_t set = fe::detail::set_stream(handle, stream);
      if (set != CUDNN_STATUS_SUCCESS) {
        return Status(StatusCode::kInternal,
                      std::string("cudnnSetStream failed: ") + fe::detail::get_error_string(set));
      }
      fe::error_t status = graph->execute(handle, pack, workspacePointer);
      if (status.is_bad()) {
        return Status(StatusCode::kInternal, "cuDNN SDPA " +
                                                 std::string(backward ? "backward" : "forward") +
                                                 " failed: " + status.get_message());
      }
    } catch (const std::exception &error) {
      return Status(StatusCode::kInternal, std::string("cuDNN SDPA: ") + error.what());
    }
    return Status::ok();
  }

private:
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace;
  bool backward;
  cudnnHandle_t handle;
};

/// The graph for `s` (fe::graph::Graph::sdpa / sdpa_backward): bf16 tensors in the plan's
/// dense [b, h, s, d] layout, f32 softmax statistics, f32 compute.
std::shared_ptr<FrontendSdpaGraph> buildGraph(cudnnHandle_t handle, const SdpaShape &s,
                                              std::string &why) {
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const std::vector<int64_t> queryDims{s.batch, s.heads, s.queries, s.headDim},
      keyDims{s.batch, s.kvHeads, s.keys, s.headDim}, statsDims{s.batch, s.heads, s.queries, 1};
  auto tensor = [&](const char *name, Uid uid, const std::vector<int64_t> &dims) {
    return graph->tensor(
        fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(
            denseStrides(dims)));
  };
  auto q = tensor("q", kQ, queryDims), k = tensor("k", kK, keyDims), v = tensor("v", kV, keyDims);
  const float scale = static_cast<float>(s.scale);
  if (!s.backward) {
    auto attributes = fe::graph::SDPA_attributes()
                          .set_name("attention")
                          .set_generate_stats(true)
                          .set_causal_mask(s.causal)
                          .set_attn_scale(scale);
    auto [o, stats] = graph->sdpa(q, k, v, attributes);
    o->set_output(true).set_uid(kO).set_dim(queryDims).set_stride(denseStrides(queryDims));
    stats->set_output(true)
        .set_uid(kStats)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim(statsDims)
        .set_stride(denseStrides(statsDims));
  } else {
    auto o = tensor("o", kO, queryDims), dO = tensor("dO", kDO, queryDims);
    if (s.outputTokensMajor) {
      // The same [b, h, s, d] tensor stored as its [b, s, h, d] transpose.
      o->set_stride({s.queries * s.heads * s.headDim, s.headDim, s.heads * s.headDim, 1});
    }
    auto stats = tensor("stats", kStats, statsDims);
    stats->set_data_type(fe::DataType_t::FLOAT);
    // Deterministic: the same step twice gives the same bits (the device check's rerun).
    auto attributes = fe::graph::SDPA_backward_attributes()
                          .set_name("attention_grad")
                          .set_causal_mask(s.causal)
                          .set_attn_scale(scale)
                          .set_deterministic_algorithm(true);
    auto [dq, dk, dv] = graph->sdpa_backward(q, k, v, o, dO, stats, attributes);
    dq->set_output(true).set_uid(kDQ).set_dim(queryDims).set_stride(denseStrides(queryDims));
    dk->set_output(true).set_uid(kDK).set_dim(keyDims).set_stride(denseStrides(keyDims));
    dv->set_output(true).set_uid(kDV).set_dim(keyDims).set_stride(denseStrides(keyDims));
  }
  fe::error_t status = graph->build(handle, {fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK});
  if (status.is_bad()) {
    why = "cuDNN has no SDPA " + std::string(s.backward ? "backward" : "forward") +
          " engine for it: " + status.get_message();
    return nullptr;
  }
  int64_t workspace = 0;
  status = graph->get_workspace_size(workspace);
  if (status.is_bad()) {
    why = "cuDNN SDPA workspace query failed: " + status.get_message();
    return nullptr;
  }
  return std::make_shared<FrontendSdpaGraph>(graph, workspace, s.backward, handle);
}

} // namespace

bool SdpaShape::operator<(const SdpaShape &other) const {
  auto key = [](const SdpaShape &s) {
    return std::make_tuple(s.batch, s.heads, s.kvHeads, s.queries, s.keys, s.headDim, s.causal,
                           s.scale, s.backward, s.outputTokensMajor);
  };
  return key(*this) < key(other);
}

struct Cudnn::State {
  cudnnHandle_t handle = nullptr;
  std::map<SdpaShape, std::shared_ptr<const SdpaGraph>> graphs;
};

Cudnn::Cudnn(std::unique_ptr<State> state) : state(std::move(state)) {}

Cudnn::~Cudnn() {
  if (state && state->handle) {
    state->graphs.clear();
    try {
      (void)fe::detail::destroy_handle(state->handle);
    } catch (...) {
    }
  }
}

std::unique_ptr<Cudnn> Cudnn::open(std::string &why) {
  if (!fe::cudnn_dlhandle) {
    fe::cudnn_dlhandle = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (!fe::cudnn_dlhandle) {
      const char *error = dlerror();
      why = std::string("libcudnn.so.9 could not be loaded (") + (error ? error : "unknown") + ")";
      return nullptr;
    }
  }
  auto state = std::make_unique<State>();
  try {
    if (fe::detail::get_backend_version() < 90000) {
      why = "libcudnn " + std::to_string(fe::detail::get_backend_version()) +
            " is older than cuDNN 9";
      return nullptr;
    }
    cudnnStatus_t created = fe::detail::create_handle(&state->handle);
    if (created != CUDNN_STATUS_SUCCESS) {
      why = std::string("cudnnCreate failed: ") + fe::detail::get_error_string(created);
      return nullptr;
    }
  } catch (const std::exception &error) {
    why = std::string("cuDNN: ") + error.what();
    return nullptr;
  }
  return std::unique_ptr<Cudnn>(new Cudnn(std::move(state)));
}

std::string Cudnn::version() const {
  size_t v = fe::detail::get_backend_version(); // 91900 for 9.19.0
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

std::shared_ptr<const SdpaGraph> Cudnn::sdpa(const SdpaShape &shape, std::string &why) {
  auto found = state->graphs.find(shape);
  if (found != state->graphs.end()) {
    return found->second;
  }
  std::shared_ptr<const SdpaGraph> graph;
  try {
    graph = buildGraph(state->handle, shape, why);
  } catch (const std::exception &error) {
    why = std::string("cuDNN: ") + error.what();
  }
  if (graph) {
    state->graphs[shape] = graph;
  }
  return graph;
}

} // namespace mlperf::rt::cuda
