#include "varlen_check.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/cuda_check.hpp"
#include "common/dtype.hpp"
#include "hopattn/kvcache.hpp"  // tensor_seqlens

namespace hopattn::reference {

std::string VarlenCase::to_string() const {
  std::string s = p.to_string() + " lens(q:k)";
  for (size_t b = 0; b < len_q.size(); ++b)
    s += " " + std::to_string(len_q[b]) + ":" + std::to_string(len_k[b]) +
         (used_k.empty() ? "" : "/" + std::to_string(used_k[b]));
  return s;
}

std::vector<int32_t> varlen_prefix(int start, const std::vector<int>& lens) {
  std::vector<int32_t> cu(lens.size() + 1, start);
  for (size_t b = 0; b < lens.size(); ++b) cu[b + 1] = cu[b] + lens[b];
  return cu;
}

Status build_varlen_run(const VarlenCase& c, hopattn_dtype_t dtype, VarlenRun& r) {
  const AttnProblem& p = c.p;
  const int d = p.hdim, es = int(dtype_size(dtype));
  const std::vector<int32_t> cu_q = varlen_prefix(c.q_start, c.len_q), cu_k = varlen_prefix(c.k_start, c.len_k);
  r.total_q = cu_q.back(), r.total_k = cu_k.back();
  r.rows_q = r.total_q + 3, r.rows_k = r.total_k + 2;  // rows outside every sequence, before and after
  r.q = DeviceBuffer(int64_t(r.rows_q) * p.heads_q * d * es);
  r.k = DeviceBuffer(std::max<int64_t>(int64_t(r.rows_k) * p.heads_kv * d * es, 16));
  r.v = DeviceBuffer(std::max<int64_t>(int64_t(r.rows_k) * p.heads_kv * d * es, 16));
  r.o = DeviceBuffer(int64_t(r.rows_q) * p.heads_q * d * es);
  r.lse = DeviceBuffer(int64_t(r.rows_q) * p.heads_q * 4);
  fill_normal(r.q.get(), dtype, int64_t(r.rows_q) * p.heads_q * d, c.seed * 3 + 0, c.input_std);
  fill_normal(r.k.get(), dtype, int64_t(r.rows_k) * p.heads_kv * d, c.seed * 3 + 1, c.input_std);
  fill_normal(r.v.get(), dtype, int64_t(r.rows_k) * p.heads_kv * d, c.seed * 3 + 2, 1.0f);
  const int64_t kv_row = int64_t(p.heads_kv) * d;
  if (!c.used_k.empty())  // keys past seqused_k must not be read: NaN would reach O
    for (size_t b = 0; b < c.len_k.size(); ++b) {
      const int64_t from = cu_k[b] + c.used_k[b], n = c.len_k[b] - c.used_k[b];
      fill_nan(static_cast<char*>(r.k.get()) + from * kv_row * es, es, n * kv_row);
      fill_nan(static_cast<char*>(r.v.get()) + from * kv_row * es, es, n * kv_row);
    }
  fill_nan(r.o.get(), es, int64_t(r.rows_q) * p.heads_q * d);
  fill_nan(r.lse.get(), 4, int64_t(r.rows_q) * p.heads_q);
  r.cu_q = upload_ints(cu_q);
  r.cu_k = upload_ints(cu_k);
  r.used = upload_ints(std::vector<int32_t>(c.used_k.begin(), c.used_k.end()));
  r.sinks = DeviceBuffer(std::max<size_t>(p.sinks.size(), 1) * 4);
  upload_from_float(r.sinks.get(), HOPATTN_DTYPE_FP32, p.sinks.data(), int64_t(p.sinks.size()));

  AttentionForwardArgs& a = r.args;
  a = AttentionForwardArgs{};
  a.q = tensor_thd(r.q.get(), dtype, r.rows_q, p.heads_q, d);
  a.k = tensor_thd(r.k.get(), dtype, r.rows_k, p.heads_kv, d);
  a.v = tensor_thd(r.v.get(), dtype, r.rows_k, p.heads_kv, d);
  a.o = tensor_thd(r.o.get(), dtype, r.rows_q, p.heads_q, d);
  a.lse = tensor_lse_varlen(r.lse.as<float>(), p.heads_q, r.rows_q);
  a.cu_seqlens_q = tensor_cu_seqlens(r.cu_q.as<int32_t>(), int64_t(c.len_q.size()));
  a.cu_seqlens_k = tensor_cu_seqlens(r.cu_k.as<int32_t>(), int64_t(c.len_k.size()));
  if (!c.used_k.empty()) a.seqused_k = tensor_seqlens(r.used.as<int32_t>(), int64_t(c.used_k.size()));
  a.max_seqlen_q = std::max(1, *std::max_element(c.len_q.begin(), c.len_q.end()));
  a.max_seqlen_k = std::max(1, *std::max_element(c.len_k.begin(), c.len_k.end()));
  a.softmax_scale = p.scale;
  a.causal = p.causal;
  if (p.window) a.window = 1, a.window_left = p.window_left, a.window_right = p.window_right;
  a.softcap = p.softcap;
  if (!p.sinks.empty()) a.sinks = Tensor{r.sinks.get(), HOPATTN_DTYPE_FP32, 1, {p.heads_q}, {1}};
  size_t bytes = 0;
  if (Status s = attention_forward_workspace_size(a, &bytes); !s.ok()) return s;
  r.workspace = DeviceBuffer(std::max<size_t>(bytes, 16));
  a.workspace = r.workspace.get();
  a.workspace_bytes = bytes;
  return Status();
}

VarlenCheckResult check_varlen_outputs(const VarlenCase& c, hopattn_dtype_t dtype, const VarlenRun& r) {
  VarlenCheckResult res;
  const AttnProblem& p = c.p;
  const int d = p.hdim;
  const std::vector<float> hq = download_as_float(r.q.get(), dtype, int64_t(r.rows_q) * p.heads_q * d);
  const std::vector<float> hk = download_as_float(r.k.get(), dtype, int64_t(r.rows_k) * p.heads_kv * d);
  const std::vector<float> hv = download_as_float(r.v.get(), dtype, int64_t(r.rows_k) * p.heads_kv * d);
  const std::vector<float> ho = download_as_float(r.o.get(), dtype, int64_t(r.rows_q) * p.heads_q * d);
  const std::vector<float> hl = download_as_float(r.lse.get(), HOPATTN_DTYPE_FP32, int64_t(r.rows_q) * p.heads_q);
  const std::vector<int32_t> cu_q = varlen_prefix(c.q_start, c.len_q), cu_k = varlen_prefix(c.k_start, c.len_k);
  const int64_t q_row = int64_t(p.heads_q) * d, kv_row = int64_t(p.heads_kv) * d;
  std::vector<char> inside(r.rows_q, 0);
  auto fail = [&](const std::string& m) {
    if (res.message.empty()) res.message = m;
  };
  for (size_t b = 0; b < c.len_q.size(); ++b) {
    const int lq = c.len_q[b], lk = c.used_k.empty() ? c.len_k[b] : c.used_k[b];
    std::fill(inside.begin() + cu_q[b], inside.begin() + cu_q[b] + lq, 1);
    if (lq == 0) continue;
    AttnProblem s = p;
    s.batch = 1, s.seqlen_q = lq, s.seqlen_k = lk;
    std::vector<double> o_ref(s.q_elems()), lse_ref(s.lse_elems());
    std::vector<float> o_yard(s.q_elems()), lse_yard(s.lse_elems());
    const float* qs = hq.data() + cu_q[b] * q_row;
    const float* ks = hk.data() + cu_k[b] * kv_row;
    const float* vs = hv.data() + cu_k[b] * kv_row;
    attention_cpu_fp64(s, qs, ks, vs, o_ref.data(), lse_ref.data());
    attention_cpu_lowp(s, dtype, qs, ks, vs, o_yard.data(), lse_yard.data());
    VarlenSequenceError e;
    e.lq = lq, e.lk = lk;
    e.o = compare(o_ref.data(), ho.data() + cu_q[b] * q_row, s.q_elems());
    e.o_bound = tolerance_bound(compare(o_ref.data(), o_yard.data(), s.q_elems()), dtype);
    // LSE (heads_q, rows): sequence b's rows of head h at h * rows + cu_q[b].
    std::vector<float> lse_got(s.lse_elems());
    for (int h = 0; h < p.heads_q; ++h)
      for (int i = 0; i < lq; ++i) lse_got[int64_t(h) * lq + i] = hl[int64_t(h) * r.rows_q + cu_q[b] + i];
    e.lse = compare(lse_ref.data(), lse_got.data(), s.lse_elems());
    const ErrorStats ly = compare(lse_ref.data(), lse_yard.data(), s.lse_elems());
    e.lse_bound = 2.0 * ly.max_abs + 1e-5 * std::max(1.0, ly.max_ref);
    const std::string where = "sequence " + std::to_string(b) + " (" + std::to_string(lq) + ":" + std::to_string(lk) + ")";
    if (e.o.bad != 0) fail(where + ": O has " + std::to_string(e.o.bad) + " NaN/unwritten elements, first at " +
                           std::to_string(e.o.first_bad));
    if (e.o.max_abs > e.o_bound) fail(where + ": O error " + fmt(e.o.max_abs) + " > bound " + fmt(e.o_bound));
    if (e.lse.bad != 0) fail(where + ": LSE has " + std::to_string(e.lse.bad) + " bad entries, first at " +
                             std::to_string(e.lse.first_bad));
    if (e.lse.max_abs > e.lse_bound) fail(where + ": LSE error " + fmt(e.lse.max_abs) + " > bound " + fmt(e.lse_bound));
    res.sequences.push_back(e);
  }
  for (int t = 0; t < r.rows_q; ++t) {
    if (inside[t]) continue;
    for (int64_t i = 0; i < q_row; ++i) res.touched_outside += !std::isnan(ho[t * q_row + i]);
    for (int h = 0; h < p.heads_q; ++h) res.touched_outside += !std::isnan(hl[int64_t(h) * r.rows_q + t]);
  }
  if (res.touched_outside != 0)
    fail("wrote " + std::to_string(res.touched_outside) + " elements outside every sequence");
  res.pass = res.message.empty();
  return res;
}

VarlenCheckResult run_varlen_check(const VarlenCase& c, hopattn_dtype_t dtype, const ForwardFn& fn) {
  VarlenRun r;
  VarlenCheckResult res;
  if (Status s = build_varlen_run(c, dtype, r); !s.ok()) {
    res.message = "workspace size: " + s.to_string();
    return res;
  }
  if (Status s = fn(r.args, nullptr); !s.ok()) {
    res.message = "call: " + s.to_string();
    return res;
  }
  HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());
  if (Status s = attention_device_check(nullptr); !s.ok()) {
    res.message = "the device check recorded " + s.to_string();
    return res;
  }
  return check_varlen_outputs(c, dtype, r);
}

std::vector<VarlenCase> varlen_check_cases(int hdim) {
  std::vector<VarlenCase> out;
  auto heads = [&](int hq, int hkv, bool causal) {
    AttnProblem p;
    p.heads_q = hq, p.heads_kv = hkv, p.hdim = hdim, p.causal = causal;
    return p;
  };
  for (int causal = 0; causal < 2; ++causal) {
    VarlenCase c;  // odd and empty lengths, no key, more queries than keys, GQA 6:2
    c.len_q = {1, 17, 113, 1000, 0, 129, 5, 300};
    c.len_k = {1, 17, 113, 1000, 7, 129, 0, 200};
    c.q_start = 2, c.k_start = 1;
    c.p = heads(6, 2, causal != 0);
    c.seed = 101 + causal;
    out.push_back(c);
    VarlenCase u;  // seqused_k, MQA
    u.len_q = {50, 200, 129};
    u.len_k = {300, 260, 129};
    u.used_k = {117, 260, 100};
    u.p = heads(4, 1, causal != 0);
    u.seed = 111 + causal;
    out.push_back(u);
  }
  VarlenCase w;  // a causal window with softcap on large logits and sinks
  w.len_q = {1, 300, 17, 700};
  w.len_k = {1, 300, 40, 650};
  w.p = heads(4, 2, true);
  w.p.window = true, w.p.window_left = 129, w.p.window_right = 0;
  w.p.softcap = 20.0f;
  w.p.sinks = {-INFINITY, 20.0f, 0.5f, -1.5f};
  w.input_std = 8.0f;
  w.seed = 121;
  out.push_back(w);
  return out;
}

}  // namespace hopattn::reference
