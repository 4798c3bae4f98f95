// The warp-specialized forward kernel's (sm90_fwd_ws.hpp) pieces for packed KV-cache lists
// (PackGQA on the chunk path, docs/chunk-packgqa-plan.md): the packed Q tile's TMA load, the
// packed rows' masks, and mask_block, which applies a tile's mask with or without packing.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>

#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/collective/sm90_fwd_mask.hpp"
#include "attention/kernel/sm90_fwd_ws_schedule.hpp"
#include "attention/kernel/sm90_fwd_ws_storage.hpp"

namespace hopattn::attention::ws {

// A packed KV-cache list's Q tile (docs/chunk-packgqa-plan.md §1 (a′)): 4 boxes (64 channels, g
// heads, P positions, 1) of the host-encoded descriptor KvListParams::packed_q, one per (consumer
// warpgroup w, 64-channel half k), each into warpgroup w's 64-row slot of half k of SmemLayoutQ
// (SW128 K-major: the slot's g · P rows of 128 bytes in a row, box row = position · g + head, as
// the TMA unit writes a box; rows g · P .. 63 keep what they held and are masked, never stored);
// coordinates (64 k, h_kv · g, p0 + w · P, b), p0 = m_block · 2P. Positions past seqlen_q (a
// box wholly or partly past it) read zeros: the descriptor's dims are q's own, and the
// transaction bytes are the whole boxes' (packed_q_tx_bytes, from the host) either way.
template <class Traits>
CUTE_DEVICE void load_packed_q(KvListParams<Traits> const& p, uint64_t* q_full, typename Traits::Element* sq,
                               int m_block, int h, int b) {
  using namespace cute;
  static_assert(Traits::kHeadDim == 128 && Traits::kBlockM == 128 && Traits::kWarpgroups == 2,
                "the packed Q load: 2 warpgroups x 2 halves of 64 channels");
  using SmemLayoutQ = typename Traits::SmemLayoutQ;
  FullBarrier::arrive_and_expect_tx(q_full, p.packed_q_tx_bytes);
  const int positions = p.pack_positions;
  const int p0 = m_block * 2 * positions;
  CUTE_UNROLL
  for (int w = 0; w < 2; ++w) {
    CUTE_UNROLL
    for (int k = 0; k < 2; ++k) {
      // The slot's first element (row 64 w, column 64 k): its 64 rows x 64 columns are contiguous
      // (8 KB, 1024-byte aligned) in the tiled SW128 layout.
      SM90_TMA_LOAD_4D::copy(&p.packed_q, q_full, uint64_t(TMA::CacheHintSm90::EVICT_NORMAL),
                             sq + SmemLayoutQ{}(64 * w, 64 * k), 64 * k, h, p0 + w * positions, b);
    }
  }
}

// A packed KV-cache list's tile mask (docs/chunk-packgqa-plan.md §2): row m_block · kBlockM + r
// of the tile-level hooks maps to position p0 + r (p0 = m_block · 2P, the tile's first position),
// so needs_mask stays exact (its first row is the tile's first position) and n_blocks_seen /
// visible_cols over-estimate (rows of warpgroup w hold positions below p0 + (w + 1) · P): correct,
// fewer blocks skipped and P·V narrowed less. Unchanged for the other tiles and instances.
template <class Traits, bool kOptions, class Mask, class Params>
CUTE_DEVICE Mask packed_tile_mask(Params const& p, Mask const& tmask, int m_block) {
  if constexpr (kKvCacheLists<Traits, kOptions>) {
    if (packed_list<Traits, kOptions>(p)) {
      Mask m = tmask;
      m.seqlen_q += m_block * (Traits::kBlockM - (Traits::kBlockM / kPackRowsPerWarpgroup) * p.pack_positions);
      return m;
    }
  }
  return tmask;
}

// The element-wise mask of a packed tile's KV block n_block (tmask: packed_tile_mask's): each row's
// own position (packed_row) — row r sees keys up to p0 + position + diag + window_right — and
// every key masked for a row that holds nothing (l >= g · P) or a position at or past seqlen_q, so
// such rows stay finite (max -inf: O 0, LSE -inf; they are never stored). No left edge: the chunk
// path's window_left (kvcache_chunk_window_left) is past every key.
template <class Traits, class Mask, class Params, class TensorS, class TensorC>
CUTE_DEVICE void apply_packed_mask(Params const& p, Mask const& tmask, TensorS& tSrS, TensorC const& tScS, int m_block,
                                   int n_block) {
  using namespace cute;
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN;
  auto s = acc_rowcol(tSrS);
  auto c = acc_rowcol(tScS);
  const int first = m_block * (kBlockM / kPackRowsPerWarpgroup) * p.pack_positions;  // p0
  const int first_key = m_block * kBlockM + tmask.diag();  // p0's key position (tmask is offset)
  CUTE_UNROLL
  for (int r = 0; r < size<0>(s); ++r) {
    const PackedRow pr = packed_row(get<0>(c(r, 0)), p.pack_group, p.pack_positions);
    int limit = 0;  // the first masked column: every one for a row without a query
    if (pr.used && first + pr.position < p.seqlen_q)
      limit = Mask::kCausal ? min(tmask.seqlen_k, first_key + pr.position + tmask.window_right + 1) : tmask.seqlen_k;
    CUTE_UNROLL
    for (int j = 0; j < size<1>(s); ++j) {
      const int col = n_block * kBlockN + get<1>(c(r, j));
      if (col >= limit) s(r, j) = -INFINITY;
    }
  }
}

// The right-edge mask of KV block n (consume_tile): the mask's own, or for a packed tile
// apply_packed_mask on every block when the tile has rows without a query (g · P < 64, or
// positions past seqlen_q), else where the tile's first position needs it.
template <class Traits, bool kOptions, class Mask, class Params, class TensorS, class TensorC>
CUTE_DEVICE void mask_block(Params const& p, Mask const& mask, TensorS& tSrS, TensorC const& tScS, int m_block, int n) {
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN;
  if constexpr (kKvCacheLists<Traits, kOptions>) {
    if (packed_list<Traits, kOptions>(p)) {
      const int tile_positions = (kBlockM / kPackRowsPerWarpgroup) * p.pack_positions;
      const bool empty_rows = p.pack_group * p.pack_positions < kPackRowsPerWarpgroup ||
                              (m_block + 1) * tile_positions > p.seqlen_q;
      if (empty_rows || mask.template needs_mask<kBlockM, kBlockN>(m_block, n))
        apply_packed_mask<Traits>(p, mask, tSrS, tScS, m_block, n);
      return;
    }
  }
  if (mask.template needs_mask<kBlockM, kBlockN>(m_block, n)) mask.template apply<kBlockM, kBlockN>(tSrS, tScS, m_block, n);
}

}  // namespace hopattn::attention::ws
