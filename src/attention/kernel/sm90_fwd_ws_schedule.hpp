// The warp-specialized forward kernels' schedule (sm90_fwd_ws.hpp): which tiles a CTA takes
// (FwdTileScheduler over the padded orders of fwd_tile_order.hpp or a variable-length batch's
// list, fwd_varlen.hpp), the mask and KV-tile range of each tile, and where a tile's sequence
// starts in the TMA views. Device code only; no shared memory or barrier is touched here.
#pragma once

#include <cute/config.hpp>
#include <cute/arch/copy_sm90_desc.hpp>  // cute::TmaDescriptor (CUtensorMap)

#include <type_traits>

#include "attention/collective/sm90_warp_uniform.hpp"
#include "attention/fwd_tile_order.hpp"
#include "attention/fwd_varlen.hpp"

namespace hopattn::attention::ws {

struct TileCoord {
  int m_block, h, b;
  bool valid = true;  // false: a position of the folded order that holds no tile (skipped)
  // Variable-length batches (the options kernels, FwdTileScheduler::varlen): the tile's sequence,
  // its lengths and its first rows in the packed tensors. Unset (and unread) for padded calls.
  int len_q = 0, len_k = 0, q_offset = 0, k_offset = 0;
};

// A tile's coordinates as warp-uniform (warp_uniform, collective/sm90_warp_uniform.hpp): the
// options kernels read their tiles from memory (a variable-length list, a unit ring, a KV-cache
// list), which ptxas cannot prove uniform, so their loops kept the ring positions in vector
// registers (an R2UR before every WGMMA, divergence barriers around the waits).
using attention::warp_uniform;
CUTE_DEVICE TileCoord warp_uniform(TileCoord c) {
  return {warp_uniform(c.m_block), warp_uniform(c.h),        warp_uniform(c.b),        warp_uniform(int(c.valid)) != 0,
          warp_uniform(c.len_q),   warp_uniform(c.len_k),    warp_uniform(c.q_offset), warp_uniform(c.k_offset)};
}

// The tile list and who takes which tile.
//  * Non-persistent: one tile per CTA, t = m + M·(h + H·b) from the CTA's coordinates (m = the
//    Q-tile index). With a causal mask the host launches a (group, m_blocks, groups) grid:
//    pair hb = blockIdx.z · gridDim.x + blockIdx.x, m = m_blocks − 1 − blockIdx.y. CTAs start in
//    linear order, so groups of gridDim.x (head, batch) pairs run one after another and inside
//    a group all pairs' longest Q tiles come first: the grid's last CTAs are the shortest tiles
//    instead of a mix, while a group's K/V (sized by the host to stay in L2,
//    fwd_causal_group) is shared by the CTAs in flight. A group of one pair is the per-pair
//    longest-first order of before 2026-11-30 r51. CTAs past the last pair have no tile.
//  * Persistent, no causal mask (uniform work): CTA i takes tiles i, i + G, i + 2G, ... (G =
//    gridDim.x); m varies fastest, so the CTAs in flight share one head's K/V in L2.
//  * Persistent, causal, group < 0 (the default): the folded order (fwd_tile_order.hpp): units of
//    two Q tiles, a pair's longest and shortest left (or two pairs' middle tiles), about equal
//    work each, dealt round-robin in pair-major order; a CTA takes a unit's longer tile first.
//  * Persistent, causal, group >= 0: the (head, batch) pairs in groups of `group` (fwd_tile_order.hpp: the
//    order, why groups, and the group sizes that make the dealing exactly balanced); inside a
//    group longest first (m slowest); dealt out in a zig-zag (round k: CTA i takes position i of
//    the round when k is even, G-1-i when odd), the classic static approximation of
//    longest-processing-time-first. A plain round-robin left CTAs with up to 1.5x the work of
//    others (measured: 0.75x of the non-persistent kernel).
//  * Variable-length batches (kVarlen kernels with a list: the options rows): the list that
//    fwd_varlen_prepare wrote, dealt as the folded order is (CTA i takes the list's pairs i,
//    i + G, ...); the list itself is folded per sequence, sequences with the costliest tiles first.
template <class Mask, bool kPersistent, bool kVarlen = false>
struct FwdTileScheduler {
  int m_blocks, heads, batch;
  int group = 0;  // persistent causal: < 0 the folded order; else pairs per group (0 or >= heads * batch: one)
  const FwdVarlenTile* varlen = nullptr;  // kVarlen: the tile list, or nullptr (a padded call)
  int varlen_count = 0;                   // its length
  CUTE_DEVICE bool is_varlen() const { return kVarlen && varlen != nullptr; }
  CUTE_DEVICE int count() const { return m_blocks * heads * batch; }
  CUTE_DEVICE bool folded() const { return kPersistent && Mask::kCausal && group < 0; }
  // Positions of the order: the tiles, or (folded) two per unit, some of which hold no tile.
  CUTE_DEVICE int end() const {
    if (is_varlen()) return varlen_count;
    return folded() ? int(folded_positions(m_blocks, heads * batch)) : count();
  }
  // This CTA's k-th position, or a value >= end() when it has no more (monotone in k).
  CUTE_DEVICE int tile(int k) const {
    if (is_varlen()) return folded_position(k, int(blockIdx.x), int(gridDim.x));
    if constexpr (!kPersistent) {
      if constexpr (Mask::kCausal)  // coord() reads the tile from blockIdx; any t < count()
        return k == 0 && int(blockIdx.z * gridDim.x + blockIdx.x) < heads * batch ? 0 : count();
      return k == 0 ? int(blockIdx.x) + m_blocks * (int(blockIdx.y) + heads * int(blockIdx.z)) : count();
    }
    const int g = int(gridDim.x), i = int(blockIdx.x);
    if (folded()) return folded_position(k, i, g);
    return Mask::kCausal ? zigzag_position(k, i, g) : k * g + i;
  }
  CUTE_DEVICE TileCoord coord(int t) const {
    if (is_varlen()) {  // two 16-byte loads, independent
      const int4 a = __ldg(reinterpret_cast<const int4*>(varlen + t));
      const int4 b = __ldg(reinterpret_cast<const int4*>(varlen + t) + 1);
      return {a.x, a.y, a.z, a.x >= 0, b.y, b.w, b.x, b.z};
    }
    if (folded()) {
      const FwdFoldedTile x = folded_causal_tile(t, m_blocks, heads * batch);
      return {x.m_block, x.hb % heads, x.hb / heads, x.valid};
    }
    if (kPersistent && Mask::kCausal) {  // by group; inside a group longest first (fwd_tile_order.hpp)
      const FwdTileIndex x = persistent_causal_tile(t, m_blocks, heads * batch, group);
      return {x.m_block, x.hb % heads, x.hb / heads};
    }
    if (!kPersistent && Mask::kCausal) {  // the grouped grid: (pair in group, m rank, group)
      const int hb = int(blockIdx.z * gridDim.x + blockIdx.x);
      return {m_blocks - 1 - int(blockIdx.y), hb % heads, hb / heads};
    }
    const int m = t % m_blocks, hb = t / m_blocks;
    return {m, hb % heads, hb / heads};
  }
};

// The mask of a kernel: with the options (a window) the call's band; without, causal's sides as
// compile-time zeros (the left side is not read: no plain kernel asks for n_block_min or the left
// edge), so that the plain kernels compile to 0.2's code.
template <class Mask, bool kOptions, class Params>
CUTE_DEVICE Mask kernel_mask(Params const& p) {
  return Mask{p.seqlen_q, p.seqlen_k, kOptions ? p.window_left : 0, kOptions ? p.window_right : 0};
}

// A Q tile's first KV tile (0 without the options) and its number of KV tiles.
template <class Traits, bool kOptions, class Mask>
CUTE_DEVICE int first_kv_block(Mask const& mask, int m_block) {
  if constexpr (kOptions) return mask.template n_block_min<Traits::kBlockM, Traits::kBlockN>(m_block);
  return 0;
}
template <class Traits, bool kOptions, class Mask>
CUTE_DEVICE int kv_block_count(Mask const& mask, int m_block) {
  if constexpr (kOptions) return mask.template n_block_count<Traits::kBlockM, Traits::kBlockN>(m_block);
  return mask.template n_block_max<Traits::kBlockM, Traits::kBlockN>(m_block);
}

// Whether a kernel reads KV-cache lists (the chunk path of hopattn_kvcache_attention,
// kvcache_check.cpp): the 16-bit options row of hdim 128, the only one the chunk path runs so far.
// The other options rows compile without that code (with it, hdim 64's and 256's spilled 4-8
// bytes more than they already do, ptxas 2026-12-06).
template <class Traits, bool kOptions>
inline constexpr bool kKvCacheLists = kOptions && Traits::kHeadDim == 128 && !Traits::kFp8;

// The parameters of the kernel that reads KV-cache lists (docs/chunk-packgqa-plan.md §1 (a′)): the
// forward's, and for a packed list (pack_group > 1) the packed Q load, its descriptor encoded on the
// host (fwd_packed_q.hpp: box (64, g, P, 1) over (hdim, heads_q, seqlen_q, batch); a kernel
// parameter, __grid_constant__, so the TMA unit may read it there) and the bytes a tile's four
// boxes bring (the producer's expect-tx). The other instances keep Traits::Params
// (ws_forward_kernel; the kKvCacheLists instance is ws_forward_kernel_kvlists).
template <class Traits>
struct KvListParams : Traits::Params {
  cute::TmaDescriptor packed_q;     // pack_group > 1 only
  uint32_t packed_q_tx_bytes;       // per Q tile (PackedQLoad::expect_tx_bytes)
  int pack_group, pack_positions;   // g (0: unpacked) and P, the positions of a box (a warpgroup's)
  // A paged cache (FwdParams::page_table; pages of at least kBlockN tokens, each KV tile in one
  // page): tma_k / tma_v view the pools end-aligned per page (paged_kv_origin); nullptr: contiguous.
  const int32_t* page_table = nullptr;
  int pt_batch_stride = 0;  // int: the producer's arithmetic stays 32-bit (its 24 registers)
  int page_shift = 0, num_pages = 0;
};

// A paged cache's KV tile from key `key0` (a multiple of kBlockN, below len) of a sequence of
// `len` keys whose page-table row starts at entry `row` of `table`: the pool (num_pages · page_size tokens) is viewed as
// the contiguous cache is (fwd_gmem_end_aligned, sm90_fwd_launch.hpp), page P holding page_size
// "sequence" rows, so that with v = the page's keys below len, row r of page P is (page_size - v
// + r, ., h, P · page_size + v) and the TMA clips the rows r >= v: keys past the sequence's end in
// its last page load as zeros, whatever the page holds there (NaN included), as the contiguous
// cache's rows past its length do. The tile's origin (row, outer) in that view.
struct PagedKvOrigin {
  int row, outer;
};
CUTE_DEVICE PagedKvOrigin paged_kv_origin(const int32_t* table, int row, int page_shift, int len, int key0) {
  const int page_size = 1 << page_shift, in_page = key0 & (page_size - 1);
  const int page = __ldg(table + (row + (key0 >> page_shift)));
  const int valid = min(page_size, len - (key0 - in_page));
  return {page_size - valid + in_page, page * page_size + valid};
}
template <class Traits, bool kOptions>
using WsKernelParams = std::conditional_t<kKvCacheLists<Traits, kOptions>, KvListParams<Traits>, typename Traits::Params>;

// Whether tile parameters p describe a packed list (a compile-time false for the other instances).
template <class Traits, bool kOptions, class Params>
CUTE_DEVICE bool packed_list(Params const& p) {
  if constexpr (kKvCacheLists<Traits, kOptions> && std::is_same_v<Params, KvListParams<Traits>>) return p.pack_group > 1;
  else return false;
}

// A KV-cache list's entry t: its KV range (first tile, tile count: its split's share of its Q
// tile's) and split index, which the prepare kernel computed (fwd_varlen.hpp, "KV-cache lists"):
// the producer and the consumers read the same values, and the producer divides nothing (a
// division there made the options kernel spill 8 bytes at its 24 registers, ptxas 2026-12-06).
struct ListKvRange {
  int n_first, n_blocks, split;
};
template <class Params>
CUTE_DEVICE ListKvRange list_kv_range(Params const& p, int t) {
  const int4 r = __ldg(reinterpret_cast<const int4*>(p.varlen_ranges) + t);
  return {r.x, r.y, r.z};
}

// The mask of tile c: the kernel's, or for a variable-length batch its sequence's lengths. The
// window's sides stay the call's (an unbounded side clamped to max_seqlen_k / max_seqlen_q by the
// host, which reaches every key of every sequence just as well), so that they stay parameters
// ptxas need not hold in registers.
template <bool kOptions, class Mask, class Sched>
CUTE_DEVICE Mask tile_mask(Mask const& mask, Sched const& sched, TileCoord const& c) {
  if constexpr (kOptions) {
    if (sched.is_varlen()) {
      Mask m = mask;
      m.seqlen_q = c.len_q;
      m.seqlen_k = c.len_k;
      return m;
    }
  }
  return mask;
}

// Where a tile's sequence starts in the TMA views, as (row, batch) coordinates of its row 0: (0, b)
// for a padded call; for a variable-length batch the views are end-aligned (make_fwd_params:
// (max_len, hdim, heads, total + 1) over base - max_len rows, rows and batch both stepping one
// token), so row r of a sequence of len rows at offset off is (max_len - len + r, off + len), and
// the TMA unit clips the rows r >= len at the view's end.
struct SeqOrigin {
  int row, batch;
};
template <class Sched>
CUTE_DEVICE SeqOrigin q_origin(Sched const& sched, TileCoord const& c, int max_len_q) {
  if (sched.is_varlen()) return {max_len_q - c.len_q, c.q_offset + c.len_q};
  return {0, c.b};
}
template <class Sched>
CUTE_DEVICE SeqOrigin k_origin(Sched const& sched, TileCoord const& c, int max_len_k) {
  if (sched.is_varlen()) return {max_len_k - c.len_k, c.k_offset + c.len_k};
  return {0, c.b};
}

}  // namespace hopattn::attention::ws
