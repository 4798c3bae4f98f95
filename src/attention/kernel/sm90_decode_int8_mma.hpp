// Decode over an int8 KV cache with mma.sync (registry rows kv8_mma_8w_1cta, kv8_mma_4w_3cta,
// kv8_mma_swap_8w_1cta, kv8_mma_swap_4w_3cta; device/decode_registry.hpp): the int8 tiles are
// dequantized in the registers of the warps that multiply them (mma.sync m16n8k16), with no
// transform warpgroup and no converted copy of K or V in shared memory. hdim 128, at most 16
// packed query rows per CTA (8 for the swap rows; decode with a GQA group of <= 16; more rows take
// several CTAs).
//
// Why (docs/decode.md): the WGMMA kernels (kv8_wgmma_*, sm90_decode_int8.hpp) convert each int8
// tile into a 16-bit tile in shared memory, ~5,970 warp instructions per 64-key tile, and their
// consumer warpgroup's per-tile chain (wait, S WGMMA, reductions through shared memory, P through
// shared memory, P·V WGMMA) runs at ~2,300 cycles per tile. Here each warp takes whole 64-key
// tiles on its own: its mma.sync operands come straight from registers, so K and V are read from
// shared memory once (16-byte loads) and nothing is written back; the softmax reductions stay
// inside quads (shuffles).
//
// One kernel, decode_int8_mma_warp_rings_kernel (its comment has the roles): no producer, each of
// the kWarps warps loads its own tiles into a private ring of half-tile slots (three a warp; two
// with three CTAs per SM); full[slot] 33 arrivals (lane 0's arrive.expect_tx, every lane's
// cp.async.mbarrier.arrive.noinc), no empty barriers (a warp refills only slots it has read).
// The values (Int8MmaMath): K's value · scale in one FFMA (dequant_fma: exact for the
// quantizer's 15-bit scales), rounded once to Element as the host's dequantization does; V's int8
// values exact in fp16 with each key's scale folded into P (tile_pv_fold). kv8_mma_8w_1cta: 8
// warps, one CTA per SM; kv8_mma_4w_3cta: 4 warps, two slots a warp, three CTAs per SM (K's
// channels an eighth and V's words two at a time: <= 168 registers). The swap rows (Int8MmaMath::
// kSwapPackedK, at most 8 packed rows): the keys as the mma's M and the rows as its N = 8
// (Sᵀ = K·Qᵀ, Oᵀ = Vᵀ·Pᵀ; "Keys as the mma's M" in collective/sm90_decode_int8_mma_swap.hpp), K
// dequantized in packed bf16 pairs (k_pair_bf16, exact for the quantizer's 8-bit K scales) at
// bf16; at fp16 K as the other rows.
//
// A paged cache (pages of 64-256 keys and at least quant_block; the scales paged by the same ids):
// each 64-key tile lies in one page, so a refill is the same TMA box from the pool's view
// (page_size, d, heads_kv, num_pages) and the same scale copies from the page's rows; the page id
// of a warp's tile k + 2 is copied into shared memory with V_k's scales (the kernel's "Page ids"),
// and a CTA whose pages are not all in the pool writes NaN rows and records {6, b, id}
// (cta_pages_in_pool, as the other decode kernels).
//
// Per tile (warp, lane = 4·g + c, the mma fragment coordinates), the rows as M:
//   S = Q·Kᵀ (16 rows × 64 keys) as 8 n8 tiles × 8 k16 steps, a part of the channels at a time
//   (its K scales and Q fragments reloaded from shared memory); K's B fragment from 16-byte loads
//   per key row, value · scale (fp32) rounded once to Element: bit for bit the K that the host
//   dequantization and the WGMMA kernels use. Mask, online softmax in registers, P' (P times V's
//   scales) as the A fragment of O += P'·V (16 n8 tiles × 4 k16 steps), V's B fragment from 16-byte
//   loads per k16 step, its int8 values exact in fp16.
// End: a named barrier over the consumer threads; each warp writes (max, sum, O) into the free
//   ring; each thread merges one (row, 8 channels) over the warps by log-sum-exp weights and
//   writes O (or the split's fp32 partial) and LSE, rows unpacked to (position, q-head).
//
// The pieces (collective/): sm90_decode_int8_mma_traits.hpp (DecodeInt8MmaTraits, Int8MmaMath,
// the channel, key and scale-slot maps: "Permutations"), _ptx.hpp (inline-PTX helpers),
// _dequant.hpp (K's and V's values in registers), _q.hpp (Q's fragments), _math.hpp (the rows as
// M: scores, online softmax, O's rescale, P·V), _swap.hpp (the same for the swap rows), _merge.hpp
// (the merge over the warps, O and LSE). This file: the TMA coordinates, the thread's row offsets,
// the measurement stamps and the kernel.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>
#include <cuda_fp16.h>
#include <cutlass/numeric_conversion.h>

#include <cstdint>
#include <type_traits>

#include "attention/collective/sm90_decode_int8_mma_dequant.hpp"
#include "attention/collective/sm90_decode_int8_mma_math.hpp"
#include "attention/collective/sm90_decode_int8_mma_merge.hpp"
#include "attention/collective/sm90_decode_int8_mma_ptx.hpp"
#include "attention/collective/sm90_decode_int8_mma_q.hpp"
#include "attention/collective/sm90_decode_int8_mma_swap.hpp"
#include "attention/collective/sm90_decode_int8_mma_traits.hpp"
#include "attention/collective/sm90_decode_tile.hpp"

namespace hopattn::attention {

namespace int8_mma_detail {

// The TMA coordinates of key tile `tile` of `outer` (a sequence, or a pool's page) in the CTA's KV
// head: get<0> the K cache's, get<1> the V cache's, and get<2> the ring's slots at `smem` indexed
// (_, slot) (K and V share them). The view is the cache (max_len, d, heads_kv, batch) or the pool
// (page_size, d, heads_kv, num_pages); only the coordinates reach the code.
template <class Traits>
CUTE_DEVICE auto tma_tile(typename Traits::Params const& p, int h_kv, int outer, int tile, int8_t* smem) {
  using namespace cute;
  using TileShape = Shape<Int<Traits::kBlockN>, Int<Traits::kHeadDim>>;
  Tensor sKV = make_tensor(make_smem_ptr(smem), typename Traits::SmemLayoutRaw{});  // (BLK_N, D, SLOT)
  const bool paged = p.page_table != nullptr;
  const auto shape = make_shape(paged ? max(p.cache_rows, 1) : max(p.max_len, 1), Int<Traits::kHeadDim>{}, p.heads_kv,
                                paged ? max(p.num_pages, 1) : p.batch);
  Tensor gK = local_tile(p.tma_k.get_tma_tensor(shape)(_, _, h_kv, outer), TileShape{}, make_coord(_, _0{}));  // (BLK_N, D, n)
  Tensor gV = local_tile(p.tma_v.get_tma_tensor(shape)(_, _, h_kv, outer), TileShape{}, make_coord(_, _0{}));  // (BLK_N, D, n)
  auto tk = tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sKV), group_modes<0, 2>(gK));
  auto tv = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sKV), group_modes<0, 2>(gV));
  return make_tuple(get<0>(tk)(_, tile), get<0>(tv)(_, tile), get<1>(tk));
}

// A pool of pages smaller than the tile: the TMA coordinates of the 16-key box `box` of page
// `page` (the pool's view (page_size, d, heads_kv, num_pages)) in the CTA's KV head: get<0> K's,
// get<1> V's, and get<2> the rows 16·box_in_tile.. of the ring's slot `slot` at `smem`.
template <class Traits>
CUTE_DEVICE auto tma_page_box(typename Traits::Params const& p, int h_kv, int page, int box, int box_in_tile, int slot,
                              int8_t* smem) {
  using namespace cute;
  using BoxShape = Shape<typename Traits::PageBox, Int<Traits::kHeadDim>>;
  Tensor sKV = make_tensor(make_smem_ptr(smem), typename Traits::SmemLayoutRaw{});  // (BLK_N, D, SLOT)
  const auto shape = make_shape(max(p.cache_rows, 1), Int<Traits::kHeadDim>{}, p.heads_kv, max(p.num_pages, 1));
  Tensor gK = local_tile(p.tma_k_box.get_tma_tensor(shape)(_, _, h_kv, page), BoxShape{}, make_coord(_, _0{}));
  Tensor gV = local_tile(p.tma_v_box.get_tma_tensor(shape)(_, _, h_kv, page), BoxShape{}, make_coord(_, _0{}));
  Tensor sB = local_tile(sKV(_, _, slot), BoxShape{}, make_coord(box_in_tile, _0{}));  // (16, D)
  auto tk = tma_partition(p.tma_k_box, _0{}, Layout<_1>{}, group_modes<0, 2>(sB), group_modes<0, 2>(gK));
  auto tv = tma_partition(p.tma_v_box, _0{}, Layout<_1>{}, group_modes<0, 2>(sB), group_modes<0, 2>(gV));
  return make_tuple(get<0>(tk)(_, box), get<0>(tv)(_, box), get<1>(tk));
}

// The thread's row offsets in a tile (row 8j + σ sits at 1024 j + the offset of row σ: the
// swizzle acts within each 1 KB of 8 rows, so j becomes an immediate): K rows σ = perm(g),
// chunks c and c + 4; V rows σ = perm(2c), perm(2c + 1), chunk g.
struct Int8MmaOffsets {
  int k[2], v[2];
  CUTE_DEVICE Int8MmaOffsets(int g, int c)
      : k{int8_mma_sw128(int8_mma_key_perm(g), c), int8_mma_sw128(int8_mma_key_perm(g), c + 4)},
        v{int8_mma_sw128(int8_mma_key_perm(2 * c), g), int8_mma_sw128(int8_mma_key_perm(2 * c + 1), g)} {}
};

#ifdef HOPATTN_DECODE_STAMPS
// Measurement builds: lane 0's stamp slots of consumer warp `warp`'s k-th tile (nullptr past the
// recorded tiles) and the issue slot of the CTA's i-th tile.
template <class Params>
CUTE_DEVICE uint64_t* consumer_stamps(Params const& p, int warp, int k, int warps, int lane) {
  if (lane != 0 || p.stamps == nullptr || k >= p.stamp_tiles) return nullptr;
  return p.stamps + stamp_cta() * int8_mma_stamps_per_cta(warps, p.stamp_tiles) + 1 + 3 * (int64_t(warp) * p.stamp_tiles + k);
}
template <class Params>
CUTE_DEVICE void producer_stamp(Params const& p, int i, int warps) {
  if (p.stamps == nullptr || i >= warps * p.stamp_tiles) return;
  uint64_t* st = p.stamps + stamp_cta() * int8_mma_stamps_per_cta(warps, p.stamp_tiles);
  st[1 + 3 * int64_t(warps) * p.stamp_tiles + i] = clock64();
  if (i == 0) {
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    st[0] = smid;
  }
}
#endif

}  // namespace int8_mma_detail

// No producer. Each warp loads its own tiles (TMA and the bulk copy by lane 0, the V scales by
// cp.async from all lanes) into a private ring of kSlotsPerWarp half-tile slots, holding K and V
// tiles alternately: K_0, V_0, K_1 first (three slots); K_k's slot is refilled with V_{k+1} as
// soon as S_k is computed, V_k's with K_{k+2} after P·V. A slot is reused only by the warp that
// read it, so no barrier orders warps against each other and none waits for another's release
// (an in-order producer warp, retired, kept released stages empty ~7,100 cycles per tile:
// docs/decode.md, Tried and retired).
// Roles (kv8_mma_8w_1cta): warps 0-7, 256 threads, 255 registers allowed, one CTA per SM, 213 KB
// of shared memory (24 slots × (8 KB + 512 B of scales), Q's fragments, 24 barriers, 40 B of
// refill arguments a warp).
// Per warp and tile: wait full[K slot] -> S -> issue V_{k+1} -> softmax -> wait full[V slot] ->
// P·V -> issue K_{k+2}. The warps' own instructions bound a tile, not the loads (docs/decode.md).
// O is kept as O · 2^-e_v with e_v the largest V exponent so far (tile_pv_fold, tile_pv_swap).
template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, Traits::kCtasPerSm)
    decode_int8_mma_warp_rings_kernel(CUTE_GRID_CONSTANT typename Traits::Params const p) {
  using namespace cute;
  using namespace int8_mma_detail;
  using Element = typename Traits::Element;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kBlockN = Traits::kBlockN, kHeadDim = Traits::kHeadDim, kSlots = Traits::kStages;
  constexpr int kNTiles = Traits::kNTiles, kWarps = Traits::kWarps, kTileBytes = Traits::kTileBytes;
  constexpr int kRing = Traits::kSlotsPerWarp;
  static_assert(kBlockN == 64, "two keys of V's scales per lane");
  using WarpRefill = typename Traits::WarpRefill;
  // Three CTAs per SM (168 registers): K's channels an eighth at a time, V's words two at a time
  // (the swap rows' Sᵀ and Oᵀ take half the registers: they keep the whole passes).
  constexpr bool kSwap = Traits::kSwap;
  constexpr int kSteps = Traits::kCtasPerSm == 3 && !kSwap ? 1 : 4;
  constexpr int kVWords = Traits::kCtasPerSm == 3 && !kSwap ? 2 : 4;
  constexpr int kSTiles = kSwap ? 4 : kNTiles, kOTiles = kSwap ? 8 : 16;  // S's and O's fragments

  extern __shared__ char smem_raw[];
  auto& ss = *reinterpret_cast<typename Traits::SharedStorage*>(smem_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;

  DecodeTile t = DecodeTile::make_rows<typename Traits::Params, Traits::kTileRows>(p);
  uint4 qv[2][4];  // [row g / g + 8][half 0 lo, half 0 hi, half 1 lo, half 1 hi]
  load_q<Traits>(p, t, g, c, qv);
  if (threadIdx.x == 0) {  // 33 arrivals: lane 0's arrive.expect_tx and every lane's cp.async arrival
    for (int s = 0; s < kSlots; ++s) Barrier::init(&ss.full[s], 33);
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
  t.template read_length<typename Traits::Params, Traits::kTileRows, kBlockN>(p);
  if (t.bad && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) record_bad_length(p.error, t.b, t.len);
  // A paged cache: every page the CTA reads must be in the pool (as in decode_kernel); a bad id
  // leaves the CTA without tiles and its rows NaN (merge_len -1).
  const bool paged = p.page_table != nullptr;
  const int32_t* pages = paged ? p.page_table + int64_t(t.b) * p.pt_batch_stride : nullptr;
  const bool bad_pages =
      paged && !t.bad && t.n_end > t.n_begin &&
      !cta_pages_in_pool<Traits::kThreads>(p, pages, t.n_begin * kBlockN, min(t.n_end * kBlockN, t.len), t.b);
  if (bad_pages) t.n_end = t.n_begin;
  const int n_blocks = t.n_end - t.n_begin;
  const int tiles = n_blocks > warp ? (n_blocks - warp + kWarps - 1) / kWarps : 0;  // this warp's: warp + kWarps·k
  const int items = 2 * tiles;  // K_0, V_0, K_1, V_1, ...: item j in slot j % kRing of the warp's ring

  const int vslot0 = kSwap ? int8_swap_vscale_slot(2 * lane) : int8_mma_vscale_slot(2 * lane);
  const int vslot1 = kSwap ? int8_swap_vscale_slot(2 * lane + 1) : int8_mma_vscale_slot(2 * lane + 1);
  const int n_first = t.n_begin + warp, h_kv = t.h_kv;
  const int qb_shift = 31 - __clz(p.quant_block);  // 64 or 128 (checked on the host)
  // Pages smaller than the tile (16, 32): its four 16-key boxes come from their own pages, lane j
  // issuing box j; each page of a scale block holds the block's K scales (a tile's from its first).
  constexpr int kBoxRows = Traits::kPageBoxRows, kBoxes = Traits::kPageBoxes;
  const bool small_pages = paged && (1 << p.page_shift) < kBlockN;
  // A key's offset in its page (its sequence unpaged), and the warp's tile k's page-table entry
  // (its first key's; box j's is j·16 >> page_shift entries on with small pages).
  auto key_in_page = [&](int key) { return paged ? key & ((1 << p.page_shift) - 1) : key; };
  auto entry_of = [&](const int32_t* row, int k) { return row + (((n_first + kWarps * k) * kBlockN) >> p.page_shift); };
  // Whether box `box` of the warp's tile k holds keys below the length.
  auto box_in_cache = [&](int k, int box, int len) { return (n_first + kWarps * k) * kBlockN + box * kBoxRows < len; };
  // Refill arguments (Traits::WarpRefill): the scales' addresses, the length, the page table and
  // the page ids are read from shared memory in each refill (two to four LDS of ~30 cycles, two
  // refills a tile) instead of being held in registers through the loop, whose math needs them:
  // held there, they cost up to 30 more registers and kv8_mma_swap_4w_3cta spilled at fp16.
  // Page ids: tile k's page is refill.page[k % 2][0] (small pages: box j's [k % 2][j]). Tiles 0
  // and 1's are read below; tile k + 2's are copied by lane 0's (small pages: lanes 0-3's)
  // cp.async in V_k's refill, onto V_k's barrier, which the warp waits for before it issues
  // K_{k+2} (after P·V_k with three slots a warp, after S_{k+1} with two): the read's latency
  // stays under the math. V_k's refill overwrites tile k's ids only after every lane has read them
  // (its __syncwarp). Boxes past the length: id 0, never used (not loaded; no V scale read).
  auto& refill = ss.refill[warp];
  const uint32_t refill_base = smem_u32(&refill);
  if (lane == 0) {
    refill.k_scale = p.k_scale + t.h_kv * p.ks_head_stride;
    refill.v_scale = p.v_scale + t.h_kv * p.vs_head_stride;
    refill.page_row = pages;
    refill.len = t.len;
    refill.merge_len = bad_pages ? -1 : t.seq_len;
    refill.small_pages = small_pages;
    if (tiles > 0 && !small_pages) {  // both ids in flight together: one latency
      const int page0 = paged ? *entry_of(pages, 0) : t.b, page1 = paged && tiles > 1 ? *entry_of(pages, 1) : t.b;
      refill.page[0][0] = page0, refill.page[1][0] = page1;
    }
  }
  if (small_pages && tiles > 0 && lane < kBoxes) {
    const int off = (lane * kBoxRows) >> p.page_shift;
    const int page0 = box_in_cache(0, lane, t.len) ? entry_of(pages, 0)[off] : 0;
    const int page1 = tiles > 1 && box_in_cache(1, lane, t.len) ? entry_of(pages, 1)[off] : 0;
    refill.page[0][lane] = page0, refill.page[1][lane] = page1;
  }
  __syncwarp();
  // Item j into slot kRing·warp + j % kRing from tile k = j / 2's page. The warp read the slot's
  // previous item before this call (its values are in registers): __syncwarp orders the other
  // lanes' reads and, with the proxy fence, the TMA's writes after them.
  auto issue = [&](int j) {
    const int slot = kRing * warp + j % kRing, k = j / 2, n = n_first + kWarps * k;
    const int key0 = key_in_page(n * kBlockN);  // the tile's first key in its page
    const uint32_t ids = refill_base + offsetof(WarpRefill, page) + 4 * kBoxes * (k % 2);  // tile k's page ids
    const int page = lds_s32(ids);  // the tile's (first) page
    // Read here, not held through the loop (its registers: kv8_mma_swap_4w_3cta spilled at fp16).
    const bool small = lds_s32(refill_base + offsetof(WarpRefill, small_pages)) != 0;
    uint64_t* bar = &ss.full[slot];
    float* scales = ss.scale.data() + slot * kHeadDim;
    __syncwarp();
#ifdef HOPATTN_DECODE_STAMPS
    if (lane == 0 && j % 2 == 1) producer_stamp(p, warp + kWarps * k, kWarps);  // V's issue
#endif
    // Small pages: the boxes below the length and lane `lane`'s box's page (-1: none to load).
    int boxes = 0, box_page = -1;
    if (small) {
      const int len = lds_s32(refill_base + offsetof(WarpRefill, len));
      boxes = min(kBoxes, (len - n * kBlockN + kBoxRows - 1) / kBoxRows);
      if (lane < boxes) box_page = lds_s32(ids + 4 * lane);
    }
    // Lanes 0..boxes-1: box `lane` of the tile's K (get<0>) or V (get<1>) into the slot.
    auto issue_boxes = [&](auto which) {
      __syncwarp();  // lane 0's expect_tx first
      if (box_page < 0) return;
      const int box = ((n * kBlockN + lane * kBoxRows) & ((1 << p.page_shift) - 1)) / kBoxRows;  // within its page
      auto b = tma_page_box<Traits>(p, h_kv, box_page, box, lane, slot, ss.raw.data());
      cutlass::arch::fence_view_async_shared();
      if constexpr (decltype(which)::value == 0) copy(p.tma_k_box.with(*bar), get<0>(b), get<2>(b));
      else copy(p.tma_v_box.with(*bar), get<1>(b), get<2>(b));
    };
    if (j % 2 == 0) {
      cp_async_mbarrier_arrive_noinc(bar);  // K: no copies of the lanes' own, arrives at once
      if (small) {
        if (lane == 0) {
          const float* src = lds_ptr(&refill.k_scale) + page * p.ks_batch_stride;  // block 0 of the tile's first page
          cutlass::arch::fence_view_async_shared();
          Barrier::arrive_and_expect_tx(bar, uint32_t(boxes) * Traits::kTmaBytesPageBox + kHeadDim * sizeof(float));
          SM90_BULK_COPY_G2S::copy(src, bar, scales, kHeadDim * sizeof(float));
        }
        issue_boxes(cute::Int<0>{});
      } else if (lane == 0) {
        const auto tile = tma_tile<Traits>(p, h_kv, page, key0 / kBlockN, ss.raw.data());
        const float* src = lds_ptr(&refill.k_scale) + page * p.ks_batch_stride + (key0 >> qb_shift) * p.ks_block_stride;
        cutlass::arch::fence_view_async_shared();
        Barrier::arrive_and_expect_tx(bar, kTileBytes + kHeadDim * sizeof(float));
        copy(p.tma_k.with(*bar), get<0>(tile), get<2>(tile)(_, slot));
        SM90_BULK_COPY_G2S::copy(src, bar, scales, kHeadDim * sizeof(float));
      }
    } else {
      // Keys 2·lane and 2·lane + 1 of the tile: past the length nothing is read (src-size 0) and
      // the slot is zero-filled; the address is a row of the cache or of the page either way
      // (max_len and page_size are multiples of quant_block: the tile's 64 rows exist).
      const uint32_t vs = smem_u32(scales);
      // The page of keys 2·lane, 2·lane + 1 (box lane / 8 with small pages) and their row in it.
      const int v_page = small ? lds_s32(ids + 4 * (2 * lane / kBoxRows)) : page;
      const float* src = lds_ptr(&refill.v_scale) + v_page * p.vs_batch_stride +
                         uint32_t(key_in_page(n * kBlockN + 2 * lane)) * p.vs_seq_stride;
      const int tok = n * kBlockN + 2 * lane, len = lds_s32(refill_base + offsetof(WarpRefill, len));
      cp_async_4(vs + 4 * vslot0, src, tok < len ? 4 : 0);
      cp_async_4(vs + 4 * vslot1, src + p.vs_seq_stride, tok + 1 < len ? 4 : 0);
      if (k + 2 < tiles) {  // tile k + 2's page ids (Page ids, above)
        const int32_t* row = lds_ptr(&refill.page_row);
        if (small) {
          __syncwarp();  // every lane has read tile k's ids
          if (lane < kBoxes) {
            const bool in = box_in_cache(k + 2, lane, len);
            cp_async_4(ids + 4 * lane, entry_of(row, k + 2) + (in ? (lane * kBoxRows) >> p.page_shift : 0), in ? 4 : 0);
          }
        } else if (lane == 0 && row != nullptr) {
          cp_async_4(ids, entry_of(row, k + 2), 4);
        }
      }
      cp_async_mbarrier_arrive_noinc(bar);  // arrives when the lane's copies land
      if (small) {
        if (lane == 0) Barrier::arrive_and_expect_tx(bar, uint32_t(boxes) * Traits::kTmaBytesPageBox);
        issue_boxes(cute::Int<1>{});
      } else if (lane == 0) {
        const auto tile = tma_tile<Traits>(p, h_kv, page, key0 / kBlockN, ss.raw.data());
        cutlass::arch::fence_view_async_shared();
        Barrier::arrive_and_expect_tx(bar, kTileBytes);
        copy(p.tma_v.with(*bar), get<1>(tile), get<2>(tile)(_, slot));
      }
    }
  };
  CUTE_NO_UNROLL
  for (int j = 0; j < min(kRing, items); ++j) issue(j);

  const uint32_t qf_base = smem_u32(ss.q_frag.data());
  if (warp == 0) {
    if constexpr (kSwap) publish_q_swap<Traits::kPackedK>(qv, qf_base, lane);
    else publish_q(qv, qf_base, lane);
  }
  cutlass::arch::NamedBarrier::sync(32 * kWarps, uint32_t(DecodeNamedBarrier::kConsumersQ));

  const float scale_log2 = p.softmax_scale * 1.4426950408889634f;
  const float scale[2] = {scale_log2, scale_log2};
  float o[kOTiles][4];  // O · 2^-e_v, e_v the largest V exponent so far; the swap rows: Oᵀ
  CUTE_UNROLL
  for (int tt = 0; tt < kOTiles; ++tt) o[tt][0] = o[tt][1] = o[tt][2] = o[tt][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  int e_v = -100;
  const int limit0 = t.key_limit(t.row0 + g), limit1 = t.key_limit(t.row0 + g + 8);
  const int limit_swap[2] = {t.key_limit(t.row0 + 2 * c), t.key_limit(t.row0 + 2 * c + 1)};  // swap: rows 2c, 2c + 1
  const int mask_from = t.mask_from;
  // Rows g + 8 exist (more than 8 packed rows in the CTA); warp-uniform.
  const bool hi = t.rows - t.row0 > 8;
  const uint32_t raw_base = smem_u32(ss.raw.data()), scale_base = smem_u32(ss.scale.data());
  const Int8MmaOffsets off(g, c);

  CUTE_NO_UNROLL
  for (int k = 0; k < tiles; ++k) {
    const int n = n_first + kWarps * k, jk = 2 * k, jv = 2 * k + 1;
    const int slot_k = kRing * warp + jk % kRing, slot_v = kRing * warp + jv % kRing;
    Barrier::wait(&ss.full[slot_k], (jk / kRing) & 1);
    float s_acc[kSTiles][4];
    if constexpr (kSwap) {
      tile_scores_swap<Element, kSteps, Traits::kPackedK>(s_acc, raw_base + slot_k * kTileBytes,
                                                          scale_base + 4 * slot_k * kHeadDim, qf_base, off.k, c, lane);
    } else {
      tile_scores<Element, kNTiles, kSteps>(s_acc, raw_base + slot_k * kTileBytes, scale_base + 4 * slot_k * kHeadDim,
                                            qf_base, off.k, c, lane);
    }
    if (jk + kRing < items) issue(jk + kRing);  // V_{k+1} into K_k's slot
    float alpha[2];
    if constexpr (kSwap) online_softmax_swap(s_acc, m_run, l_run, alpha, n, mask_from, limit_swap, scale[0], g);
    else online_softmax<kBlockN>(s_acc, m_run, l_run, alpha, n, mask_from, limit0, limit1, scale, c, hi);
#ifdef HOPATTN_DECODE_STAMPS
    // Measurement builds: the wait for V is stamped (the wait for K took ~100 cycles).
    uint64_t* st = consumer_stamps(p, warp, k, kWarps, lane);
    if (st != nullptr) st[0] = clock64();
#endif
    Barrier::wait(&ss.full[slot_v], (jv / kRing) & 1);
#ifdef HOPATTN_DECODE_STAMPS
    if (st != nullptr) st[1] = clock64();
#endif
    const uint32_t v_tile = raw_base + slot_v * kTileBytes, vs_addr = scale_base + 4 * slot_v * kHeadDim;
    // The exponent only grows (P' = p · s_v · 2^-e_v stays below 2^15 / 127 as long as e_v is at
    // least the tile's), so O's rescale is mostly skipped.
    const int e_new = max(e_v, tile_v_exponent(vs_addr, c, e_v));
    const float f = exp2_int(e_v - e_new);  // O' from the previous exponent to this tile's
    e_v = e_new;
    if constexpr (kSwap) {
      rescale_o_swap(o, alpha[0] * f, alpha[1] * f);
      tile_pv_swap<kVWords>(o, s_acc, v_tile, vs_addr, off.v, g, e_v);
    } else {
      rescale_o_lazy(o, alpha[0] * f, alpha[1] * f, hi);
      tile_pv_fold<kNTiles, kVWords>(o, s_acc, v_tile, vs_addr, off.v, c, e_v);
    }
    if (jv + kRing < items) issue(jv + kRing);  // K_{k+2} into V_k's slot
#ifdef HOPATTN_DECODE_STAMPS
    if (st != nullptr) st[2] = clock64();
#endif
  }
  {
    const float f = exp2_int(e_v);
    CUTE_UNROLL
    for (int tt = 0; tt < kOTiles; ++tt) o[tt][0] *= f, o[tt][1] *= f, o[tt][2] *= f, o[tt][3] *= f;
  }
  // Every issued item was waited for, so the ring is quiet once all warps pass merge's barrier.
  float* merge_area = reinterpret_cast<float*>(ss.raw.data());
  // The merge re-derives the tile from the sequence's length (not len: an int8 call's tail
  // narrows it); read here, not held through the loop.
  const int merge_len = refill.merge_len;
  if constexpr (kSwap) merge_and_store_swap<Traits>(p, merge_area, o, m_run, l_run, merge_len, warp, lane);
  else merge_and_store<Traits>(p, merge_area, o, m_run, l_run, merge_len, warp, lane);
}

}  // namespace hopattn::attention
