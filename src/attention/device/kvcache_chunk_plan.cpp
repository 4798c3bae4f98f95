// The chunk path's plan: kvcache_chunk_plan.hpp.
#include "attention/device/kvcache_chunk_plan.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "attention/device/compiled_set.hpp"
#include "attention/device/fwd_registry.hpp"
#include "attention/kernel/sm90_fwd_config.hpp"
#include "attention/fwd_varlen.hpp"
#include "common/status_util.hpp"

namespace hopattn::kvcache_plan {

// The chunk path (docs/decode.md, "The chunk path"): the forward's options row (its band mask,
// softcap and sinks) over a KV-cache list, each Q tile split num_splits ways over the KV. What it
// takes so far: 16-bit contiguous caches (a cache of batch · max_len tokens, so that the
// end-aligned TMA view stops each sequence's loads at its length: fwd_varlen.hpp), and with
// `paged` pools of pages of at least the row's KV tile (each page viewed end-aligned alike:
// ws::paged_kv_origin), hdim 128, no window (a window's decode relies on keys outside it never
// reaching O, which the forward's mainloop does not ensure: the keys before a window in its first
// KV tile are loaded). Smaller pages, int8 caches, windows and hdim 64 / 256 keep the decode kernels.
// The forward row it runs, or -1 with *why_not.
int chunk_path_row(const KvCacheArgs& a, std::string* why_not, bool paged) {
  const int hdim = int(a.q.shape[3]);
  const int64_t batch = a.q.shape[0], max_len = cache_max_len(a);
  auto refuse = [&](std::string reason) {
    *why_not = std::move(reason);
    return -1;
  };
  if (is_int8(a)) return refuse("an int8 cache");
  if (is_paged(a) && !paged) return refuse("a paged cache");
  if (a.window != 0) return refuse("a sliding window");
  if (hdim != 128) return refuse(cat("head dim ", hdim, " (128 only so far)"));
  const Tensor &k = a.k_cache, &v = a.v_cache;
  // Pages (or sequences) of `rows` tokens each, `rows` rows apart in the pool (the cache).
  const int64_t rows = is_paged(a) ? k.shape[1] : max_len, outer = is_paged(a) ? k.shape[0] : batch;
  if ((outer > 1 && k.stride[0] != rows * k.stride[1]) || (outer > 1 && v.stride[0] != rows * v.stride[1]))
    return refuse(is_paged(a) ? "a pool whose pages are not page_size rows apart (page stride != page_size * seq stride)"
                              : "a cache whose sequences are not max_seqlen_k rows apart (batch stride != max_seqlen_k * seq stride)");
  // The list's and the mask's arithmetic is in int: token offsets b · max_len (a pool's tokens
  // num_pages · page_size), and positions plus a tile and the band's right side (seqlen_q + max_len + 256).
  if (batch * max_len >= INT32_MAX || outer * rows >= INT32_MAX || a.q.shape[1] + max_len + 256 >= INT32_MAX ||
      batch > 65535 || a.q.shape[2] > 65535)
    return refuse("2^31 or more cache tokens, or seqlen_q + max_seqlen_k near 2^31, or batch or heads_q over 65535");
  for (int i = 0; i < attention::kFwdKernelCount; ++i) {
    const attention::FwdKernelSpec& r = attention::kFwdKernels[i];
    if (!r.options || r.fp8 || !attention::fwd_kernel_compiled(i, hdim, true)) continue;
    if (is_paged(a) && rows < r.tile.block_n)
      return refuse(cat("a paged cache of ", rows, "-token pages (the chunk path reads pages of at least its ",
                        r.tile.block_n, "-key tile)"));
    return i;
  }
  return refuse(cat("no forward options row is compiled for head dim ", hdim));
}

// Whether the chunk path packs a call's GQA groups into its Q tiles (docs/chunk-packgqa-plan.md §4):
// never with pack_gqa 0 or without a group (1 < g <= 64: a warpgroup holds at least one position
// of the group); always with pack_gqa 1; with -1 (the heuristic) FA3's rule (hopper/heuristics.h):
// when the unpacked tiles' rows are less than 0.9x as full as the packed tiles'.
// Whether packing a call with a group (1 < g <= 64) would overflow the kernel's int positions:
// packed_tile_mask (sm90_fwd_ws_schedule.hpp) adds m_block · (block_m − 2P) to seqlen_q in int, and
// the causal diagonal adds max_len to it, so a packed list needs m_blocks · block_m + max_len <=
// INT32_MAX (review of steps 2–4, docs/chunk-packgqa-plan.md). The unpacked call's own limit
// (seqlen_q + max_len + 256, chunk_path_row) does not cover it: at g = 64 a tile holds 2 positions.
bool chunk_pack_overflows(const KvCacheArgs& a, int block_m) {
  const int64_t seqlen_q = a.q.shape[1], heads_q = a.q.shape[2], heads_kv = a.k_cache.shape[2];
  const int64_t group = heads_kv > 0 ? heads_q / heads_kv : 0;
  if (group <= 1 || group > attention::kPackRowsPerWarpgroup) return false;
  const int64_t m_blocks = attention::kvcache_list_shape(seqlen_q, heads_q, heads_kv, block_m, int(group)).m_blocks;
  return m_blocks * block_m + cache_max_len(a) > INT32_MAX;
}

bool chunk_pack_gqa(const KvCacheArgs& a, int block_m) {
  const int64_t seqlen_q = a.q.shape[1], heads_q = a.q.shape[2], heads_kv = a.k_cache.shape[2];
  const int64_t group = heads_kv > 0 ? heads_q / heads_kv : 0;
  if (a.pack_gqa == 0 || group <= 1 || group > attention::kPackRowsPerWarpgroup) return false;
  if (chunk_pack_overflows(a, block_m)) return false;  // unpacked (make_plan refuses pack_gqa 1's request)
  if (a.pack_gqa == 1) return true;
  const int64_t m_unpacked = (seqlen_q + block_m - 1) / block_m;
  const int64_t m_packed = attention::kvcache_list_shape(seqlen_q, heads_q, heads_kv, block_m, int(group)).m_blocks;
  const double unpacked_fill = double(seqlen_q) / double(m_unpacked * block_m);
  const double packed_fill = double(seqlen_q * group) / double(m_packed * block_m);
  return unpacked_fill < 0.9 * packed_fill;
}

// The chunk path's plan for forward row `row`: the splits by wave efficiency over the SMs (one
// persistent CTA per SM; FA3's num_splits_heuristic is the model, the decode plan's loop below
// the same), the workspace its list and partials take. allow_pack (Overrides::chunk_pack_gqa, on
// unless a test or the bench turns it off): the plan may pack (chunk_pack_gqa); its tiles are then B · Hkv ·
// ceil(Sq / 2P), and its partials are written even at one split (fwd_varlen.hpp).
KvCachePlan make_chunk_plan(const KvCacheArgs& a, int sms, int row, bool allow_pack) {
  KvCachePlan plan;
  const attention::FwdKernelSpec& spec = attention::kFwdKernels[row];
  const int64_t batch = a.q.shape[0], seqlen_q = a.q.shape[1], heads_q = a.q.shape[2], hdim = a.q.shape[3];
  const int64_t heads_kv = a.k_cache.shape[2];
  const int64_t max_len = cache_max_len(a);
  plan.kernel = spec.name;
  plan.fwd_path = true;
  plan.pack_gqa = allow_pack && chunk_pack_gqa(a, spec.tile.block_m);
  const int group = plan.pack_gqa ? int(heads_q / heads_kv) : 0;
  const attention::KvCacheListShape list =
      attention::kvcache_list_shape(seqlen_q, heads_q, heads_kv, spec.tile.block_m, group);
  const int64_t tiles = batch * list.heads * list.m_blocks;
  const int64_t kv_blocks = std::max<int64_t>((max_len + spec.tile.block_n - 1) / spec.tile.block_n, 1);
  const int64_t max_splits = std::min<int64_t>(kv_blocks, kMaxSplits);
  if (a.num_splits > 0) {
    plan.num_splits = int(std::min<int64_t>(a.num_splits, max_splits));
  } else if (tiles > 0 && sms > 0 && tiles < int64_t(sms) * 4 / 5) {
    // Entries / SMs in whole waves; the fewest splits within 95 % of the best efficiency.
    auto efficiency = [&](int64_t s) {
      const double waves = double(tiles * s) / sms;
      return waves / std::ceil(waves);
    };
    double best = 0.0;
    for (int64_t s = 1; s <= max_splits; ++s) best = std::max(best, efficiency(s));
    for (int64_t s = 1; s <= max_splits; ++s)
      if (efficiency(s) >= 0.95 * best) {
        plan.num_splits = int(s);
        break;
      }
  }
  const int64_t rows = batch * heads_q * seqlen_q;
  plan.workspace_bytes = attention::kvcache_list_offset(rows, hdim, plan.num_splits, plan.pack_gqa) +
                         attention::kvcache_list_bytes(batch, list.m_blocks, list.heads, plan.num_splits);
  return plan;
}

}  // namespace hopattn::kvcache_plan
