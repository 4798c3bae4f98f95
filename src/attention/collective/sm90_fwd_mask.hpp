// Masks as policy types with the same hooks, so one mainloop serves every mask.
//
//   n_block_max(m_block): how many KV tiles the Q tile m_block visits (tiles past it are fully
//                         masked and skipped).
//   needs_mask(m_block, n_block): whether a tile crosses a boundary and must be masked
//                         element-wise (the diagonal for causal, the ragged end of seqlen_k).
//   apply(...):           sets masked scores to -inf.
//
// Causal is bottom-right aligned: query row i sees key j iff j <= i + seqlen_k - seqlen_q.
#pragma once

#include <cute/tensor.hpp>

#include "attention/collective/sm90_fwd_fragment_layouts.hpp"

namespace hopattn::attention {

template <bool kCausal_>
struct FwdMask {
  static constexpr bool kCausal = kCausal_;
  int seqlen_q, seqlen_k;

  // How many KV tiles the rows of Q tile m_block before row_end (a row of the tile) visit: the
  // tiles up to the last key the last of those rows sees.
  template <int kBlockM, int kBlockN>
  CUTE_DEVICE int n_blocks_seen(int m_block, int row_end) const {
    int keys = seqlen_k;
    if constexpr (kCausal) keys = min(seqlen_k, m_block * kBlockM + row_end + seqlen_k - seqlen_q);
    return keys <= 0 ? 0 : (keys + kBlockN - 1) / kBlockN;
  }

  template <int kBlockM, int kBlockN>
  CUTE_DEVICE int n_block_max(int m_block) const {
    return n_blocks_seen<kBlockM, kBlockN>(m_block, kBlockM);
  }

  template <int kBlockM, int kBlockN>
  CUTE_DEVICE bool needs_mask(int m_block, int n_block) const {
    const int col_end = (n_block + 1) * kBlockN;  // one past the tile's last column
    bool ragged = col_end > seqlen_k;
    if constexpr (kCausal) ragged |= col_end - 1 > m_block * kBlockM + seqlen_k - seqlen_q;
    return ragged;
  }

  // How many leading columns of KV tile n_block some row of Q tile m_block before row_end (a row
  // of the tile) can see: 0 … kBlockN. Every one of those rows has the columns past it masked,
  // so a consumer warpgroup that owns the rows may leave them out of its GEMMs.
  template <int kBlockM, int kBlockN>
  CUTE_DEVICE int visible_cols(int m_block, int n_block, int row_end) const {
    int limit = seqlen_k;  // the first column masked for the last of those rows
    if constexpr (kCausal) limit = min(seqlen_k, m_block * kBlockM + row_end + seqlen_k - seqlen_q);
    return max(0, min(kBlockN, limit - n_block * kBlockN));
  }

  // tSrS: the thread's S accumulator; tScS: the same partition of an identity tensor over the
  // (kBlockM, kBlockN) tile, giving each value's (row, col) within the tile.
  template <int kBlockM, int kBlockN, class TensorS, class TensorC>
  CUTE_DEVICE void apply(TensorS& tSrS, TensorC const& tScS, int m_block, int n_block) const {
    auto s = acc_rowcol(tSrS);
    auto c = acc_rowcol(tScS);
    const int diag = seqlen_k - seqlen_q;
    CUTE_UNROLL
    for (int r = 0; r < cute::size<0>(s); ++r) {
      const int row = m_block * kBlockM + cute::get<0>(c(r, 0));
      const int limit = kCausal ? min(seqlen_k, row + diag + 1) : seqlen_k;  // first masked column
      CUTE_UNROLL
      for (int j = 0; j < cute::size<1>(s); ++j) {
        const int col = n_block * kBlockN + cute::get<1>(c(r, j));
        if (col >= limit) s(r, j) = -INFINITY;
      }
    }
  }
};

using NoCausalMask = FwdMask<false>;
using CausalMask = FwdMask<true>;

}  // namespace hopattn::attention
