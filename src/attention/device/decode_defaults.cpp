// The decode defaults table: which split kernel runs a KV-cache call, from the cache type, the
// head dim, the packed query rows, how many tiles the call has per SM and a paged cache's page
// size. Same-run measurements chose every row (on the H200 unless the row says otherwise;
// evidence column; docs/decode.md has the runs and what each row beat).
// tests/host/test_kernel_registry.cpp checks that every row names a registered kernel of its cache
// type and head dims, and that the table covers every call.
#include <iterator>
#include <string>

#include "attention/device/decode_registry.hpp"

namespace hopattn::attention {
namespace {

constexpr int64_t kMaxRows = INT64_MAX;

// clang-format off
constexpr DecodeDefaultRule kRules[] = {
  // int8, hdim 128, decode with a GQA group of <= 8 (r107, medians of 3 rounds, vs cuDNN bf16:
  // 32 x 8k 1.94, 16 x 32k 2.33; three CTAs per SM from three waves: 128 x 2k 1.92).
  {DecodeCache::kInt8, kHd128, 1, 8,  3.0, "kv8_mma_swap_4w_3cta", "r107: 128x2k 1.92 x cuDNN bf16"},
  {DecodeCache::kInt8, kHd128, 1, 8,  0.0, "kv8_mma_swap_8w_1cta", "r107: 32x8k 1.94, 16x32k 2.33"},
  // int8, hdim 128, up to 16 packed rows (r103, r105).
  {DecodeCache::kInt8, kHd128, 9, 16, 3.0, "kv8_mma_4w_3cta",      "r105: 128x2k 1.76-1.81"},
  {DecodeCache::kInt8, kHd128, 9, 16, 0.0, "kv8_mma_8w_1cta",      "r105: 32x8k 1.68-1.74"},
  // int8, hdim 64, up to 16 packed rows: the swapped-operand WGMMA consumer (2026-11-30 r1:
  // 8-25 % faster than the one-consumer kernels).
  {DecodeCache::kInt8, kHd64,  1, 16, 0.0, "kv8_wgmma_swap_2cta",  "r1 (2026-11-30)"},
  // int8, more rows: one consumer warpgroup, two CTAs per SM from a quarter wave of tiles on
  // (2026-11-30 r1: 6-16 % faster at 64 tiles and more, 25 % slower at 8), hdim 256 one CTA.
  {DecodeCache::kInt8, kHd64 | kHd128, 1, kMaxRows, 0.25, "kv8_wgmma_1c_2cta", "r1 (2026-11-30)"},
  {DecodeCache::kInt8, kHd64 | kHd128 | kHd256, 1, kMaxRows, 0.0, "kv8_wgmma_1c_1cta", "r1 (2026-11-30)"},
  // 16-bit: two CTAs per SM once there are tiles for 1.5 waves of one CTA per SM.
  {DecodeCache::k16Bit, kHd64 | kHd128, 1, kMaxRows, 1.5, "kv16_split_2cta", "docs/decode.md"},
  // 16-bit, hdim 128, at most 8 packed rows, no options, contiguous or paged: the mma.sync warps
  // with the keys as M (kv16_split_1cta's 64-row WGMMA tile holds 8 real rows). Paged (H100 s20
  // kp, 64:8, 2 rounds; bench/records/decode-kv16-paged-2026-12-08-h100-s20.csv): 1 x 8k pages of
  // 16 / 64 / 128 12.1 / 12.1 / 12.2 us vs the split rows' 16.9 / 15.2 / 15.3 (0.94-0.95x cuDNN's
  // contiguous 11.5); 8 x 8k 96.9 / 96.6 / 95.9 vs 97.0 / 94.2 / 94.6 (-1 % at 64 and 128). It
  // also keeps a paged call's bytes equal to the contiguous call's. 2026-12-08 H100
  // s20 (bf16, CUDA graphs, 3 rounds; bench/records/decode-kv16-mma-2026-12-08-h100-s20.csv):
  // against cuDNN 0.97 / 0.99 / 0.98 at 1 x 8k / 8 x 8k / 1 x 32k (64:8), kv16_split_1cta 0.71 /
  // 0.98 / 0.95; 32:8 0.99 / 0.99 / 0.98 vs 0.72 / 0.98 / 0.96; 1 x 1k 0.82-0.87 vs 0.74-0.76.
  {DecodeCache::k16Bit, kHd128, 1, 8, 0.0, "kv16_mma_swap_8w_1cta",
   "H100 s20 (2026-12-08): 1x8k 64:8 0.97x cuDNN (kv16_split_1cta 0.71x); paged 0.94-0.95x", 0, false, true},
  // 16-bit, hdim 128, pages of fewer than 128 keys: the 64-key tiles of kv16_split_2cta (a page of
  // 64 holds a whole tile; pages of 16 and 32 take 4 boxes a tile, not 8). 2026-12-06 e3 (H100,
  // 64:8, q_len 16): kv16_split_1cta reads such pages at 0.64x its contiguous cache (8 x 8k p16
  // and p64, 16 x 32k too), kv16_split_2cta at 0.86x (p16) and 0.97-1.03x (p64) of the contiguous
  // default.
  {DecodeCache::k16Bit, kHd128, 1, kMaxRows, 0.0, "kv16_split_2cta", "H100 e3 (2026-12-06): q16 p16 0.86, p64 0.97", 128},
  {DecodeCache::k16Bit, kHd64 | kHd128 | kHd256, 1, kMaxRows, 0.0, "kv16_split_1cta", "docs/decode.md"},
};
// clang-format on

// The chunk path (the forward's options kernel with split-KV; kvcache_check.cpp, make_plan):
// which KV-cache calls it takes by default, among those it can run (16-bit contiguous caches, no
// window, hdim 128). The decode kernels keep every other call. Measured 2026-12-06 r1 (H100, bf16,
// 1 x len, 32:8 heads, q_len 16/64/128, each path at its own best split count; decode_path
// "fwd" vs "decode"): q_len 128: 1.75x at 32k (130 vs 228 us), 1.45x at 4k (26.1 vs 37.8), 0.97x
// at 1k; q_len 64: 1.03x at 32k, 0.95x at 4k, 0.82x at 1k; q_len 16: 0.53-0.77x.
// With PackGQA (a GQA group's heads packed into the Q tiles' rows; Overrides::chunk_pack_gqa, on by
// default; packing only where a packed_only rule takes the call, or pack_gqa 1; 2026-12-06 H200 pk-r1, 32:8, bf16, CUDA graphs, the CSV's figure of 2 rounds): q_len 64
// against 1 x 32k 85.6 us packed vs 121.7 for the unpacked chunk path (the default there); 4 x 8k
// 81.1 vs the decode kernels' 119.0 (the default) and the unpacked chunk path's 123.9; 1 x 4k 26.7
// vs the decode kernels' 23.6 (they keep it); q_len 16: the decode kernels 13.8 / 46.2 / 44.9 vs
// packed 19.7 / 51.5 / 51.6 (1 x 4k, 1 x 32k, 4 x 8k).
// q_len 96 (2026-12-06 H200 a3, 32:8, bf16, CUDA graphs, 2 rounds; bench/records/
// chunk-rules-2026-12-06-h200-a3.csv): the unpacked chunk path 26.4 / 38.5 / 73.1 us vs the decode
// kernels' 37.6 / 65.6 / 116.7 (1 x 4k, 1 x 8k, 2 x 8k: 1.42x / 1.70x / 1.60x); packed it ran
// 38.4 / 48.6 / 83.0, so the unpacked rule comes first. q_len 64 at 1 x 4k: the decode kernels
// 23.6, unpacked 25.3, packed 26.5.
// Paged caches (pages of 128 tokens; 2026-12-07 H100 r2, 32:8, bf16, CUDA graphs, 2 rounds;
// bench/records/chunk-paged-2026-12-07-h100-s13.csv): the unpacked chunk path over the pages
// 30.5 / 32.1 / 50.5 / 53.0 / 129.1 / 134.2 / 156.4 / 161.2 us vs the paged decode kernels' 37.7 /
// 38.5 / 65.8 / 67.5 / 193.6 / 198.6 / 230.2 / 232.2 (q_len 96 / 128 at 1 x 4k, 1 x 8k, 4 x 8k,
// 1 x 32k: 1.20-1.50x); packed (q_len 32) it ran 35.4 / 72.8 / 100.6 vs 28.7 / 69.8 / 73.4 (1 x 8k,
// 4 x 8k, 1 x 32k: 0.73-0.96x), so the packed rule and the thin q_len-64 one kept paged caches on
// the decode kernels. After the page ids a warp per sequence (fourteenth session), 2026-12-07 H100
// s18 (32:8, bf16, pages of 128, CUDA graphs, 2 rounds; bench/records/
// chunk-rules-paged-2026-12-07-h100-s18.csv): packed q_len 64 over the pages 34.8 / 79.7 / 82.9 us
// vs the paged decode kernels' 36.9 / 112.6 / 117.8 (1 x 8k, 4 x 8k, 1 x 32k: 1.07-1.42x), so
// paged q_len 64 from 8k packs; q_len 32 stays (27.2 / 64.6 / 66.7 vs 26.2 / 67.5 / 68.5: 0.96-1.05x).
// clang-format off
constexpr DecodeChunkRule kChunkRules[] = {
  {kHd128, 128, 2048, false, true, "r1 2026-12-06 (H100): q128 1.45x at 4k, 1.75x at 32k; 0.97x at 1k"},
  {kHd128, 96, 4096, false, true, "a3 2026-12-06 (H200): q96 32:8 1.42x the decode kernels at 1x4k, 1.70x at 1x8k, 1.60x at 2x8k; packed slower (0.69-0.88x unpacked)"},
  {kHd128, 32, 8192, true, false, "pk-r1, a3 2026-12-06 (H200): 32:8 packed q64 1.47x the decode kernels at 4x8k, 1.42x the unpacked chunk path at 1x32k; q32-64 from 8k up to 1.38x (q48, 2x8k); 0.88x the decode kernels at 1x4k"},
  {kHd128, 64, 16384, false, false, "r1 2026-12-06 (H100): q64 1.03x at 32k; 0.95x at 4k"},
  {kHd128, 64, 8192, true, true, "s18 2026-12-07 (H100): paged (128) 32:8 packed q64 1.07x the paged decode kernels at 1x8k, 1.41-1.42x at 4x8k and 1x32k"},
};
// clang-format on

}  // namespace

const DecodeChunkRule* decode_chunk_rules(int* count) {
  *count = int(std::size(kChunkRules));
  return kChunkRules;
}

const DecodeChunkRule* decode_chunk_rule(int hdim, int64_t seqlen_q, int64_t cache_len, bool packed, bool paged) {
  const unsigned bit = decode_hdim_bit(hdim);
  for (const DecodeChunkRule& r : kChunkRules)
    if ((r.hdims & bit) != 0 && seqlen_q >= r.seqlen_q_min && cache_len >= r.cache_len_min && (packed || !r.packed_only) &&
        (!paged || r.paged))
      return &r;
  return nullptr;
}

const DecodeDefaultRule* decode_default_rules(int* count) {
  *count = int(std::size(kRules));
  return kRules;
}

const DecodeDefaultRule* decode_default_rule(DecodeCache cache, int hdim, int64_t rows, int64_t tiles, int sms,
                                             int page_size, bool options) {
  const unsigned bit = decode_hdim_bit(hdim);
  for (const DecodeDefaultRule& r : kRules)
    if (r.cache == cache && (r.hdims & bit) != 0 && rows >= r.rows_min && rows <= r.rows_max &&
        double(tiles) >= r.min_tiles_per_sm * double(sms) &&
        (r.pages_below == 0 || (page_size > 0 && page_size < r.pages_below)) &&
        (!r.contiguous_only || page_size == 0) && (!r.no_options || !options))
      return &r;
  return nullptr;
}

int decode_kernel_index(const std::string& name, DecodeCache cache, int hdim) {
  const unsigned bit = decode_hdim_bit(hdim);
  for (int i = 0; i < kDecodeKernelCount; ++i)
    if (kDecodeKernels[i].cache == cache && (kDecodeKernels[i].hdims & bit) != 0 && name == kDecodeKernels[i].name)
      return i;
  return -1;
}

}  // namespace hopattn::attention
