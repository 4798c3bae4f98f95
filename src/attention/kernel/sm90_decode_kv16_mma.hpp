// Decode over a 16-bit KV cache with mma.sync, the keys as the mma's M (registry row
// kv16_mma_swap_8w_1cta, id 25; the default of the plain calls it takes: decode_defaults.cpp). hdim 128, at
// most 8 packed query rows a row group (the plan refuses more), contiguous or paged caches, no
// window, softcap or sinks (refused with the reason: DecodeKernelSpec::max_rows, limits).
//
// Why: at 64:8 or 32:8 with q_len 1 a row group has 4-8 query rows, and the WGMMA kernel
// (kv16_split_1cta, kernel/sm90_decode.hpp) spends a 64-row tile on them: 87.5 % of its tensor
// work and softmax on padding, 15.5 µs at 1 × 8k (64:8) where cuDNN takes 11.0 (H100, 2026-12-07).
// The int8 cache's kv8_mma_swap_8w_1cta (kernel/sm90_decode_int8_mma.hpp) put the rows on the
// mma's N = 8 and ran 11.8 µs there though it dequantizes. This is that kernel without the
// dequantization: Sᵀ = K·Qᵀ (M = 16 keys, N = 8 rows, K = 16 channels) and Oᵀ = Vᵀ·Pᵀ (M = 16
// channels, K = 16 keys), fp32 accumulators, K's and Vᵀ's A fragments by ldmatrix (.trans for V)
// from the swizzled TMA slots, Pᵀ's B fragment from Sᵀ's registers by movmatrix. 11.4 µs there
// (H100, 2026-12-08; 0.97x cuDNN; docs/decode.md "Measured").
//
// Roles: 8 warps (256 threads, up to 255 registers, one CTA per SM: 192 KB of shared memory),
// no producer. Warp w takes the CTA's key tiles w, w + 8, ... (64 keys each) and loads them
// itself into a private ring of three 8 KB slots (64 keys × 64 channels: half a K or V tile).
// Items in the order the warp reads them: K_lo, K_hi, V_lo, V_hi (channels 0-63, 64-127) of its
// tile 0, then of tile 1, ...; item j lies in the warp's slot j % 3.
// Barriers: full[slot] (24), one arrival (lane 0's arrive.expect_tx of the item's bytes) plus the
// TMA's bytes; the warp's lanes wait on them. No empty barriers: a warp refills only a slot it has
// read (__syncwarp after its reads, the issuing lanes' proxy fence, then the TMA), so no warp waits
// for another. Named barrier kConsumersQ (256 threads): the merge's two steps (merge_through_shared).
// Per warp and tile k (its tile n = n_begin + w + 8k):
//   wait K_lo -> Sᵀ steps 0-3 -> issue item j + 3 (V_hi of tile k) into K_lo's slot;
//   wait K_hi -> Sᵀ steps 4-7 -> issue K_lo of tile k + 1;
//   mask, online softmax (rows 2c, 2c + 1; maxima over the 8 lanes g), Oᵀ rescaled, P to Element;
//   wait V_lo -> (the tile holding the cache's end: V rows past it zeroed) -> Oᵀ m-tiles 0-3 ->
//   issue K_hi of tile k + 1; wait V_hi -> the same for m-tiles 4-7 -> issue V_lo of tile k + 1.
// End: each warp's (max, sum, Oᵀ) merged over the warps by log-sum-exp weights through the free
// ring, then O (output type) or the split's fp32 partial and LSE (merge_and_store_swap, the int8
// swap rows' code with this kernel's maps).
// A paged cache (kPaged; pages of 16-256 keys): the TMA views the pool (page_size, d, heads_kv,
// num_pages). Pages of at least 64 keys hold whole tiles: an item is the same 64 × 64 box, from
// tile (n·64 mod page_size) / 64 of page page_table[b][n·64 / page_size]. Pages of 16 and 32: an
// item is four 16-key boxes of its 64 channels, lane j issuing box j (keys n·64 + 16j ..) from its
// own page into rows 16j .. of the slot; the boxes wholly past key_hi (the last key any row sees)
// are neither loaded nor expected, and their page-table entries never read (their slot rows: K's
// scores masked, V's zeroed, as the rows past the cache's end of a whole tile). Page ids: the
// issuing lanes hold their box's id of the warp's tiles k and k + 1 (the refills of tile k's loop
// read those) in registers, and load tile k + 2's at the top of tile k, so that a refill never
// waits for a global load (its latency under a tile of math). At entry every thread checks a share
// of the ids the CTA reads (cta_pages_in_pool); one outside the pool gives the CTA no tiles and
// NaN rows (merge length -1) and is recorded ({6, b, id}), as in the other decode kernels: a bad
// id never reaches a TMA coordinate. The contiguous instance carries none of this (kPaged is a
// template parameter): its per-tile path is the unpaged kernel's SASS, register names aside (2,200
// instructions either way: one more in the cache-end tile's V-row zeroing, one padding NOP fewer).
// The paged one: 137 registers (129), a predicated page-table load per tile, and with small pages
// four box TMAs an item (one waterfall loop over the issuing lanes' coordinates).
// Entry: launched as a programmatic dependent (DecodeParams::split_pdl) like kv16_split_*: the
// barriers are initialised and the descriptors prefetched before griddepcontrol.wait; nothing in
// global memory is read or written before it. Bad lengths (record_bad_length, NaN rows) and the
// masks are the other decode kernels': DecodeTile. Rows past the cache's end may hold NaN: their
// scores are masked to -inf (P exactly 0) and their V rows zeroed in the slot (0 · NaN is NaN).
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>

#include <cstdint>

#include "attention/collective/sm90_decode_int8_mma_merge.hpp"  // merge_and_store_swap
#include "attention/collective/sm90_decode_int8_mma_ptx.hpp"    // smem_u32
#include "attention/collective/sm90_decode_int8_mma_swap.hpp"   // online_softmax_swap, rescale_o_swap
#include "attention/collective/sm90_decode_kv16_mma_swap.hpp"
#include "attention/collective/sm90_decode_kv16_mma_traits.hpp"
#include "attention/collective/sm90_decode_tile.hpp"

namespace hopattn::attention {
namespace kv16_mma_detail {

// Item `part` (0 K_lo, 1 K_hi, 2 V_lo, 3 V_hi) of key tile `tile` of `outer` in KV head h_kv into
// ring slot `slot` at `smem`, onto `bar`: `outer` a sequence of the cache (cache_rows, d,
// heads_kv, batch), or a page of the pool (page_size, d, heads_kv, num_pages); `outers` the view's
// last extent. Lane 0 only; the caller orders the slot's reads before it.
template <class Traits>
CUTE_DEVICE void issue_item(typename Traits::Params const& p, uint64_t& bar, int h_kv, int outer, int outers, int tile,
                            int part, int slot, typename Traits::Element* smem) {
  using namespace cute;
  using Box = Shape<typename Traits::BlockN, typename Traits::SlotChannels>;
  Tensor sKV = make_tensor(make_smem_ptr(smem), typename Traits::SmemLayoutKV{});  // (BLK_N, 64, SLOT)
  const auto shape = make_shape(max(p.cache_rows, 1), Int<Traits::kHeadDim>{}, p.heads_kv, outers);
  auto const& tma = part < 2 ? p.tma_k : p.tma_v;
  Tensor g = local_tile(tma.get_tma_tensor(shape)(_, _, h_kv, outer), Box{}, make_coord(_, _));  // (BLK_N, 64, n, half)
  auto parts = tma_partition(tma, _0{}, Layout<_1>{}, group_modes<0, 2>(sKV), group_modes<0, 2>(g));
  cutlass::arch::fence_view_async_shared();
  cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&bar, Traits::kSlotBytes);
  copy(tma.with(bar), get<0>(parts)(_, tile, part % 2), get<1>(parts)(_, slot));
}

// A pool of pages smaller than the tile: the channels of item `part` of 16-key box `box` of page
// `page` (its keys 16·box ..) into rows 16·row_box .. of ring slot `slot`, onto `bar`. Called by
// the lane that issues the box, after lane 0 expected the item's bytes (so that no box can land
// before the count it completes).
template <class Traits>
CUTE_DEVICE void issue_page_box(typename Traits::Params const& p, uint64_t& bar, int h_kv, int page, int box, int part,
                                int row_box, int slot, typename Traits::Element* smem) {
  using namespace cute;
  using Box = Shape<typename Traits::PageBox, typename Traits::SlotChannels>;
  Tensor sKV = make_tensor(make_smem_ptr(smem), typename Traits::SmemLayoutKV{});  // (BLK_N, 64, SLOT)
  Tensor sB = local_tile(sKV(_, _, slot), Box{}, make_coord(row_box, _0{}));       // (16, 64)
  const auto shape = make_shape(max(p.cache_rows, 1), Int<Traits::kHeadDim>{}, p.heads_kv, max(p.num_pages, 1));
  auto const& tma = part < 2 ? p.tma_k_box : p.tma_v_box;
  Tensor g = local_tile(tma.get_tma_tensor(shape)(_, _, h_kv, page), Box{}, make_coord(_, _));  // (16, 64, box, half)
  auto parts = tma_partition(tma, _0{}, Layout<_1>{}, group_modes<0, 2>(sB), group_modes<0, 2>(g));
  cutlass::arch::fence_view_async_shared();
  copy(tma.with(bar), get<0>(parts)(_, box, part % 2), get<1>(parts));
}

// kPaged: item `part` of the warp's key tile n from the pool into ring slot `slot`, onto `bar`;
// `page`: the lane's page id (kv16_lane_page). Pages of at least the tile: lane 0, one box from
// tile (n·64 mod page_size) / 64 of the page. Smaller pages: lane 0 expects the bytes of the boxes
// below key_hi (the others are not loaded), then lanes 0-3 issue theirs. All lanes call it.
template <class Traits>
CUTE_DEVICE void issue_item_paged(typename Traits::Params const& p, uint64_t& bar, int h_kv, int n, int part, int slot,
                                  typename Traits::Element* smem, int page, int key_hi, bool small_pages, int lane) {
  constexpr int kBlockN = Traits::kBlockN, kBoxRows = Traits::kPageBoxRows;
  const int in_page = (1 << p.page_shift) - 1;  // a key's offset in its page: key & in_page
  if (!small_pages) {
    if (lane == 0)
      issue_item<Traits>(p, bar, h_kv, page, max(p.num_pages, 1), ((n * kBlockN) & in_page) / kBlockN, part, slot, smem);
    return;
  }
  if (lane == 0) {
    const int boxes = min(Traits::kPageBoxes, (key_hi - n * kBlockN + kBoxRows - 1) / kBoxRows);
    cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&bar, uint32_t(boxes) * Traits::kPageBoxBytes);
  }
  __syncwarp();
  if (page >= 0)
    issue_page_box<Traits>(p, bar, h_kv, page, ((n * kBlockN + lane * kBoxRows) & in_page) / kBoxRows, part, lane, slot, smem);
}

// kPaged: the page id of the lane's box of key tile n (its keys n·64 + 16·lane .. with pages
// smaller than the tile, lanes 0-3; the tile's page, lane 0, with larger ones), or -1 where the
// lane issues nothing: no tile (valid false), a lane past the boxes, a box wholly at or past
// key_hi (never loaded, its entry maybe past the sequence's pages: never read).
template <class Traits>
CUTE_DEVICE int kv16_lane_page(typename Traits::Params const& p, const int32_t* pages, int n, bool valid, int key_hi,
                               bool small_pages, int lane) {
  const int key = n * Traits::kBlockN + Traits::kPageBoxRows * lane;
  const bool issues = small_pages ? lane < Traits::kPageBoxes : lane == 0;
  return valid && issues && key < key_hi ? pages[key >> p.page_shift] : -1;
}

}  // namespace kv16_mma_detail

template <class Traits, bool kPaged = false>
__global__ void __launch_bounds__(Traits::kThreads, 1)
    decode_kv16_mma_warp_rings_kernel(CUTE_GRID_CONSTANT typename Traits::Params const p) {
  using namespace cute;
  using namespace kv16_mma_detail;
  using Element = typename Traits::Element;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kBlockN = Traits::kBlockN, kWarps = Traits::kWarps, kRing = Traits::kSlotsPerWarp;
  constexpr int kItems = Traits::kItemsPerTile, kSlotBytes = Traits::kSlotBytes;
  static_assert(kItems == 4 && kRing == 3, "the loop below reads K_lo, K_hi, V_lo, V_hi from a ring of three");

  extern __shared__ char smem_raw[];
  auto& ss = *reinterpret_cast<typename Traits::SharedStorage*>(smem_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;
  const bool small_pages = kPaged && (1 << p.page_shift) < kBlockN;  // 16-key boxes (issue_item_paged)

  if (threadIdx.x == 0) {  // before griddepcontrol.wait: overlaps the kernel before this one
    cute::prefetch_tma_descriptor(p.tma_k.get_tma_descriptor());
    cute::prefetch_tma_descriptor(p.tma_v.get_tma_descriptor());
    if (small_pages) {
      cute::prefetch_tma_descriptor(p.tma_k_box.get_tma_descriptor());
      cute::prefetch_tma_descriptor(p.tma_v_box.get_tma_descriptor());
    }
    for (int s = 0; s < Traits::kStages; ++s) Barrier::init(&ss.full[s], 1);
    cutlass::arch::fence_barrier_init();
  }
  DecodeTile t = DecodeTile::make_rows<typename Traits::Params, Traits::kTileRows>(p);
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int len = p.cache_seqlens[t.b];  // issued first, used after the Q loads are issued
  uint32_t qb[8][2];
  load_q_kv16<Traits>(p, t, g, c, qb);
  __syncthreads();  // the barriers are initialised
  t.set_length<typename Traits::Params, Traits::kTileRows, kBlockN>(p, len);
  if (t.bad && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) record_bad_length(p.error, t.b, t.len);
  // A paged cache: every page the CTA reads (its keys below key_hi) must be in the pool, else the
  // CTA takes no tile and writes NaN rows (the merge's length -1), the id recorded.
  const int32_t* pages = kPaged ? p.page_table + int64_t(t.b) * p.pt_batch_stride : nullptr;
  const bool bad_pages = kPaged && !t.bad && t.n_end > t.n_begin &&
                         !cta_pages_in_pool<Traits::kThreads>(p, pages, t.n_begin * kBlockN, min(t.n_end * kBlockN, t.key_hi), t.b);
  if (bad_pages) t.n_end = t.n_begin;
  const int n_blocks = t.n_end - t.n_begin;
  const int tiles = n_blocks > warp ? (n_blocks - warp + kWarps - 1) / kWarps : 0;  // this warp's: warp + kWarps·k
  const int items = kItems * tiles;
  const int n_first = t.n_begin + warp;

  // kPaged: the lane's page ids of the warp's tiles k and k + 1 (those the refills in tile k's
  // loop read), tiles 0 and 1's read together (one latency); tile k + 2's is loaded at the top of
  // tile k.
  auto lane_page = [&](int k) {
    return kv16_lane_page<Traits>(p, pages, n_first + kWarps * k, k < tiles, t.key_hi, small_pages, lane);
  };
  int page_cur = -1, page_next = -1;
  if constexpr (kPaged) page_cur = lane_page(0), page_next = lane_page(1);
  // Item j into slot kRing·warp + j % kRing (kPaged: from page `page`, the lane's id of its tile).
  // The warp read the slot's previous item before this call (its values are in registers,
  // consumed by an mma): __syncwarp orders every lane's reads before the issuing lanes' proxy
  // fence and TMA.
  auto issue = [&](int j, int page) {
    const int slot = kRing * warp + j % kRing, n = n_first + kWarps * (j / kItems);
    __syncwarp();
    if constexpr (kPaged)
      issue_item_paged<Traits>(p, ss.full[slot], t.h_kv, n, j % kItems, slot, ss.kv.data(), page, t.key_hi, small_pages, lane);
    else if (lane == 0)
      issue_item<Traits>(p, ss.full[slot], t.h_kv, t.b, p.batch, n, j % kItems, slot, ss.kv.data());
  };
  CUTE_NO_UNROLL
  for (int j = 0; j < min(kRing, items); ++j) issue(j, page_cur);  // tile 0's K_lo, K_hi, V_lo

  // The lane's ldmatrix offsets (kv16_k_ldsm_offset, kv16_v_ldsm_offset): m-tile mt of K and k16
  // step sp of V add 2 KB each.
  uint32_t k_off[4], v_off[4];
  CUTE_UNROLL
  for (int i = 0; i < 4; ++i) k_off[i] = kv16_k_ldsm_offset(lane, 0, i), v_off[i] = kv16_v_ldsm_offset(lane, i, 0);
  const uint32_t ring = int8_mma_detail::smem_u32(ss.kv.data()) + kRing * warp * kSlotBytes;
  const float scale_log2 = p.softmax_scale * 1.4426950408889634f;
  float o[8][4];  // Oᵀ: (channel kv16_swap_o_channel(mt, e, g), row 2c + e % 2)
  CUTE_UNROLL
  for (int mt = 0; mt < 8; ++mt) o[mt][0] = o[mt][1] = o[mt][2] = o[mt][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  const int limit[2] = {t.key_limit(t.row0 + 2 * c), t.key_limit(t.row0 + 2 * c + 1)};  // rows 2c, 2c + 1
  const int mask_from = t.mask_from, key_hi = t.key_hi;

  CUTE_NO_UNROLL
  for (int k = 0; k < tiles; ++k) {
    const int n = n_first + kWarps * k, j0 = kItems * k;
    int page_ahead = -1;  // kPaged: tile k + 2's, first read by tile k + 1's second refill
    if constexpr (kPaged) page_ahead = lane_page(k + 2);
    float s_acc[4][4];  // Sᵀ: (key kv16_swap_s_key(mt, e, g), row 2c + e % 2)
    CUTE_UNROLL
    for (int mt = 0; mt < 4; ++mt) s_acc[mt][0] = s_acc[mt][1] = s_acc[mt][2] = s_acc[mt][3] = 0.0f;
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h) {  // K_lo, K_hi
      const int j = j0 + h;
      Barrier::wait(&ss.full[kRing * warp + j % kRing], (j / kRing) & 1);
      tile_scores_kv16<Element>(s_acc, ring + (j % kRing) * kSlotBytes, k_off, qb, h);
      if (j + kRing < items) issue(j + kRing, h == 0 ? page_cur : page_next);  // V_hi of tile k, K_lo of k + 1
    }
    float alpha[2];
    int8_mma_detail::online_softmax_swap<Kv16SwapMaps>(s_acc, m_run, l_run, alpha, n, mask_from, limit, scale_log2, g);
    int8_mma_detail::rescale_o_swap(o, alpha[0], alpha[1]);
    uint32_t pb[4][2];
    p_fragments_kv16<Element>(pb, s_acc);
    // The rows of V past the last key any row sees (the cache's end) in the tile holding it.
    const int hi_row = key_hi - n * kBlockN;
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h) {  // V_lo, V_hi
      const int j = j0 + 2 + h;
      const uint32_t slot = ring + (j % kRing) * kSlotBytes;
      Barrier::wait(&ss.full[kRing * warp + j % kRing], (j / kRing) & 1);
      if (hi_row < kBlockN) {
        zero_v_rows(slot, hi_row, lane);
        __syncwarp();
      }
      tile_pv_kv16<Element>(o, pb, slot, v_off, h);
      if (j + kRing < items) issue(j + kRing, page_next);  // K_hi, V_lo of tile k + 1
    }
    if constexpr (kPaged) page_cur = page_next, page_next = page_ahead;
  }
  // The combine (a programmatic dependent) may launch once every CTA is here; its
  // griddepcontrol.wait holds its reads until this grid is done.
  asm volatile("griddepcontrol.launch_dependents;");
  // Every issued item was waited for, so the ring is quiet once all warps pass the merge's barrier.
  int8_mma_detail::merge_and_store_swap<Traits, Kv16SwapMaps>(p, reinterpret_cast<float*>(ss.kv.data()), o, m_run,
                                                               l_run, bad_pages ? -1 : t.seq_len, warp, lane);
}

}  // namespace hopattn::attention
