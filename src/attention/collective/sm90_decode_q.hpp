// The decode kernels' Q tile: the CTA's packed query rows gathered from global memory (rows of
// several query heads are not one TMA box) into the swizzled shared-memory tile that WGMMA reads.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on

#include "attention/collective/sm90_decode_tile.hpp"

namespace hopattn::attention {

// The CTA's 64 query rows (kRows: the int8 swapped consumer's 16) from global memory (rows of
// several heads are not one TMA box) into the swizzled tile WGMMA reads, zeros past the last row.
// The caller fences (fence.proxy.async) and synchronises.
template <class Traits, class TensorQ, int kRows = Traits::kBlockM>
CUTE_DEVICE void gather_q(typename Traits::Params const& p, DecodeTile const& t, TensorQ& sQ, int thread, int threads) {
  constexpr int kChunks = Traits::kHeadDim / 8;  // 16-byte chunks per row
  for (int i = thread; i < kRows * kChunks; i += threads) {
    const int r = i / kChunks, c = (i % kChunks) * 8;
    const int row = t.row0 + r;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (row < t.rows)
      val = *reinterpret_cast<const uint4*>(p.q + t.b * p.q_batch_stride + t.pos(row) * p.q_seq_stride +
                                            t.head(row) * p.q_head_stride + c);
    *reinterpret_cast<uint4*>(&sQ(r, c)) = val;  // 8 consecutive elements stay contiguous under SW128
  }
}

// gather_q in two halves: the loads into registers, issued at kernel entry so that they reach
// the memory system ahead of the CTA's first K/V TMA tiles (issued after them, the 2 KB of Q
// queued behind ~25 MB of TMA requests from every SM and arrived ~5 us later: decode_timeline,
// 2026-11-30 r38), and the stores into the swizzled tile once the loads are issued.
template <class Traits, int kRows = Traits::kBlockM>
struct QRegisters {
  static constexpr int kChunks = Traits::kHeadDim / 8;  // 16-byte chunks per row
  static constexpr int kPer = kRows * kChunks / Traits::kThreads;
  static_assert(kPer * Traits::kThreads == kRows * kChunks, "the chunks divide over the threads");
  uint4 v[kPer];

  CUTE_DEVICE void load(typename Traits::Params const& p, DecodeTile const& t, int thread) {
    CUTE_UNROLL
    for (int k = 0; k < kPer; ++k) {
      const int i = thread + k * Traits::kThreads;
      const int row = t.row0 + i / kChunks, c = (i % kChunks) * 8;
      v[k] = make_uint4(0, 0, 0, 0);
      if (row < t.rows)
        v[k] = *reinterpret_cast<const uint4*>(p.q + t.b * p.q_batch_stride + t.pos(row) * p.q_seq_stride +
                                               t.head(row) * p.q_head_stride + c);
    }
  }
  template <class TensorQ>
  CUTE_DEVICE void store(TensorQ& sQ, int thread) const {
    CUTE_UNROLL
    for (int k = 0; k < kPer; ++k) {
      const int i = thread + k * Traits::kThreads;
      *reinterpret_cast<uint4*>(&sQ(i / kChunks, (i % kChunks) * 8)) = v[k];
    }
  }
};

}  // namespace hopattn::attention
