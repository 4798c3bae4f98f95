// Decode over an int8 KV cache with WGMMA (registry rows kv8_wgmma_1c_1cta, kv8_wgmma_options_1cta,
// kv8_wgmma_1c_2cta, kv8_wgmma_swap_2cta; device/decode_registry.hpp): a transform warpgroup converts each int8 tile
// into a 16-bit tile in shared memory, which the consumer warpgroup's WGMMAs read. The grid, the
// splits and the tile of rows are the 16-bit split kernel's (kernel/sm90_decode.hpp).
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>

#include "attention/collective/sm90_decode_epilogue.hpp"
#include "attention/collective/sm90_decode_int8_convert.hpp"
#include "attention/collective/sm90_decode_q.hpp"
#include "attention/collective/sm90_decode_tile.hpp"
#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/collective/sm90_fwd_softmax.hpp"
#include "attention/collective/sm90_warp_uniform.hpp"
#include "attention/collective/sm90_wgmma.hpp"
#include "attention/kernel/sm90_fwd_fa2.hpp"

namespace hopattn::attention {

// The int8 cache converted for WGMMA (docs/decode.md): kv8_wgmma_1c_1cta, kv8_wgmma_1c_2cta,
// kv8_wgmma_swap_2cta. K/V tiles of 64 keys (which divide both scale blocks) arrive by TMA as
// int8 into a raw ring; the transform warpgroup turns them into Element tiles, value · scale
// rounded as a host-side dequantization would, in a second ring of two stages that the consumer
// warpgroup's WGMMAs read. The raw ring takes what shared memory is left (up to 128 KB): it holds
// the bytes in flight.
// kCtasPerSm 2 (hdim <= 128): a 32 KB raw ring, so that two CTAs share an SM (each at most 128
// registers per thread) and one's transform overlaps the other's consumer.
// kSwapped (kv8_wgmma_swap_2cta: two CTAs per SM, hdim <= 128): the consumer computes
// Sᵀ = K·Qᵀ and Oᵀ = Vᵀ·Pᵀ with the 64 keys (or hdim) as WGMMA's M and at most kSwappedRows
// packed query rows as N (m64n16 instead of m64n64 / m64n128 with 64 mostly padding rows): see
// decode_int8_swapped_consume.
// kOptions_ (kv8_wgmma_options_1cta): the options, below.
template <class Element_, int kHeadDim_, int kCtasPerSm_ = 1, bool kSwapped_ = false, bool kOptions_ = false>
struct DecodeInt8Traits : Fa2Traits<Element_, kHeadDim_, 64, 64, 2> {
  using Base = Fa2Traits<Element_, kHeadDim_, 64, 64, 2>;
  using Element = Element_;
  static constexpr bool kInt8Cache = true;
  static constexpr int kCtasPerSm = kCtasPerSm_;
  static constexpr bool kSwapped = kSwapped_;
  static constexpr int kSwappedRows = 16;
  static constexpr int kTileRows = kSwapped ? kSwappedRows : Base::kBlockM;  // query rows per CTA
  // The options (a sliding window, the softcap, sinks): the row kv8_wgmma_options_1cta, which int8
  // calls with any of them run (kvcache_check.cpp, pick_decode_kernel): kv8_wgmma_1c_1cta's
  // kernel with them, an instance of its own. Compiled into kv8_wgmma_1c_1cta itself (uniform
  // tests when off) they made its plain calls 5-6 % slower at hdim 256 (H100, 2026-12-07); one
  // CTA per SM: its 255-register budget holds the window's left edge, which spilled in
  // kv8_wgmma_1c_2cta (52 bytes).
  static constexpr bool kOptions = kOptions_;
  static_assert(!kOptions || (kCtasPerSm_ == 1 && !kSwapped_), "the options: one CTA per SM, not swapped");
  static_assert(kCtasPerSm == 1 || (kCtasPerSm == 2 && kHeadDim_ <= 128), "two CTAs per SM: hdim <= 128");
  static_assert(!kSwapped || kCtasPerSm == 2, "swapped: two CTAs per SM");
  static constexpr int kThreads = 256;  // warpgroup 0: TMA + transform; warpgroup 1: the consumer
  static constexpr int kConvStages = Base::kStages;
  static constexpr int kRawTileBytes = 2 * Base::kBlockN * kHeadDim_;  // a raw stage: K + V tiles
  static constexpr int kRawBudget = kCtasPerSm == 2 ? 32 * 1024 : (kHeadDim_ == 256 ? 64 * 1024 : 128 * 1024);
  static constexpr int kRawStages = kRawBudget / kRawTileBytes < 16 ? kRawBudget / kRawTileBytes : 16;
  using RawStages = cute::Int<kRawStages>;
  // int8 tiles, row-major (key, channel), stage outermost: the transform reads 16-byte chunks.
  using SmemLayoutRaw = cute::Layout<cute::Shape<typename Base::BlockN, typename Base::HeadDim, RawStages>,
                                     cute::Stride<typename Base::HeadDim, cute::_1,
                                                  cute::Int<Base::kBlockN * Base::kHeadDim>>>;
  using TmaLoadRaw = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{},
      cute::make_tensor(cute::make_gmem_ptr(static_cast<int8_t const*>(nullptr)), typename Base::GmemLayout{}),
      cute::take<0, 2>(SmemLayoutRaw{})));
  static constexpr uint32_t kTmaBytesRaw = Base::kBlockN * Base::kHeadDim;
  // A paged cache with pages smaller than the 64-key tile (16, 32): the tile is gathered as
  // kBlockN / 16 boxes of 16 keys, each from its own page, into the raw stage's rows it holds.
  static constexpr int kPageBoxRows = 16;
  using PageBox = cute::Int<kPageBoxRows>;
  using SmemLayoutPageBox = cute::Layout<cute::Shape<PageBox, typename Base::HeadDim>, cute::Stride<typename Base::HeadDim, cute::_1>>;
  using TmaLoadPageBox = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{},
      cute::make_tensor(cute::make_gmem_ptr(static_cast<int8_t const*>(nullptr)), typename Base::GmemLayout{}),
      SmemLayoutPageBox{}));
  static constexpr uint32_t kTmaBytesPageBox = kPageBoxRows * Base::kHeadDim;

  struct SharedStorage {
    cute::array_aligned<Element, cute::cosize_v<typename Base::SmemLayoutQ>, 1024> q;
    cute::array_aligned<Element, cute::cosize_v<typename Base::SmemLayoutKV>, 1024> k;
    cute::array_aligned<Element, cute::cosize_v<typename Base::SmemLayoutKV>, 1024> v;
    cute::array_aligned<int8_t, cute::cosize_v<SmemLayoutRaw>, 128> k_raw;
    cute::array_aligned<int8_t, cute::cosize_v<SmemLayoutRaw>, 128> v_raw;
    alignas(8) uint64_t raw_full[kRawStages];
    alignas(8) uint64_t conv_full[kConvStages];
    alignas(8) uint64_t conv_empty[kConvStages];
  };
  static constexpr int kSharedBytes = int(sizeof(SharedStorage));  // checked against the device at launch

  struct Params : DecodeInt8SplitParams<Element, TmaLoadRaw, TmaLoadRaw> {
    TmaLoadPageBox tma_k_box, tma_v_box;  // pages smaller than kBlockN (unset otherwise)
  };
};

// The swapped consumer of the int8 kernel (kv8_wgmma_swap_2cta), one warpgroup, `thread` 0..127.
// Per 64-key tile of the converted ring (the transform warpgroup and its barriers are unchanged):
//   Sᵀ (64 keys x 16 rows) = K·Qᵀ        m64n16k16 WGMMAs, K and Q from shared memory (K-major)
//   mask, online softmax per column (= query row): column maxima reduced over the 4 warps
//       through shared memory (double-buffered by tile parity, named barrier kSwappedReduce)
//   P (16 x 64, Element) written to shared memory, fence.proxy.async, named barrier
//   Oᵀ (hdim x 16) += Vᵀ·Pᵀ              m64n16k16 WGMMAs, V MN-major and P K-major from shared memory
//   arrive conv_empty
// The running sums stay per thread (over its keys) and are reduced once at the end. Tensor work
// per tile: 2 x 64 x 16 x hdim multiply-adds instead of 2 x 64 x 64 x hdim for the 64-row tile.
// Shared memory: Q (16 rows), P and the reduction buffers live in the (64-row) Q storage.
template <class Traits>
CUTE_DEVICE void decode_int8_swapped_consume(typename Traits::Params const& p, DecodeTile const& t,
                                             typename Traits::SharedStorage& ss, int n_blocks, int thread) {
  using namespace cute;
  using Element = typename Traits::Element;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kQ = Traits::kSwappedRows, kBlockN = Traits::kBlockN, kHeadDim = Traits::kHeadDim;
  constexpr int kConvStages = Traits::kConvStages;
  using QRows = Int<kQ>;
  using BlockN = Int<kBlockN>;
  using HeadDim = Int<kHeadDim>;
  using SmemLayoutQ = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Element>{}, Shape<QRows, HeadDim>{}));
  using SmemLayoutP = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Element>{}, Shape<QRows, BlockN>{}));
  constexpr int kQElems = cosize_v<SmemLayoutQ>, kPElems = cosize_v<SmemLayoutP>;
  static_assert((kQElems * sizeof(Element)) % 1024 == 0, "P starts on a swizzle period");
  static_assert((kQElems + kPElems) * sizeof(Element) + 2 * 4 * kQ * sizeof(float) <= sizeof(ss.q),
                "Q, P and the reduction buffers fit the Q storage");
  Element* base = ss.q.data();
  Tensor sQ = make_tensor(make_smem_ptr(base), SmemLayoutQ{});             // (16, D)
  Tensor sP = make_tensor(make_smem_ptr(base + kQElems), SmemLayoutP{});   // (16, 64)
  float* red = reinterpret_cast<float*>(base + kQElems + kPElems);         // [2][4 warps][16]
  Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Traits::SmemLayoutKV{});   // (64, D, CONV)
  Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutVt{});  // (D, 64, CONV)
  const int warp = thread / 32, lane = thread % 32;
  const auto barrier = uint32_t(DecodeNamedBarrier::kSwappedReduce);

  gather_q<Traits, decltype(sQ), kQ>(p, t, sQ, thread, 128);
  cutlass::arch::fence_view_async_shared();
  cutlass::arch::NamedBarrier::sync(128, barrier);

  auto mma_s = make_tiled_mma(GMMA::ss_op_selector<Element, Element, float, Shape<_64, QRows, HeadDim>>());
  auto mma_o = make_tiled_mma(GMMA::ss_op_selector<Element, Element, float, Shape<_64, QRows, BlockN>,
                                                   GMMA::Major::MN, GMMA::Major::K>());
  auto thr_s = mma_s.get_thread_slice(thread);
  auto thr_o = mma_o.get_thread_slice(thread);
  Tensor tSrK = thr_s.partition_fragment_A(sK);                             // (MMA, MMA_M, MMA_K, CONV)
  Tensor tSrQ = thr_s.partition_fragment_B(sQ);                             // (MMA, MMA_N, MMA_K)
  Tensor tSrS = partition_fragment_C(mma_s, Shape<BlockN, QRows>{});        // keys x rows
  Tensor tScS = thr_s.partition_C(make_identity_tensor(Shape<BlockN, QRows>{}));
  Tensor tOrV = thr_o.partition_fragment_A(sVt);                            // (MMA, MMA_M, MMA_K, CONV)
  Tensor tOrP = thr_o.partition_fragment_B(sP);                             // (MMA, MMA_N, MMA_K)
  Tensor tOrO = partition_fragment_C(mma_o, Shape<HeadDim, QRows>{});       // hdim x rows
  Tensor tOcO = thr_o.partition_C(make_identity_tensor(Shape<HeadDim, QRows>{}));
  clear(tOrO);
  auto s = acc_rowcol(tSrS);   // (keys of this thread, its columns)
  auto cs_ = acc_rowcol(tScS);
  auto o = acc_rowcol(tOrO);   // (hdim rows of this thread, the same columns)
  auto co = acc_rowcol(tOcO);
  constexpr int kCols = decltype(size<1>(s))::value;
  static_assert(decltype(size<1>(o))::value == kCols, "S and O fragments hold the same columns");
  int col[kCols];
  CUTE_UNROLL
  for (int j = 0; j < kCols; ++j) col[j] = get<1>(cs_(0, j));
  const float scale_log2 = p.softmax_scale * float(M_LOG2E);
  float m_run[kCols], l_run[kCols];
  CUTE_UNROLL
  for (int j = 0; j < kCols; ++j) m_run[j] = -INFINITY, l_run[j] = 0.0f;

  const int n_begin = warp_uniform(t.n_begin);
  CUTE_NO_UNROLL
  for (int i = 0; i < n_blocks; ++i) {
    const int iu = warp_uniform(i);  // (sm90_warp_uniform.hpp: the descriptors in uniform registers)
    const int n = n_begin + iu;
    const int stage = iu % kConvStages;
    float* red_i = red + (iu & 1) * 4 * kQ;
    Barrier::wait(&ss.conv_full[stage], (iu / kConvStages) & 1);
    wgmma_issue<true>(mma_s, tSrK(_, _, _, stage), tSrQ, tSrS);
    warpgroup_wait<0>();
    if ((n + 1) * kBlockN > t.mask_from) {
      CUTE_UNROLL
      for (int j = 0; j < kCols; ++j) {
        const int row = t.row0 + col[j];
        const int limit = row < t.rows ? t.key_limit(row) : 0;
        CUTE_UNROLL
        for (int r = 0; r < size<0>(s); ++r)
          if (n * kBlockN + int(get<0>(cs_(r, j))) >= limit) s(r, j) = -INFINITY;
      }
    }
    // Column maxima: the thread's keys, the 8 lanes holding the same columns, the 4 warps.
    float mx[kCols];
    CUTE_UNROLL
    for (int j = 0; j < kCols; ++j) {
      mx[j] = -INFINITY;
      CUTE_UNROLL
      for (int r = 0; r < size<0>(s); ++r) mx[j] = fmaxf(mx[j], s(r, j));
      CUTE_UNROLL
      for (int off = 4; off < 32; off *= 2) mx[j] = fmaxf(mx[j], __shfl_xor_sync(0xffffffffu, mx[j], off));
      if (lane < 4) red_i[warp * kQ + col[j]] = mx[j];
    }
    cutlass::arch::NamedBarrier::sync(128, barrier);
    CUTE_UNROLL
    for (int j = 0; j < kCols; ++j) {
      float m_new = m_run[j];
      CUTE_UNROLL
      for (int w = 0; w < 4; ++w) m_new = fmaxf(m_new, red_i[w * kQ + col[j]]);
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a column with no key yet
      const float corr = exp2_ftz((m_run[j] - m_use) * scale_log2);  // 0 while m_run is -inf
      m_run[j] = m_new;
      l_run[j] *= corr;
      CUTE_UNROLL
      for (int r = 0; r < size<0>(o); ++r) o(r, j) *= corr;
      const float bias = -m_use * scale_log2;
      CUTE_UNROLL
      for (int r = 0; r < size<0>(s); ++r) {
        const float pr = exp2_ftz(fmaf(s(r, j), scale_log2, bias));
        l_run[j] += pr;
        const Element pe(pr);
        st_shared_u16(&sP(col[j], get<0>(cs_(r, j))), reinterpret_cast<const uint16_t&>(pe));
      }
    }
    cutlass::arch::fence_view_async_shared();  // P: generic writes -> visible to WGMMA
    cutlass::arch::NamedBarrier::sync(128, barrier);
    wgmma_issue<false>(mma_o, tOrV(_, _, _, stage), tOrP, tOrO);
    warpgroup_wait<0>();
    Barrier::arrive(&ss.conv_empty[stage]);
  }

  // Row sums over the 8 lanes and the 4 warps; LSE; O = Oᵀ / l, unpacked to (position, head).
  float* red_l = red + (n_blocks & 1) * 4 * kQ;
  float l_tot[kCols], lse[kCols];
  CUTE_UNROLL
  for (int j = 0; j < kCols; ++j) {
    float l = l_run[j];
    CUTE_UNROLL
    for (int off = 4; off < 32; off *= 2) l += __shfl_xor_sync(0xffffffffu, l, off);
    if (lane < 4) red_l[warp * kQ + col[j]] = l;
  }
  cutlass::arch::NamedBarrier::sync(128, barrier);
  CUTE_UNROLL
  for (int j = 0; j < kCols; ++j) {
    l_tot[j] = red_l[col[j]] + red_l[kQ + col[j]] + red_l[2 * kQ + col[j]] + red_l[3 * kQ + col[j]];
    lse[j] = t.bad ? NAN : (l_tot[j] > 0.0f ? m_run[j] * p.softmax_scale + logf(l_tot[j]) : -INFINITY);
    const float inv = t.bad ? NAN : (l_tot[j] > 0.0f ? 1.0f / l_tot[j] : 0.0f);
    CUTE_UNROLL
    for (int r = 0; r < size<0>(o); ++r) o(r, j) *= inv;
  }
  CUTE_UNROLL
  for (int j = 0; j < kCols; ++j) {
    const int row = t.row0 + col[j];
    if (row >= t.rows) continue;
    const int sp = t.pos(row), h = t.head(row);
    if (warp == 0 && lane < 4) {  // lanes 0-3 of warp 0 hold every column once
      if (p.o_part != nullptr)
        p.lse_part[((int64_t(t.slot) * p.batch + t.b) * p.heads_q + h) * p.seqlen_q + sp] = lse[j];
      else if (p.lse != nullptr)
        p.lse[t.b * p.lse_batch_stride + h * p.lse_head_stride + sp * p.lse_seq_stride] = lse[j];
    }
    CUTE_UNROLL
    for (int r = 0; r < size<0>(o); ++r) {
      const int d = get<0>(co(r, j));
      if (p.o_part != nullptr)
        p.o_part[(((int64_t(t.slot) * p.batch + t.b) * p.heads_q + h) * p.seqlen_q + sp) * kHeadDim + d] = o(r, j);
      else
        p.o[t.b * p.o_batch_stride + sp * p.o_seq_stride + h * p.o_head_stride + d] = Element(o(r, j));
    }
  }
}

// The int8-cache kernel of DecodeInt8Traits. Roles and pipelines:
//   warpgroup 0 (transform), thread 0 also the TMA issuer:
//     raw_full[rs]    1 arrival (thread 0's expect_tx of the K + V bytes); transform threads wait.
//     conv_full[cs]   128 arrivals (every transform thread, after its writes and a
//                     fence.proxy.async); the consumer warpgroup waits.
//     conv_empty[cs]  128 arrivals (every consumer thread once its P·V on the stage is done); the
//                     transform waits before overwriting (first round passes: parity 1).
//     named barrier kTransform (128 transform threads): the raw stage is read; thread 0 refills it.
//     Per tile: wait raw_full and conv_empty, convert int8 · scale -> Element (rows past the
//     length as zeros; st.shared), write, fence, arrive conv_full, load the next tile's scales
//     into registers (after the fence, whose MEMBAR would otherwise wait for them), barrier 1,
//     refill.
//   warpgroup 1 (consumer): per tile wait conv_full, S = Q·Kᵀ, mask, online softmax, O += P·V,
//     arrive conv_empty; then the epilogue. With kSwapped, decode_int8_swapped_consume instead.
template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, Traits::kCtasPerSm)
    decode_int8_kernel(CUTE_GRID_CONSTANT typename Traits::Params const p) {
  using namespace cute;
  using Element = typename Traits::Element;
  using BlockM = typename Traits::BlockM;
  using BlockN = typename Traits::BlockN;
  using HeadDim = typename Traits::HeadDim;
  constexpr int kBlockN = Traits::kBlockN, kHeadDim = Traits::kHeadDim;
  constexpr int kRawStages = Traits::kRawStages, kConvStages = Traits::kConvStages;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;

  extern __shared__ char smem_raw[];
  auto& ss = *reinterpret_cast<typename Traits::SharedStorage*>(smem_raw);

  DecodeTile t = DecodeTile::make<typename Traits::Params, Traits::kTileRows, kBlockN>(p);
  if (t.bad && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) record_bad_length(p.error, t.b, t.len);
  // A paged cache (the scales paged by the same ids: k_scale (num_pages, max(1, page_size /
  // quant_block), heads_kv, d), v_scale (num_pages, page_size, heads_kv)). Pages of at least
  // kBlockN keys: each tile in one page, one box. Smaller pages (16, 32): the tile's 16-key boxes
  // from their own pages (warp 0's lane j issues box j); every page of a scale block holds the
  // block's K scales, so a tile's come from its first page. Every page the CTA reads must be in
  // the pool, as in decode_kernel.
  const bool paged = p.page_table != nullptr;
  const int32_t* pages = paged ? p.page_table + int64_t(t.b) * p.pt_batch_stride : nullptr;
  // With the options, the keys [key_lo, key_hi) the CTA's rows see (a window's: the pages before
  // it are not read), as in decode_kernel; without, key_lo is 0 and key_hi the length.
  constexpr bool kOptions = Traits::kOptions;
  const int key_lo = kOptions ? t.key_lo : 0, key_hi = kOptions ? t.key_hi : t.len;
  if (paged && !t.bad && t.n_end > t.n_begin &&
      !cta_pages_in_pool<Traits::kThreads>(p, pages, kOptions ? max(t.n_begin * kBlockN, key_lo) : t.n_begin * kBlockN,
                                           min(t.n_end * kBlockN, key_hi), t.b))
    t.bad = true, t.n_end = t.n_begin;
  const int n_blocks = t.n_end - t.n_begin;
  // Tile n's page (0 unpaged) and its tile within the page.
  auto tile_page = [&](int n) { return paged ? pages[(n * kBlockN) >> p.page_shift] : 0; };
  auto tile_in_page = [&](int n) { return ((n * kBlockN) & ((1 << p.page_shift) - 1)) / kBlockN; };
  const int warpgroup = threadIdx.x / 128, thread = threadIdx.x % 128;
  constexpr int kBoxRows = Traits::kPageBoxRows, kBoxes = kBlockN / kBoxRows;
  const bool small_pages = paged && (1 << p.page_shift) < kBlockN;
  const int lane = thread % 32;
  // The id a refill of tile n needs: its page (thread 0 issues the tile), or with small pages
  // box `lane`'s (warp 0 issues them; -1 outside the keys [key_lo, key_hi): past the cache's end,
  // or before a window; not loaded, its entry not read).
  auto refill_id = [&](int n) {
    if (!small_pages) return tile_page(n);
    const int key = n * kBlockN + lane * kBoxRows;
    return lane < kBoxes && key < key_hi && (!kOptions || key + kBoxRows > key_lo) ? pages[key >> p.page_shift] : -1;
  };
  const bool is_refill_thread = small_pages ? thread < 32 : thread == 0;

  Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), typename Traits::SmemLayoutQ{});    // (BLK_M, D)
  Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Traits::SmemLayoutKV{});   // (BLK_N, D, CONV)
  Tensor sV = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutKV{});   // (BLK_N, D, CONV)
  Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutVt{});  // (D, BLK_N, CONV)

  if (threadIdx.x == 0) {
    for (int s = 0; s < kRawStages; ++s) Barrier::init(&ss.raw_full[s], 1);
    for (int s = 0; s < kConvStages; ++s) Barrier::init(&ss.conv_full[s], 128), Barrier::init(&ss.conv_empty[s], 128);
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    Tensor sKr = make_tensor(make_smem_ptr(ss.k_raw.data()), typename Traits::SmemLayoutRaw{});  // (BLK_N, D, RAW)
    Tensor sVr = make_tensor(make_smem_ptr(ss.v_raw.data()), typename Traits::SmemLayoutRaw{});
    // The TMA's view: the cache (max_len, d, heads_kv, batch), or the pool (page_size, d,
    // heads_kv, num_pages) whose page `page` holds the tile (`page` is t.b unpaged).
    const int tma_len = paged ? max(p.cache_rows, 1) : max(p.max_len, 1);
    const int tma_outer = paged ? max(p.num_pages, 1) : p.batch;
    Tensor mK = p.tma_k.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, tma_outer));
    Tensor mV = p.tma_v.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, tma_outer));
    auto load_raw = [&](int n, int stage, int page) {
      if (small_pages) {  // warp 0: lane j's box j; lane 0 expects the bytes of the boxes below the length
        if (lane == 0) {
          const int boxes = min(kBoxes, (key_hi - n * kBlockN + kBoxRows - 1) / kBoxRows);
          const int first_box = kOptions ? max(0, (key_lo - n * kBlockN) / kBoxRows) : 0;
          Barrier::arrive_and_expect_tx(&ss.raw_full[stage], 2 * uint32_t(boxes - first_box) * Traits::kTmaBytesPageBox);
        }
        __syncwarp();
        if (page < 0) return;
        using BoxShape = Shape<typename Traits::PageBox, HeadDim>;
        Tensor mKb = p.tma_k_box.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, tma_outer));
        Tensor mVb = p.tma_v_box.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, tma_outer));
        const int box = ((n * kBlockN + lane * kBoxRows) & ((1 << p.page_shift) - 1)) / kBoxRows;  // within the page
        Tensor gKb = local_tile(mKb(_, _, t.h_kv, page), BoxShape{}, make_coord(_, _0{}));
        Tensor gVb = local_tile(mVb(_, _, t.h_kv, page), BoxShape{}, make_coord(_, _0{}));
        Tensor sKb = local_tile(sKr(_, _, stage), BoxShape{}, make_coord(lane, _0{}));
        Tensor sVb = local_tile(sVr(_, _, stage), BoxShape{}, make_coord(lane, _0{}));
        auto kb = tma_partition(p.tma_k_box, _0{}, Layout<_1>{}, group_modes<0, 2>(sKb), group_modes<0, 2>(gKb));
        auto vb = tma_partition(p.tma_v_box, _0{}, Layout<_1>{}, group_modes<0, 2>(sVb), group_modes<0, 2>(gVb));
        copy(p.tma_k_box.with(ss.raw_full[stage]), get<0>(kb)(_, box), get<1>(kb));
        copy(p.tma_v_box.with(ss.raw_full[stage]), get<0>(vb)(_, box), get<1>(vb));
        return;
      }
      const int seq = paged ? page : t.b, tile = paged ? tile_in_page(n) : n;
      Tensor gK = local_tile(mK(_, _, t.h_kv, seq), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));
      Tensor gV = local_tile(mV(_, _, t.h_kv, seq), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));
      auto tk = tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sKr), group_modes<0, 2>(gK));
      auto tv = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sVr), group_modes<0, 2>(gV));
      Barrier::arrive_and_expect_tx(&ss.raw_full[stage], 2 * Traits::kTmaBytesRaw);
      copy(p.tma_k.with(ss.raw_full[stage]), get<0>(tk)(_, tile), get<1>(tk)(_, stage));
      copy(p.tma_v.with(ss.raw_full[stage]), get<0>(tv)(_, tile), get<1>(tv)(_, stage));
    };
    if (is_refill_thread) load_first_tiles<kRawStages>(t.n_begin, n_blocks, refill_id, load_raw);

    constexpr int kChunks = kHeadDim / 16;                // 16-channel chunks per row
    constexpr int kRowStep = 128 / kChunks;               // rows between a thread's chunks
    constexpr int kPerThread = kBlockN / kRowStep;        // chunks per thread per tile
    static_assert(kPerThread >= 1 && kBlockN % kRowStep == 0, "every transform thread has whole rows");
    const int c0 = (thread % kChunks) * 16, r0 = thread / kChunks;
    const float* k_scale = p.k_scale + t.h_kv * p.ks_head_stride + c0;
    const float* v_scale = p.v_scale + t.h_kv * p.vs_head_stride;
    // Scales of tile n (in page `page` of a paged cache): K's for this thread's 16 channels (the
    // tile's rows share one scale block), V's for its rows (0 outside the keys [key_lo, key_hi):
    // the rows past the length, and with a window those before it, convert to zeros).
    constexpr int kVs = kPerThread;
    auto load_scales = [&](int n, int page, float (&ks)[16], float (&vs)[kVs]) {
      if (small_pages) {
        // Each row's page id is read here, a tile ahead of the conversion that uses it (a second
        // dependent load); rows past the length read neither an id nor a scale (0).
        const int mask = (1 << p.page_shift) - 1;
        // A page holding some of the tile's keys the CTA sees (a window may have left the tile's
        // first pages behind); every page of the tile's scale block holds its K scales.
        const int first_page = pages[(kOptions ? max(n * kBlockN, key_lo) : n * kBlockN) >> p.page_shift];
        const float4* ksrc = reinterpret_cast<const float4*>(k_scale + first_page * p.ks_batch_stride);
        CUTE_UNROLL
        for (int j = 0; j < 4; ++j) {
          const float4 f = ksrc[j];
          ks[4 * j] = f.x, ks[4 * j + 1] = f.y, ks[4 * j + 2] = f.z, ks[4 * j + 3] = f.w;
        }
        int ids[kVs];
        CUTE_UNROLL
        for (int k = 0; k < kVs; ++k) {
          const int token = n * kBlockN + r0 + k * kRowStep;
          ids[k] = token < key_hi && (!kOptions || token >= key_lo) ? pages[token >> p.page_shift] : -1;
        }
        CUTE_UNROLL
        for (int k = 0; k < kVs; ++k) {
          const int token = n * kBlockN + r0 + k * kRowStep;
          vs[k] = ids[k] >= 0 ? v_scale[ids[k] * p.vs_batch_stride + (token & mask) * p.vs_seq_stride] : 0.0f;
        }
        return;
      }
      // The tile's first key within its sequence, or within its page, and that page's (sequence's) scales.
      const int key0 = paged ? tile_in_page(n) * kBlockN : n * kBlockN;
      const int64_t outer = paged ? page : t.b;
      const float4* ksrc = reinterpret_cast<const float4*>(k_scale + outer * p.ks_batch_stride +
                                                           (key0 / p.quant_block) * p.ks_block_stride);
      CUTE_UNROLL
      for (int j = 0; j < 4; ++j) {
        const float4 f = ksrc[j];
        ks[4 * j] = f.x, ks[4 * j + 1] = f.y, ks[4 * j + 2] = f.z, ks[4 * j + 3] = f.w;
      }
      CUTE_UNROLL
      for (int k = 0; k < kVs; ++k) {
        const int token = n * kBlockN + r0 + k * kRowStep;
        vs[k] = token < key_hi && (!kOptions || token >= key_lo)
                    ? v_scale[outer * p.vs_batch_stride + (key0 + r0 + k * kRowStep) * p.vs_seq_stride]
                    : 0.0f;
      }
    };
    // The next tile's scales are loaded after this tile's fence.proxy.async: that fence compiles to
    // MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S, and the MEMBAR waits for every load in flight — issued
    // at the top of the iteration (as until 2026-11-30), the loads put a global-memory round trip
    // into every tile's conversion.
    // A paged cache: each page id is read a tile before its use, after a tile's fence (scale_page:
    // the next tile's scales; refill_page: thread 0's next refill), its latency under a tile's
    // conversion.
    float ks[16], vs[kVs];
    if (n_blocks > 0) load_scales(t.n_begin, small_pages ? 0 : tile_page(t.n_begin), ks, vs);
    int scale_page = paged && !small_pages && n_blocks > 1 ? tile_page(t.n_begin + 1) : 0;
    int refill_page = paged && is_refill_thread && kRawStages < n_blocks ? refill_id(t.n_begin + kRawStages) : 0;
    CUTE_NO_UNROLL
    for (int i = 0; i < n_blocks; ++i) {
      const int n = t.n_begin + i;
      const int rs = i % kRawStages, cs = i % kConvStages;
      const bool refill = is_refill_thread && i + kRawStages < n_blocks;
      const bool tail = (n + 1) * kBlockN > key_hi || (kOptions && n * kBlockN < key_lo);  // rows outside the keys
      Barrier::wait(&ss.raw_full[rs], (i / kRawStages) & 1);
      Barrier::wait(&ss.conv_empty[cs], ((i / kConvStages) & 1) ^ 1);
      CUTE_UNROLL
      for (int k = 0; k < kPerThread; ++k) {
        const int r = r0 + k * kRowStep;
        const uint4 kq = *reinterpret_cast<const uint4*>(&sKr(r, c0, rs));
        const uint4 vq = *reinterpret_cast<const uint4*>(&sVr(r, c0, rs));
        const int key = n * kBlockN + r;
        const float k_valid = !tail || (key < key_hi && (!kOptions || key >= key_lo)) ? 1.0f : 0.0f;  // vs[k] is 0 there already
        const float v_scale_k = vs[k];
        convert_int8x16<Element>(kq, [&](int j) { return ks[j] * k_valid; }, &sK(r, c0, cs), &sK(r, c0 + 8, cs));
        convert_int8x16<Element>(vq, [&](int) { return v_scale_k; }, &sV(r, c0, cs), &sV(r, c0 + 8, cs));
      }
      cutlass::arch::fence_view_async_shared();  // generic writes -> visible to WGMMA (async proxy)
      Barrier::arrive(&ss.conv_full[cs]);
      if (i + 1 < n_blocks) load_scales(n + 1, scale_page, ks, vs);  // in flight until the next conversion
      if (paged && !small_pages && i + 2 < n_blocks) scale_page = tile_page(n + 2);
      // Every transform thread is done with raw stage rs.
      cutlass::arch::NamedBarrier::sync(128, uint32_t(DecodeNamedBarrier::kTransform));
      if (refill) load_raw(n + kRawStages, rs, refill_page);
      // The next refill's page, read after this tile's fence (as the scales' pages are).
      if (paged && refill && i + 1 + kRawStages < n_blocks) refill_page = refill_id(n + 1 + kRawStages);
    }
    return;
  }

  if constexpr (Traits::kSwapped) {
    decode_int8_swapped_consume<Traits>(p, t, ss, n_blocks, thread);
    return;
  }
  // The consumer warpgroup (warpgroup 1) takes every tile, from its index among the consumers on (0).
  const int consumer = warpgroup - 1;
  gather_q<Traits>(p, t, sQ, threadIdx.x - 128, 128);
  cutlass::arch::fence_view_async_shared();
  cutlass::arch::NamedBarrier::sync(128, uint32_t(DecodeNamedBarrier::kConsumersQ));

  typename Traits::TiledMmaQK mma_qk;
  typename Traits::TiledMmaPV mma_pv;
  auto thr_qk = mma_qk.get_thread_slice(thread);
  auto thr_pv = mma_pv.get_thread_slice(thread);
  Tensor tSrQ = thr_qk.partition_fragment_A(sQ);    // (MMA, MMA_M, MMA_K)
  Tensor tSrK = thr_qk.partition_fragment_B(sK);
  Tensor tOrV = thr_pv.partition_fragment_B(sVt);
  Tensor tSrS = partition_fragment_C(mma_qk, Shape<BlockM, BlockN>{});
  Tensor tOrO = partition_fragment_C(mma_pv, Shape<BlockM, HeadDim>{});
  Tensor tScS = thr_qk.partition_C(make_identity_tensor(Shape<BlockM, BlockN>{}));
  Tensor tOcO = thr_pv.partition_C(make_identity_tensor(Shape<BlockM, HeadDim>{}));
  Tensor tOrP = make_tensor_like<Element>(tSrS);
  Tensor tOrP_a = make_tensor(tOrP.data(), acc_to_a_operand_layout(tOrP.layout()));
  clear(tOrO);

  constexpr int kRows = decltype(size<0>(acc_rowcol(tSrS)))::value;
  OnlineSoftmax<kRows> softmax(p.softmax_scale, 0.0f, kOptions ? p.softcap_scale : 0.0f);
  // Attention sinks (the options row): joined here when this CTA writes the output itself (one
  // split, no tail); otherwise the combine adds each row's sink once (decode_kernel's rule).
  const bool sinks_here = kOptions && p.sinks != nullptr && p.o_part == nullptr;
  float sink_log2[kRows];
  if (sinks_here) load_decode_sinks(p, t, tScS, sink_log2);
  const int n_begin = warp_uniform(t.n_begin);
  CUTE_NO_UNROLL
  for (int i = consumer; i < n_blocks; ++i) {
    const int iu = warp_uniform(i);  // (sm90_warp_uniform.hpp: the descriptors in uniform registers)
    const int n = n_begin + iu;
    const int cs = iu % kConvStages;
    Barrier::wait(&ss.conv_full[cs], (iu / kConvStages) & 1);
    wgmma_issue<true>(mma_qk, tSrQ, tSrK(_, _, _, cs), tSrS);
    warpgroup_wait<0>();
    if constexpr (kOptions) {
      // The softcap before the mask; a window's left edge may leave a row no key in this split's
      // first tiles (kMaskedRows: its rescale factor is then 0), as in decode_tile_compute.
      softmax.apply_softcap(tSrS);  // (a uniform test when there is none)
      mask_decode_scores<kBlockN, true>(t, n, tSrS, tScS);
      float alpha[kRows];
      if (i == consumer) {
        softmax.template online_exp<true, true>(tSrS, alpha);
      } else {
        softmax.template online_exp<false, true>(tSrS, alpha);
        softmax.rescale(tOrO, alpha);
      }
    } else {
      mask_decode_scores<kBlockN>(t, n, tSrS, tScS);
      if (i == consumer) softmax.template update<true>(tSrS, tOrO);
      else softmax.template update<false>(tSrS, tOrO);
    }
    convert_fragment<Element>(tSrS, tOrP);
    wgmma_issue<false>(mma_pv, tOrP_a, tOrV(_, _, _, cs), tOrO);
    warpgroup_wait<0>();
    Barrier::arrive(&ss.conv_empty[cs]);
  }

  float lse[kRows];
  if (sinks_here) softmax.finalize_rows(tOrO, lse, sink_log2);
  else softmax.finalize(tOrO, lse);
  store_decode_output<Traits>(p, t, tOrO, tOcO, tScS, lse, thread, p.o_part != nullptr);
}

}  // namespace hopattn::attention
