// The mma.sync int8 decode kernels' types and maps (kernel/sm90_decode_int8_mma.hpp): the
// fragment maps (channels, keys, V scale slots, the swap rows' maps, the 128-byte swizzle),
// Int8MmaMath, DecodeInt8MmaTraits (tiles, ring, shared storage, parameters), the stamp layout of
// the measurement builds and IsDecodeInt8Mma.
//
// Permutations (the reason no data moves between lanes): S sums over channels and O += P·V over
// keys, so K and Q may share any channel order, K and V (and P) any key order, and O's columns
// any order that the epilogue undoes.
//   - Channels of S: thread c's k16 steps s = 0..3 read physical channels [16c, 16c + 16), steps
//     4..7 [64 + 16c, 64 + 16c + 16); in step s the fragment's k = 2c + i is channel
//     64·(s/4) + 16c + 4·(s%4) + i and k = 2c + 8 + i that + 2 (int8_mma_channel).
//   - Keys: column n of S's n8 tile j is key 8j + int8_mma_key_perm(n), which makes both the K loads
//     (rows of lanes g = 2m, 2m+1 differ in bit 2: disjoint 16-byte chunks under the swizzle) and
//     the V loads (the four keys of lanes c = 0..3 differ in bits 1-2) free of bank conflicts.
//   - O's columns: n8 tile t, column n is channel 16n + t, so V's B fragment for all 16 n8 tiles
//     comes from one 16-byte load per key (channels 16g .. 16g + 15), and a thread's O row holds
//     channels [32c, 32c + 32).
// host test: tests/host/test_decode_int8_mma_layout.cu checks these maps and the bank claims.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cute/arch/copy_sm90_tma.hpp>

#include <cstdint>
#include <type_traits>

#include "attention/collective/sm90_decode_tile.hpp"
#include "attention/kernel/sm90_fwd_fa2.hpp"  // Fa2Traits::GmemLayout

namespace hopattn::attention {

// The key order inside an n8 tile of S (see the header comment): 0, 4, 2, 6, 5, 1, 7, 3, one
// nibble each (a lookup that device code can index at run time).
CUTE_HOST_DEVICE constexpr int int8_mma_key_perm(int n) { return (0x37156240 >> (4 * n)) & 0xF; }
CUTE_HOST_DEVICE constexpr int int8_mma_key(int j, int n) { return 8 * j + int8_mma_key_perm(n); }

// Physical channel of k = kk (0..15) in k16 step s of S's GEMM.
CUTE_HOST_DEVICE constexpr int int8_mma_channel(int s, int kk) {
  const int c = (kk % 8) / 2, i = kk % 2, hi = kk / 8;
  return 64 * (s / 4) + 16 * c + 4 * (s % 4) + 2 * hi + i;
}

// The V scale slot (of the 64 per tile) holding key `key`'s scale: thread c reads its 16 keys
// (k16 step s' = 0 .. 3, then keys π(2s', 2c), π(2s', 2c+1), π(2s'+1, 2c), π(2s'+1, 2c+1)) as
// slots 16·c + 4s' + 0..3.
CUTE_HOST_DEVICE constexpr int int8_mma_vscale_slot(int key) {
  int n = 0;
  for (int m = 0; m < 8; ++m)
    if (int8_mma_key_perm(m) == key % 8) n = m;
  const int j = key / 8, c = n / 2, e = n % 2;
  return 16 * c + 4 * (j / 2) + 2 * (j % 2) + e;
}

// The swap rows (keys as the mma's M; see "Keys as the mma's M" in sm90_decode_int8_mma_swap.hpp):
// the fragment maps. Register e of Sᵀ's m-tile mt in thread (g, c) holds key int8_swap_s_key(mt, e,
// g) of row int8_swap_row(e, c); register e of Oᵀ's m-tile mt holds channel
// int8_swap_o_channel(mt, e, g) of the same row.
CUTE_HOST_DEVICE constexpr int int8_swap_s_key(int mt, int e, int g) { return int8_mma_key(2 * mt + e / 2, g); }
CUTE_HOST_DEVICE constexpr int int8_swap_o_channel(int mt, int e, int g) { return 16 * g + 2 * mt + e / 2; }
CUTE_HOST_DEVICE constexpr int int8_swap_row(int e, int c) { return 2 * c + e % 2; }
// The maps as the swap rows' softmax and merge take them (online_softmax_swap,
// merge_and_store_swap; the 16-bit swap row's: Kv16SwapMaps, sm90_decode_kv16_mma_traits.hpp).
struct Int8SwapMaps {
  CUTE_HOST_DEVICE static constexpr int s_key(int mt, int e, int g) { return int8_swap_s_key(mt, e, g); }
  CUTE_HOST_DEVICE static constexpr int o_channel(int mt, int e, int g) { return int8_swap_o_channel(mt, e, g); }
};
// The V scale slot of key `key` (64-key tiles): thread g reads slots 8g .. 8g + 7, the scales of
// keys int8_mma_key(j, g) for j = 0 .. 7 (the keys of its Sᵀ registers).
CUTE_HOST_DEVICE constexpr int int8_swap_vscale_slot(int key) {
  int n = 0;
  for (int m = 0; m < 8; ++m)
    if (int8_mma_key_perm(m) == key % 8) n = m;
  return 8 * n + key / 8;
}

// Byte offset of (row, 16-byte chunk) in a 1 KB-aligned tile of 128-byte rows under the TMA's
// 128-byte swizzle (chunk ^= row % 8); the host test checks it against CuTe's layout.
CUTE_HOST_DEVICE constexpr int int8_mma_sw128(int row, int chunk) { return row * 128 + ((chunk ^ (row % 8)) * 16); }

// The values of the rows as M (kFmaKFoldV) or of the keys as M (kSwapPackedK; see the header of
// kernel/sm90_decode_int8_mma.hpp).
enum class Int8MmaMath {
  kFmaKFoldV,    // kv8_mma_8w_1cta, kv8_mma_4w_3cta: K's value · scale in one FFMA; V exact in fp16, its scales folded into P
  kSwapPackedK,  // kv8_mma_swap_*: kFmaKFoldV's values with the keys as the mma's M, <= 8 rows a CTA, K in bf16
                 // pairs at bf16 (at fp16 K as kFmaKFoldV's)
};
// kWarps_: the CTA's warps, each with its own ring. kCtasPerSm_: CTAs sharing an SM: 1 with 8
// warps (213 KB), 3 with 4 warps (two slots each, ~74 KB; the launch bound caps registers at 168).
template <class Element_, int kHeadDim_, int kWarps_, Int8MmaMath kMath_, int kCtasPerSm_ = 1>
struct DecodeInt8MmaTraits {
  static_assert(kHeadDim_ == 128, "hdim 128");
  static_assert((kWarps_ == 8 && kCtasPerSm_ == 1) || (kWarps_ == 4 && kCtasPerSm_ == 3),
                "8 warps and one CTA per SM, or 4 warps and three");
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kInt8Cache = true;
  static constexpr int kCtasPerSm = kCtasPerSm_;
  static constexpr bool kSwap = kMath_ == Int8MmaMath::kSwapPackedK;
  // The swap rows at bf16: K's value · scale as packed bf16 pairs (k_pair_bf16), exact for the
  // quantizer's K scales (8 significant bits).
  static constexpr bool kPackedK = kSwap && std::is_same_v<Element_, cutlass::bfloat16_t>;
  static constexpr int kBlockN = 64;  // keys per tile (divides both scale blocks)
  static constexpr int kNTiles = kBlockN / 8;  // n8 tiles of S per tile; k16 steps of P·V: kNTiles / 2
  static constexpr int kTileRows = kSwap ? 8 : 16;  // packed query rows per CTA: the mma's M (swap: N)
  static constexpr int kWarps = kWarps_;
  static constexpr int kThreads = 32 * kWarps;  // 255 registers a thread at 8 warps
  // Three slots a warp (K_k, V_k, K_k+1 in flight); two with three CTAs per SM.
  static constexpr int kSlotsPerWarp = kCtasPerSm == 3 ? 2 : 3;
  static constexpr int kStages = kSlotsPerWarp * kWarps;
  static constexpr int kTileBytes = kBlockN * kHeadDim;  // one raw K or V tile
  using BlockN = cute::Int<kBlockN>;
  using HeadDim = cute::Int<kHeadDim>;
  using Stages = cute::Int<kStages>;
  // Raw tiles (key, channel, slot), 128-byte swizzle (the TMA writes it, int8_mma_sw128 reads it).
  using SmemLayoutRaw = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<int8_t>{},
                                                     cute::Shape<BlockN, HeadDim, Stages>{}));
  using GmemLayout = typename Fa2Traits<Element_, kHeadDim_, 64, 64, 2>::GmemLayout;  // (seq, D, heads, batch)
  using TmaLoadRaw = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<int8_t const*>(nullptr)), GmemLayout{}),
      cute::take<0, 2>(SmemLayoutRaw{})));
  // A paged cache with pages smaller than the 64-key tile (16, 32): the tile is gathered as four
  // 16-key boxes, each from its own page (16 rows of the 128-byte swizzle are whole atoms).
  static constexpr int kPageBoxRows = 16;
  using PageBox = cute::Int<kPageBoxRows>;
  using SmemLayoutPageBox = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<int8_t>{},
                                                         cute::Shape<PageBox, HeadDim>{}));
  using TmaLoadPageBox = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<int8_t const*>(nullptr)), GmemLayout{}),
      SmemLayoutPageBox{}));
  static constexpr int kPageBoxes = kBlockN / kPageBoxRows;
  static constexpr uint32_t kTmaBytesPageBox = kPageBoxRows * kHeadDim;

  // The merge after the loops reuses the tile ring: per warp 16 rows × (128 + 4) floats of O, then
  // the rows' maxima and sums.
  static constexpr int kMergeStride = kHeadDim + 4;
  // What a warp's refills read and its math does not, written by its lane 0 before the tile loop
  // and read from here at each refill (the kernel's "Refill arguments"); the merge's length too.
  struct WarpRefill {
    const float* k_scale;     // the KV head's K scales (a tile's page, or sequence, and block added)
    const float* v_scale;     // its V scales
    const int32_t* page_row;  // a paged cache: the sequence's row of the page table (nullptr unpaged)
    int len;                  // the keys of this cache (DecodeTile::len): no V scale read past it
    int merge_len;            // DecodeTile::seq_len, or -1 (a bad length) when a page id is bad
    int small_pages;          // a pool of pages smaller than the tile (16-key boxes)
    // The page (unpaged: the sequence) of the warp's tiles k, by k % 2: [0] the tile's; pages
    // smaller than the tile: [j] the page of its 16-key box j.
    int32_t page[2][kPageBoxes];
  };
  struct SharedStorage {  // slot s of warp w is kSlotsPerWarp·w + s
    cute::array_aligned<int8_t, kStages * kTileBytes, 1024> raw;  // a K or a V tile per slot
    cute::array_aligned<float, kStages * kHeadDim, 16> scale;     // its 128 K scales or 64 V scale slots
    cute::array_aligned<uint32_t, 8 * 32 * 4, 16> q_frag;
    alignas(8) uint64_t full[kStages];
    WarpRefill refill[kWarps];
  };
  static_assert(kWarps * kTileRows * (kMergeStride + 2) * 4 <= kStages * kTileBytes, "the merge fits the tile ring");
  static constexpr int kSharedBytes = int(sizeof(SharedStorage));

  struct Params : DecodeInt8SplitParams<Element, TmaLoadRaw, TmaLoadRaw> {
    TmaLoadPageBox tma_k_box, tma_v_box;  // pages smaller than kBlockN (unset otherwise)
#ifdef HOPATTN_DECODE_STAMPS
    // Measurement builds only (bench/decode_int8_timeline.cu): clock64 per tile, laid out by
    // int8_mma_stamps_per_cta; stamp_tiles tiles per warp.
    uint64_t* stamps;
    int stamp_tiles;
#endif
  };
};

// Stamps of CTA `cta` (measurement builds): slot 0 the SM id; warp w's k-th tile at
// 1 + 3 (w · tiles + k) + {0: before its wait for V, 1: after it, 2: after its last issue}; the
// CTA's i-th tile (i < warps · tiles) at 1 + 3 · warps · tiles + i, when its warp issues its V.
CUTE_HOST_DEVICE constexpr int64_t int8_mma_stamps_per_cta(int warps, int tiles) { return 1 + 4 * int64_t(warps) * tiles; }

template <class T>
struct IsDecodeInt8Mma : std::false_type {};
template <class E, int D, int W, Int8MmaMath M, int C>
struct IsDecodeInt8Mma<DecodeInt8MmaTraits<E, D, W, M, C>> : std::true_type {};

}  // namespace hopattn::attention
