#include "kvcache_check.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "attention_check.hpp"  // fmt
#include "attention_reference.hpp"
#include "common/cuda_check.hpp"
#include "common/dtype.hpp"
#include "device_utils.hpp"
#include "hopattn/kvcache.hpp"
#include "kvcache_reference.hpp"

namespace hopattn::reference {

std::string KvCheckCase::to_string() const {
  std::string s = "sq=" + std::to_string(seqlen_q) + " hq=" + std::to_string(heads_q) +
                  " hkv=" + std::to_string(heads_kv) + " d=" + std::to_string(hdim) +
                  " max=" + std::to_string(max_len) + " lens={";
  for (size_t b = 0; b < lens.size(); ++b) s += (b ? "," : "") + std::to_string(lens[b]);
  s += "}";
  if (causal) s += " causal";
  if (page_size > 0) s += " pages=" + std::to_string(page_size);
  if (window) s += " window=(" + std::to_string(window_left) + "," + std::to_string(window_right) + ")";
  if (softcap > 0.0f) s += " softcap=" + fmt(softcap);
  if (!sinks.empty()) s += " sinks";
  if (input_std != 1.0f) s += " x" + fmt(input_std);
  return s;
}

KvCheckResult run_kvcache_check(const KvCheckCase& c, hopattn_dtype_t dtype) {
  KvCheckResult res;
  auto fail = [&](const std::string& m) {
    if (res.message.empty()) res.message = m;
  };
  const int batch = int(c.lens.size()), d = c.hdim, es = int(dtype_size(dtype));
  const int64_t q_elems = int64_t(batch) * c.seqlen_q * c.heads_q * d;
  const int64_t kv_row = int64_t(c.heads_kv) * d;  // one token's keys (or values)
  const int64_t cache_elems = int64_t(batch) * c.max_len * kv_row;
  const int64_t lse_elems = int64_t(batch) * c.heads_q * c.seqlen_q;

  DeviceBuffer q(q_elems * es), k(cache_elems * es), v(cache_elems * es), o(q_elems * es), lse(lse_elems * 4);
  fill_normal(q.get(), dtype, q_elems, c.seed * 5 + 0, c.input_std);
  fill_normal(k.get(), dtype, cache_elems, c.seed * 5 + 1, c.input_std);
  fill_normal(v.get(), dtype, cache_elems, c.seed * 5 + 2, 1.0f);
  for (int b = 0; b < batch; ++b) {  // the rows past each length must not be read: NaN would reach O
    const int64_t from = (int64_t(b) * c.max_len + c.lens[size_t(b)]) * kv_row;
    const int64_t n = int64_t(c.max_len - c.lens[size_t(b)]) * kv_row;
    fill_nan(static_cast<char*>(k.get()) + from * es, size_t(es), n);
    fill_nan(static_cast<char*>(v.get()) + from * es, size_t(es), n);
  }
  fill_nan(o.get(), size_t(es), q_elems);
  fill_nan(lse.get(), 4, lse_elems);
  HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> hq = download_as_float(q.get(), dtype, q_elems);
  const std::vector<float> hk = download_as_float(k.get(), dtype, cache_elems);
  const std::vector<float> hv = download_as_float(v.get(), dtype, cache_elems);

  KvCacheArgs a;
  a.q = tensor_bshd(q.get(), dtype, batch, c.seqlen_q, c.heads_q, d);
  a.k_cache = tensor_bshd(k.get(), dtype, batch, c.max_len, c.heads_kv, d);
  a.v_cache = tensor_bshd(v.get(), dtype, batch, c.max_len, c.heads_kv, d);
  const std::vector<int32_t> lens(c.lens.begin(), c.lens.end());
  DeviceBuffer seqlens = upload_ints(lens);
  a.cache_seqlens = tensor_seqlens(seqlens.as<int32_t>(), batch);
  a.o = tensor_bshd(o.get(), dtype, batch, c.seqlen_q, c.heads_q, d);
  a.lse = tensor_lse(lse.as<float>(), batch, c.heads_q, c.seqlen_q);
  a.causal = c.causal ? 1 : 0;
  a.num_splits = 0;
  a.pack_gqa = -1;
  if (c.window) a.window = 1, a.window_left = c.window_left, a.window_right = c.window_right;
  a.softcap = c.softcap;
  DeviceBuffer sinks(std::max<size_t>(c.sinks.size(), 1) * 4);
  if (!c.sinks.empty()) {
    upload_from_float(sinks.get(), HOPATTN_DTYPE_FP32, c.sinks.data(), int64_t(c.sinks.size()));
    a.sinks = tensor_sinks(sinks.as<float>(), c.heads_q);
  }
  // A paged copy: the same rows in pages drawn from a shuffled pool whose spare pages hold NaN.
  DeviceBuffer k_pool, v_pool, table;
  if (c.page_size > 0) {
    KvCacheProblem p;
    p.batch = batch, p.seqlen_q = c.seqlen_q, p.max_len = c.max_len, p.heads_q = c.heads_q, p.heads_kv = c.heads_kv;
    p.hdim = d;
    const PagedLayout l = make_paged_layout(batch, c.max_len / c.page_size, c.page_size, 3, c.seed);
    const int64_t pool_elems = int64_t(l.num_pages) * c.page_size * kv_row;
    std::vector<float> pk(size_t(pool_elems), NAN), pv(size_t(pool_elems), NAN);
    scatter_to_pages(p, l, hk.data(), pk.data());
    scatter_to_pages(p, l, hv.data(), pv.data());
    k_pool = DeviceBuffer(pool_elems * es), v_pool = DeviceBuffer(pool_elems * es);
    upload_from_float(k_pool.get(), dtype, pk.data(), pool_elems);
    upload_from_float(v_pool.get(), dtype, pv.data(), pool_elems);
    table = upload_ints(l.table);
    a.k_cache = tensor_bshd(k_pool.get(), dtype, l.num_pages, c.page_size, c.heads_kv, d);
    a.v_cache = tensor_bshd(v_pool.get(), dtype, l.num_pages, c.page_size, c.heads_kv, d);
    a.page_table = tensor_page_table(table.as<int32_t>(), batch, l.max_pages);
  }
  size_t bytes = 0;
  const hopattn_status_t ws = hopattn_kvcache_workspace_size(&a, &bytes);
  if (ws.code != HOPATTN_OK) {
    res.message = std::string("workspace size: ") + ws.message;
    return res;
  }
  DeviceBuffer workspace(std::max<size_t>(bytes, 16));
  a.workspace = bytes > 0 ? workspace.get() : nullptr;
  a.workspace_bytes = bytes;
  if (Status s = kvcache_attention(a, nullptr); !s.ok()) {
    res.message = "call: " + s.to_string();
    return res;
  }
  HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());
  if (Status s = kvcache_device_check(nullptr); !s.ok()) {
    res.message = "the device check recorded " + s.to_string();
    return res;
  }
  const std::vector<float> ho = download_as_float(o.get(), dtype, q_elems);
  const std::vector<float> hl = download_as_float(lse.get(), HOPATTN_DTYPE_FP32, lse_elems);

  // Per sequence: its queries against its first lens[b] keys (the reference's bottom-right causal
  // and window coordinates are the KV-cache call's: query i at position len - seqlen_q + i).
  const int64_t q_seq = int64_t(c.seqlen_q) * c.heads_q * d, lse_seq = int64_t(c.heads_q) * c.seqlen_q;
  for (int b = 0; b < batch; ++b) {
    const int len = c.lens[size_t(b)];
    const std::string where = "sequence " + std::to_string(b) + " (len " + std::to_string(len) + ")";
    const float* og = ho.data() + b * q_seq;
    const float* lg = hl.data() + b * lse_seq;
    if (len == 0) {  // no key (no sinks in such a case): O = 0, LSE = -inf
      for (int64_t i = 0; i < q_seq; ++i)
        if (og[i] != 0.0f) {
          fail(where + ": O is not 0 with no key");
          break;
        }
      for (int64_t i = 0; i < lse_seq; ++i)
        if (!(std::isinf(lg[i]) && lg[i] < 0)) {
          fail(where + ": LSE is not -inf with no key");
          break;
        }
      continue;
    }
    AttnProblem s;
    s.batch = 1, s.seqlen_q = c.seqlen_q, s.seqlen_k = len, s.heads_q = c.heads_q, s.heads_kv = c.heads_kv;
    s.hdim = d, s.causal = c.causal;
    s.window = c.window, s.window_left = c.window_left, s.window_right = c.window_right;
    s.softcap = c.softcap, s.sinks = c.sinks;
    std::vector<double> o_ref(size_t(s.q_elems())), lse_ref(size_t(s.lse_elems()));
    std::vector<float> o_yard(size_t(s.q_elems())), lse_yard(size_t(s.lse_elems()));
    const float* qs = hq.data() + b * q_seq;
    const float* ks = hk.data() + int64_t(b) * c.max_len * kv_row;
    const float* vs = hv.data() + int64_t(b) * c.max_len * kv_row;
    attention_cpu_fp64(s, qs, ks, vs, o_ref.data(), lse_ref.data());
    attention_cpu_lowp(s, dtype, qs, ks, vs, o_yard.data(), lse_yard.data());
    const ErrorStats eo = compare(o_ref.data(), og, s.q_elems());
    const double o_bound = tolerance_bound(compare(o_ref.data(), o_yard.data(), s.q_elems()), dtype);
    const ErrorStats el = compare(lse_ref.data(), lg, s.lse_elems());
    const ErrorStats ly = compare(lse_ref.data(), lse_yard.data(), s.lse_elems());
    const double lse_bound = 2.0 * ly.max_abs + 1e-5 * std::max(1.0, ly.max_ref);
    if (eo.bad != 0) fail(where + ": O has " + std::to_string(eo.bad) + " NaN/unwritten elements");
    if (eo.max_abs > o_bound) fail(where + ": O error " + fmt(eo.max_abs) + " > bound " + fmt(o_bound));
    if (el.bad != 0) fail(where + ": LSE has " + std::to_string(el.bad) + " bad entries");
    if (el.max_abs > lse_bound) fail(where + ": LSE error " + fmt(el.max_abs) + " > bound " + fmt(lse_bound));
    res.worst = std::max(res.worst, o_bound > 0 ? eo.max_abs / o_bound : 0.0);
  }
  res.pass = res.message.empty();
  return res;
}

std::vector<KvCheckCase> kvcache_check_cases(int hdim) {
  std::vector<KvCheckCase> out;
  KvCheckCase gqa;  // one query, packed GQA 8:2, odd, full and empty lengths
  gqa.hdim = hdim, gqa.seqlen_q = 1, gqa.heads_q = 8, gqa.heads_kv = 2, gqa.max_len = 1024;
  gqa.lens = {1, 17, 113, 1000, 1024, 0};
  gqa.seed = 201;
  out.push_back(gqa);
  KvCheckCase mha;  // four causal queries per sequence, MHA
  mha.hdim = hdim, mha.seqlen_q = 4, mha.heads_q = 4, mha.heads_kv = 4, mha.max_len = 1024;
  mha.lens = {4, 129, 1000};
  mha.causal = true;
  mha.seed = 202;
  out.push_back(mha);
  KvCheckCase mqa;  // MQA over long caches: split-KV and its combine
  mqa.hdim = hdim, mqa.seqlen_q = 1, mqa.heads_q = 16, mqa.heads_kv = 1, mqa.max_len = 4096;
  mqa.lens = {4096, 3001};
  mqa.causal = true;
  mqa.seed = 203;
  out.push_back(mqa);
  KvCheckCase opt;  // a causal window, softcap on large logits, sinks (one -inf: no sink for that head)
  opt.hdim = hdim, opt.seqlen_q = 3, opt.heads_q = 4, opt.heads_kv = 2, opt.max_len = 1024;
  opt.lens = {1000, 17, 300};
  opt.causal = true;
  opt.window = true, opt.window_left = 129, opt.window_right = 0;
  opt.softcap = 20.0f;
  opt.sinks = {-INFINITY, 20.0f, 0.5f, -1.5f};
  opt.input_std = 8.0f;
  opt.seed = 204;
  out.push_back(opt);
  KvCheckCase chunk;  // a causal chunk of 129 queries, GQA 8:2 (at hdim 128 the chunk path: decode_defaults.cpp's rules)
  chunk.hdim = hdim, chunk.seqlen_q = 129, chunk.heads_q = 8, chunk.heads_kv = 2, chunk.max_len = 2048;
  chunk.lens = {2048, 1000, 129};
  chunk.causal = true;
  chunk.sinks = {-INFINITY, 20.0f, 0.5f, -1.5f, 0.0f, 1.0f, -3.0f, 2.0f};
  chunk.seed = 206;
  out.push_back(chunk);
  for (int page : {16, 128}) {  // the first case's cache in shuffled pages
    KvCheckCase paged = gqa;
    paged.page_size = page;
    paged.seed = 205 + uint64_t(page);
    out.push_back(paged);
  }
  return out;
}

}  // namespace hopattn::reference
