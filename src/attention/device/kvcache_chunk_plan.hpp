// The chunk path's plan (docs/decode.md, "The chunk path"; PackGQA: docs/chunk-packgqa-plan.md):
// which forward row takes a KV-cache call, whether its plan packs GQA groups, and its splits and
// workspace. Internal to kvcache_check.cpp's make_plan (split from it to keep one role per file).
#pragma once

#include <cstdint>
#include <string>

#include "attention/device/page_table_check.hpp"
#include "common/tensor_checks.hpp"
#include "hopattn/kvcache.hpp"

namespace hopattn::kvcache_plan {

constexpr int kMaxSplits = 128;  // the most KV splits a plan takes (decode and chunk path)

inline bool is_paged(const KvCacheArgs& a) { return hopattn::is_paged(a.page_table); }
inline bool is_int8(const KvCacheArgs& a) { return a.k_cache.dtype == HOPATTN_DTYPE_INT8; }
// The cache's positions per sequence (rows, or pages times the page size).
inline int64_t cache_max_len(const KvCacheArgs& a) { return cache_positions(a.k_cache, a.page_table); }

// The forward row the chunk path runs for this call, or -1 with *why_not. paged: whether it may
// take a paged cache (of pages holding whole KV tiles; Overrides::chunk_paged, on by default).
int chunk_path_row(const KvCacheArgs& a, std::string* why_not, bool paged = false);
// Whether a packed list for this call would overflow the kernel's int positions.
bool chunk_pack_overflows(const KvCacheArgs& a, int block_m);
// Whether the chunk path's plan packs each GQA group (pack_gqa, and FA3's row-fill rule for -1).
bool chunk_pack_gqa(const KvCacheArgs& a, int block_m);
// The chunk path's plan for forward row `row` on `sms` SMs; allow_pack: Overrides::chunk_pack_gqa.
KvCachePlan make_chunk_plan(const KvCacheArgs& a, int sms, int row, bool allow_pack);

}  // namespace hopattn::kvcache_plan
