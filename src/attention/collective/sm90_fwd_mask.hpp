// Masks as policy types with the same hooks, so one mainloop serves every mask.
//
//   n_block_min(m_block): the first KV tile the Q tile m_block visits (tiles before it are left
//                         of every row's window and skipped).
//   n_block_max(m_block): one past the last KV tile it visits (tiles past it are right of every
//                         row's window, or past seqlen_k, and skipped).
//   needs_mask(m_block, n_block): whether a tile crosses the band's right edge (the diagonal for
//                         causal) or the ragged end of seqlen_k, and must be masked element-wise;
//   apply(...):           sets those masked scores to -inf.
//   needs_left_mask / apply_left: the same for the window's left edge. Apart, so that a tile
//                         crossing one edge tests one bound per score: one apply() testing both
//                         made ptxas spill 208 bytes in ws_pingpong_128x192x2 and 140 in the hdim-64
//                         192-row persistent kernel (-warn-spills; none as two).
//
// FwdMask<false>: no mask but seqlen_k's end. FwdMask<true>, the band: query row i, at key
// position p = i + seqlen_k - seqlen_q (bottom-right aligned), sees key j iff
// p - window_left <= j <= p + window_right. Causal is the band (unbounded, 0); a sliding window
// sets either side (FwdParams: a side left unbounded is clamped to a width that reaches every key,
// so the arithmetic here stays within int).
#pragma once

#include <cute/tensor.hpp>

#include "attention/collective/sm90_fwd_fragment_layouts.hpp"

namespace hopattn::attention {

template <bool kCausal_>
struct FwdMask {
  static constexpr bool kCausal = kCausal_;  // the band kernels (causal, sliding windows)
  int seqlen_q, seqlen_k;
  int window_left = 0;   // band only: keys before the row's position it sees (clamped, >= 0)
  int window_right = 0;  // band only: keys after it (0: causal)

  CUTE_DEVICE int diag() const { return seqlen_k - seqlen_q; }

  // The first KV tile some row of Q tile m_block sees (0 without a left window edge).
  template <int kBlockM, int kBlockN>
  CUTE_DEVICE int n_block_min(int m_block) const {
    if constexpr (!kCausal) return 0;
    const int first = m_block * kBlockM + diag() - window_left;  // the first row's first key
    return first <= 0 ? 0 : first / kBlockN;
  }

  // How many KV tiles, counted from tile 0, the rows of Q tile m_block before row_end (a row of
  // the tile) visit: the tiles up to the last key the last of those rows sees.
  template <int kBlockM, int kBlockN>
  CUTE_DEVICE int n_blocks_seen(int m_block, int row_end) const {
    int keys = seqlen_k;
    if constexpr (kCausal) keys = min(seqlen_k, m_block * kBlockM + row_end + diag() + window_right);
    return keys <= 0 ? 0 : (keys + kBlockN - 1) / kBlockN;
  }

  template <int kBlockM, int kBlockN>
  CUTE_DEVICE int n_block_max(int m_block) const {
    return n_blocks_seen<kBlockM, kBlockN>(m_block, kBlockM);
  }

  // The tiles Q tile m_block visits: n_block_max - n_block_min, or 0.
  template <int kBlockM, int kBlockN>
  CUTE_DEVICE int n_block_count(int m_block) const {
    return max(0, n_block_max<kBlockM, kBlockN>(m_block) - n_block_min<kBlockM, kBlockN>(m_block));
  }

  template <int kBlockM, int kBlockN>
  CUTE_DEVICE bool needs_mask(int m_block, int n_block) const {
    const int col_end = (n_block + 1) * kBlockN;  // one past the tile's last column
    bool ragged = col_end > seqlen_k;
    if constexpr (kCausal) {
      ragged |= col_end - 1 > m_block * kBlockM + diag() + window_right;          // right edge, first row
    }
    return ragged;
  }

  // How many leading columns of KV tile n_block some row of Q tile m_block before row_end (a row
  // of the tile) can see: 0 … kBlockN. Every one of those rows has the columns past it masked,
  // so a consumer warpgroup that owns the rows may leave them out of its GEMMs.
  template <int kBlockM, int kBlockN>
  CUTE_DEVICE int visible_cols(int m_block, int n_block, int row_end) const {
    int limit = seqlen_k;  // the first column masked for the last of those rows
    if constexpr (kCausal) limit = min(seqlen_k, m_block * kBlockM + row_end + diag() + window_right);
    return max(0, min(kBlockN, limit - n_block * kBlockN));
  }

  // tSrS: the thread's S accumulator; tScS: the same partition of an identity tensor over the
  // (kBlockM, kBlockN) tile, giving each value's (row, col) within the tile.
  template <int kBlockM, int kBlockN, class TensorS, class TensorC>
  CUTE_DEVICE void apply(TensorS& tSrS, TensorC const& tScS, int m_block, int n_block) const {
    auto s = acc_rowcol(tSrS);
    auto c = acc_rowcol(tScS);
    CUTE_UNROLL
    for (int r = 0; r < cute::size<0>(s); ++r) {
      const int pos = m_block * kBlockM + cute::get<0>(c(r, 0)) + diag();  // the row's key position
      const int limit = kCausal ? min(seqlen_k, pos + window_right + 1) : seqlen_k;  // first masked column
      CUTE_UNROLL
      for (int j = 0; j < cute::size<1>(s); ++j) {
        const int col = n_block * kBlockN + cute::get<1>(c(r, j));
        if (col >= limit) s(r, j) = -INFINITY;
      }
    }
  }

  // Whether KV tile n_block crosses the window's left edge for some row of Q tile m_block.
  template <int kBlockM, int kBlockN>
  CUTE_DEVICE bool needs_left_mask(int m_block, int n_block) const {
    return kCausal && n_block * kBlockN < m_block * kBlockM + kBlockM - 1 + diag() - window_left;
  }
  template <int kBlockM, int kBlockN, class TensorS, class TensorC>
  CUTE_DEVICE void apply_left(TensorS& tSrS, TensorC const& tScS, int m_block, int n_block) const {
    auto s = acc_rowcol(tSrS);
    auto c = acc_rowcol(tScS);
    CUTE_UNROLL
    for (int r = 0; r < cute::size<0>(s); ++r) {
      const int first = m_block * kBlockM + cute::get<0>(c(r, 0)) + diag() - window_left;  // first visible column
      CUTE_UNROLL
      for (int j = 0; j < cute::size<1>(s); ++j) {
        const int col = n_block * kBlockN + cute::get<1>(c(r, j));
        if (col < first) s(r, j) = -INFINITY;
      }
    }
  }
};

using NoCausalMask = FwdMask<false>;
using CausalMask = FwdMask<true>;

}  // namespace hopattn::attention
