// End of the mma.sync int8 decode kernels (kernel/sm90_decode_int8_mma.hpp): each warp's (max,
// sum, O) written into the free tile ring (merge_and_store; merge_and_store_swap for the swap
// rows' Oᵀ), merged over the warps by log-sum-exp weights, and O (or the split's fp32 partial)
// and LSE stored, rows unpacked to (position, q-head) (merge_partials_and_store).
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cutlass/arch/barrier.h>

#include <cmath>
#include <cstdint>

#include "attention/collective/sm90_decode_int8_convert.hpp"  // pack_pair
#include "attention/collective/sm90_decode_int8_mma_traits.hpp"
#include "attention/collective/sm90_decode_tile.hpp"
#include "attention/collective/sm90_fwd_softmax.hpp"  // exp2_ftz

namespace hopattn::attention {
namespace int8_mma_detail {

// After the loops: the kWarps warps' (max, sum, O) of the CTA's 16 rows merged by log-sum-exp
// weights through merge_area (free shared memory of at least kWarps · 16 · (kMergeStride + 2)
// floats), then O (or the split's fp32 partial) and LSE written, rows unpacked to (position,
// q-head). Called by all kWarps consumer warps; len: the sequence's length as read before the loop
// (DecodeTile::seq_len: with an int8 call's tail, DecodeTile::len is narrower).
template <class Traits>
CUTE_DEVICE void merge_partials_and_store(typename Traits::Params const& p, const float* merge_area, int len);

// The frame of both merges: once every consumer is past its loop (so the tile ring is no longer
// read), write(merge_o, merge_ml) stores the warp's O rows (warp, row, kStride) and (max, sum)
// pairs (warp, row, {m, l}); then, after a second barrier, merge_partials_and_store.
template <class Traits, class Write>
CUTE_DEVICE void merge_through_shared(typename Traits::Params const& p, float* merge_area, int len, Write&& write) {
  constexpr int kWarps = Traits::kWarps, kStride = Traits::kMergeStride;
  float* merge_o = merge_area;
  float* merge_ml = merge_o + kWarps * 16 * kStride;
  cutlass::arch::NamedBarrier::sync(32 * kWarps, uint32_t(DecodeNamedBarrier::kConsumersQ));
  write(merge_o, merge_ml);
  cutlass::arch::NamedBarrier::sync(32 * kWarps, uint32_t(DecodeNamedBarrier::kConsumersQ));
  merge_partials_and_store<Traits>(p, merge_area, len);
}

template <class Traits>
CUTE_DEVICE void merge_and_store(typename Traits::Params const& p, float* merge_area, float (&o)[16][4],
                                 float (&m_run)[2], float (&l_run)[2], int len, int warp, int lane) {
  constexpr int kStride = Traits::kMergeStride;
  const int g = lane / 4, c = lane % 4;
  // Row sums over the quad first; every lane of a quad then holds its rows'.
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 1);
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 2);
  }
  merge_through_shared<Traits>(p, merge_area, len, [&](float* merge_o, float* merge_ml) {
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h) {
      float* dst = merge_o + (warp * 16 + g + 8 * h) * kStride;
      CUTE_UNROLL
      for (int tt = 0; tt < 16; ++tt) dst[32 * c + tt] = o[tt][2 * h], dst[32 * c + 16 + tt] = o[tt][2 * h + 1];
      if (c == 0) merge_ml[(warp * 16 + g + 8 * h) * 2] = m_run[h], merge_ml[(warp * 16 + g + 8 * h) * 2 + 1] = l_run[h];
    }
  });
}

// The second half of the merge, once every warp's (max, sum, O) sits in merge_area (rows of 16 a
// warp, as merge_and_store writes them).
template <class Traits>
CUTE_DEVICE void merge_partials_and_store(typename Traits::Params const& p, const float* merge_area, int len) {
  using Element = typename Traits::Element;
  constexpr int kWarps = Traits::kWarps, kHeadDim = Traits::kHeadDim, kStride = Traits::kMergeStride;
  const float* merge_o = merge_area;                       // (warp, row, kStride)
  const float* merge_ml = merge_o + kWarps * 16 * kStride;  // (warp, row, {m, l})
  // Items (row, 8 channels): the CTA's rows × 16 chunks over the consumer threads.
  DecodeTile t = DecodeTile::make_rows<typename Traits::Params, Traits::kTileRows>(p);
  t.template set_length<typename Traits::Params, Traits::kTileRows, Traits::kBlockN>(p, len);
  for (int item = threadIdx.x; item < Traits::kTileRows * 16; item += 32 * kWarps) {
    const int row_l = item / 16, ch = 8 * (item % 16);
    const int row = t.row0 + row_l;
    if (row >= t.rows) continue;
    float m_all = -INFINITY;
    CUTE_UNROLL
    for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, merge_ml[(w * 16 + row_l) * 2]);
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, l_all = 0.0f;
    if (m_all != -INFINITY) {
      CUTE_UNROLL
      for (int w = 0; w < kWarps; ++w) {
        const float wt = exp2_ftz(merge_ml[(w * 16 + row_l) * 2] - m_all);
        l_all += wt * merge_ml[(w * 16 + row_l) * 2 + 1];
        const float* src = merge_o + (w * 16 + row_l) * kStride + ch;
        const float4 x0 = *reinterpret_cast<const float4*>(src), x1 = *reinterpret_cast<const float4*>(src + 4);
        acc[0] += wt * x0.x, acc[1] += wt * x0.y, acc[2] += wt * x0.z, acc[3] += wt * x0.w;
        acc[4] += wt * x1.x, acc[5] += wt * x1.y, acc[6] += wt * x1.z, acc[7] += wt * x1.w;
      }
    }
    const float inv = t.bad ? NAN : (l_all > 0.0f ? 1.0f / l_all : 0.0f);
    const float lse = t.bad ? NAN : (l_all > 0.0f ? m_all * 0.6931471805599453f + logf(l_all) : -INFINITY);
    CUTE_UNROLL
    for (int k = 0; k < 8; ++k) acc[k] *= inv;
    const int sp = t.pos(row), h = t.head(row);
    const bool partial = p.o_part != nullptr;
    if (item % 16 == 0) {
      if (partial)
        p.lse_part[((int64_t(t.slot) * p.batch + t.b) * p.heads_q + h) * p.seqlen_q + sp] = lse;
      else if (p.lse != nullptr)
        p.lse[t.b * p.lse_batch_stride + h * p.lse_head_stride + sp * p.lse_seq_stride] = lse;
    }
    if (partial) {
      float* dst = p.o_part + (((int64_t(t.slot) * p.batch + t.b) * p.heads_q + h) * p.seqlen_q + sp) * kHeadDim + ch;
      *reinterpret_cast<float4*>(dst) = make_float4(acc[0], acc[1], acc[2], acc[3]);
      *reinterpret_cast<float4*>(dst + 4) = make_float4(acc[4], acc[5], acc[6], acc[7]);
    } else {
      Element* dst = p.o + t.b * p.o_batch_stride + sp * p.o_seq_stride + h * p.o_head_stride + ch;
      CUTE_UNROLL
      for (int k = 0; k < 8; k += 2) *reinterpret_cast<uint32_t*>(dst + k) = pack_pair<Element>(acc[k], acc[k + 1]);
    }
  }
}

// merge_and_store for Oᵀ: the row sums over the 8 lanes g, then each warp's rows 2c, 2c + 1 into
// merge_area in merge_and_store's layout. Maps::o_channel: the channel of register e of m-tile mt
// in lane g (Int8SwapMaps; the 16-bit swap row's Kv16SwapMaps).
template <class Traits, class Maps = Int8SwapMaps>
CUTE_DEVICE void merge_and_store_swap(typename Traits::Params const& p, float* merge_area, float (&o)[8][4],
                                      float (&m_run)[2], float (&l_run)[2], int len, int warp, int lane) {
  constexpr int kStride = Traits::kMergeStride;
  const int g = lane / 4, c = lane % 4;
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 4);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 8);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 16);
  }
  merge_through_shared<Traits>(p, merge_area, len, [&](float* merge_o, float* merge_ml) {
    CUTE_UNROLL
    for (int r = 0; r < 2; ++r) {
      const int row = warp * 16 + int8_swap_row(r, c);
      CUTE_UNROLL
      for (int mt = 0; mt < 8; ++mt)
        CUTE_UNROLL
        for (int e = r; e < 4; e += 2) merge_o[row * kStride + Maps::o_channel(mt, e, g)] = o[mt][e];
      if (g == 0) merge_ml[row * 2] = m_run[r], merge_ml[row * 2 + 1] = l_run[r];
    }
  });
}

}  // namespace int8_mma_detail
}  // namespace hopattn::attention
