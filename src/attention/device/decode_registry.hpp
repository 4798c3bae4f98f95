// The decode kernel registry: the split kernels over a KV cache that this library compiles, by
// name, and the defaults table that picks one per call (decode_defaults.cpp). Plain data, read on
// the host by the plan (kvcache_check.cpp); the launch switch (sm90_decode_launch.hpp) reads the
// row's internal id. Every 16-bit cache runs one of the kv16 rows, every int8 cache one of the kv8
// rows; an int8 call with 16-bit tail blocks also runs the 16-bit kernel on a one-stage tile over
// the tails, and a call with more than one partial the combine (neither is a row: neither is
// chosen).
#pragma once

#include <cstdint>
#include <string>

namespace hopattn::attention {

enum class DecodeCache : int { k16Bit = 0, kInt8 = 1 };

// What a row does not take (DecodeKernelSpec::limits): the plan refuses a call with it for that row
// with the reason (kvcache_check.cpp, pick_decode_kernel). A defaults row names a row with limits
// only within them: rows_max <= max_rows, contiguous_only for kDecodeNoPages, no_options for
// kDecodeNoOptions, never kDecodeNamedOnly (tests/host/test_kernel_registry.cpp,
// DefaultsStayWithinTheirRowsLimits).
inline constexpr unsigned kDecodeNoPages = 1;      // a paged cache
inline constexpr unsigned kDecodeNoOptions = 2;    // a sliding window, a softcap or sinks (a 16-bit row's; the int8
                                                   // rows' options: kInt8OptionsKernel)
inline constexpr unsigned kDecodeNamedOnly = 4;    // never a default: runs only when forced by name (an experiment)

struct DecodeKernelSpec {
  const char* name;
  int id;             // the launch switch's internal id (DecodeParams::variant)
  DecodeCache cache;
  unsigned hdims;     // bit 0: hdim 64, bit 1: 128, bit 2: 256
  const char* detail; // what the kernel is, for `hopattn info`
  int max_rows = 0;   // > 0: at most this many query rows a row group (seqlen_q, times the GQA group when packed)
  unsigned limits = 0;  // kDecodeNoPages | kDecodeNoOptions | kDecodeNamedOnly
  // > 0: the split heuristic gives a split at least this many keys (else kvcache_check.cpp's
  // kSplitKeys, 128); a forced num_splits is still capped at one split per 128 keys.
  int split_keys = 0;
};

inline constexpr unsigned kHd64 = 1, kHd128 = 2, kHd256 = 4;

// clang-format off
inline constexpr DecodeKernelSpec kDecodeKernels[] = {
  // 16-bit cache (sm90_decode.hpp): TMA K/V ring, one consumer warpgroup, WGMMA.
  {"kv16_split_1cta", 1, DecodeCache::k16Bit, kHd64 | kHd128 | kHd256,
   "128-key tiles (64 at hdim 256), 3 stages (4 at hdim 64), one CTA per SM"},
  {"kv16_split_2cta", 2, DecodeCache::k16Bit, kHd64 | kHd128,
   "64-key tiles (128 at hdim 64), 3 stages, two CTAs per SM"},
  // 16-bit cache with mma.sync warps that each load their own tiles (sm90_decode_kv16_mma.hpp):
  // kv8_mma_swap_8w_1cta without the dequantization; the default of the calls without options of
  // at most 8 packed rows, contiguous or paged (decode_defaults.cpp). Its 8 warps take one 64-key
  // tile each at a time: the split heuristic gives a split at least 512 keys (H100 s20 sweep).
  {"kv16_mma_swap_8w_1cta", 25, DecodeCache::k16Bit, kHd128,
   "8 mma.sync warps, keys as the mma's M, 8 packed rows a row group at most, contiguous or paged caches, no "
   "options, one CTA per SM",
   8, kDecodeNoOptions, 512},
  // int8 cache, converted to 16 bits in shared memory by a transform warpgroup, then WGMMA.
  {"kv8_wgmma_1c_1cta", 2, DecodeCache::kInt8, kHd64 | kHd128 | kHd256,
   "one consumer warpgroup, one CTA per SM"},
  {"kv8_wgmma_1c_2cta", 3, DecodeCache::kInt8, kHd64 | kHd128,
   "one consumer warpgroup, 112 KB, two CTAs per SM"},
  {"kv8_wgmma_swap_2cta", 4, DecodeCache::kInt8, kHd64,
   "keys as WGMMA's M, 16 packed query rows as N, two CTAs per SM"},
  // The int8 calls with a sliding window, a softcap or sinks (and only those: no defaults row).
  {"kv8_wgmma_options_1cta", 24, DecodeCache::kInt8, kHd64 | kHd128 | kHd256,
   "kv8_wgmma_1c_1cta with a sliding window, softcap and sinks: the int8 calls with any of them"},
  // int8 cache dequantized in the registers of mma.sync warps that each load their own tiles
  // (sm90_decode_int8_mma.hpp): K's value * scale in one FFMA, V exact in fp16 with its scales
  // folded into P. "swap": the keys as the mma's M (at most 8 packed rows a CTA), K in packed
  // bf16 pairs at bf16.
  {"kv8_mma_8w_1cta", 16, DecodeCache::kInt8, kHd128,
   "8 warps, 16 packed rows a CTA, one CTA per SM"},
  {"kv8_mma_4w_3cta", 17, DecodeCache::kInt8, kHd128,
   "4 warps, 16 packed rows a CTA, three CTAs per SM"},
  {"kv8_mma_swap_8w_1cta", 20, DecodeCache::kInt8, kHd128,
   "8 warps, keys as the mma's M, 8 packed rows a CTA, one CTA per SM"},
  {"kv8_mma_swap_4w_3cta", 21, DecodeCache::kInt8, kHd128,
   "4 warps, keys as the mma's M, 8 packed rows a CTA, three CTAs per SM"},
};
// clang-format on
inline constexpr int kDecodeKernelCount = int(sizeof(kDecodeKernels) / sizeof(kDecodeKernels[0]));

// The row every int8 call with a sliding window, a softcap or sinks runs (the plan's choice,
// kvcache_check.cpp; no defaults row names it).
inline constexpr const char* kInt8OptionsKernel = "kv8_wgmma_options_1cta";

constexpr unsigned decode_hdim_bit(int hdim) { return hdim == 64 ? kHd64 : hdim == 128 ? kHd128 : hdim == 256 ? kHd256 : 0; }

// Whether the kernel of that cache type and id is compiled at `hdim` (the launch switch
// instantiates exactly these).
constexpr bool decode_kernel_compiled(DecodeCache cache, int id, int hdim) {
  for (const DecodeKernelSpec& k : kDecodeKernels)
    if (k.cache == cache && k.id == id && (k.hdims & decode_hdim_bit(hdim)) != 0) return true;
  return false;
}

// The row of `name` for this cache and head dim, or -1.
int decode_kernel_index(const std::string& name, DecodeCache cache, int hdim);

// One row of the decode defaults table: every call inside the ranges runs `kernel`; the first
// matching row wins. rows = the query rows of one tile's row group (seqlen_q, times the GQA group
// when the plan packs the heads); tiles = CTAs of the unsplit grid; a rule applies from
// min_tiles_per_sm * SMs tiles on.
struct DecodeDefaultRule {
  DecodeCache cache;
  unsigned hdims;
  int64_t rows_min, rows_max;
  double min_tiles_per_sm;
  const char* kernel;
  const char* evidence;
  // > 0: the row is only for paged caches whose pages hold fewer keys than this (a kernel whose key
  // tile fits such a page, so that TMA loads whole tiles instead of gathering 16-key boxes).
  int pages_below = 0;
  // true: the row is only for contiguous caches (the rule of a kernel whose limits have
  // kDecodeNoPages, or one not measured on paged caches).
  bool contiguous_only = false;
  // true: the row is only for calls without a sliding window, softcap or sinks (the rule of a
  // kernel whose limits have kDecodeNoOptions).
  bool no_options = false;
};

const DecodeDefaultRule* decode_default_rules(int* count);

// A row of the chunk path's table (decode_defaults.cpp): KV-cache calls of these head dims with
// at least seqlen_q_min queries against a cache of at least cache_len_min positions (the cache's
// rows per sequence, or pages times the page size) run the forward's options kernel with split-KV
// when they can (kvcache_check.cpp, make_plan). packed_only: only calls whose chunk plan packs each
// GQA group into its Q tiles (PackGQA: kvcache_check.cpp, chunk_pack_gqa). paged: the rule takes
// paged caches too (pages of at least the KV tile; the paged view costs the chunk path 6-20 %,
// so only rules whose margin over the decode kernels is wider than that take them).
struct DecodeChunkRule {
  unsigned hdims;
  int64_t seqlen_q_min;
  int64_t cache_len_min;
  bool packed_only;
  bool paged;
  const char* evidence;
};
const DecodeChunkRule* decode_chunk_rules(int* count);
// The rule that sends a call of this head dim, seqlen_q and cache length to the chunk path, or
// nullptr; packed: whether the chunk path's plan would pack the call's GQA groups; paged: whether
// the cache is paged (only rules with `paged` take it).
const DecodeChunkRule* decode_chunk_rule(int hdim, int64_t seqlen_q, int64_t cache_len, bool packed, bool paged);
// page_size: a paged cache's tokens per page, 0 for a contiguous cache; options: whether the call
// has a sliding window, a softcap or sinks.
const DecodeDefaultRule* decode_default_rule(DecodeCache cache, int hdim, int64_t rows, int64_t tiles, int sms,
                                             int page_size = 0, bool options = false);

}  // namespace hopattn::attention
