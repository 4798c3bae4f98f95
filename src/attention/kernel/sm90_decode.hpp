// Attention over a KV cache (decode, speculative decoding, chunked prefill) on Hopper, with
// query-head packing and split-KV (flash-decoding). Memory-bound: the design goal is to keep
// enough K/V bytes in flight per SM, not tensor-core utilisation.
// This file: the 16-bit split kernel (kv16_split_*; and the int8 calls' 16-bit tail). The int8
// kernels: kernel/sm90_decode_int8.hpp (WGMMA on converted tiles), kernel/sm90_decode_int8_mma.hpp
// (mma.sync); the split merge: kernel/sm90_decode_combine.hpp; the pieces they share:
// collective/sm90_decode_*.hpp.
//
// Grid: (m_blocks · splits, row groups, batch). A row group is a kv-head when query heads are
// packed (its heads_q / heads_kv query heads × seqlen_q positions fold into the M rows, row
// r = position · group + head-in-group) and a q-head otherwise (rows = positions). blockIdx.x
// gives the 64-row tile (m_block) and the KV split.
// CTA: one warpgroup (128 threads) computing; thread 0 also issues the TMA loads.
//
// Per CTA:
//   len = cache_seqlens[b] (device memory). A bad length (< 0, > max_len, or causal and shorter
//   than seqlen_q) is recorded in p.error (first one only) and the CTA writes NaN rows.
//   The tile's rows see keys [key_lo, key_hi) between them (DecodeTile's band: key_hi the last
//   row's limit, len or with causal len - seqlen_q + s + 1; key_lo 0, or with a window's left side
//   the first row's first key); the KV tiles holding them, from tile key_lo / kBlockN, are divided
//   evenly over the splits: [n_begin, n_end). A window's decode thus reads about its width.
//   Order at entry: thread 0 prefetches the TMA descriptors; every thread loads its share of the
//   tile's 64 Q rows into registers (rows of different query heads are not one TMA box; zeros
//   past the last row), then the length; barriers initialised; thread 0 issues the first kStages
//   K/V tiles; the Q registers go to the swizzled tile WGMMA reads; fence.proxy.async +
//   __syncthreads make the generic stores visible to the tensor cores.
//   K/V: TMA tiles of kBlockN keys into a kStages-deep ring (mbarriers k_full/v_full, one arrival
//   each by thread 0 with the tile's transaction bytes; all threads wait). The loop body is the
//   FA2 kernel's (sm90_fwd_fa2.hpp): S = Q·Kᵀ (SS WGMMA), softcap (when set), mask, online
//   softmax, O += P·V (RS WGMMA), __syncthreads, thread 0 (warp 0 for small pages) refills the
//   stage with tile n + kStages.
//   The cache is only valid below len, and rows len..max_len may hold anything (NaN included), as
//   may the keys outside a window: scores there are masked to -inf, and the V rows outside
//   [key_lo, key_hi) of the tiles holding those edges are zeroed in shared memory (after the TMA
//   lands, before P·V) so that 0 · garbage cannot reach O.
//   The options (DecodeSplitParams; each a uniform test when off): the window (the tile range and
//   the mask's left edge), the softcap (tanh on S before the mask), the sinks (in the epilogue's
//   normalisation at one split; in the combine at several, so that each row's is added once).
//   A paged cache (Params::page_table; 16-bit caches, pages of 16-256 keys): the TMA views the pool
//   (page_size, d, heads_kv, num_pages). Pages of at least kBlockN keys: key tile n is tile
//   (n·BN mod page_size) / BN of page page_table[b][n·BN / page_size], its id read by thread 0 a
//   tile ahead (while the tile before the refill computes). Smaller pages: warp 0 refills, lane j
//   reading the id of and issuing the 16-key box j of the tile (several pages a tile); the boxes
//   outside [key_lo, key_hi) are not loaded and their ids not read.
//   At entry every thread checks a share of the ids the CTA will read; one outside the pool makes
//   the CTA a bad one (NaN rows, as a bad length; recorded as kind 6), and the combine takes a NaN
//   partial as bad. With causal rows, an m-block whose keys end before the bad page still answers.
//   Epilogue: one split: O (normalised, output type) and LSE straight from registers to their
//   strided places, unpacking rows to (position, q-head). Several splits: O (fp32, normalised
//   over the split's keys) and LSE to the workspace; decode_combine_kernel merges them.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>

#include "attention/collective/sm90_decode_epilogue.hpp"
#include "attention/collective/sm90_decode_q.hpp"
#include "attention/collective/sm90_decode_tile.hpp"
#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/collective/sm90_fwd_softmax.hpp"
#include "attention/collective/sm90_warp_uniform.hpp"
#include "attention/collective/sm90_wgmma.hpp"
#include "attention/kernel/sm90_fwd_fa2.hpp"

namespace hopattn::attention {

// Tile per head dim and registry id (kDecodeKernels, device/decode_registry.hpp): 64 query rows;
// K/V tiles and ring depth so that 96-192 KB of K/V are in flight per SM. kv16_split_1cta (id 1):
// one CTA per SM, 128-key tiles (64 at hdim 256); kv16_split_2cta (id 2, hdim <= 128): half the
// shared memory, so two CTAs share an SM and one's prologue and epilogue overlap the other's
// streaming.
// kDecodeTailTile: the int8 call's 16-bit tail (at most quant_block <= 128 keys a row group): one
// stage of 64-key tiles (128 at hdim 64), 40-96 KB of shared memory instead of kv16_split_1cta's
// ~200 KB, so that several CTAs share an SM (one per row group: 1024 at 64:8, 128 x 2k).
constexpr int kDecodeTailTile = -1;
constexpr int decode_block_n(int hdim, int variant) {
  if (variant == kDecodeTailTile) return hdim == 64 ? 128 : 64;
  return hdim == 256 ? 64 : (variant == 2 && hdim == 128 ? 64 : 128);
}
constexpr int decode_stages(int hdim, int variant) {
  return variant == kDecodeTailTile ? 1 : (variant == 1 && hdim == 64) ? 4 : 3;
}

template <class Element_, int kHeadDim_, int kVariant>
struct DecodeTraits : Fa2Traits<Element_, kHeadDim_, 64, decode_block_n(kHeadDim_, kVariant),
                                decode_stages(kHeadDim_, kVariant)> {
  using Base = Fa2Traits<Element_, kHeadDim_, 64, decode_block_n(kHeadDim_, kVariant), decode_stages(kHeadDim_, kVariant)>;
  using Element = Element_;
  static constexpr int kThreads = 128;
  static constexpr bool kInt8Cache = false;
  static constexpr int kTileRows = Base::kBlockM;  // query rows per CTA (the grid's unit)

  struct SharedStorage {
    cute::array_aligned<Element, cute::cosize_v<typename Base::SmemLayoutQ>, 1024> q;
    cute::array_aligned<Element, cute::cosize_v<typename Base::SmemLayoutKV>, 1024> k;
    cute::array_aligned<Element, cute::cosize_v<typename Base::SmemLayoutKV>, 1024> v;
    alignas(8) uint64_t k_full[Base::kStages];
    alignas(8) uint64_t v_full[Base::kStages];
  };
  static constexpr int kSharedBytes = int(sizeof(SharedStorage));

  // A paged cache with pages smaller than kBlockN keys (16, 32, 64; at hdim 256 16 and 32): the
  // tile is gathered as kBlockN / 16 boxes of 16 keys, each from its own page, into the rows of
  // the tile's shared memory they hold (16 rows of the 128-byte swizzle are whole atoms).
  static constexpr int kPageBoxRows = 16;
  using PageBox = cute::Int<kPageBoxRows>;
  using SmemLayoutPageBox = decltype(cute::tile_to_shape(typename Base::SmemAtom{}, cute::Shape<PageBox, typename Base::HeadDim>{}));
  using TmaLoadPageBox = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{},
      cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), typename Base::GmemLayout{}),
      SmemLayoutPageBox{}));
  static constexpr uint32_t kTmaBytesPageBox = kPageBoxRows * Base::kHeadDim * sizeof(Element);

  struct Params : DecodeSplitParams<Element, typename Base::TmaLoadKV, typename Base::TmaLoadKV> {
    TmaLoadPageBox tma_k_box, tma_v_box;  // pages smaller than kBlockN (unset otherwise)
#ifdef HOPATTN_DECODE_STAMPS
    uint64_t* stamps;  // measurement builds only (HOPATTN_STAMP)
#endif
  };
};

// One KV tile of the 16-bit decode loop, once its K has landed (k_full[stage] waited): S = Q·Kᵀ,
// mask, online softmax (restarted when `first`), P, wait for V, zero V's rows past the cache's
// end in the tile holding it, O += P·V. The caller (decode_kernel) synchronises and refills the
// stage.
template <class Traits, class MmaQK, class MmaPV, class TQ, class TK, class TV, class TS, class TO, class TC,
          class TP, class TPA, class SV, class Softmax>
CUTE_DEVICE void decode_tile_compute(DecodeTile const& t, typename Traits::SharedStorage& ss, int n, int stage,
                                     uint32_t phase, bool first, MmaQK& mma_qk, MmaPV& mma_pv, TQ const& tSrQ,
                                     TK const& tSrK, TV const& tOrV, TS& tSrS, TO& tOrO, TC const& tScS, TP& tOrP,
                                     TPA& tOrP_a, SV& sV, Softmax& softmax) {
  using namespace cute;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kBlockN = Traits::kBlockN, kChunks = Traits::kHeadDim / 8;
  wgmma_issue<true>(mma_qk, tSrQ, tSrK(_, _, _, stage), tSrS);
  warpgroup_wait<0>();
  softmax.apply_softcap(tSrS);  // (a uniform test when there is none)
  mask_decode_scores<kBlockN, true>(t, n, tSrS, tScS);
  // kMaskedRows: with a window's left edge a row may see nothing in this split's first tiles.
  constexpr int kRows = decltype(size<0>(acc_rowcol(tSrS)))::value;
  float alpha[kRows];
  if (first) {
    softmax.template online_exp<true, true>(tSrS, alpha);
  } else {
    softmax.template online_exp<false, true>(tSrS, alpha);
    softmax.rescale(tOrO, alpha);
  }
  convert_fragment<typename Traits::Element>(tSrS, tOrP);
  Barrier::wait(&ss.v_full[stage], phase);
  // The rows of V no row of the CTA sees may hold anything (NaN included: the cache past its end,
  // or outside a window): zeroed in shared memory so that 0 · garbage cannot reach O. Rows past
  // key_hi: the tile holding the end of the cache (or of the band); rows before key_lo: the tile
  // holding a window's first key.
  const int hi_row = t.key_hi - n * kBlockN, lo_rows = t.key_lo - n * kBlockN;
  if (hi_row < kBlockN || lo_rows > 0) {
    for (int e = threadIdx.x; e < (kBlockN - hi_row) * kChunks; e += Traits::kThreads)
      *reinterpret_cast<uint4*>(&sV(hi_row + e / kChunks, (e % kChunks) * 8, stage)) = make_uint4(0, 0, 0, 0);
    for (int e = threadIdx.x; e < lo_rows * kChunks; e += Traits::kThreads)
      *reinterpret_cast<uint4*>(&sV(e / kChunks, (e % kChunks) * 8, stage)) = make_uint4(0, 0, 0, 0);
    cutlass::arch::fence_view_async_shared();
    __syncthreads();
  }
  wgmma_issue<false>(mma_pv, tOrP_a, tOrV(_, _, _, stage), tOrO);
  warpgroup_wait<0>();
}

template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, 1) decode_kernel(CUTE_GRID_CONSTANT typename Traits::Params const p) {
  using namespace cute;
  using Element = typename Traits::Element;
  using BlockM = typename Traits::BlockM;
  using BlockN = typename Traits::BlockN;
  using HeadDim = typename Traits::HeadDim;
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN, kStages = Traits::kStages;
  constexpr int kHeadDim = Traits::kHeadDim;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;

  extern __shared__ char smem_raw[];
  auto& ss = *reinterpret_cast<typename Traits::SharedStorage*>(smem_raw);

#ifdef HOPATTN_DECODE_STAMPS
  const int64_t cta = stamp_cta();
  HOPATTN_STAMP(p.stamps, cta, 1);  // entry
  stamp_smid(p.stamps);
#endif
  const bool is_tma_thread = threadIdx.x == 0;
  if (is_tma_thread) {  // the descriptors' fetch overlaps the length and Q loads
    cute::prefetch_tma_descriptor(p.tma_k.get_tma_descriptor());
    cute::prefetch_tma_descriptor(p.tma_v.get_tma_descriptor());
  }
  DecodeTile t = DecodeTile::make_rows<typename Traits::Params, kBlockM>(p);
  // Launched as a programmatic dependent (DecodeParams::split_pdl): the launch and the lines above
  // overlap the kernel before it; nothing in global memory is read or written before that kernel
  // is done (a no-op on a plain launch).
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int len = p.cache_seqlens[t.b];  // issued first, used after the Q loads are issued
  QRegisters<Traits> q_regs;
  q_regs.load(p, t, threadIdx.x);
  t.set_length<typename Traits::Params, kBlockM, kBlockN>(p, len);
  if (t.bad && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) record_bad_length(p.error, t.b, t.len);
  const bool paged = p.page_table != nullptr;
  const int32_t* pages = paged ? p.page_table + int64_t(t.b) * p.pt_batch_stride : nullptr;
  // Every page this CTA reads must be in the pool: an id outside it gives the sequence NaN rows
  // (as a bad length does) and is recorded; it never reaches a TMA coordinate. The pages it reads
  // hold its keys [key_lo, key_hi) (a window's: the pages before and after it are not read).
  if (paged && !t.bad && t.n_end > t.n_begin &&
      !cta_pages_in_pool<Traits::kThreads>(p, pages, max(t.n_begin * kBlockN, t.key_lo),
                                           min(t.n_end * kBlockN, t.key_hi), t.b))
    t.bad = true, t.n_end = t.n_begin;
  const int n_blocks = t.n_end - t.n_begin;

  Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), typename Traits::SmemLayoutQ{});    // (BLK_M, D)
  Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Traits::SmemLayoutKV{});   // (BLK_N, D, PIPE)
  Tensor sV = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutKV{});   // (BLK_N, D, PIPE)
  Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutVt{});  // (D, BLK_N, PIPE)

  const int tma_len = max(p.cache_rows, 1);
  const int tma_outer = paged ? max(p.num_pages, 1) : p.batch;  // pages of the pool, or sequences
  Tensor mK = p.tma_k.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, tma_outer));
  Tensor mV = p.tma_v.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, tma_outer));
  Tensor gK = local_tile(mK(_, _, t.h_kv, t.b), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));  // (BLK_N, D, n)
  Tensor gV = local_tile(mV(_, _, t.h_kv, t.b), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));  // (BLK_N, D, n)
  auto tma_k_parts = tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK));
  auto tma_v_parts = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV));
  Tensor tKgK = get<0>(tma_k_parts);  // (TMA, n)
  Tensor tKsK = get<1>(tma_k_parts);  // (TMA, PIPE)
  Tensor tVgV = get<0>(tma_v_parts);  // (TMA, n)
  Tensor tVsV = get<1>(tma_v_parts);  // (TMA, PIPE)

  // A paged cache: the page id a refill needs, read a tile ahead (its latency under the math of
  // the tile before). Pages of at least kBlockN keys: thread 0 issues the tile, one box from page
  // page_table[b][n·BN / page_size]. Smaller pages: warp 0 issues it, lane j the 16-key box j
  // (keys n·BN + 16j ..) from its own page; boxes outside the CTA's keys [key_lo, key_hi) (past
  // the cache's end, or outside a window) are not loaded (their scores are masked and their V rows
  // zeroed, as for rows past the end of a whole tile) and their page-table entries (unused ones,
  // maybe past the row, or pages a window left behind) not read: id -1.
  constexpr int kBoxRows = Traits::kPageBoxRows, kBoxes = kBlockN / kBoxRows;
  static_assert(kBoxes <= 32, "one lane of warp 0 per 16-key box");
  const bool small_pages = paged && (1 << p.page_shift) < kBlockN;
  const int lane = int(threadIdx.x) % 32;
  const bool is_refill_thread = small_pages ? threadIdx.x < 32 : is_tma_thread;
  auto page_of = [&](int n) {
    if (!small_pages) return paged ? pages[(n * kBlockN) >> p.page_shift] : 0;
    const int key = n * kBlockN + lane * kBoxRows;
    return lane < kBoxes && key < t.key_hi && key + kBoxRows > t.key_lo ? pages[key >> p.page_shift] : -1;
  };
  auto load_kv_boxes = [&](int n, int stage, int page) {
    if (lane == 0) {
      const int boxes = min(kBoxes, (t.key_hi - n * kBlockN + kBoxRows - 1) / kBoxRows);
      const int first_box = max(0, (t.key_lo - n * kBlockN) / kBoxRows);
      const uint32_t bytes = uint32_t(boxes - first_box) * Traits::kTmaBytesPageBox;
      Barrier::arrive_and_expect_tx(&ss.k_full[stage], bytes);
      Barrier::arrive_and_expect_tx(&ss.v_full[stage], bytes);
    }
    __syncwarp();
    if (page < 0) return;
    Tensor mKb = p.tma_k_box.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, tma_outer));
    Tensor mVb = p.tma_v_box.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, tma_outer));
    const int box = ((n * kBlockN + lane * kBoxRows) & ((1 << p.page_shift) - 1)) / kBoxRows;  // within the page
    Tensor gKb = local_tile(mKb(_, _, t.h_kv, page), Shape<typename Traits::PageBox, HeadDim>{}, make_coord(_, _0{}));
    Tensor gVb = local_tile(mVb(_, _, t.h_kv, page), Shape<typename Traits::PageBox, HeadDim>{}, make_coord(_, _0{}));
    Tensor sKb = local_tile(sK(_, _, stage), Shape<typename Traits::PageBox, HeadDim>{}, make_coord(lane, _0{}));
    Tensor sVb = local_tile(sV(_, _, stage), Shape<typename Traits::PageBox, HeadDim>{}, make_coord(lane, _0{}));
    auto kb = tma_partition(p.tma_k_box, _0{}, Layout<_1>{}, group_modes<0, 2>(sKb), group_modes<0, 2>(gKb));
    auto vb = tma_partition(p.tma_v_box, _0{}, Layout<_1>{}, group_modes<0, 2>(sVb), group_modes<0, 2>(gVb));
    copy(p.tma_k_box.with(ss.k_full[stage]), get<0>(kb)(_, box), get<1>(kb));
    copy(p.tma_v_box.with(ss.v_full[stage]), get<0>(vb)(_, box), get<1>(vb));
  };
  auto load_kv = [&](int n, int stage, int page) {
    if (small_pages) return load_kv_boxes(n, stage, page);
    Barrier::arrive_and_expect_tx(&ss.k_full[stage], Traits::kTmaBytesKV);
    if (paged) {  // key tile n: tile (n·BN mod page_size) / BN of page `page`, in the pool's view
      const int tile = ((n * kBlockN) & ((1 << p.page_shift) - 1)) / kBlockN;
      Tensor gKp = local_tile(mK(_, _, t.h_kv, page), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));
      Tensor gVp = local_tile(mV(_, _, t.h_kv, page), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));
      auto kp = tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gKp));
      auto vp = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gVp));
      copy(p.tma_k.with(ss.k_full[stage]), get<0>(kp)(_, tile), tKsK(_, stage));
      Barrier::arrive_and_expect_tx(&ss.v_full[stage], Traits::kTmaBytesKV);
      copy(p.tma_v.with(ss.v_full[stage]), get<0>(vp)(_, tile), tVsV(_, stage));
      return;
    }
    copy(p.tma_k.with(ss.k_full[stage]), tKgK(_, n), tKsK(_, stage));
    Barrier::arrive_and_expect_tx(&ss.v_full[stage], Traits::kTmaBytesKV);
    copy(p.tma_v.with(ss.v_full[stage]), tVgV(_, n), tVsV(_, stage));
  };
  // A CTA with no KV tile (an empty cache or split, a bad length, an int8 call's empty tail: 1024
  // such CTAs at 64:8 128 x 2k) skips the barriers, the Q tile and the loop: its epilogue writes
  // O = 0 and LSE = -inf (NaN for a bad length) from the untouched accumulators, as the loop's
  // absence would have left them.
  if (n_blocks > 0) {
    if (is_tma_thread) {
      CUTE_UNROLL
      for (int s = 0; s < kStages; ++s) Barrier::init(&ss.k_full[s], 1), Barrier::init(&ss.v_full[s], 1);
      cutlass::arch::fence_barrier_init();
    }
    __syncthreads();
    if (is_refill_thread) load_first_tiles<kStages>(t.n_begin, n_blocks, page_of, load_kv);
    HOPATTN_STAMP(p.stamps, cta, 2);  // barriers initialised, first loads issued

    q_regs.store(sQ, threadIdx.x);  // loaded at entry; the first K/V tiles are in flight
    cutlass::arch::fence_view_async_shared();
    __syncthreads();
    HOPATTN_STAMP(p.stamps, cta, 3);  // Q gathered
  }

  typename Traits::TiledMmaQK mma_qk;
  typename Traits::TiledMmaPV mma_pv;
  auto thr_qk = mma_qk.get_thread_slice(threadIdx.x);
  auto thr_pv = mma_pv.get_thread_slice(threadIdx.x);
  Tensor tSrQ = thr_qk.partition_fragment_A(sQ);                         // (MMA, MMA_M, MMA_K)
  Tensor tSrK = thr_qk.partition_fragment_B(sK);                         // (MMA, MMA_N, MMA_K, PIPE)
  Tensor tOrV = thr_pv.partition_fragment_B(sVt);                        // (MMA, MMA_N, MMA_K, PIPE)
  Tensor tSrS = partition_fragment_C(mma_qk, Shape<BlockM, BlockN>{});   // (MMA, MMA_M, MMA_N)
  Tensor tOrO = partition_fragment_C(mma_pv, Shape<BlockM, HeadDim>{});  // (MMA, MMA_M, MMA_N)
  Tensor tScS = thr_qk.partition_C(make_identity_tensor(Shape<BlockM, BlockN>{}));
  Tensor tOcO = thr_pv.partition_C(make_identity_tensor(Shape<BlockM, HeadDim>{}));
  Tensor tOrP = make_tensor_like<Element>(tSrS);
  Tensor tOrP_a = make_tensor(tOrP.data(), acc_to_a_operand_layout(tOrP.layout()));
  clear(tOrO);

  constexpr int kRows = decltype(size<0>(acc_rowcol(tSrS)))::value;
  OnlineSoftmax<kRows> softmax(p.softmax_scale, 0.0f, p.softcap_scale);
  // Attention sinks join the softmax here when this CTA writes the output itself (one split); with
  // several, the combine adds each row's sink once. Loaded before the loop, used after it.
  const bool sinks_here = p.sinks != nullptr && p.o_part == nullptr;
  float sink_log2[kRows];
  if (sinks_here) load_decode_sinks(p, t, tScS, sink_log2);
  const int n_begin = warp_uniform(t.n_begin);
  CUTE_NO_UNROLL
  for (int i = 0; i < n_blocks; ++i) {
    const int iu = warp_uniform(i);  // the refill's one-thread branch makes i divergent to ptxas
    const int n = n_begin + iu;
    const int stage = iu % kStages;
    const uint32_t phase = (iu / kStages) & 1;
    const bool refill = is_refill_thread && i + kStages < n_blocks;
    const int refill_page = paged && refill ? page_of(n + kStages) : 0;  // its latency under this tile's math
    Barrier::wait(&ss.k_full[stage], phase);
    if (i == 0) HOPATTN_STAMP(p.stamps, cta, 4);  // the first K tile has landed
    decode_tile_compute<Traits>(t, ss, n, stage, phase, i == 0, mma_qk, mma_pv, tSrQ, tSrK, tOrV, tSrS, tOrO, tScS,
                                tOrP, tOrP_a, sV, softmax);
    __syncthreads();  // no thread reads this stage any more
    if (refill) load_kv(n + kStages, stage, refill_page);
  }

  HOPATTN_STAMP(p.stamps, cta, 5);  // last tile done
  // The combine (a programmatic dependent) may launch once every CTA is here: its CTAs wait in
  // griddepcontrol.wait for this grid's stores, their launch off the critical path.
  asm volatile("griddepcontrol.launch_dependents;");
  float lse[kRows];
  if (sinks_here) softmax.finalize_rows(tOrO, lse, sink_log2);
  else softmax.finalize(tOrO, lse);
  store_decode_output<Traits>(p, t, tOrO, tOcO, tScS, lse, threadIdx.x, p.o_part != nullptr);
#ifdef HOPATTN_DECODE_STAMPS
  __syncthreads();
  HOPATTN_STAMP(p.stamps, cta, 6);  // every thread's stores issued
#endif
}

}  // namespace hopattn::attention
