// Attention over a KV cache: argument checks, the split/packing plan and the workspace size.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "attention/decode_params.hpp"
#include "attention/device/attention_check.hpp"
#include "attention/device/compiled_set.hpp"
#include "attention/device/decode_dispatch.hpp"
#include "attention/device/decode_registry.hpp"
#include "attention/device/kvcache_chunk_plan.hpp"
#include "attention/device/page_table_check.hpp"
#include "attention/device/forward_dispatch.hpp"
#include "attention/experimental.hpp"
#include "attention/fwd_params.hpp"
#include "attention/fwd_varlen.hpp"
#include "attention/kernel/sm90_fwd_config.hpp"
#include "common/cuda_check.hpp"
#include "common/dtype.hpp"
#include "common/status_util.hpp"
#include "common/tensor_checks.hpp"
#include "hopattn/kvcache.hpp"

namespace hopattn {

using kvcache_plan::cache_max_len;
using kvcache_plan::chunk_pack_gqa;
using kvcache_plan::chunk_pack_overflows;
using kvcache_plan::chunk_path_row;
using kvcache_plan::is_int8;
using kvcache_plan::is_paged;
using kvcache_plan::kMaxSplits;
using kvcache_plan::make_chunk_plan;

namespace {

constexpr const char* kDims[4] = {"batch", "seqlen", "heads", "hdim"};
constexpr const char* kLseDims[3] = {"batch", "heads", "seqlen"};
constexpr const char* kSeqlensDims[1] = {"batch"};
constexpr const char* kKScaleDims[4] = {"batch", "blocks", "heads_kv", "hdim"};
constexpr const char* kVScaleDims[3] = {"batch", "seqlen", "heads_kv"};
constexpr const char* kTailDims[4] = {"batch", "quant_block", "heads_kv", "hdim"};
constexpr const char* kPageTableDims[2] = {"batch", "max_pages"};
// DeviceContext::tensor_device order for this operation.
constexpr int kTensors = 12;
constexpr const char* kTensorNames[kTensors] = {"q",      "k_cache", "v_cache", "cache_seqlens", "o",          "lse",
                                                "k_scale", "v_scale", "k_tail", "v_tail",        "page_table", "sinks"};
constexpr int kTileRows = 64;   // query rows per consumer warpgroup tile
constexpr int kSplitKeys = 128; // the smallest KV range a split is given

Status check_types_and_shapes(const KvCacheArgs& a) {
  const Tensor &q = a.q, &k = a.k_cache, &v = a.v_cache, &o = a.o;
  // FP8 (e4m3) is the forward call's only (hopattn.h, since 0.5): no KV-cache kernel, paged or
  // contiguous, takes e4m3 queries or caches yet.
  if (q.dtype == HOPATTN_DTYPE_E4M3 || k.dtype == HOPATTN_DTYPE_E4M3)
    return Status::unsupported(cat(q.dtype == HOPATTN_DTYPE_E4M3 ? "q" : "k_cache",
                                   ": dtype e4m3 is not supported by the KV-cache call (contiguous or paged); FP8 "
                                   "attention is the forward call's (hopattn_attention_forward); supported: bf16, "
                                   "fp16 queries, a cache of q's dtype or int8"));
  if (q.dtype != HOPATTN_DTYPE_BF16 && q.dtype != HOPATTN_DTYPE_FP16)
    return Status::unsupported(cat("q: dtype ", hopattn_dtype_name(q.dtype), " is not supported; supported: bf16, fp16"));
  if (o.dtype != q.dtype)
    return Status::invalid(cat("o: dtype ", hopattn_dtype_name(o.dtype), " does not match q's ", hopattn_dtype_name(q.dtype)));
  if (k.dtype != q.dtype && k.dtype != HOPATTN_DTYPE_INT8)
    return Status::invalid(cat("k_cache: dtype ", hopattn_dtype_name(k.dtype), " must be q's (",
                               hopattn_dtype_name(q.dtype), ") or int8"));
  if (v.dtype != k.dtype)
    return Status::invalid(cat("v_cache: dtype ", hopattn_dtype_name(v.dtype), " does not match k_cache's ",
                               hopattn_dtype_name(k.dtype)));
  bool hdim_ok = false;
  for (int d : attention::compiled_head_dims()) hdim_ok |= q.shape[3] == d;
  if (!hdim_ok) return Status::unsupported(cat("q: head dim ", q.shape[3], " is not supported"));
  // A paged cache's first dimension is its pool's pages, not the batch.
  for (const Tensor* t : {&k, &v, &o})
    if (t->shape[3] != q.shape[3] || (t->shape[0] != q.shape[0] && !(is_paged(a) && t != &o)))
      return Status::invalid("k_cache, v_cache, o: batch and hdim must match q's");
  if (is_paged(a) && v.shape[0] != k.shape[0])
    return Status::invalid(cat("v_cache: ", v.shape[0], " pages, k_cache ", k.shape[0], " (a paged cache: the same pool)"));
  if (v.shape[1] != k.shape[1] || v.shape[2] != k.shape[2])
    return Status::invalid("v_cache: shape (max_seqlen_k, heads_kv) differs from k_cache's");
  if (o.shape[1] != q.shape[1] || o.shape[2] != q.shape[2])
    return Status::invalid("o: shape (seqlen_q, heads_q) differs from q's");
  if (k.shape[2] == 0 ? q.shape[2] != 0 : q.shape[2] % k.shape[2] != 0)
    return Status::invalid(cat("q: heads_q = ", q.shape[2], " is not a multiple of heads_kv = ", k.shape[2]));
  for (const Tensor* t : {&q, &k, &v, &o})
    if (t->stride[3] != 1 && t->shape[3] > 1)
      return Status::invalid("q, k_cache, v_cache, o: the last dimension (hdim) must be contiguous");
  const Tensor& sl = a.cache_seqlens;
  if (sl.data == nullptr && q.shape[0] > 0) return Status::invalid("cache_seqlens: data pointer is null");
  if (sl.dtype != HOPATTN_DTYPE_INT32) return Status::invalid("cache_seqlens: dtype must be int32");
  if (sl.shape[0] != q.shape[0])
    return Status::invalid(cat("cache_seqlens: shape (", sl.shape[0], ") must be (batch) = (", q.shape[0], ")"));
  if (sl.stride[0] != 1 && sl.shape[0] > 1) return Status::invalid("cache_seqlens: must be contiguous");
  return Status();
}

Status check_scales(const KvCacheArgs& a) {
  if (!is_int8(a)) {
    if (a.k_scale.data || a.v_scale.data)
      return Status::invalid(cat(a.k_scale.data ? "k_scale" : "v_scale", ": given, but the cache is ",
                                 hopattn_dtype_name(a.k_cache.dtype), ", not int8"));
    return Status();
  }
  // A paged cache's scales are paged by the same ids: its pool's (num_pages, page_size) take the
  // place of (batch, max_seqlen_k) below. Pages smaller than quant_block (16, 32, 64 tokens): one
  // K scale row per page, each page of a block holding the block's (kvcache.h).
  const int64_t b = a.k_cache.shape[0], len = a.k_cache.shape[1], hkv = a.k_cache.shape[2], d = a.k_cache.shape[3];
  const bool paged = is_paged(a);
  const char* b_name = paged ? "num_pages" : "batch";
  const char* len_name = paged ? "page_size" : "max_seqlen_k";
  if (a.quant_block != 64 && a.quant_block != 128)
    return Status::invalid(cat("quant_block: ", a.quant_block, " is not 64 or 128"));
  const bool small_pages = paged && len < a.quant_block;  // powers of two: the page divides the block
  if (len % a.quant_block != 0 && !small_pages)
    return Status::invalid(cat("k_cache: ", len_name, " = ", len, " is not a multiple of quant_block = ", a.quant_block));
  const int64_t k_blocks = small_pages ? 1 : len / a.quant_block;
  if (Status s = check_geometry(a.k_scale, "k_scale", 4, kKScaleDims); !s.ok()) return s;
  if (Status s = check_geometry(a.v_scale, "v_scale", 3, kVScaleDims); !s.ok()) return s;
  const Tensor &ks = a.k_scale, &vs = a.v_scale;
  if (ks.dtype != HOPATTN_DTYPE_FP32 || vs.dtype != HOPATTN_DTYPE_FP32)
    return Status::invalid(cat(ks.dtype != HOPATTN_DTYPE_FP32 ? "k_scale" : "v_scale", ": dtype must be fp32"));
  if (ks.shape[0] != b || ks.shape[1] != k_blocks || ks.shape[2] != hkv || ks.shape[3] != d)
    return Status::invalid(cat("k_scale: shape (", ks.shape[0], ", ", ks.shape[1], ", ", ks.shape[2], ", ", ks.shape[3],
                               ") must be (", b_name, ", ", small_pages ? "1" : cat(len_name, " / quant_block"),
                               ", heads_kv, hdim) = (", b, ", ", k_blocks, ", ", hkv, ", ", d, ")"));
  if (vs.shape[0] != b || vs.shape[1] != len || vs.shape[2] != hkv)
    return Status::invalid(cat("v_scale: shape (", vs.shape[0], ", ", vs.shape[1], ", ", vs.shape[2], ") must be (",
                               b_name, ", ", len_name, ", heads_kv) = (", b, ", ", len, ", ", hkv, ")"));
  if (ks.stride[3] != 1 && ks.shape[3] > 1) return Status::invalid("k_scale: the last dimension (hdim) must be contiguous");
  if (Status s = check_pointer_and_alignment(ks, "k_scale", 16); !s.ok()) return s;
  return check_pointer_and_alignment(vs, "v_scale", 4);
}

// A paged cache: the shared rules (check_page_table: pages of 16-256 tokens, 16-bit and int8;
// int8 pages smaller than the kernels' 64-key tile are read as 16-key boxes).
Status check_paging(const KvCacheArgs& a) { return check_page_table(a.page_table, a.k_cache, a.q.shape[0]); }

bool has_tail(const KvCacheArgs& a) { return a.k_tail.data != nullptr || a.v_tail.data != nullptr; }

// The int8 call's 16-bit tail blocks: both or neither, (batch, quant_block, heads_kv, hdim) in q's dtype.
Status check_tail(const KvCacheArgs& a) {
  if (!has_tail(a)) return Status();
  if (!is_int8(a))
    return Status::invalid(cat(a.k_tail.data ? "k_tail" : "v_tail", ": given, but the cache is ",
                               hopattn_dtype_name(a.k_cache.dtype), ", not int8 (a 16-bit cache holds every token)"));
  if (a.k_tail.data == nullptr || a.v_tail.data == nullptr)
    return Status::invalid(cat(a.k_tail.data ? "v_tail" : "k_tail", ": null, but ", a.k_tail.data ? "k_tail" : "v_tail",
                               " is given (both or neither)"));
  const Tensor* tails[2] = {&a.k_tail, &a.v_tail};
  const char* names[2] = {"k_tail", "v_tail"};
  for (int i = 0; i < 2; ++i) {
    const Tensor& t = *tails[i];
    if (Status s = check_geometry(t, names[i], 4, kTailDims); !s.ok()) return s;
    if (t.dtype != a.q.dtype)
      return Status::invalid(cat(names[i], ": dtype ", hopattn_dtype_name(t.dtype), " does not match q's ",
                                 hopattn_dtype_name(a.q.dtype)));
    // The tails are per sequence, never paged: batch is q's (a pool's first dimension is its pages).
    if (t.shape[0] != a.q.shape[0] || t.shape[1] != a.quant_block || t.shape[2] != a.k_cache.shape[2] ||
        t.shape[3] != a.k_cache.shape[3])
      return Status::invalid(cat(names[i], ": shape (", t.shape[0], ", ", t.shape[1], ", ", t.shape[2], ", ", t.shape[3],
                                 ") must be (batch, quant_block, heads_kv, hdim) = (", a.q.shape[0], ", ",
                                 a.quant_block, ", ", a.k_cache.shape[2], ", ", a.k_cache.shape[3], ")"));
    if (t.stride[3] != 1 && t.shape[3] > 1) return Status::invalid(cat(names[i], ": the last dimension (hdim) must be contiguous"));
    if (Status s = check_pointer_and_alignment(t, names[i], 16); !s.ok()) return s;
  }
  return Status();
}

bool has_options(const KvCacheArgs& a) { return a.window != 0 || a.softcap != 0.0f || a.sinks.data != nullptr; }

// The options (kvcache.h, since 0.4): a sliding window, the softcap and the attention sinks, by
// the forward pass's rules (attention_check.cpp, check_options); every cache type (an int8 cache
// runs the int8 options row with them: pick_decode_kernel).
Status check_options(const KvCacheArgs& a) {
  // The band's arithmetic (DecodeTile) adds positions and the clamped sides in 32 bits.
  if (Status s = check_logit_options(a.window, a.window_left, a.window_right, a.causal != 0,
                                     a.q.shape[1] + cache_max_len(a), "seqlen_q + max_seqlen_k", a.softcap, a.sinks,
                                     a.q.shape[2]);
      !s.ok())
    return s;
  return Status();
}

Status check_aliasing(const KvCacheArgs& a) {
  const Tensor* inputs[10] = {&a.q,       &a.k_cache, &a.v_cache, &a.cache_seqlens, &a.k_scale,
                              &a.v_scale, &a.k_tail,  &a.v_tail,  &a.page_table,    &a.sinks};
  const char* names[10] = {"q",      "k_cache", "v_cache", "cache_seqlens", "k_scale",
                           "v_scale", "k_tail",  "v_tail",  "page_table",    "sinks"};
  const ByteRange o = byte_range(a.o), lse = byte_range(a.lse);
  for (int i = 0; i < 10; ++i) {
    const ByteRange in = byte_range(*inputs[i]);
    if (overlaps(o, in)) return Status::invalid(cat("o: overlaps input ", names[i], " in memory"));
    if (overlaps(lse, in)) return Status::invalid(cat("lse: overlaps input ", names[i], " in memory"));
  }
  if (overlaps(o, lse)) return Status::invalid("lse: overlaps o in memory");
  if (a.workspace != nullptr && a.workspace_bytes > 0) {
    if (reinterpret_cast<uintptr_t>(a.workspace) % 16 != 0)
      return Status::invalid(cat("workspace: pointer ", a.workspace, " is not 16-byte aligned"));
    const uintptr_t lo = reinterpret_cast<uintptr_t>(a.workspace);
    if (a.workspace_bytes > UINTPTR_MAX - lo)
      return Status::invalid(cat("workspace: workspace_bytes = ", a.workspace_bytes, " runs past the end of the address space"));
    const ByteRange ws{lo, lo + a.workspace_bytes};
    if (overlaps(ws, o)) return Status::invalid("workspace: overlaps o in memory");
    if (overlaps(ws, lse)) return Status::invalid("workspace: overlaps lse in memory");
    for (int i = 0; i < 10; ++i)
      if (overlaps(ws, byte_range(*inputs[i]))) return Status::invalid(cat("workspace: overlaps input ", names[i], " in memory"));
  }
  return Status();
}

}  // namespace

Tensor tensor_seqlens(int32_t* data, long long batch) {
  Tensor t{};
  t.data = data, t.dtype = HOPATTN_DTYPE_INT32, t.rank = 1, t.shape[0] = batch, t.stride[0] = 1;
  return t;
}

Tensor tensor_v_scale(float* data, long long batch, long long seqlen, long long heads_kv) {
  return tensor_lse(data, batch, seqlen, heads_kv);  // the same contiguous rank-3 fp32 layout
}

Status check_page_table(const Tensor& pt, const Tensor& k_cache, int64_t batch) {
  if (!is_paged(pt)) {
    if (pt.data != nullptr) return Status::invalid("page_table: data pointer given with rank 0 (a table is (batch, max_pages))");
    return Status();
  }
  if (Status s = check_geometry(pt, "page_table", 2, kPageTableDims); !s.ok()) return s;
  if (pt.dtype != HOPATTN_DTYPE_INT32) return Status::invalid("page_table: dtype must be int32");
  if (pt.shape[0] != batch)
    return Status::invalid(cat("page_table: shape (", pt.shape[0], ", ", pt.shape[1], ") must be (batch, max_pages) with batch = ",
                               batch));
  if (pt.stride[1] != 1 && pt.shape[1] > 1) return Status::invalid("page_table: rows must be contiguous (stride[1] = 1)");
  if (Status s = check_pointer_and_alignment(pt, "page_table", 4); !s.ok()) return s;
  const int64_t page = k_cache.shape[1];
  if (page < 16 || page > 256 || (page & (page - 1)) != 0)
    return Status::invalid(cat("k_cache: page_size (shape[1]) = ", page, " is not a power of two in [16, 256]"));
  if (pt.shape[1] * page > INT32_MAX)
    return Status::invalid(cat("page_table: max_pages * page_size = ", pt.shape[1] * page, " is not below 2^31"));
  if (k_cache.shape[0] > INT32_MAX) return Status::invalid("k_cache: more than 2^31 - 1 pages");
  return Status();
}

Tensor tensor_page_table(int32_t* data, long long batch, long long max_pages) {
  Tensor t{};
  t.data = data, t.dtype = HOPATTN_DTYPE_INT32, t.rank = 2;
  t.shape[0] = batch, t.shape[1] = max_pages;
  t.stride[0] = max_pages, t.stride[1] = 1;
  return t;
}

namespace {

// The names of the decode kernels for this cache type and head dim, for messages.
std::string decode_kernel_names(attention::DecodeCache cache, int hdim) {
  std::string out;
  for (int i = 0; i < attention::kDecodeKernelCount; ++i)
    if (attention::decode_kernel_index(attention::kDecodeKernels[i].name, cache, hdim) == i)
      out += (out.empty() ? "" : ", ") + std::string(attention::kDecodeKernels[i].name);
  return out.empty() ? "none" : out;
}

// Why registry row k does not take the call (its max_rows and limits; rows: a row group's query
// rows, packed: whether the plan packs the heads), or "" when it does.
std::string row_refuses(const KvCacheArgs& a, int64_t rows, bool packed, const attention::DecodeKernelSpec& k) {
  if (k.max_rows > 0 && rows > k.max_rows)
    return cat("kvcache attention: kernel '", k.name, "' takes at most ", k.max_rows, " query rows a row group; this call has ",
               rows, packed ? cat(" (seqlen_q ", a.q.shape[1], " x ", a.q.shape[2] / std::max<int64_t>(a.k_cache.shape[2], 1),
                                  " query heads a KV head, packed; with pack_gqa 0 a row group is one query head's "
                                  "seqlen_q rows)")
                            : cat(" (seqlen_q ", a.q.shape[1], ", one query head a row group)"));
  if ((k.limits & attention::kDecodeNoPages) != 0 && is_paged(a))
    return cat("kvcache attention: kernel '", k.name, "' does not take a paged cache (page_table); it reads contiguous caches only");
  if ((k.limits & attention::kDecodeNoOptions) != 0 && has_options(a))
    return cat("kvcache attention: kernel '", k.name, "' does not take a sliding window, softcap or sinks");
  return "";
}

// The split kernel a call runs: overrides.decode_kernel, or the defaults table's row. -1 (with
// *why set) when the named kernel does not exist for this cache and head dim, or does not take the
// call (row_refuses).
int pick_decode_kernel(const KvCacheArgs& a, int64_t rows, bool packed, int64_t tiles, int sms,
                       const experimental::Overrides& o, std::string* why) {
  const attention::DecodeCache cache = is_int8(a) ? attention::DecodeCache::kInt8 : attention::DecodeCache::k16Bit;
  const int hdim = int(a.q.shape[3]);
  std::string name = o.decode_kernel;
  // An int8 cache with a window, a softcap or sinks: the one int8 row compiled with them
  // (DecodeInt8Traits::kOptions); every 16-bit row has them.
  using attention::kInt8OptionsKernel;
  if (cache == attention::DecodeCache::kInt8 && has_options(a)) {
    if (name.empty()) {
      name = kInt8OptionsKernel;
    } else if (name != kInt8OptionsKernel) {
      *why = cat("kvcache attention: kernel '", name, "' does not take a sliding window, softcap or sinks with an int8 ",
                 "cache; ", kInt8OptionsKernel, " does");
      return -1;
    }
  }
  if (name.empty()) {
    const int page_size = is_paged(a) ? int(a.k_cache.shape[1]) : 0;
    const attention::DecodeDefaultRule* r = attention::decode_default_rule(cache, hdim, rows, tiles, sms, page_size, has_options(a));
    if (r == nullptr) {
      *why = cat("kvcache attention: the defaults table has no row for ", is_int8(a) ? "an int8" : "a 16-bit",
                 " cache at hdim ", hdim, ", ", rows, " rows, ", tiles, " tiles");
      return -1;
    }
    name = r->kernel;  // a pool's call too: every split kernel reads the pages the host check allows
  }
  const int index = attention::decode_kernel_index(name, cache, hdim);
  if (index < 0) {
    *why = cat("kvcache attention: kernel '", name, "' does not exist for ", is_int8(a) ? "an int8" : "a 16-bit",
               " cache at hdim ", hdim, "; registered: ", decode_kernel_names(cache, hdim));
    return -1;
  }
  if (std::string refused = row_refuses(a, rows, packed, attention::kDecodeKernels[index]); !refused.empty()) {
    *why = refused;
    return -1;
  }
  return index;
}

}  // namespace

KvCachePlan plan_kvcache_attention(const KvCacheArgs& a, int sms) {
  return experimental::plan_kvcache_attention(a, sms, experimental::Overrides{});
}

namespace {

// The positions a tile's rows span (at most kTileRows of them).
int64_t rows_positions(int64_t seqlen_q) { return std::min<int64_t>(seqlen_q, kTileRows); }

// With a window's left side, the keys a tile whose rows span `positions` positions can see:
// the left side, the positions and the right side (clamped as the kernel clamps it: seqlen_q, or
// 0 with causal); INT64_MAX without a left side.
int64_t window_keys(const KvCacheArgs& a, int64_t positions) {
  if (a.window == 0 || a.window_left < 0) return INT64_MAX;
  const int64_t seqlen_q = a.q.shape[1];
  const int64_t right = a.causal != 0 ? 0 : a.window_right >= 0 ? std::min<int64_t>(a.window_right, seqlen_q) : seqlen_q;
  return int64_t(a.window_left) + right + positions;
}

// The plan, and the registry row it runs (-1 with *why when the overrides name no such kernel):
// a decode registry row, or with plan.fwd_path a forward registry row.
// assume_workspace: plan as if the call gets the workspace the plan asks for (the size query and
// plan_kvcache_attention); otherwise a chunk path the call's workspace cannot hold falls back to
// the decode kernels (unless overrides.decode_path forces it; then the workspace check refuses).
KvCachePlan make_plan(const KvCacheArgs& a, int sms, const experimental::Overrides& o, int* kernel, std::string* why,
                      bool assume_workspace) {
  if (!o.decode_path.empty() && o.decode_path != "decode" && o.decode_path != "fwd") {
    *kernel = -1;
    *why = cat("kvcache attention: decode_path '", o.decode_path, "' is not \"\", \"decode\" or \"fwd\"");
    return KvCachePlan{};
  }
  if (o.decode_path == "fwd" && !o.decode_kernel.empty()) {  // a decode kernel on the forward path: contradictory
    *kernel = -1;
    *why = cat("kvcache attention: decode_path \"fwd\" and decode_kernel '", o.decode_kernel,
               "' together (the chunk path runs the forward kernel; name one or the other)");
    return KvCachePlan{};
  }
  // An empty call computes nothing (kvcache_attention returns before any launch): the decode plan,
  // which asks no workspace for it, whatever the path.
  const bool empty = a.q.shape[0] == 0 || a.q.shape[1] == 0 || a.q.shape[2] == 0;
  if (!empty && o.decode_path != "decode" && o.decode_kernel.empty()) {
    std::string why_not;
    const int row = chunk_path_row(a, &why_not, o.chunk_paged);
    if (o.decode_path == "fwd" && row < 0) {
      *kernel = -1;
      *why = cat("kvcache attention: the chunk path (decode_path \"fwd\") does not take ", why_not);
      return KvCachePlan{};
    }
    const bool packs = row >= 0 && o.chunk_pack_gqa && chunk_pack_gqa(a, attention::kFwdKernels[row].tile.block_m);
    const attention::DecodeChunkRule* rule =
        row >= 0 ? attention::decode_chunk_rule(int(a.q.shape[3]), a.q.shape[1], cache_max_len(a), packs, is_paged(a)) : nullptr;
    if (row >= 0 && (o.decode_path == "fwd" || rule != nullptr)) {
      // Whether the plan may pack: the rule that takes the call decides (a packed_only rule's calls
      // pack; an unpacked rule's calls, q_len >= 96 by the table's order, where packed tiles ran
      // 0.69-0.88x unpacked ones on the H200 (a3), pack only when pack_gqa 1 asks); a forced chunk
      // path packs as the row-fill rule says.
      const bool allow_pack =
          o.chunk_pack_gqa && (o.decode_path == "fwd" || a.pack_gqa == 1 || (rule != nullptr && rule->packed_only));
      // pack_gqa 1's request for a packed list (Overrides::chunk_pack_gqa) that would overflow the
      // kernel's int positions: refused, not run unpacked (the heuristic falls back to unpacked).
      if (o.chunk_pack_gqa && a.pack_gqa == 1 && chunk_pack_overflows(a, attention::kFwdKernels[row].tile.block_m)) {
        *kernel = -1;
        *why = cat("kvcache attention: pack_gqa 1 asks the chunk path to pack each GQA group, whose packed Q tiles' ",
                   "positions (m_blocks x block_m + max_seqlen_k) would exceed INT32_MAX; pass pack_gqa = 0 or -1");
        return KvCachePlan{};
      }
      KvCachePlan chunk = make_chunk_plan(a, sms, row, allow_pack);
      auto fits = [&](const KvCachePlan& c) { return a.workspace != nullptr && a.workspace_bytes >= c.workspace_bytes; };
      if (o.decode_path == "fwd" || assume_workspace || fits(chunk)) {
        *kernel = row;
        return chunk;
      }
      // A packed plan (partials at every split: the larger workspace) that the caller's workspace
      // cannot hold: the unpacked chunk plan where its own rule takes the call and it fits, before
      // the decode kernels (a heuristic pack_gqa only; pack_gqa 1 asked for packing).
      if (chunk.pack_gqa && a.pack_gqa != 1 &&
          attention::decode_chunk_rule(int(a.q.shape[3]), a.q.shape[1], cache_max_len(a), false, is_paged(a)) != nullptr) {
        KvCachePlan unpacked = make_chunk_plan(a, sms, row, false);
        if (fits(unpacked)) {
          *kernel = row;
          return unpacked;
        }
      }
    }
  }
  KvCachePlan plan;
  const int64_t batch = a.q.shape[0], seqlen_q = a.q.shape[1], heads_q = a.q.shape[2];
  const int64_t heads_kv = std::max<int64_t>(a.k_cache.shape[2], 1), group = heads_q / heads_kv;
  const int64_t max_len = cache_max_len(a);
  const int hdim = int(a.q.shape[3]);
  plan.pack_gqa = a.pack_gqa >= 0 ? a.pack_gqa == 1 : (group > 1 && seqlen_q * group <= 2 * kTileRows);
  const int64_t rows = plan.pack_gqa ? seqlen_q * group : seqlen_q;
  const int64_t tiles = batch * (plan.pack_gqa ? heads_kv : heads_q) * ((rows + kTileRows - 1) / kTileRows);
  // The kernel: decode_defaults.cpp's table (the measurements are there and in docs/decode.md).
  *kernel = pick_decode_kernel(a, rows, plan.pack_gqa, tiles, sms, o, why);
  if (*kernel < 0) return plan;
  const attention::DecodeKernelSpec& spec = attention::kDecodeKernels[*kernel];
  plan.kernel = spec.name;
  // CTAs resident at once: the kernel decides how many share an SM.
  const int sm_count = sms * attention::decode_ctas_per_sm(hdim, is_int8(a), spec.id);
  // The keys one tile's rows can see: the cache, or with a window's left side at most its width
  // plus the tile's positions (and the right side's width): the splits divide those.
  const int64_t visible = std::min(max_len, window_keys(a, rows_positions(seqlen_q)));
  const int64_t kv_chunks = std::max<int64_t>((visible + kSplitKeys - 1) / kSplitKeys, 1);
  if (a.num_splits > 0) {
    plan.num_splits = int(std::min<int64_t>(a.num_splits, kv_chunks));
  } else if (tiles > 0 && tiles < int64_t(sm_count) * 4 / 5) {
    // One CTA per SM at a time (the K/V ring takes most of the shared memory), so the splits
    // are chosen by wave efficiency: CTAs / (SMs · whole waves). The fewest splits within 95 %
    // of the best efficiency wins (fewer splits: less combine work); no split is shorter than
    // kSplitKeys keys (the row's split_keys where it asks for more). (85 % until 2026-11-30: it
    // took 15 splits of 8 tiles, 91 % of the SMs, where 16 fill 97 %.)
    const int64_t split_keys = std::max<int64_t>(kSplitKeys, spec.split_keys);
    const int64_t max_splits = std::min<int64_t>(std::max<int64_t>((visible + split_keys - 1) / split_keys, 1), kMaxSplits);
    auto efficiency = [&](int64_t s) {
      const double waves = double(tiles * s) / sm_count;
      return waves / std::ceil(waves);
    };
    double best = 0.0;
    for (int64_t s = 1; s <= max_splits; ++s) best = std::max(best, efficiency(s));
    if (tiles * max_splits <= sm_count) {
      plan.num_splits = int(max_splits);  // even the most splits fit one wave: take them all
    } else {
      for (int64_t s = 1; s <= max_splits; ++s)
        if (efficiency(s) >= 0.95 * best) {
          plan.num_splits = int(s);
          break;
        }
    }
  }
  // An int8 call's 16-bit tail: one more partial, after the splits' (so a combine even at one split).
  plan.tail = is_int8(a) && has_tail(a);
  const int64_t slots = plan.num_splits + (plan.tail ? 1 : 0);
  if (slots > 1)  // per slot: O (fp32, hdim per row) and LSE (fp32 per row)
    plan.workspace_bytes = size_t(slots) * size_t(batch * heads_q * seqlen_q) * (size_t(a.q.shape[3]) + 1) * sizeof(float);
  return plan;
}

}  // namespace

namespace experimental {
KvCachePlan plan_kvcache_attention(const KvCacheArgs& a, int sms, const Overrides& o) {
  int kernel = -1;
  std::string why;
  return make_plan(a, sms, o, &kernel, &why, true);
}
}  // namespace experimental

Status check_kvcache_attention(const KvCacheArgs& a, const DeviceContext& ctx, int sm_count) {
  return experimental::check_kvcache_attention(a, ctx, sm_count, experimental::Overrides{});
}

namespace {

// The argument rules that need no device: geometry, types, shapes, alignment, overlap, scalars.
Status check_kvcache_host_rules(const KvCacheArgs& a) {
  if (Status s = check_versioned_header<hopattn_kvcache_args_t>(a, "args"); !s.ok()) return s;
  const Tensor* ts[4] = {&a.q, &a.k_cache, &a.v_cache, &a.o};
  const char* names[4] = {"q", "k_cache", "v_cache", "o"};
  for (int i = 0; i < 4; ++i)
    if (Status s = check_geometry(*ts[i], names[i], 4, kDims); !s.ok()) return s;
  if (Status s = check_geometry(a.cache_seqlens, "cache_seqlens", 1, kSeqlensDims); !s.ok()) return s;
  if (Status s = check_types_and_shapes(a); !s.ok()) return s;
  if (Status s = check_paging(a); !s.ok()) return s;
  for (int i = 0; i < 4; ++i)
    if (Status s = check_pointer_and_alignment(*ts[i], names[i], 16); !s.ok()) return s;
  if (Status s = check_pointer_and_alignment(a.cache_seqlens, "cache_seqlens", 4); !s.ok()) return s;
  if (Status s = check_no_self_overlap(a.o, "o"); !s.ok()) return s;
  if (a.lse.data) {
    if (Status s = check_geometry(a.lse, "lse", 3, kLseDims); !s.ok()) return s;
    if (a.lse.dtype != HOPATTN_DTYPE_FP32) return Status::invalid("lse: dtype must be fp32");
    if (a.lse.shape[0] != a.q.shape[0] || a.lse.shape[1] != a.q.shape[2] || a.lse.shape[2] != a.q.shape[1])
      return Status::invalid("lse: shape must be (batch, heads_q, seqlen_q)");
    if (Status s = check_pointer_and_alignment(a.lse, "lse", 4); !s.ok()) return s;
    if (Status s = check_no_self_overlap(a.lse, "lse"); !s.ok()) return s;
  }
  if (Status s = check_scales(a); !s.ok()) return s;
  if (Status s = check_tail(a); !s.ok()) return s;
  if (Status s = check_options(a); !s.ok()) return s;
  if (Status s = check_aliasing(a); !s.ok()) return s;
  if (!std::isfinite(a.softmax_scale)) return Status::invalid("softmax_scale: must be finite");
  if (a.softmax_scale < 0.0f)  // the running maximum is of raw scores (as attention_check.cpp)
    return Status::invalid(cat("softmax_scale: must be positive (0 selects 1/sqrt(hdim)), got ", a.softmax_scale));
  if (a.num_splits < 0) return Status::invalid(cat("num_splits: ", a.num_splits, " is negative (0 = heuristic)"));
  if (a.pack_gqa < -1 || a.pack_gqa > 1)
    return Status::invalid(cat("pack_gqa: ", a.pack_gqa, " is not -1 (heuristic), 0 or 1"));
  return Status();
}

// What the device adds, for arguments that passed the host rules: the plan (its kernel and
// workspace) for sm_count SMs, and where the tensors live.
Status check_kvcache_plan_and_placement(const KvCacheArgs& a, const DeviceContext& ctx, int sm_count,
                                        const experimental::Overrides& o, KvCachePlan* plan, int* kernel) {
  std::string why;
  *plan = make_plan(a, sm_count, o, kernel, &why, false);
  if (*kernel < 0) return Status::unsupported(why);
  if (plan->workspace_bytes > 0 && (a.workspace == nullptr || a.workspace_bytes < plan->workspace_bytes))
    return Status::invalid(cat("workspace: ", plan->workspace_bytes, " bytes needed for ", plan->num_splits,
                               " KV splits", plan->tail ? " and the tail block" : "",
                               plan->fwd_path ? " and the chunk path's tile list" : "", ", ",
                               a.workspace ? a.workspace_bytes : 0, " given (query hopattn_kvcache_workspace_size)"));
  return check_placement(ctx, kTensorNames, kTensors);
}

}  // namespace

// sm_count 0: the rules that need no device (the plan and the workspace are not checked).
Status experimental::check_kvcache_attention(const KvCacheArgs& a, const DeviceContext& ctx, int sm_count,
                                             const Overrides& o) {
  if (Status s = check_kvcache_host_rules(a); !s.ok()) return s;
  if (sm_count <= 0) return check_placement(ctx, kTensorNames, kTensors);
  KvCachePlan plan;
  int kernel = -1;
  return check_kvcache_plan_and_placement(a, ctx, sm_count, o, &plan, &kernel);
}

namespace {

Status query_kvcache_context(const KvCacheArgs& a, Stream stream, DeviceContext* ctx, int* sm_count) {
  const void* ptrs[kTensors] = {a.q.data,       a.k_cache.data, a.v_cache.data, a.cache_seqlens.data,
                                a.o.data,       a.lse.data,     a.k_scale.data, a.v_scale.data,
                                a.k_tail.data,  a.v_tail.data,  a.page_table.data, a.sinks.data};
  if (Status s = query_device_context(stream, ptrs, kTensors, ctx); !s.ok()) return s;
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaDeviceGetAttribute(sm_count, cudaDevAttrMultiProcessorCount, ctx->current_device));
  return Status();
}

attention::DecodeParams make_decode_params(const KvCacheArgs& a, const KvCachePlan& plan, int kernel) {
  attention::DecodeParams p{};
  p.dtype = a.q.dtype;
  p.cache_dtype = a.k_cache.dtype;
  p.hdim = int(a.q.shape[3]);
  p.q = a.q.data, p.k = a.k_cache.data, p.v = a.v_cache.data, p.o = a.o.data;
  p.cache_seqlens = static_cast<const int32_t*>(a.cache_seqlens.data);
  p.lse = static_cast<float*>(a.lse.data);
  p.batch = int(a.q.shape[0]), p.seqlen_q = int(a.q.shape[1]), p.heads_q = int(a.q.shape[2]);
  p.heads_kv = int(a.k_cache.shape[2]), p.max_len = int(cache_max_len(a));
  if (is_paged(a)) {
    p.page_table = static_cast<const int32_t*>(a.page_table.data);
    p.pt_batch_stride = a.page_table.stride[0];
    p.page_size = int(a.k_cache.shape[1]);
    p.num_pages = int(a.k_cache.shape[0]);
  }
  p.q_batch_stride = a.q.stride[0], p.q_seq_stride = a.q.stride[1], p.q_head_stride = a.q.stride[2];
  p.k_batch_stride = a.k_cache.stride[0], p.k_seq_stride = a.k_cache.stride[1], p.k_head_stride = a.k_cache.stride[2];
  p.v_batch_stride = a.v_cache.stride[0], p.v_seq_stride = a.v_cache.stride[1], p.v_head_stride = a.v_cache.stride[2];
  p.o_batch_stride = a.o.stride[0], p.o_seq_stride = a.o.stride[1], p.o_head_stride = a.o.stride[2];
  if (p.lse != nullptr)
    p.lse_batch_stride = a.lse.stride[0], p.lse_head_stride = a.lse.stride[1], p.lse_seq_stride = a.lse.stride[2];
  p.softmax_scale = a.softmax_scale != 0.0f ? a.softmax_scale : 1.0f / std::sqrt(float(p.hdim));
  p.causal = a.causal != 0;
  // The options (check_options). The softcap: exponent softcap · tanh(scale · s /
  // softcap), tanh in the kernel and the cap as the scale (the forward pass's set_options).
  if (a.softcap > 0.0f) {
    p.softcap_scale = p.softmax_scale / a.softcap;
    p.softmax_scale = a.softcap;
  }
  // The window's sides, clamped so that positions plus sides stay in int (check_options bounds
  // seqlen_q + max_seqlen_k): a left side of max_len or a right one of seqlen_q reaches every key.
  p.window_left = p.window_right = -1;
  if (a.window != 0) {
    if (a.window_left >= 0) p.window_left = int(std::min<int64_t>(a.window_left, p.max_len));
    if (a.window_right >= 0) p.window_right = p.causal ? 0 : int(std::min<int64_t>(a.window_right, p.seqlen_q));
  }
  p.sinks = static_cast<const float*>(a.sinks.data);
  p.pack_gqa = plan.pack_gqa;
  p.num_splits = plan.num_splits;
  p.partial_slots = plan.num_splits + (plan.tail ? 1 : 0);
  p.partials_at_one_split = plan.fwd_path && plan.pack_gqa;  // the packed chunk path's partials, even at one split
  p.workspace = static_cast<float*>(a.workspace);
  p.variant = plan.fwd_path ? 0 : attention::kDecodeKernels[kernel].id;  // the chunk path: the combine only
  if (is_int8(a)) {
    p.k_scale = static_cast<const float*>(a.k_scale.data);
    p.ks_batch_stride = a.k_scale.stride[0], p.ks_block_stride = a.k_scale.stride[1];
    p.ks_head_stride = a.k_scale.stride[2];
    p.v_scale = static_cast<const float*>(a.v_scale.data);
    p.vs_batch_stride = a.v_scale.stride[0], p.vs_seq_stride = a.v_scale.stride[1], p.vs_head_stride = a.v_scale.stride[2];
    p.quant_block = a.quant_block;
    if (plan.tail) {
      p.key_range = attention::kDecodeFullBlocks;
      p.k_tail = a.k_tail.data, p.v_tail = a.v_tail.data;
      p.kt_batch_stride = a.k_tail.stride[0], p.kt_seq_stride = a.k_tail.stride[1], p.kt_head_stride = a.k_tail.stride[2];
      p.vt_batch_stride = a.v_tail.stride[0], p.vt_seq_stride = a.v_tail.stride[1], p.vt_head_stride = a.v_tail.stride[2];
    }
  }
  return p;
}

// The chunk path's forward problem (fwd_params.hpp, cache_seqlens): padded q and o, the cache as
// (batch, max_len) sequences, the band as the forward's set_options gives it for a call without a
// window (causal: every earlier key, 0; otherwise both sides unbounded; a packed plan's left side
// block_m wider, kvcache_chunk_window_left), the decode's softcap and sinks, the list and partials
// in the workspace (partials at offset 0, the decode layout; kvcache_chunk_layout). A packed plan
// (docs/chunk-packgqa-plan.md; with Overrides::chunk_pack_gqa only): pack_group = heads_q / heads_kv, and partials at one split too.
attention::FwdParams make_chunk_params(const KvCacheArgs& a, const KvCachePlan& plan, int row,
                                       const attention::DecodeParams& dp) {
  attention::FwdParams p{};
  p.dtype = a.q.dtype;
  p.hdim = dp.hdim;
  p.q = a.q.data, p.k = a.k_cache.data, p.v = a.v_cache.data, p.o = a.o.data;
  p.lse = dp.lse;
  p.batch = dp.batch, p.seqlen_q = dp.seqlen_q, p.seqlen_k = dp.max_len;
  p.heads_q = dp.heads_q, p.heads_kv = dp.heads_kv;
  p.q_batch_stride = dp.q_batch_stride, p.q_seq_stride = dp.q_seq_stride, p.q_head_stride = dp.q_head_stride;
  p.k_batch_stride = dp.k_batch_stride, p.k_seq_stride = dp.k_seq_stride, p.k_head_stride = dp.k_head_stride;
  p.v_batch_stride = dp.v_batch_stride, p.v_seq_stride = dp.v_seq_stride, p.v_head_stride = dp.v_head_stride;
  p.o_batch_stride = dp.o_batch_stride, p.o_seq_stride = dp.o_seq_stride, p.o_head_stride = dp.o_head_stride;
  p.lse_batch_stride = dp.lse_batch_stride, p.lse_head_stride = dp.lse_head_stride, p.lse_seq_stride = dp.lse_seq_stride;
  p.softmax_scale = dp.softmax_scale;  // with a softcap, the cap (make_decode_params)
  p.softcap_scale = dp.softcap_scale;
  p.band = true;  // the options row's only mask
  p.pack_group = plan.pack_gqa ? dp.heads_q / dp.heads_kv : 0;
  p.window_left = attention::kvcache_chunk_window_left(dp.max_len, attention::kFwdKernels[row].tile.block_m, p.pack_group);
  p.window_right = dp.causal ? 0 : dp.seqlen_q;  // > 0 without causal (seqlen_q >= 1): the prepare kernel reads it so
  p.sinks = dp.sinks;
  p.kernel = row;
  p.cache_seqlens = dp.cache_seqlens;
  if (dp.page_table != nullptr) {  // a paged cache (chunk_path_row: pages of at least the KV tile)
    p.page_table = dp.page_table;
    p.pt_batch_stride = dp.pt_batch_stride;
    p.page_size = dp.page_size, p.num_pages = dp.num_pages;
  }
  p.num_splits = plan.num_splits;
  const int64_t rows = int64_t(dp.batch) * dp.heads_q * dp.seqlen_q;
  char* ws = static_cast<char*>(a.workspace);
  const attention::KvCacheChunkLayout layout = attention::kvcache_chunk_layout(rows, dp.hdim, plan.num_splits, plan.pack_gqa);
  if (layout.slots > 0) {
    p.split_o = reinterpret_cast<float*>(ws);
    p.split_lse = p.split_o + layout.lse_offset;
  }
  p.workspace = ws + layout.list_offset;
  p.error = dp.error;
  return p;
}

}  // namespace

Status kvcache_attention(const KvCacheArgs& a, Stream stream) {
  return experimental::kvcache_attention(a, stream, experimental::Overrides{});
}

Status experimental::kvcache_attention(const KvCacheArgs& a, Stream stream, const Overrides& o) {
  DeviceContext ctx;
  int sms = 0;
  // The argument rules first, once: they need no device (a machine without a GPU still gets
  // them); then the plan and the placement, which do.
  if (Status s = check_kvcache_host_rules(a); !s.ok()) return s;
  if (Status s = query_kvcache_context(a, stream, &ctx, &sms); !s.ok()) return s;
  KvCachePlan plan;
  int kernel = -1;
  if (Status s = check_kvcache_plan_and_placement(a, ctx, sms, o, &plan, &kernel); !s.ok()) return s;
  if (a.q.shape[0] == 0 || a.q.shape[1] == 0 || a.q.shape[2] == 0) return Status();  // nothing to compute
  if (a.k_cache.shape[1] > INT32_MAX) return Status::unsupported("k_cache: max_seqlen_k must be < 2^31");
  attention::DecodeParams p = make_decode_params(a, plan, kernel);
  p.combine_pdl = o.decode_combine_pdl;
  p.split_pdl = o.decode_split_pdl;
  if (Status s = attention::decode_error_record(&p.error); !s.ok()) return s;
  if (plan.fwd_path) {  // the chunk path: the forward's options kernel, then the combine of its splits
    attention::FwdParams fp = make_chunk_params(a, plan, kernel, p);
    fp.varlen_dynamic = o.fwd_varlen_dynamic;
    fp.varlen_pdl = o.fwd_varlen_pdl;
    if (Status s = attention::run_forward(fp, stream); !s.ok()) return s;
    // Above one split, or a packed plan at any (its tiles write partials only; fwd_params.hpp).
    return attention::decode_runs_combine(p) ? attention::run_decode_combine(p, stream) : Status();
  }
  return attention::run_decode(p, stream);
}

Status kvcache_device_check(Stream stream) {
  int32_t record[3] = {0, 0, 0};
  if (Status s = attention::read_and_clear_decode_error(stream, record); !s.ok()) return s;
  return attention::device_record_status(record);
}

namespace attention {

Status device_record_status(const int32_t (&record)[3]) {
  if (record[0] == 0) return Status();
  switch (record[0]) {
    case kDecodeErrorPageId:
      return Status::invalid(cat("page_table: sequence ", record[1], " has page id ", record[2],
                                 " outside the pool [0, num_pages) among the pages the call uses: the attention wrote "
                                 "its O and LSE rows (those reading that page) as NaN; an append did not write its rows "
                                 "on that page and left its length unchanged"));
    case kVarlenErrorCuSeqlensQ:
      return Status::invalid(cat("cu_seqlens_q: sequence ", record[1], " (cu_seqlens_q[", int64_t(record[1]) + 1, "] = ",
                                 record[2], ") has offsets out of order or outside q's rows, or more rows than "
                                 "max_seqlen_q; it was not computed and its rows were not written"));
    case kVarlenErrorCuSeqlensK:
      return Status::invalid(cat("cu_seqlens_k: sequence ", record[1], " (cu_seqlens_k[", int64_t(record[1]) + 1, "] = ",
                                 record[2], ") has offsets out of order or outside k's rows, or more keys than "
                                 "max_seqlen_k; its O and LSE rows were written as NaN"));
    case kVarlenErrorSequsedK:
      return Status::invalid(cat("seqused_k: entry ", record[1], " is ", record[2],
                                 ", outside [0, cu_seqlens_k[b + 1] - cu_seqlens_k[b]]; its O and LSE rows were "
                                 "written as NaN"));
    default:
      break;
  }
  if (record[0] == attention::kDecodeErrorAppend)
    return Status::invalid(cat("cache_seqlens: entry ", record[1], " is ", record[2], " in hopattn_kvcache_append: "
                               "negative, or with seqlen_new more than max_seqlen_k; nothing was appended to sequence ",
                               record[1], ", its q_rotated rows are NaN and its seqlens_out entry unchanged"));
  return Status::invalid(cat("cache_seqlens: entry ", record[1], " is ", record[2],
                             ", outside [0, max_seqlen_k], or (causal) shorter than seqlen_q; its O and LSE rows were "
                             "written as NaN"));
}

}  // namespace attention

}  // namespace hopattn

extern "C" hopattn_status_t hopattn_kvcache_workspace_size(const hopattn_kvcache_args_t* args, size_t* bytes) {
  if (bytes == nullptr) return hopattn::to_c_status(hopattn::Status::invalid("bytes: null pointer"));
  return hopattn::versioned_c_call(args, [&](const hopattn::KvCacheArgs& a) {
    // The plan reads the shapes: they must pass the argument rules first.
    if (hopattn::Status s = hopattn::check_kvcache_host_rules(a); !s.ok()) return s;
    int device = 0, sms = 0;
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device));
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    *bytes = hopattn::plan_kvcache_attention(a, sms).workspace_bytes;
    return hopattn::Status();
  });
}

extern "C" hopattn_status_t hopattn_kvcache_device_check(void* stream) {
  return hopattn::guarded_c_call([&] { return hopattn::kvcache_device_check(static_cast<hopattn::Stream>(stream)); });
}

extern "C" hopattn_status_t hopattn_kvcache_attention(const hopattn_kvcache_args_t* args, void* stream) {
  return hopattn::versioned_c_call(args, [&](const hopattn::KvCacheArgs& a) {
    return hopattn::kvcache_attention(a, static_cast<hopattn::Stream>(stream));
  });
}
