// Per-tile math of the 16-bit mma.sync decode kernel (kv16_mma_swap_8w_1cta,
// kernel/sm90_decode_kv16_mma.hpp), keys as the mma's M: Q's B fragments (load_q_kv16), Sᵀ = K·Qᵀ
// over one K slot (tile_scores_kv16), Pᵀ's B fragments (p_fragments_kv16), Oᵀ += Vᵀ·Pᵀ over one
// V slot (tile_pv_kv16) and the V rows past the cache's end zeroed (zero_v_rows). The fragment
// maps: sm90_decode_kv16_mma_traits.hpp. The softmax, Oᵀ's rescale and the merge are the int8
// swap rows' (online_softmax_swap, rescale_o_swap, merge_and_store_swap with Kv16SwapMaps).
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cutlass/arch/barrier.h>

#include <cstdint>

#include "attention/collective/sm90_decode_int8_convert.hpp"  // pack_pair
#include "attention/collective/sm90_decode_int8_mma_ptx.hpp"  // mma16816, movmatrix_trans
#include "attention/collective/sm90_decode_kv16_mma_traits.hpp"
#include "attention/collective/sm90_decode_tile.hpp"

namespace hopattn::attention {
namespace kv16_mma_detail {

CUTE_DEVICE void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
CUTE_DEVICE void ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Q's B fragments of the 8 k16 steps (kv16_q_word) of the CTA's packed row row0 + g, zero past
// the rows; read before the loop and held there (16 registers: no K dequantization competes for
// them, unlike the int8 swap rows, which reload Q from shared memory).
template <class Traits>
CUTE_DEVICE void load_q_kv16(typename Traits::Params const& p, DecodeTile const& t, int g, int c, uint32_t (&qb)[8][2]) {
  const int row = t.row0 + g;
  CUTE_UNROLL
  for (int s = 0; s < 8; ++s) qb[s][0] = qb[s][1] = 0u;
  if (row >= t.rows) return;
  const auto* src = reinterpret_cast<const uint32_t*>(p.q + t.b * p.q_batch_stride + t.pos(row) * p.q_seq_stride +
                                                      t.head(row) * p.q_head_stride);
  CUTE_UNROLL
  for (int s = 0; s < 8; ++s) qb[s][0] = src[kv16_q_word(s, 0, c)], qb[s][1] = src[kv16_q_word(s, 1, c)];
}

// Sᵀ += K·Qᵀ over the K slot at `slot` (channels 64h .. 64h + 63 of the tile: k16 steps 4h ..
// 4h + 3), all four m-tiles. k_off[s]: the lane's kv16_k_ldsm_offset(lane, 0, s); m-tile mt is
// 2 KB further (16 rows: the swizzle's phase is the same).
template <class Element>
CUTE_DEVICE void tile_scores_kv16(float (&s_acc)[4][4], uint32_t slot, const uint32_t (&k_off)[4],
                                  const uint32_t (&qb)[8][2], int h) {
  CUTE_UNROLL
  for (int s = 0; s < 4; ++s)
    CUTE_UNROLL
    for (int mt = 0; mt < 4; ++mt) {
      uint32_t a[4];
      ldsm_x4(a, slot + k_off[s] + 2048 * mt);
      int8_mma_detail::mma16816<Element>(s_acc[mt], a[0], a[1], a[2], a[3], qb[4 * h + s][0], qb[4 * h + s][1]);
    }
}

// Pᵀ's B fragments of the tile's 4 k16 steps from P in Sᵀ's registers: step sp's register 0 holds
// keys 16sp + 2c, + 1 of row g (Sᵀ m-tile sp's registers 0, 1 transposed), register 1 keys
// 16sp + 8 + 2c, + 1 (registers 2, 3), rounded to Element as the WGMMA kernel rounds P.
template <class Element>
CUTE_DEVICE void p_fragments_kv16(uint32_t (&pb)[4][2], float const (&s_acc)[4][4]) {
  CUTE_UNROLL
  for (int sp = 0; sp < 4; ++sp) {
    pb[sp][0] = int8_mma_detail::movmatrix_trans(pack_pair<Element>(s_acc[sp][0], s_acc[sp][1]));
    pb[sp][1] = int8_mma_detail::movmatrix_trans(pack_pair<Element>(s_acc[sp][2], s_acc[sp][3]));
  }
}

// Oᵀ += Vᵀ·Pᵀ over the V slot at `slot` (channels 64h .. 64h + 63: Oᵀ's m-tiles 4h .. 4h + 3).
// v_off[mt]: the lane's kv16_v_ldsm_offset(lane, mt, 0); k16 step sp is 2 KB further.
template <class Element>
CUTE_DEVICE void tile_pv_kv16(float (&o)[8][4], const uint32_t (&pb)[4][2], uint32_t slot, const uint32_t (&v_off)[4],
                              int h) {
  CUTE_UNROLL
  for (int mt = 0; mt < 4; ++mt)
    CUTE_UNROLL
    for (int sp = 0; sp < 4; ++sp) {
      uint32_t a[4];
      ldsm_x4_trans(a, slot + v_off[mt] + 2048 * sp);
      int8_mma_detail::mma16816<Element>(o[4 * h + mt], a[0], a[1], a[2], a[3], pb[sp][0], pb[sp][1]);
    }
}

// Rows [from, 64) of the V slot at `slot` set to zero by the warp's lanes: past the cache's end
// they may hold anything, NaN included, and 0 · NaN is NaN in the mma. Each lane fences its stores
// for the TMA that later refills the slot (async proxy); the caller's __syncwarp orders them
// before the other lanes' ldmatrix.
CUTE_DEVICE void zero_v_rows(uint32_t slot, int from, int lane) {
  for (int e = lane; e < (64 - from) * 8; e += 32)  // 16-byte chunks of the rows (all 8 of a row: the swizzle moves none out)
    asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};" ::"r"(slot + 128 * from + 16 * e), "r"(0u) : "memory");
  cutlass::arch::fence_view_async_shared();
}

}  // namespace kv16_mma_detail
}  // namespace hopattn::attention
