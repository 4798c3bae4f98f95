// Decode over a 16-bit KV cache with mma.sync, the keys as the mma's M (registry row
// kv16_mma_swap_8w_1cta, id 25; the default of the plain calls it takes: decode_defaults.cpp). hdim 128, at
// most 8 packed query rows a row group (the plan refuses more), contiguous caches, no window,
// softcap or sinks (refused with the reason: DecodeKernelSpec::max_rows, limits).
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
// Barriers: full[slot] (24), one arrival (lane 0's arrive.expect_tx of the 8 KB box) plus the
// TMA's bytes; the warp's lanes wait on them. No empty barriers: a warp refills only a slot it has
// read (__syncwarp after its reads, lane 0's proxy fence, then the TMA), so no warp waits for
// another. Named barrier kConsumersQ (256 threads): the merge's two steps (merge_through_shared).
// Per warp and tile k (its tile n = n_begin + w + 8k):
//   wait K_lo -> Sᵀ steps 0-3 -> issue item j + 3 (V_hi of tile k) into K_lo's slot;
//   wait K_hi -> Sᵀ steps 4-7 -> issue K_lo of tile k + 1;
//   mask, online softmax (rows 2c, 2c + 1; maxima over the 8 lanes g), Oᵀ rescaled, P to Element;
//   wait V_lo -> (the tile holding the cache's end: V rows past it zeroed) -> Oᵀ m-tiles 0-3 ->
//   issue K_hi of tile k + 1; wait V_hi -> the same for m-tiles 4-7 -> issue V_lo of tile k + 1.
// End: each warp's (max, sum, Oᵀ) merged over the warps by log-sum-exp weights through the free
// ring, then O (output type) or the split's fp32 partial and LSE (merge_and_store_swap, the int8
// swap rows' code with this kernel's maps).
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

// Item `part` (0 K_lo, 1 K_hi, 2 V_lo, 3 V_hi) of key tile n of sequence b's KV head h_kv into
// ring slot `slot` at `smem`, onto `bar`. Lane 0 only; the caller orders the slot's reads before it.
template <class Traits>
CUTE_DEVICE void issue_item(typename Traits::Params const& p, uint64_t& bar, int h_kv, int b, int n, int part, int slot,
                            typename Traits::Element* smem) {
  using namespace cute;
  using Box = Shape<typename Traits::BlockN, typename Traits::SlotChannels>;
  Tensor sKV = make_tensor(make_smem_ptr(smem), typename Traits::SmemLayoutKV{});  // (BLK_N, 64, SLOT)
  const auto shape = make_shape(max(p.cache_rows, 1), Int<Traits::kHeadDim>{}, p.heads_kv, p.batch);
  auto const& tma = part < 2 ? p.tma_k : p.tma_v;
  Tensor g = local_tile(tma.get_tma_tensor(shape)(_, _, h_kv, b), Box{}, make_coord(_, _));  // (BLK_N, 64, n, half)
  auto parts = tma_partition(tma, _0{}, Layout<_1>{}, group_modes<0, 2>(sKV), group_modes<0, 2>(g));
  cutlass::arch::fence_view_async_shared();
  cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&bar, Traits::kSlotBytes);
  copy(tma.with(bar), get<0>(parts)(_, n, part % 2), get<1>(parts)(_, slot));
}

}  // namespace kv16_mma_detail

template <class Traits>
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

  if (threadIdx.x == 0) {  // before griddepcontrol.wait: overlaps the kernel before this one
    cute::prefetch_tma_descriptor(p.tma_k.get_tma_descriptor());
    cute::prefetch_tma_descriptor(p.tma_v.get_tma_descriptor());
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
  const int n_blocks = t.n_end - t.n_begin;
  const int tiles = n_blocks > warp ? (n_blocks - warp + kWarps - 1) / kWarps : 0;  // this warp's: warp + kWarps·k
  const int items = kItems * tiles;
  const int n_first = t.n_begin + warp;

  // Item j into slot kRing·warp + j % kRing. The warp read the slot's previous item before this
  // call (its values are in registers, consumed by an mma): __syncwarp orders every lane's reads
  // before lane 0's proxy fence and TMA.
  auto issue = [&](int j) {
    const int slot = kRing * warp + j % kRing;
    __syncwarp();
    if (lane == 0) issue_item<Traits>(p, ss.full[slot], t.h_kv, t.b, n_first + kWarps * (j / kItems), j % kItems, slot, ss.kv.data());
  };
  CUTE_NO_UNROLL
  for (int j = 0; j < min(kRing, items); ++j) issue(j);

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
    float s_acc[4][4];  // Sᵀ: (key kv16_swap_s_key(mt, e, g), row 2c + e % 2)
    CUTE_UNROLL
    for (int mt = 0; mt < 4; ++mt) s_acc[mt][0] = s_acc[mt][1] = s_acc[mt][2] = s_acc[mt][3] = 0.0f;
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h) {  // K_lo, K_hi
      const int j = j0 + h;
      Barrier::wait(&ss.full[kRing * warp + j % kRing], (j / kRing) & 1);
      tile_scores_kv16<Element>(s_acc, ring + (j % kRing) * kSlotBytes, k_off, qb, h);
      if (j + kRing < items) issue(j + kRing);
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
      if (j + kRing < items) issue(j + kRing);
    }
  }
  // The combine (a programmatic dependent) may launch once every CTA is here; its
  // griddepcontrol.wait holds its reads until this grid is done.
  asm volatile("griddepcontrol.launch_dependents;");
  // Every issued item was waited for, so the ring is quiet once all warps pass the merge's barrier.
  int8_mma_detail::merge_and_store_swap<Traits, Kv16SwapMaps>(p, reinterpret_cast<float*>(ss.kv.data()), o, m_run,
                                                               l_run, t.seq_len, warp, lane);
}

}  // namespace hopattn::attention
