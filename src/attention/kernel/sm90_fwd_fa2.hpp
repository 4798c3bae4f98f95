// FlashAttention-2 forward on Hopper, after Bikshandi & Shah, "A Case Study in CUDA Kernel
// Fusion: Implementing FlashAttention-2 on NVIDIA Hopper Architecture using the CUTLASS Library"
// (arXiv 2312.11918). Not warp-specialized: every warpgroup computes; one thread also issues TMA.
//
// Grid: one CTA per (Q tile of kBlockM rows, q-head, batch). For causal masks the tiles with the
// most work (the last rows) launch first. A tile visits the KV tiles n_first .. of its mask
// (n below counts from n_first). No fa2 row takes the options (FwdKernelSpec::options: window,
// softcap, sinks): with them this kernel grew from 126 to 146 registers (hdim 64, causal), too
// many for two CTAs per SM, and ran 1.4-1.5x slower at 512-2k (H200 r8, same-run A/B).
// CTA: kBlockM / 64 consumer warpgroups; warpgroup w owns rows [64w, 64w + 64) of the Q tile.
//
// Shared memory (SharedStorage): the Q tile (reused for the O tile of the TMA store), K and V
// rings of kStages tiles, one transaction mbarrier per Q load and per K and V stage.
//
// Pipeline (mbarriers q_full, k_full[s], v_full[s]; each: 1 arrival, by the TMA-issuing thread,
// plus the transaction bytes of one tile; every thread of the CTA waits on them):
//   prologue  thread 0: Q, then K/V tiles 0 .. kStages-1
//   tile n    all:      wait k_full[n % kStages]      (phase (n / kStages) & 1)
//                       S = Q·Kᵀ      WGMMA, both operands in shared memory
//                       mask (only tiles crossing the diagonal or the end of seqlen_k)
//                       online softmax on S, rescale O; P = bf16/fp16(S) in registers
//                       wait v_full[n % kStages]
//                       O += P·V      WGMMA, P from registers, V from shared memory
//                       __syncthreads: no warpgroup reads stage n % kStages any more
//             thread 0: TMA K/V tile n + kStages into that stage
//   epilogue  all:      O /= rowsum, LSE per row; O → shared memory (the Q tile's space)
//             thread 0: TMA store of O (rows past seqlen_q are clipped by the TMA unit)
// The TMA for tile n + kStages runs while tiles n+1 .. n+kStages-1 are computed.
//
// Registers per thread (fp32 accumulators, 64 rows per warpgroup): S = kBlockN/2, P =
// kBlockN/4 (16-bit pairs), O = kHeadDim/2; tile configurations keep the sum under the 255
// available at 256 threads per CTA (see sm90_fwd_config.hpp).
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
// clang-format on
#include <cutlass/arch/barrier.h>
#include <cutlass/cutlass.h>

#include <type_traits>

#include "attention/collective/sm90_fwd_epilogue.hpp"
#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/collective/sm90_fwd_mask.hpp"
#include "attention/collective/sm90_fwd_softmax.hpp"
#include "attention/collective/sm90_wgmma.hpp"
#include "attention/fwd_varlen.hpp"

namespace hopattn::attention {

template <class Element_, int kHeadDim_, int kBlockM_, int kBlockN_, int kStages_, bool kMmaRowSum_ = false,
          bool kQInRegisters_ = false>
struct Fa2Traits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kStages = kStages_;
  static constexpr int kWarpgroups = kBlockM / 64;
  static constexpr int kThreads = 128 * kWarpgroups;
  static_assert(kBlockM % 64 == 0 && kBlockN % 16 == 0 && kHeadDim % 64 == 0);
  // FP8 (e4m3 Q, K, V; the ws kernels' FwdKernelSpec::fp8 rows): O is bf16, V is transposed in
  // shared memory for the second GEMM (collective/sm90_fwd_fp8.hpp), whose k-blocks are 32 keys.
  static constexpr bool kFp8 = sizeof(Element) == 1;
  using ElementOut = std::conditional_t<kFp8, cutlass::bfloat16_t, Element>;
  static constexpr int kPvKeysPerKBlock = kFp8 ? 32 : 16;  // the K of one P·V WGMMA
  static_assert(!kFp8 || kBlockN % 64 == 0, "e4m3 V^T tiles are rows of 64 or 128 keys (64- or 128-byte swizzle)");
  // The row sums from the P·V WGMMA (FwdKernelSpec::mma_row_sum; e4m3 only): V's transposed tile
  // gets kSumRows more rows, all 1.0, so that O's columns HeadDim .. HeadDim + 7 accumulate each
  // row's sum of the e4m3-rounded P and the softmax adds no score (OnlineSoftmax<., ., true>).
  // WGMMA's N is at most 256, so hdim 64 and 128 only.
  static constexpr bool kMmaRowSum = kMmaRowSum_;
  static constexpr int kSumRows = kMmaRowSum ? 8 : 0;
  static constexpr int kPvN = kHeadDim + kSumRows;  // the N of O = P·V
  static_assert(!kMmaRowSum || (kFp8 && kPvN <= 256), "row sums by the MMA: e4m3, hdim + 8 <= 256");
#if !defined(CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED)
  // Without CuTe's extended shapes the selector would build N = hdim + 8 from 17 or 9 WGMMAs of N = 8.
  static_assert(!kMmaRowSum, "row sums by the MMA need CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED (the e4m3 instance files)");
#endif
  // Q from registers in S = Q·Kᵀ (FwdKernelSpec::q_in_registers; the ws kernels' consumers load
  // their rows of each tile's Q once, ws::load_q_registers): e4m3 only, where Q is 32 registers
  // per consumer thread at hdim 256; 16-bit Q would be 64 there, beside O's 128.
  static constexpr bool kQInRegisters = kQInRegisters_;
  static_assert(!kQInRegisters || kFp8, "Q in registers: e4m3 rows only");

  using BlockM = cute::Int<kBlockM>;
  using BlockN = cute::Int<kBlockN>;
  using HeadDim = cute::Int<kHeadDim>;
  using Stages = cute::Int<kStages>;

  // Warpgroups stacked along M; each issues its own 64-row WGMMAs.
  using WarpgroupLayout = cute::Layout<cute::Shape<cute::Int<kWarpgroups>, cute::_1, cute::_1>>;
  // S = Q·Kᵀ: (M, N, K) = (64, kBlockN, kHeadDim) per warpgroup, Q and K K-major in smem; or
  // (kQInRegisters) Q K-major in registers, K K-major in smem.
  using TiledMmaQK = decltype(cute::make_tiled_mma(
      std::conditional_t<kQInRegisters,
                         decltype(cute::GMMA::rs_op_selector<Element, Element, float, cute::Shape<cute::_64, BlockN, HeadDim>>()),
                         decltype(cute::GMMA::ss_op_selector<Element, Element, float, cute::Shape<cute::_64, BlockN, HeadDim>>())>{},
      WarpgroupLayout{}));
  // O = P·V: (M, N, K) = (64, kHeadDim, kBlockN); P K-major in registers, V MN-major in smem
  // (16-bit), or K-major, the transposed copy (e4m3: 8-bit WGMMA reads K-major operands only).
  static constexpr cute::GMMA::Major kMajorV = kFp8 ? cute::GMMA::Major::K : cute::GMMA::Major::MN;
  using TiledMmaPV = decltype(cute::make_tiled_mma(
      cute::GMMA::rs_op_selector<Element, Element, float, cute::Shape<cute::_64, cute::Int<kPvN>, BlockN>,
                                 cute::GMMA::Major::K, kMajorV>(),
      WarpgroupLayout{}));
  // O's first HeadDim columns as the epilogue sees them: TiledMmaPV itself, or (row sums by the
  // MMA) the same WGMMA at N = HeadDim, whose accumulator fragment is the prefix of TiledMmaPV's
  // (the 8-column groups j = 0 .. HeadDim / 8 - 1; the sums are group HeadDim / 8).
  using TiledMmaO = std::conditional_t<
      kMmaRowSum,
      decltype(cute::make_tiled_mma(cute::GMMA::rs_op_selector<Element, Element, float, cute::Shape<cute::_64, HeadDim, BlockN>,
                                                               cute::GMMA::Major::K, kMajorV>(),
                                    WarpgroupLayout{})),
      TiledMmaPV>;

  // K-major rows with the widest swizzle their extent allows (bank-conflict free for WGMMA): 128
  // bytes (64 16-bit elements, 128 e4m3) whenever the extent is a multiple of it, as every 16-bit
  // tile's is; e4m3 at hdim 64 (Q, K rows of 64 bytes) or on 64-key tiles (V's transposed copy)
  // takes the 64-byte swizzle.
  template <int kExtent>
  using KMajorAtom = std::conditional_t<(kExtent * int(sizeof(Element))) % 128 == 0, cute::GMMA::Layout_K_SW128_Atom<Element>,
                                        cute::GMMA::Layout_K_SW64_Atom<Element>>;
  static_assert((kHeadDim * int(sizeof(Element))) % 64 == 0 && (kBlockN * int(sizeof(Element))) % 64 == 0,
                "K-major shared-memory rows of at least 64 bytes");
  using SmemAtom = KMajorAtom<kHeadDim>;
  using SmemLayoutQ = decltype(cute::tile_to_shape(SmemAtom{}, cute::Shape<BlockM, HeadDim>{}));
  using SmemLayoutKV = decltype(cute::tile_to_shape(SmemAtom{}, cute::Shape<BlockN, HeadDim, Stages>{}));
  // V seen as (hdim, keys, stage): the B operand of P·V, contiguous along hdim (MN-major).
  using SmemLayoutVtOfKV = decltype(cute::composition(
      SmemLayoutKV{},
      cute::make_ordered_layout(cute::Shape<HeadDim, BlockN, Stages>{}, cute::Step<cute::_2, cute::_1, cute::_3>{})));
  // e4m3: V's transposed copy (hdim, slots, stage), contiguous along the slots (K-major), which the
  // producer warpgroup writes from the TMA's (keys, hdim) staging tile (Fp8VTranspose).
  using SmemLayoutVtKMajor =
      decltype(cute::tile_to_shape(KMajorAtom<kBlockN>{}, cute::Shape<cute::Int<kPvN>, BlockN, Stages>{}));
  using SmemLayoutVt = std::conditional_t<kFp8, SmemLayoutVtKMajor, SmemLayoutVtOfKV>;

  // Global tensors as the TMA unit sees them: (seqlen, hdim, heads, batch).
  using GmemShape = cute::Shape<int32_t, int32_t, int32_t, int32_t>;
  using GmemStride = cute::Stride<int64_t, cute::_1, int64_t, int64_t>;
  using GmemLayout = cute::Layout<GmemShape, GmemStride>;
  using TmaLoadQ = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}),
      SmemLayoutQ{}));
  using TmaLoadKV = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}),
      cute::take<0, 2>(SmemLayoutKV{})));
  // O in shared memory for its TMA store: ElementOut, so its own swizzle atom (the same type as
  // SmemAtom for 16-bit inputs, whose O and Q layouts are then one type).
  using SmemAtomO = cute::GMMA::Layout_K_SW128_Atom<ElementOut>;
  using SmemLayoutO = decltype(cute::tile_to_shape(SmemAtomO{}, cute::Shape<BlockM, HeadDim>{}));
  using TmaStoreO = decltype(cute::make_tma_copy(
      cute::SM90_TMA_STORE{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<ElementOut*>(nullptr)), GmemLayout{}),
      SmemLayoutO{}));
  // One consumer warpgroup's rows of O (64 x hdim), staged and stored by that warpgroup alone (the
  // persistent schedule's epilogue, store_o_and_lse_warpgroup); kWarpgroups of them stacked.
  static constexpr int kWarpgroupRows = kBlockM / kWarpgroups;
  // (BLK_M, D) over kWarpgroups stacked (64, D) tiles of `Atom`: row m is row m % 64 of tile m / 64.
  template <class Atom>
  using RowsOfWarpgroups = decltype(cute::composition(
      cute::tile_to_shape(Atom{}, cute::Shape<cute::Int<kWarpgroupRows>, HeadDim, cute::Int<kWarpgroups>>{}),
      cute::Layout<cute::Shape<cute::Shape<cute::Int<kWarpgroupRows>, cute::Int<kWarpgroups>>, HeadDim>,
                   cute::Stride<cute::Stride<cute::_1, cute::Int<kWarpgroupRows * kHeadDim>>, cute::Int<kWarpgroupRows>>>{}));
  using SmemLayoutOWarpgroup = decltype(cute::tile_to_shape(SmemAtomO{}, cute::Shape<cute::Int<kWarpgroupRows>, HeadDim>{}));
  using SmemLayoutOWarpgroups =
      decltype(cute::tile_to_shape(SmemAtomO{}, cute::Shape<cute::Int<kWarpgroupRows>, HeadDim, cute::Int<kWarpgroups>>{}));
  // (BLK_M, D) over those stacked tiles (the per-warpgroup O staging).
  using SmemLayoutRowsOfWarpgroups = RowsOfWarpgroups<SmemAtomO>;
  using TmaStoreOWarpgroup = decltype(cute::make_tma_copy(
      cute::SM90_TMA_STORE{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<ElementOut*>(nullptr)), GmemLayout{}),
      SmemLayoutOWarpgroup{}));
  // One warpgroup's rows of Q loaded into its own (64, hdim) tile (the persistent schedule at hdim
  // 256, whose Q's space is split per warpgroup: WsSharedStorageQHalvesSharedO), and Q's space
  // seen as (BLK_M, D) over those tiles.
  using SmemLayoutQWarpgroup = decltype(cute::tile_to_shape(SmemAtom{}, cute::Shape<cute::Int<kWarpgroupRows>, HeadDim>{}));
  using SmemLayoutQRowsOfWarpgroups = RowsOfWarpgroups<SmemAtom>;
  using TmaLoadQWarpgroup = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}),
      SmemLayoutQWarpgroup{}));

  static constexpr uint32_t kTmaBytesQ = kBlockM * kHeadDim * sizeof(Element);
  static constexpr uint32_t kTmaBytesQWarpgroup = kWarpgroupRows * kHeadDim * sizeof(Element);
  static constexpr uint32_t kTmaBytesKV = kBlockN * kHeadDim * sizeof(Element);

  struct SharedStorage {
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>, 1024> q;  // Q, then O for the store
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutKV>, 1024> k;
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutKV>, 1024> v;
    alignas(8) uint64_t q_full;
    alignas(8) uint64_t k_full[kStages];
    alignas(8) uint64_t v_full[kStages];
  };
  static constexpr int kSharedBytes = int(sizeof(SharedStorage));

  struct Params {
    TmaLoadQ tma_q;
    TmaLoadKV tma_k, tma_v;
    TmaStoreO tma_o;
    TmaStoreOWarpgroup tma_o_warpgroup;
    TmaLoadQWarpgroup tma_q_warpgroup;
    int seqlen_q, seqlen_k, heads_q, heads_kv, batch;
    float softmax_scale;
    float* lse;  // (batch, heads_q, seqlen_q) or nullptr
    int64_t lse_batch_stride, lse_head_stride, lse_seq_stride;
    // Warp-specialized causal kernels: a warpgroup's last P·V covers only the keys its rows see
    // (ws::pv_width_of_last_block). 0 turns that off (FwdParams::narrow_pv, for ablations).
    int narrow_pv;
    // How far (log2 units, after scaling) a row's maximum may lag its scores before O is
    // rescaled (OnlineSoftmax::stale_log2), in the FA2 and warp-specialized kernels; 8 by default
    // (FwdParams::stale_max_log2; 0: exact maxima, for ablations).
    float stale_max_log2;
    // Persistent warp-specialized kernels with a causal mask: (head, batch) pairs per group of the
    // tile order (ws::FwdTileScheduler); 0 = one group of every pair; < 0 the folded order. Set
    // by launch_fwd.
    int causal_group = 0;
    // Warp-specialized causal kernels: a consumer warpgroup skips the tile's last KV block when none
    // of its rows see it (no S, softmax or P·V). 0 turns that off (FwdParams::skip_unseen).
    int skip_unseen_blocks = 1;
    // The band's window (FwdMask<true>; FwdParams), the softcap (OnlineSoftmax::apply_softcap;
    // 0: none) and the attention sinks ((heads_q) float32, or nullptr).
    int window_left = 0, window_right = 0;
    float softcap_scale = 0.0f;
    const float* sinks = nullptr;
    // Variable-length batches (FwdParams::varlen; the options rows only): the tile list that
    // fwd_varlen_prepare wrote into the workspace and its length; nullptr for padded calls. The
    // TMA views are then end-aligned (make_fwd_params): seqlen_q / seqlen_k hold max_seqlen_q / k.
    const FwdVarlenTile* varlen_tiles = nullptr;
    const int* varlen_count = nullptr;
    // Dynamic dealing of the list (FwdParams::varlen_dynamic): the workspace's claim counter, which
    // the prepare kernel zeroes; nullptr: the static dealing (ws::TileCursor).
    int* varlen_claim = nullptr;
    // KV-cache lists (FwdParams::cache_seqlens): padded q and o (the LSE addressed by batch), each
    // entry's KV range and split index ((first tile, tiles, split, 0) per entry, beside the list:
    // ws::list_kv_range), and with several splits each entry's O (fp32) and LSE to split_o /
    // split_lse instead of o / lse (FwdParams).
    int padded_q_list = 0;
    const int32_t* varlen_ranges = nullptr;
    float* split_o = nullptr;
    float* split_lse = nullptr;
    // e4m3 rows: the (batch, heads_kv) float32 descales of Q, K and V (FwdParams), all three or
    // none (1); strides in elements.
    const float* q_descale = nullptr;
    const float* k_descale = nullptr;
    const float* v_descale = nullptr;
    int64_t q_descale_batch_stride = 0, q_descale_head_stride = 0;
    int64_t k_descale_batch_stride = 0, k_descale_head_stride = 0;
    int64_t v_descale_batch_stride = 0, v_descale_head_stride = 0;
  };
};

namespace fa2 {
using Barrier = cutlass::arch::ClusterTransactionBarrier;
}  // namespace fa2

template <class Traits, class Mask>
__global__ void __launch_bounds__(Traits::kThreads, 1)
    fa2_forward_kernel(CUTE_GRID_CONSTANT typename Traits::Params const p) {
  using namespace cute;
  using Element = typename Traits::Element;
  using BlockM = typename Traits::BlockM;
  using BlockN = typename Traits::BlockN;
  using HeadDim = typename Traits::HeadDim;
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN, kStages = Traits::kStages;

  extern __shared__ char smem_raw[];
  auto& ss = *reinterpret_cast<typename Traits::SharedStorage*>(smem_raw);

  const int m_block = Mask::kCausal ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
  const int h = blockIdx.y, b = blockIdx.z;
  const int h_kv = h / (p.heads_q / p.heads_kv);
  const Mask mask{p.seqlen_q, p.seqlen_k, 0, 0};  // no fa2 row takes a window: causal's sides
  const int n_first = 0;  // the tile's KV blocks: n_first, n_first + 1, ...
  const int n_blocks = mask.template n_block_max<kBlockM, kBlockN>(m_block);
  const bool is_tma_thread = threadIdx.x == 0;

  Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), typename Traits::SmemLayoutQ{});    // (BLK_M, D)
  Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Traits::SmemLayoutKV{});   // (BLK_N, D, PIPE)
  Tensor sV = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutKV{});   // (BLK_N, D, PIPE)
  Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutVt{});  // (D, BLK_N, PIPE)

  Tensor mQ = p.tma_q.get_tma_tensor(make_shape(p.seqlen_q, int(Traits::kHeadDim), p.heads_q, p.batch));
  Tensor mK = p.tma_k.get_tma_tensor(make_shape(p.seqlen_k, int(Traits::kHeadDim), p.heads_kv, p.batch));
  Tensor mV = p.tma_v.get_tma_tensor(make_shape(p.seqlen_k, int(Traits::kHeadDim), p.heads_kv, p.batch));
  Tensor gQ = local_tile(mQ(_, _, h, b), Shape<BlockM, HeadDim>{}, make_coord(m_block, _0{}));  // (BLK_M, D)
  Tensor gK = local_tile(mK(_, _, h_kv, b), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));    // (BLK_N, D, n)
  Tensor gV = local_tile(mV(_, _, h_kv, b), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));    // (BLK_N, D, n)
  // TMA views: mode 0 is what one TMA copy moves (a whole tile), mode 1 the tile / stage index.
  auto tma_q_parts = tma_partition(p.tma_q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQ), group_modes<0, 2>(gQ));
  auto tma_k_parts = tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK));
  auto tma_v_parts = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV));
  Tensor tQgQ = get<0>(tma_q_parts);  // (TMA)
  Tensor tQsQ = get<1>(tma_q_parts);  // (TMA)
  Tensor tKgK = get<0>(tma_k_parts);  // (TMA, n)
  Tensor tKsK = get<1>(tma_k_parts);  // (TMA, PIPE)
  Tensor tVgV = get<0>(tma_v_parts);  // (TMA, n)
  Tensor tVsV = get<1>(tma_v_parts);  // (TMA, PIPE)

  auto load_kv = [&](int n, int stage) {
    fa2::Barrier::arrive_and_expect_tx(&ss.k_full[stage], Traits::kTmaBytesKV);
    copy(p.tma_k.with(ss.k_full[stage]), tKgK(_, n_first + n), tKsK(_, stage));
    fa2::Barrier::arrive_and_expect_tx(&ss.v_full[stage], Traits::kTmaBytesKV);
    copy(p.tma_v.with(ss.v_full[stage]), tVgV(_, n_first + n), tVsV(_, stage));
  };
  if (is_tma_thread) {
    fa2::Barrier::init(&ss.q_full, 1);
    CUTE_UNROLL
    for (int s = 0; s < kStages; ++s) fa2::Barrier::init(&ss.k_full[s], 1), fa2::Barrier::init(&ss.v_full[s], 1);
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
  if (is_tma_thread && n_blocks > 0) {
    fa2::Barrier::arrive_and_expect_tx(&ss.q_full, Traits::kTmaBytesQ);
    copy(p.tma_q.with(ss.q_full), tQgQ, tQsQ);
    for (int n = 0; n < kStages && n < n_blocks; ++n) load_kv(n, n);
  }

  typename Traits::TiledMmaQK mma_qk;
  typename Traits::TiledMmaPV mma_pv;
  auto thr_qk = mma_qk.get_thread_slice(threadIdx.x);
  auto thr_pv = mma_pv.get_thread_slice(threadIdx.x);
  Tensor tSrQ = thr_qk.partition_fragment_A(sQ);                          // (MMA, MMA_M, MMA_K)
  Tensor tSrK = thr_qk.partition_fragment_B(sK);                          // (MMA, MMA_N, MMA_K, PIPE)
  Tensor tOrV = thr_pv.partition_fragment_B(sVt);                         // (MMA, MMA_N, MMA_K, PIPE)
  Tensor tSrS = partition_fragment_C(mma_qk, Shape<BlockM, BlockN>{});    // (MMA, MMA_M, MMA_N)
  Tensor tOrO = partition_fragment_C(mma_pv, Shape<BlockM, HeadDim>{});   // (MMA, MMA_M, MMA_N)
  Tensor tScS = thr_qk.partition_C(make_identity_tensor(Shape<BlockM, BlockN>{}));  // (row, col) of each S value
  Tensor tOrP = make_tensor_like<Element>(tSrS);
  Tensor tOrP_a = make_tensor(tOrP.data(), acc_to_a_operand_layout(tOrP.layout()));  // (MMA, MMA_M, MMA_K)
  clear(tOrO);

  constexpr int kRows = decltype(size<0>(acc_rowcol(tSrS)))::value;
  OnlineSoftmax<kRows> softmax(p.softmax_scale, p.stale_max_log2);
  float alpha[kRows];
  CUTE_NO_UNROLL
  for (int n = 0; n < n_blocks; ++n) {
    const int stage = n % kStages;
    const uint32_t phase = (n / kStages) & 1;
    if (n == 0) fa2::Barrier::wait(&ss.q_full, 0);
    fa2::Barrier::wait(&ss.k_full[stage], phase);
    wgmma_issue<true>(mma_qk, tSrQ, tSrK(_, _, _, stage), tSrS);
    warpgroup_wait<0>();
    if (mask.template needs_mask<kBlockM, kBlockN>(m_block, n_first + n))
      mask.template apply<kBlockM, kBlockN>(tSrS, tScS, m_block, n_first + n);
    if (n == 0) {
      softmax.template online_exp<true>(tSrS, alpha);
    } else {
      softmax.template online_exp<false>(tSrS, alpha);
      softmax.rescale_if_needed(tOrO, alpha);  // every thread of the CTA is here
    }
    convert_fragment<Element>(tSrS, tOrP);
    fa2::Barrier::wait(&ss.v_full[stage], phase);
    wgmma_issue<false>(mma_pv, tOrP_a, tOrV(_, _, _, stage), tOrO);
    warpgroup_wait<0>();
    __syncthreads();  // no warpgroup reads this stage's K or V any more
    if (is_tma_thread && n + kStages < n_blocks) load_kv(n + kStages, stage);
  }

  float lse[kRows];
  softmax.finalize(tOrO, lse);
  store_o_and_lse<Traits>(p, ss.q.data(), mma_pv, tOrO, tScS, lse, m_block, h, b, int(threadIdx.x),
                          [] { __syncthreads(); });
}

}  // namespace hopattn::attention
