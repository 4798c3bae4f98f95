// The types and fragment maps of the 16-bit mma.sync decode kernel (kv16_mma_swap_8w_1cta,
// kernel/sm90_decode_kv16_mma.hpp): the slot layout (64 keys × 64 channels of the cache's type,
// 128-byte rows under the TMA's 128-byte swizzle), the lanes' ldmatrix addresses for K's and Vᵀ's
// A fragments, Q's B fragment words, the Sᵀ and Oᵀ register maps, and DecodeKv16MmaTraits.
//
// Fragments (mma.sync m16n8k16, thread (g, c) = (lane / 4, lane % 4); keys as M, the <= 8 rows as N):
//   - Sᵀ = K·Qᵀ: m-tile mt holds keys 16mt .. 16mt + 15 of the tile in their natural order; k16
//     step S takes channels 16S .. 16S + 15 (steps 0-3 from the K_lo slot, channels 0-63; 4-7 from
//     K_hi). K's A fragment (rows = keys, k = channels) is a row-major 16 × 16 block of the slot,
//     one ldmatrix.x4 (kv16_k_ldsm_offset); Q's B fragment (k = channels, n = row g) two 32-bit
//     words of row g (kv16_q_word). Register e of m-tile mt: key kv16_swap_s_key(mt, e, g) of row
//     int8_swap_row(e, c) = 2c + e % 2.
//   - Oᵀ = Vᵀ·Pᵀ: m-tile mt holds channels 16mt .. 16mt + 15 (0-3 from the V_lo slot, 4-7 from
//     V_hi); k16 step sp keys 16sp .. 16sp + 15. Vᵀ's A fragment (rows = channels, k = keys) is
//     the slot's 16 × 16 block of keys × channels transposed: one ldmatrix.x4.trans
//     (kv16_v_ldsm_offset). Pᵀ's B fragment (k = keys, n = row g) is Sᵀ's C fragment of m-tile sp
//     through movmatrix.trans (as the int8 swap rows). Register e of m-tile mt: channel
//     kv16_swap_o_channel(mt, e, g) of row 2c + e % 2.
//   - Banks: each 8 × 16-byte matrix of an ldmatrix reads 8 consecutive keys (rows 8j .. 8j + 7)
//     at one logical 16-byte chunk, which the swizzle puts in 8 different bank groups.
// host test: tests/host/test_decode_kv16_mma_layout.cu rebuilds the fragments from these maps with
// a model of ldmatrix, movmatrix and mma.sync (the PTX ISA's layouts) over CuTe's slot layout, and
// checks the products and the banks.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cute/arch/copy_sm90_tma.hpp>

#include <cstdint>

#include "attention/collective/sm90_decode_int8_mma_traits.hpp"  // int8_mma_sw128, int8_swap_row
#include "attention/collective/sm90_decode_tile.hpp"
#include "attention/kernel/sm90_fwd_fa2.hpp"  // Fa2Traits::GmemLayout

namespace hopattn::attention {

// Byte offset of lane `lane`'s row address for ldmatrix.x4 of K's A fragment of m-tile mt, k16
// step s (0-3, the slot's channels 16s ..): matrix q = lane / 8 (a0..a3: keys +0 / +8 ×
// channels +0 / +8), its row r = lane % 8, is key 16mt + 8(q % 2) + r at 16-byte chunk 2s + q / 2.
CUTE_HOST_DEVICE constexpr int kv16_k_ldsm_offset(int lane, int mt, int s) {
  const int q = lane / 8, r = lane % 8;
  return int8_mma_sw128(16 * mt + 8 * (q % 2) + r, 2 * s + q / 2);
}
// The same for ldmatrix.x4.trans of Vᵀ's A fragment of m-tile mt (the slot's channels 16mt ..),
// k16 step sp (keys 16sp ..): matrix q (a0..a3: channels +0 / +8 × keys +0 / +8), row r, is key
// 16sp + 8(q / 2) + r at chunk 2mt + q % 2.
CUTE_HOST_DEVICE constexpr int kv16_v_ldsm_offset(int lane, int mt, int sp) {
  const int q = lane / 8, r = lane % 8;
  return int8_mma_sw128(16 * sp + 8 * (q / 2) + r, 2 * mt + q % 2);
}
// The 32-bit word (channel pair) of Q's row g that register i (0, 1) of the B fragment of k16 step
// S (0-7) holds in thread c: channels 16S + 8i + 2c, + 1.
CUTE_HOST_DEVICE constexpr int kv16_q_word(int S, int i, int c) { return 8 * S + 4 * i + c; }
// Sᵀ's and Oᵀ's C fragments: register e of m-tile mt in thread (g, c) holds key (Sᵀ) or channel
// (Oᵀ) 16mt + g + 8(e / 2) of row 2c + e % 2 (int8_swap_row).
CUTE_HOST_DEVICE constexpr int kv16_swap_s_key(int mt, int e, int g) { return 16 * mt + g + 8 * (e / 2); }
CUTE_HOST_DEVICE constexpr int kv16_swap_o_channel(int mt, int e, int g) { return 16 * mt + g + 8 * (e / 2); }

// The maps as the swap rows' shared softmax and merge take them (online_softmax_swap,
// merge_and_store_swap; the int8 rows': Int8SwapMaps).
struct Kv16SwapMaps {
  CUTE_HOST_DEVICE static constexpr int s_key(int mt, int e, int g) { return kv16_swap_s_key(mt, e, g); }
  CUTE_HOST_DEVICE static constexpr int o_channel(int mt, int e, int g) { return kv16_swap_o_channel(mt, e, g); }
};

// kv16_mma_swap_8w_1cta: 8 warps, one CTA per SM, 64-key tiles, at most 8 packed rows a CTA.
template <class Element_, int kHeadDim_ = 128>
struct DecodeKv16MmaTraits {
  static_assert(kHeadDim_ == 128, "hdim 128: a K or V tile is two 64-channel slots");
  static_assert(sizeof(Element_) == 2, "a 16-bit cache");
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kInt8Cache = false;
  static constexpr int kBlockN = 64;   // keys per tile: a warp's unit of work
  static constexpr int kTileRows = 8;  // packed query rows per CTA: the mma's N
  static constexpr int kWarps = 8;
  static constexpr int kThreads = 32 * kWarps;  // 255 registers a thread, one CTA per SM
  // A slot holds 64 keys × 64 channels (8 KB): half of a K or a V tile. A TMA box's rows are at
  // most 128 bytes under the 128-byte swizzle, so a 16-bit tile row is two boxes anyway, and whole
  // 16 KB tiles would leave room for one K and one V a warp at most (8 × 32 KB > 227 KB).
  static constexpr int kSlotChannels = 64;
  static constexpr int kSlotBytes = kBlockN * kSlotChannels * 2;
  // Items per tile, in the order a warp reads them: K_lo, K_hi (channels 0-63, 64-127), V_lo, V_hi.
  static constexpr int kItemsPerTile = 4;
  static constexpr int kSlotsPerWarp = 3;  // 192 KB for the rings
  static constexpr int kStages = kSlotsPerWarp * kWarps;
  using BlockN = cute::Int<kBlockN>;
  using SlotChannels = cute::Int<kSlotChannels>;
  using Stages = cute::Int<kStages>;
  // (key, channel, slot): the TMA writes it, int8_mma_sw128 reads it (host test).
  using SmemLayoutKV = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                    cute::Shape<BlockN, SlotChannels, Stages>{}));
  using GmemLayout = typename Fa2Traits<Element_, kHeadDim_, 64, 64, 2>::GmemLayout;  // (seq, D, heads, batch)
  using TmaLoadKV = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}),
      cute::take<0, 2>(SmemLayoutKV{})));

  // A pool of pages smaller than the tile (16, 32 keys): an item is four 16-key boxes of its 64
  // channels, each from its own page, into rows 16j .. 16j + 15 of the slot (2 KB apart: whole
  // 1 KB swizzle atoms, so a box lands in the slot's own layout).
  static constexpr int kPageBoxRows = 16;
  static constexpr int kPageBoxes = kBlockN / kPageBoxRows;
  static constexpr uint32_t kPageBoxBytes = kPageBoxRows * kSlotChannels * sizeof(Element);
  using PageBox = cute::Int<kPageBoxRows>;
  using SmemLayoutPageBox = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                         cute::Shape<PageBox, SlotChannels>{}));
  using TmaLoadPageBox = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}),
      SmemLayoutPageBox{}));

  // The merge after the loops reuses the ring (merge_through_shared: per warp 16 rows × (128 + 4)
  // floats of O, then the rows' maxima and sums; rows 8-15 unused).
  static constexpr int kMergeStride = kHeadDim + 4;
  struct SharedStorage {  // slot s of warp w is kSlotsPerWarp·w + s
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutKV>, 1024> kv;
    alignas(8) uint64_t full[kStages];
  };
  static_assert(cute::cosize_v<SmemLayoutKV> * 2 == kStages * kSlotBytes, "slots of 8 KB, back to back");
  static_assert(kWarps * 16 * (kMergeStride + 2) * 4 <= kStages * kSlotBytes, "the merge fits the ring");
  static constexpr int kSharedBytes = int(sizeof(SharedStorage));

  struct Params : DecodeSplitParams<Element, TmaLoadKV, TmaLoadKV> {
    TmaLoadPageBox tma_k_box, tma_v_box;  // pages smaller than kBlockN (unset otherwise)
  };
};

}  // namespace hopattn::attention
