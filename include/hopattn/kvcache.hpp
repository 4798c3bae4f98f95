// hopattn — C++ interface of attention over a KV cache (see kvcache.h for the conventions).
#pragma once

#include <cstddef>

#include "hopattn/hopattn.hpp"
#include "hopattn/kvcache.h"

namespace hopattn {

// The call's arguments (kvcache.h), struct_size set. The options of 0.4 are its fields, as the
// forward pass's: `window = 1` with window_left / window_right (-1 unbounded), softcap, and sinks
// (tensor_sinks, hopattn.hpp).
using KvCacheArgs = VersionedArgs<hopattn_kvcache_args_t>;

// Contiguous descriptors of the KV-cache call's small tensors: cache_seqlens (batch) int32 and
// the int8 cache's v_scale (batch, seqlen, heads_kv) fp32.
Tensor tensor_seqlens(int32_t* data, long long batch);
Tensor tensor_v_scale(float* data, long long batch, long long seqlen, long long heads_kv);
// A paged cache's page_table: (batch, max_pages) int32, contiguous.
Tensor tensor_page_table(int32_t* data, long long batch, long long max_pages);

// How a call will run: the split-KV count, whether the query heads of a KV group are packed
// into one tile's rows, and the workspace that needs (partial O and LSE per split).
struct KvCachePlan {
  const char* kernel = "";  // the split kernel's registry name (`hopattn info` lists them)
  int num_splits = 1;
  bool pack_gqa = false;  // the decode kernels' packing; on the chunk path never set by the public call yet
  bool tail = false;  // an int8 call with 16-bit tail blocks: one more partial slot, and the combine
  // The chunk path: the forward's options kernel over 128-row Q tiles, each split num_splits ways
  // over the KV (docs/decode.md, "The chunk path"); `kernel` is then its forward registry name.
  // It needs a workspace even at one split (its tile list): the plan assumes the call gets
  // workspace_bytes, and a call given less (or none) runs the decode kernels instead.
  bool fwd_path = false;
  size_t workspace_bytes = 0;
};

// Every rule that needs no device memory (the workspace size is checked against the plan).
// DeviceContext::tensor_device order: q, k_cache, v_cache, cache_seqlens, o, lse, k_scale, v_scale,
// k_tail, v_tail, page_table, sinks.
Status check_kvcache_attention(const KvCacheArgs& args, const DeviceContext& context, int sm_count);

// The heuristic (or the forced values): split the KV length across CTAs when batch × heads_kv
// tiles cannot fill the SMs; pack the query heads of a group when seqlen_q · group fits a tile.
KvCachePlan plan_kvcache_attention(const KvCacheArgs& args, int sm_count);

// Checks, then enqueues the decode kernels (and the split-KV combine) on `stream`; no host sync.
Status kvcache_attention(const KvCacheArgs& args, Stream stream);

// Waits for `stream`; reports (and clears) the first sequence the kernels found with a bad
// cache_seqlens entry (see hopattn_kvcache_device_check).
Status kvcache_device_check(Stream stream);

using KvCacheQuantizeArgs = VersionedArgs<hopattn_kvcache_quantize_args_t>;
// Every rule of hopattn_kvcache_quantize_int8 that needs no device memory.
Status check_kvcache_quantize(const KvCacheQuantizeArgs& args, const DeviceContext& context);
Status kvcache_quantize_int8(const KvCacheQuantizeArgs& args, Stream stream);

using KvCacheAppendArgs = VersionedArgs<hopattn_kvcache_append_args_t>;
// Every rule of hopattn_kvcache_append that needs no device memory. DeviceContext::tensor_device
// order: k_new, v_new, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail,
// rotary_cos, rotary_sin, q, q_rotated, seqlens_out.
Status check_kvcache_append(const KvCacheAppendArgs& args, const DeviceContext& context);
// Checks, then enqueues the append (rotary, int8 quantization of completed blocks, tails,
// lengths) on `stream`; no host sync.
Status kvcache_append(const KvCacheAppendArgs& args, Stream stream);

}  // namespace hopattn
