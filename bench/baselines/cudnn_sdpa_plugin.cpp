// The cuDNN SDPA forward baseline, built as a plugin (libhopattn_cudnn.so) that the bench and the
// tests load at run time with dlopen: a machine without a loadable cuDNN still runs everything
// else, and says so. This is the only translation unit that includes cudnn-frontend (its headers
// take minutes to compile).
//
// One cudnn-frontend graph per problem (shape, strides, dtype, mask, LSE, scale), built on first
// use and cached with its workspace, so the timed calls only execute. Two entry points: the 16-bit
// SDPA (hopattn_cudnn_sdpa_forward) and, since 2026-12-06, the FP8 one
// (hopattn_cudnn_sdpa_fp8_forward, cudnn_plugin_abi.h).
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
#include <unordered_map>
#include <vector>

#include "baselines/cudnn_plugin_abi.h"

namespace fe = cudnn_frontend;

namespace {

constexpr int64_t kUidQ = 1, kUidK = 2, kUidV = 3, kUidO = 4, kUidStats = 5;
// The FP8 graph's scalars (float, (1, 1, 1, 1) device tensors) and its amax outputs.
constexpr int64_t kUidDescaleQ = 6, kUidDescaleK = 7, kUidDescaleV = 8, kUidDescaleS = 9, kUidScaleS = 10,
                  kUidScaleO = 11, kUidAmaxS = 12, kUidAmaxO = 13;
// P (in [0, 1]) is quantized to e4m3 as kScaleS · P: FlashAttention-3's and hopattn's scaling (the
// row maximum's weight exactly 256, e4m3's normal range down to 2^-14 of it). A power of two, so
// scale and descale are exact.
constexpr float kScaleS = 256.0f;

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

// Device memory for the FP8 graphs' scalars, per device: the descales of 1 (q, k, v without
// descales), descale_s, scale_s, scale_o, and the amax outputs (written, never read).
struct Fp8Scalars {
  float* ones = nullptr;  // [3]
  float* descale_s = nullptr;
  float* scale_s = nullptr;
  float* scale_o = nullptr;
  float* amax = nullptr;  // [2]: amax_s, amax_o
};

struct State {
  std::mutex mutex;
  std::map<int, cudnnHandle_t> handles;
  std::map<Key, CachedGraph> graphs;
  std::map<int, Fp8Scalars> fp8_scalars;
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

// The steps both entries share once their SDPA node is in the graph: cuDNN's stats as the LSE output
// where the call asks for one, the graph validated and built, its workspace allocated. With
// support_refusals (the FP8 entry) cudnn-frontend's "not supported" answers from the build steps
// return HOPATTN_CUDNN_NOT_SUPPORTED (its support surface, or no engine for the graph: a configuration
// cuDNN does not take, not a failure); otherwise every failure returns 1.
template <class StatsTensor>
int finish_graph(const hopattn_attention_fwd_args_t& a, std::shared_ptr<fe::graph::Graph> g, const StatsTensor& stats,
                 bool support_refusals, cudnnHandle_t handle, CachedGraph* out, char* err, size_t errlen) {
  if (a.lse.data) {
    stats->set_output(true).set_uid(kUidStats).set_data_type(fe::DataType_t::FLOAT)
        .set_dim({a.lse.shape[0], a.lse.shape[1], a.lse.shape[2], 1})
        .set_stride({a.lse.stride[0], a.lse.stride[1], a.lse.stride[2], 1});
  }
  auto step = [&](fe::error_t st, const char* what) {
    if (st.is_good()) return 0;
    fail(err, errlen, std::string(what) + ": " + st.get_message());
    // HEURISTIC_QUERY_FAILED: "No valid engine configs" (cuDNN 9.14 on H100, one query over 1000
    // keys: "s_q=1 on Hopper should go into sm80"), a shape no engine takes.
    const bool unsupported = st.get_code() == fe::error_code_t::GRAPH_NOT_SUPPORTED ||
                             st.get_code() == fe::error_code_t::GRAPH_EXECUTION_PLAN_CREATION_FAILED ||
                             st.get_code() == fe::error_code_t::HEURISTIC_QUERY_FAILED;
    return support_refusals && unsupported ? int(HOPATTN_CUDNN_NOT_SUPPORTED) : 1;
  };
  if (int rc = step(g->validate(), "g->validate()")) return rc;
  if (int rc = step(g->build_operation_graph(handle), "g->build_operation_graph(handle)")) return rc;
  if (int rc = step(g->create_execution_plans({fe::HeurMode_t::A}), "g->create_execution_plans({fe::HeurMode_t::A})")) return rc;
  if (int rc = step(g->check_support(handle), "g->check_support(handle)")) return rc;
  if (int rc = step(g->build_plans(handle), "g->build_plans(handle)")) return rc;
  int64_t ws = 0;
  PLUGIN_CHECK_FE(g->get_workspace_size(ws));
  if (ws > 0 && cudaMalloc(&out->workspace, size_t(ws)) != cudaSuccess)
    return fail(err, errlen, "cudaMalloc of the cuDNN workspace failed");
  out->graph = g;
  return 0;
}

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
  return finish_graph(a, g, stats, false, handle, out, err, errlen);
}

int unsupported(char* err, size_t len, const std::string& msg) {
  fail(err, len, msg);
  return HOPATTN_CUDNN_NOT_SUPPORTED;
}

// The per-device scalars of the FP8 graphs, allocated and filled on first use.
int fp8_scalars(int device, Fp8Scalars* out, char* err, size_t errlen) {
  Fp8Scalars& s = state().fp8_scalars[device];
  if (s.ones == nullptr) {
    // ones[3], descale_s, scale_s, scale_o, amax[2]
    const float host[8] = {1.0f, 1.0f, 1.0f, 1.0f / kScaleS, kScaleS, 1.0f, 0.0f, 0.0f};
    float* d = nullptr;
    if (cudaMalloc(&d, sizeof(host)) != cudaSuccess) return fail(err, errlen, "cudaMalloc of the FP8 scalars failed");
    if (cudaMemcpy(d, host, sizeof(host), cudaMemcpyHostToDevice) != cudaSuccess) {
      cudaFree(d);
      return fail(err, errlen, "cudaMemcpy of the FP8 scalars failed");
    }
    s = Fp8Scalars{d, d + 3, d + 4, d + 5, d + 6};
  }
  *out = s;
  return 0;
}

// A descale of the FP8 call: unset (descale 1) or one value (cuDNN's descales are per tensor).
int per_tensor_descale(const hopattn_tensor_t& t, const char* name, char* err, size_t errlen) {
  if (t.data == nullptr) return 0;
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= t.shape[i];
  if (t.dtype != HOPATTN_DTYPE_FP32 || n != 1)
    return unsupported(err, errlen, std::string(name) + ": cuDNN's FP8 SDPA takes one float32 descale per tensor (" +
                                        std::to_string(n) + " given: per (batch, kv-head) descales are hopattn's)");
  return 0;
}

fe::DataType_t fe_output_type(hopattn_dtype_t t) {
  return t == HOPATTN_DTYPE_BF16 ? fe::DataType_t::BFLOAT16
         : t == HOPATTN_DTYPE_FP16 ? fe::DataType_t::HALF
                                   : fe::DataType_t::FP8_E4M3;
}

// cudnn-frontend's sdpa_fp8 graph (e4m3 Q, K, V; per-tensor descales; P quantized with scale_s;
// O bf16, fp16 or e4m3 as args.o says).
int build_fp8_graph(const hopattn_attention_fwd_args_t& a, cudnnHandle_t handle, CachedGraph* out, char* err,
                    size_t errlen) {
  const float scale = a.softmax_scale != 0.0f ? a.softmax_scale : 1.0f / std::sqrt(float(a.q.shape[3]));
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::FP8_E4M3)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto tensor = [&](const char* name, int64_t uid, const hopattn_tensor_t& t) {
    return g->tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid)
                         .set_dim(bhsd_dims(t)).set_stride(bhsd_strides(t)));
  };
  auto scalar = [&](const char* name, int64_t uid) {
    return g->tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim({1, 1, 1, 1})
                         .set_stride({1, 1, 1, 1}).set_data_type(fe::DataType_t::FLOAT));
  };
  auto q = tensor("Q", kUidQ, a.q), k = tensor("K", kUidK, a.k), v = tensor("V", kUidV, a.v);
  auto descale_q = scalar("Descale_Q", kUidDescaleQ), descale_k = scalar("Descale_K", kUidDescaleK);
  auto descale_v = scalar("Descale_V", kUidDescaleV), descale_s = scalar("Descale_S", kUidDescaleS);
  auto scale_s = scalar("Scale_S", kUidScaleS), scale_o = scalar("Scale_O", kUidScaleO);
  auto opts = fe::graph::SDPA_fp8_attributes()
                  .set_name("sdpa_fp8")
                  .set_generate_stats(a.lse.data != nullptr)
                  .set_attn_scale(scale);
  if (a.causal) {
    // The same mask as hopattn's bottom-right one when the lengths are equal; cuDNN's FP8 SDPA has
    // its bottom-right mask on Blackwell only.
    if (a.q.shape[1] == a.k.shape[1]) opts.set_causal_mask(true);
    else opts.set_causal_mask_bottom_right(true);
  }
  auto [o, stats, amax_s, amax_o] =
      g->sdpa_fp8(q, k, v, descale_q, descale_k, descale_v, descale_s, scale_s, scale_o, opts);
  o->set_output(true).set_uid(kUidO).set_dim(bhsd_dims(a.o)).set_stride(bhsd_strides(a.o))
      .set_data_type(fe_output_type(a.o.dtype));
  amax_s->set_output(true).set_uid(kUidAmaxS).set_dim({1, 1, 1, 1}).set_stride({1, 1, 1, 1})
      .set_data_type(fe::DataType_t::FLOAT);
  amax_o->set_output(true).set_uid(kUidAmaxO).set_dim({1, 1, 1, 1}).set_stride({1, 1, 1, 1})
      .set_data_type(fe::DataType_t::FLOAT);
  return finish_graph(a, g, stats, true, handle, out, err, errlen);
}

// The handle of the current device, bound to `stream`; 0 on success.
int bound_handle(void* stream, int* device, cudnnHandle_t* out, char* err, size_t errlen) {
  if (cudaGetDevice(device) != cudaSuccess) return fail(err, errlen, "cudaGetDevice failed");
  cudnnHandle_t& handle = state().handles[*device];
  if (handle == nullptr && cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
    handle = nullptr;
    return fail(err, errlen, "cudnnCreate failed");
  }
  if (cudnnSetStream(handle, static_cast<cudaStream_t>(stream)) != CUDNN_STATUS_SUCCESS)
    return fail(err, errlen, "cudnnSetStream failed");
  *out = handle;
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
    if (a.q.dtype != HOPATTN_DTYPE_BF16 && a.q.dtype != HOPATTN_DTYPE_FP16)  // e4m3: the FP8 entry point
      return fail(err, errlen, "hopattn_cudnn_sdpa_forward takes bf16 or fp16 inputs (e4m3: hopattn_cudnn_sdpa_fp8_forward)");
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

int hopattn_cudnn_sdpa_fp8_forward(const hopattn_attention_fwd_args_t* args, void* stream, char* err,
                                   size_t errlen) {
  try {
    const hopattn_attention_fwd_args_t& a = *args;
    if (a.q.dtype != HOPATTN_DTYPE_E4M3 || a.k.dtype != HOPATTN_DTYPE_E4M3 || a.v.dtype != HOPATTN_DTYPE_E4M3)
      return fail(err, errlen, "hopattn_cudnn_sdpa_fp8_forward takes e4m3 q, k and v");
    if (a.o.dtype != HOPATTN_DTYPE_BF16 && a.o.dtype != HOPATTN_DTYPE_FP16 && a.o.dtype != HOPATTN_DTYPE_E4M3)
      return fail(err, errlen, "hopattn_cudnn_sdpa_fp8_forward writes a bf16, fp16 or e4m3 o");
    const char* names[3] = {"q_descale", "k_descale", "v_descale"};
    const hopattn_tensor_t* descales[3] = {&a.q_descale, &a.k_descale, &a.v_descale};
    for (int i = 0; i < 3; ++i)
      if (int rc = per_tensor_descale(*descales[i], names[i], err, errlen); rc != 0) return rc;
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    int device = 0;
    cudnnHandle_t handle = nullptr;
    if (int rc = bound_handle(stream, &device, &handle, err, errlen); rc != 0) return rc;
    Fp8Scalars c;
    if (int rc = fp8_scalars(device, &c, err, errlen); rc != 0) return rc;
    Key key = make_key(a, device);
    key.push_back(a.o.dtype);  // the graph's output type (make_key has q's)
    auto it = s.graphs.find(key);
    if (it == s.graphs.end()) {
      CachedGraph built;
      if (int rc = build_fp8_graph(a, handle, &built, err, errlen); rc != 0) return rc;
      it = s.graphs.emplace(key, built).first;
    }
    std::unordered_map<int64_t, void*> pack = {
        {kUidQ, a.q.data},          {kUidK, a.k.data},          {kUidV, a.v.data},           {kUidO, a.o.data},
        {kUidDescaleS, c.descale_s}, {kUidScaleS, c.scale_s},    {kUidScaleO, c.scale_o},     {kUidAmaxS, c.amax},
        {kUidAmaxO, c.amax + 1}};
    const int64_t descale_uids[3] = {kUidDescaleQ, kUidDescaleK, kUidDescaleV};
    for (int i = 0; i < 3; ++i) pack[descale_uids[i]] = descales[i]->data ? descales[i]->data : c.ones + i;
    if (a.lse.data) pack[kUidStats] = a.lse.data;
    PLUGIN_CHECK_FE(it->second.graph->execute(handle, pack, it->second.workspace));
    return 0;
  } catch (const std::exception& e) {
    return fail(err, errlen, std::string("exception: ") + e.what());
  }
}

}  // extern "C"
