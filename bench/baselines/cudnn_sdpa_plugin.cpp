// The cuDNN SDPA forward baseline, built as a plugin (libhopattn_cudnn.so) that the bench and the
// tests load at run time with dlopen: a machine without a loadable cuDNN still runs everything
// else, and says so. This is the only translation unit that includes cudnn-frontend (its headers
// take minutes to compile).
//
// One cudnn-frontend graph per problem (shape, strides, dtype, mask, LSE, scale), built on first
// use and cached with its workspace, so the timed calls only execute.
#include <cuda_runtime.h>
#include <cudnn.h>
#include <cudnn_frontend.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "baselines/cudnn_plugin_abi.h"

namespace fe = cudnn_frontend;

namespace {

constexpr int64_t kUidQ = 1, kUidK = 2, kUidV = 3, kUidO = 4, kUidStats = 5;

struct CachedGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  void* workspace = nullptr;
};

using Key = std::vector<int64_t>;

Key make_key(const hopattn_attention_fwd_args_t& a, int device) {
  uint32_t scale_bits;
  std::memcpy(&scale_bits, &a.softmax_scale, 4);
  Key key = {device, a.q.dtype, a.causal, a.lse.data != nullptr, scale_bits};
  for (const hopattn_tensor_t* t : {&a.q, &a.k, &a.v, &a.o})
    for (int i = 0; i < 4; ++i) key.push_back(t->shape[i]), key.push_back(t->stride[i]);
  if (a.lse.data)
    for (int i = 0; i < 3; ++i) key.push_back(a.lse.stride[i]);
  return key;
}

// cuDNN wants (batch, heads, seqlen, hdim) dims; hopattn passes (batch, seqlen, heads, hdim).
std::vector<int64_t> bhsd_dims(const hopattn_tensor_t& t) { return {t.shape[0], t.shape[2], t.shape[1], t.shape[3]}; }
std::vector<int64_t> bhsd_strides(const hopattn_tensor_t& t) { return {t.stride[0], t.stride[2], t.stride[1], t.stride[3]}; }

struct State {
  std::mutex mutex;
  std::map<int, cudnnHandle_t> handles;
  std::map<Key, CachedGraph> graphs;
};
State& state() {
  static State s;
  return s;
}

int fail(char* err, size_t len, const std::string& msg) {
  if (err && len) std::snprintf(err, len, "%s", msg.c_str());
  return 1;
}

#define PLUGIN_CHECK_FE(expr)                                                             \
  do {                                                                                    \
    auto st_ = (expr);                                                                    \
    if (!st_.is_good()) return fail(err, errlen, std::string(#expr) + ": " + st_.get_message()); \
  } while (0)

int build_graph(const hopattn_attention_fwd_args_t& a, cudnnHandle_t handle, CachedGraph* out,
                char* err, size_t errlen) {
  const float scale = a.softmax_scale != 0.0f ? a.softmax_scale : 1.0f / std::sqrt(float(a.q.shape[3]));
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(a.q.dtype == HOPATTN_DTYPE_BF16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto tensor = [&](const char* name, int64_t uid, const hopattn_tensor_t& t) {
    return g->tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid)
                         .set_dim(bhsd_dims(t)).set_stride(bhsd_strides(t)));
  };
  auto q = tensor("Q", kUidQ, a.q), k = tensor("K", kUidK, a.k), v = tensor("V", kUidV, a.v);
  auto opts = fe::graph::SDPA_attributes()
                  .set_name("sdpa")
                  .set_generate_stats(a.lse.data != nullptr)
                  .set_attn_scale(scale);
  if (a.causal) opts.set_causal_mask_bottom_right(true);
  auto [o, stats] = g->sdpa(q, k, v, opts);
  o->set_output(true).set_uid(kUidO).set_dim(bhsd_dims(a.o)).set_stride(bhsd_strides(a.o));
  if (a.lse.data) {
    stats->set_output(true).set_uid(kUidStats).set_data_type(fe::DataType_t::FLOAT)
        .set_dim({a.lse.shape[0], a.lse.shape[1], a.lse.shape[2], 1})
        .set_stride({a.lse.stride[0], a.lse.stride[1], a.lse.stride[2], 1});
  }
  PLUGIN_CHECK_FE(g->validate());
  PLUGIN_CHECK_FE(g->build_operation_graph(handle));
  PLUGIN_CHECK_FE(g->create_execution_plans({fe::HeurMode_t::A}));
  PLUGIN_CHECK_FE(g->check_support(handle));
  PLUGIN_CHECK_FE(g->build_plans(handle));
  int64_t ws = 0;
  PLUGIN_CHECK_FE(g->get_workspace_size(ws));
  if (ws > 0 && cudaMalloc(&out->workspace, size_t(ws)) != cudaSuccess)
    return fail(err, errlen, "cudaMalloc of the cuDNN workspace failed");
  out->graph = g;
  return 0;
}

}  // namespace

extern "C" {

int hopattn_cudnn_plugin_abi(void) { return HOPATTN_CUDNN_PLUGIN_ABI; }

size_t hopattn_cudnn_version(void) { return cudnnGetVersion(); }

int hopattn_cudnn_sdpa_forward(const hopattn_attention_fwd_args_t* args, void* stream, char* err,
                               size_t errlen) {
  try {
    const hopattn_attention_fwd_args_t& a = *args;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return fail(err, errlen, "cudaGetDevice failed");
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    cudnnHandle_t& handle = s.handles[device];
    if (handle == nullptr && cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
      handle = nullptr;
      return fail(err, errlen, "cudnnCreate failed");
    }
    if (cudnnSetStream(handle, static_cast<cudaStream_t>(stream)) != CUDNN_STATUS_SUCCESS)
      return fail(err, errlen, "cudnnSetStream failed");
    const Key key = make_key(a, device);
    auto it = s.graphs.find(key);
    if (it == s.graphs.end()) {
      CachedGraph built;
      if (build_graph(a, handle, &built, err, errlen) != 0) return 1;
      it = s.graphs.emplace(key, built).first;
    }
    std::unordered_map<int64_t, void*> pack = {
        {kUidQ, a.q.data}, {kUidK, a.k.data}, {kUidV, a.v.data}, {kUidO, a.o.data}};
    if (a.lse.data) pack[kUidStats] = a.lse.data;
    PLUGIN_CHECK_FE(it->second.graph->execute(handle, pack, it->second.workspace));
    return 0;
  } catch (const std::exception& e) {
    return fail(err, errlen, std::string("exception: ") + e.what());
  }
}

}  // extern "C"
