// Attention over a KV cache (decode, speculative decoding, chunked prefill) on Hopper, with
// query-head packing and split-KV (flash-decoding). Memory-bound: the design goal is to keep
// enough K/V bytes in flight per SM, not tensor-core utilisation.
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
//   keys = the last tile row's visible key count (len, or with causal len - seqlen_q + s + 1);
//   the ceil(keys / kBlockN) KV tiles are divided evenly over the splits: [n_begin, n_end).
//   Order at entry: thread 0 prefetches the TMA descriptors; every thread loads its share of the
//   tile's 64 Q rows into registers (rows of different query heads are not one TMA box; zeros
//   past the last row), then the length; barriers initialised; thread 0 issues the first kStages
//   K/V tiles; the Q registers go to the swizzled tile WGMMA reads; fence.proxy.async +
//   __syncthreads make the generic stores visible to the tensor cores.
//   K/V: TMA tiles of kBlockN keys into a kStages-deep ring (mbarriers k_full/v_full, one arrival
//   each by thread 0 with the tile's transaction bytes; all threads wait). The loop body is the
//   FA2 kernel's (sm90_fwd_fa2.hpp): S = Q·Kᵀ (SS WGMMA), mask, online softmax, O += P·V (RS
//   WGMMA), __syncthreads, thread 0 refills the stage with tile n + kStages.
//   The cache is only valid below len, and rows len..max_len may hold anything (NaN included):
//   scores there are masked to -inf, and the V rows of the tile holding len are zeroed in shared
//   memory (after the TMA lands, before P·V) so that 0 · garbage cannot reach O.
//   Epilogue: one split: O (normalised, output type) and LSE straight from registers to their
//   strided places, unpacking rows to (position, q-head). Several splits: O (fp32, normalised
//   over the split's keys) and LSE to the workspace; decode_combine_kernel merges them.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/numeric_conversion.h>

#include <type_traits>

#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/collective/sm90_fwd_softmax.hpp"
#include "attention/decode_params.hpp"
#include "attention/collective/sm90_wgmma.hpp"
#include "attention/kernel/sm90_fwd_fa2.hpp"

namespace hopattn::attention {

// Per-CTA phase timestamps for measurement only (bench/decode_timeline.cu defines
// HOPATTN_DECODE_STAMPS in its own translation unit; the library's kernels compile without them):
// %globaltimer (ns, one clock for every SM) into stamps[cta * kStampsPerCta + k], slot 0 the SM id.
constexpr int kStampsPerCta = 8;
#ifdef HOPATTN_DECODE_STAMPS
#define HOPATTN_STAMP(PTR, CTA, K)                                          \
  do {                                                                      \
    if ((PTR) != nullptr && threadIdx.x == 0) {                             \
      uint64_t now_;                                                        \
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now_));              \
      (PTR)[int64_t(CTA) * kStampsPerCta + (K)] = now_;                     \
    }                                                                       \
  } while (0)
CUTE_DEVICE int64_t stamp_cta() {
  return (int64_t(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
}
CUTE_DEVICE void stamp_smid(uint64_t* stamps) {
  if (stamps != nullptr && threadIdx.x == 0) {
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    stamps[stamp_cta() * kStampsPerCta] = smid;
  }
}
#else
#define HOPATTN_STAMP(PTR, CTA, K) ((void)0)
#endif

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

// The fields every decode split kernel reads, filled by name by fill_common_params
// (device/sm90_decode_launch.hpp). TmaK/TmaV: the cache's TMA loads (16-bit boxes, or raw int8).
template <class Element, class TmaK, class TmaV>
struct DecodeSplitParams {
  TmaK tma_k;
  TmaV tma_v;
  const Element* q;
  int64_t q_batch_stride, q_seq_stride, q_head_stride;
  Element* o;
  int64_t o_batch_stride, o_seq_stride, o_head_stride;
  float* lse;
  int64_t lse_batch_stride, lse_head_stride, lse_seq_stride;
  const int32_t* cache_seqlens;
  float* o_part;    // splits > 1: (splits, batch, heads_q, seqlen_q, hdim)
  float* lse_part;  // splits > 1: (splits, batch, heads_q, seqlen_q)
  int32_t* error;
  int batch, seqlen_q, heads_q, heads_kv, max_len;
  int group;  // rows per position: heads_q / heads_kv when packed, else 1
  int rows;   // rows of a row group: seqlen_q · group
  int num_splits;
  float softmax_scale;
  bool causal;
  int key_block, key_range;  // the keys this cache holds (DecodeKeys; key_block: the int8 call's quant_block)
  int split_base;            // the workspace slot of split 0
  int cache_rows;  // rows the TMA sees: max_len, or quant_block for an int8 call's tail (16-bit kernel only)
};

// The int8 cache's scales on top of them (the launch fills these itself).
template <class Element, class TmaK, class TmaV>
struct DecodeInt8SplitParams : DecodeSplitParams<Element, TmaK, TmaV> {
  const float* k_scale;  // (batch, max_len / quant_block, heads_kv, hdim)
  int64_t ks_batch_stride, ks_block_stride, ks_head_stride;
  const float* v_scale;  // (batch, max_len, heads_kv)
  int64_t vs_batch_stride, vs_seq_stride, vs_head_stride;
  int quant_block;
};

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

  struct Params : DecodeSplitParams<Element, typename Base::TmaLoadKV, typename Base::TmaLoadKV> {
#ifdef HOPATTN_DECODE_STAMPS
    uint64_t* stamps;  // measurement builds only (HOPATTN_STAMP)
#endif
  };
};

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
template <class Element_, int kHeadDim_, int kCtasPerSm_ = 1, bool kSwapped_ = false>
struct DecodeInt8Traits : Fa2Traits<Element_, kHeadDim_, 64, 64, 2> {
  using Base = Fa2Traits<Element_, kHeadDim_, 64, 64, 2>;
  using Element = Element_;
  static constexpr bool kInt8Cache = true;
  static constexpr int kCtasPerSm = kCtasPerSm_;
  static constexpr bool kSwapped = kSwapped_;
  static constexpr int kSwappedRows = 16;
  static constexpr int kTileRows = kSwapped ? kSwappedRows : Base::kBlockM;  // query rows per CTA
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

  struct Params : DecodeInt8SplitParams<Element, TmaLoadRaw, TmaLoadRaw> {};
};

// Named barriers of the int8 kernels (ids past CUTLASS's reserved ones; __syncthreads is id 0).
enum class DecodeNamedBarrier : uint32_t {
  kTransform = 1,      // the 128 transform threads: a raw stage is read and may be refilled
  kConsumersQ = 2,     // all consumer threads: the Q tile is gathered (the mma.sync kernels: also their merge)
  kSwappedReduce = 4,  // swapped consumer (128 threads): column maxima / P / row sums in shared memory
};

// Records the first bad cache_seqlens entry: error = {1, batch index, length}.
CUTE_DEVICE void record_bad_length(int32_t* error, int b, int len) {
  if (atomicCAS(error, 0, 1) == 0) {
    error[1] = b;
    error[2] = len;
  }
}

CUTE_HOST_DEVICE bool bad_cache_length(int len, int max_len, int seqlen_q, bool causal) {
  return len < 0 || len > max_len || (causal && len < seqlen_q);
}

// What one CTA computes: its 64 rows (row group, m_block), its sequence's length and its KV
// tiles [n_begin, n_end). Shared by the bf16 and the int8 kernels.
struct DecodeTile {
  int m_block, split, slot, group_idx, b, h_kv;  // slot: the split's workspace slot
  int group, rows, seqlen_q, heads_q;
  int len, diag, row0;  // len: the keys this cache holds (the sequence's length, or a bad one)
  int seq_len;          // the sequence's length as read (len before an int8 call's tail narrows it)
  int n_total, n_begin, n_end, mask_from;  // n_total: the row group's KV tiles
  bool bad, causal;

  template <class Params, int kBlockM, int kBlockN>
  CUTE_DEVICE static DecodeTile make(Params const& p) {
    DecodeTile t = make_rows<Params, kBlockM>(p);
    t.template read_length<Params, kBlockM, kBlockN>(p);
    return t;
  }
  // What does not depend on the sequence's length (the rows, so that the Q loads can be issued
  // before the length arrives), then the length and the KV range.
  template <class Params, int kBlockM>
  CUTE_DEVICE static DecodeTile make_rows(Params const& p) {
    DecodeTile t;
    t.m_block = int(blockIdx.x) / p.num_splits, t.split = int(blockIdx.x) % p.num_splits;
    t.group_idx = blockIdx.y, t.b = blockIdx.z;
    t.slot = p.split_base + t.split;
    t.group = p.group, t.rows = p.rows, t.seqlen_q = p.seqlen_q, t.heads_q = p.heads_q, t.causal = p.causal;
    t.h_kv = p.group > 1 ? t.group_idx : t.group_idx / (p.heads_q / p.heads_kv);
    t.row0 = t.m_block * kBlockM;
    return t;
  }
  template <class Params, int kBlockM, int kBlockN>
  CUTE_DEVICE void read_length(Params const& p) {
    set_length<Params, kBlockM, kBlockN>(p, p.cache_seqlens[b]);
  }
  template <class Params, int kBlockM, int kBlockN>
  CUTE_DEVICE void set_length(Params const& p, int len_b) {
    DecodeTile& t = *this;
    t.len = t.seq_len = len_b;
    t.bad = bad_cache_length(t.len, p.max_len, p.seqlen_q, p.causal);
    t.diag = t.len - p.seqlen_q;  // position of query s is diag + s
    if (p.key_range != kDecodeAllKeys && !t.bad) {  // an int8 call with a 16-bit tail (DecodeKeys)
      const int tail = len_b % p.key_block;
      if (p.key_range == kDecodeFullBlocks) t.len = len_b - tail;
      else t.len = tail, t.diag -= len_b - tail;  // key j of the tail is key len_b - tail + j
    }
    const int row_last = min(p.rows, t.row0 + kBlockM) - 1;
    // With a tail, a causal row may sit before every key of this cache: limits below 0 are 0.
    const int keys = t.bad ? 0 : max(0, p.causal ? min(t.len, t.diag + t.pos(row_last) + 1) : t.len);
    t.n_total = (keys + kBlockN - 1) / kBlockN;
    t.n_begin = int(int64_t(t.split) * t.n_total / p.num_splits);
    t.n_end = int(int64_t(t.split + 1) * t.n_total / p.num_splits);
    // Tiles ending past this key need the element-wise mask (the tile's row with the fewest keys).
    t.mask_from = max(0, p.causal ? min(t.len, t.diag + t.pos(t.row0) + 1) : t.len);
  }
  // Row r of the row group -> query position and q-head.
  CUTE_DEVICE int pos(int r) const { return r / group; }
  // r - pos(r) * group rather than r % group: next to pos(r) the compiler then does one division.
  CUTE_DEVICE int head(int r) const { return group > 1 ? group_idx * group + (r - pos(r) * group) : group_idx; }
  // The first key row r must not see.
  CUTE_DEVICE int key_limit(int r) const { return causal ? max(0, min(len, diag + pos(r) + 1)) : len; }
};

// The CTA's 64 query rows from global memory (rows of several heads are not one TMA box) into
// the swizzled tile WGMMA reads, zeros past the last row; scale_channels (hdim floats or
// nullptr) multiplies each channel. The caller fences (fence.proxy.async) and synchronises.
template <class Traits, class TensorQ, int kRows = Traits::kBlockM>
CUTE_DEVICE void gather_q(typename Traits::Params const& p, DecodeTile const& t, TensorQ& sQ, int thread, int threads) {
  constexpr int kChunks = Traits::kHeadDim / 8;  // 16-byte chunks per row
  for (int i = thread; i < kRows * kChunks; i += threads) {
    const int r = i / kChunks, c = (i % kChunks) * 8;
    const int row = t.row0 + r;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (row < t.rows)
      val = *reinterpret_cast<const uint4*>(p.q + t.b * p.q_batch_stride + t.pos(row) * p.q_seq_stride +
                                            t.head(row) * p.q_head_stride + c);
    *reinterpret_cast<uint4*>(&sQ(r, c)) = val;  // 8 consecutive elements stay contiguous under SW128
  }
}

// gather_q in two halves: the loads into registers, issued at kernel entry so that they reach
// the memory system ahead of the CTA's first K/V TMA tiles (issued after them, the 2 KB of Q
// queued behind ~25 MB of TMA requests from every SM and arrived ~5 us later: decode_timeline,
// 2026-11-30 r38), and the stores into the swizzled tile once the loads are issued.
template <class Traits, int kRows = Traits::kBlockM>
struct QRegisters {
  static constexpr int kChunks = Traits::kHeadDim / 8;  // 16-byte chunks per row
  static constexpr int kPer = kRows * kChunks / Traits::kThreads;
  static_assert(kPer * Traits::kThreads == kRows * kChunks, "the chunks divide over the threads");
  uint4 v[kPer];

  CUTE_DEVICE void load(typename Traits::Params const& p, DecodeTile const& t, int thread) {
    CUTE_UNROLL
    for (int k = 0; k < kPer; ++k) {
      const int i = thread + k * Traits::kThreads;
      const int row = t.row0 + i / kChunks, c = (i % kChunks) * 8;
      v[k] = make_uint4(0, 0, 0, 0);
      if (row < t.rows)
        v[k] = *reinterpret_cast<const uint4*>(p.q + t.b * p.q_batch_stride + t.pos(row) * p.q_seq_stride +
                                               t.head(row) * p.q_head_stride + c);
    }
  }
  template <class TensorQ>
  CUTE_DEVICE void store(TensorQ& sQ, int thread) const {
    CUTE_UNROLL
    for (int k = 0; k < kPer; ++k) {
      const int i = thread + k * Traits::kThreads;
      *reinterpret_cast<uint4*>(&sQ(i / kChunks, (i % kChunks) * 8)) = v[k];
    }
  }
};

template <int kBlockN, class TensorS, class TensorC>
CUTE_DEVICE void mask_decode_scores(DecodeTile const& t, int n, TensorS& tSrS, TensorC const& tScS) {
  if ((n + 1) * kBlockN <= t.mask_from) return;
  auto s = acc_rowcol(tSrS);
  auto c = acc_rowcol(tScS);
  CUTE_UNROLL
  for (int r = 0; r < cute::size<0>(s); ++r) {
    const int limit = t.key_limit(t.row0 + cute::get<0>(c(r, 0)));
    CUTE_UNROLL
    for (int j = 0; j < cute::size<1>(s); ++j)
      // int, not the coordinate's unsigned type: with it a negative limit masked nothing.
      if (n * kBlockN + int(cute::get<1>(c(r, j))) >= limit) s(r, j) = -INFINITY;
  }
}

// Epilogue: O (output type) and LSE to their strided places, or with `partial` (several splits)
// fp32 partials into the workspace slot t.slot. A bad length writes NaN. `thread` indexes the
// consumer warpgroup.
template <class Traits, class TensorO, class TensorOC, class TensorSC, int kRows>
CUTE_DEVICE void store_decode_output(typename Traits::Params const& p, DecodeTile const& t, TensorO& tOrO,
                                     TensorOC const& tOcO, TensorSC const& tScS, float (&lse)[kRows], int thread,
                                     bool partial) {
  using namespace cute;
  using Element = typename Traits::Element;
  constexpr int kHeadDim = Traits::kHeadDim;
  if (t.bad) {
    CUTE_UNROLL
    for (int i = 0; i < size(tOrO); ++i) tOrO(i) = NAN;
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) lse[r] = NAN;
  }
  if (thread % 4 == 0) {  // one thread of each quad holds a row's LSE
    auto c = acc_rowcol(tScS);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const int row = t.row0 + get<0>(c(r, 0));
      if (row >= t.rows) continue;
      const int s = t.pos(row), h = t.head(row);
      if (partial)
        p.lse_part[((int64_t(t.slot) * p.batch + t.b) * p.heads_q + h) * p.seqlen_q + s] = lse[r];
      else if (p.lse != nullptr)
        p.lse[t.b * p.lse_batch_stride + h * p.lse_head_stride + s * p.lse_seq_stride] = lse[r];
    }
  }
  // Per row of the fragment (two per thread in a 64-row tile), the destination once, then the
  // row's columns: pairs (j, j + 1) of the row/column view are adjacent columns. Computing the
  // (position, head) unpacking per element pair instead (two integer divisions each) made this
  // epilogue ~3,500 instructions and ~4 us per CTA (decode_timeline, 2026-11-30 r38).
  auto o = acc_rowcol(tOrO);
  auto co = acc_rowcol(tOcO);
  CUTE_UNROLL
  for (int r = 0; r < size<0>(o); ++r) {
    const int row = t.row0 + get<0>(co(r, 0));
    if (row >= t.rows) continue;
    const int s = t.pos(row), h = t.head(row);
    if (partial) {
      float* dst = p.o_part + (((int64_t(t.slot) * p.batch + t.b) * p.heads_q + h) * p.seqlen_q + s) * kHeadDim;
      CUTE_UNROLL
      for (int j = 0; j < size<1>(o); j += 2)
        *reinterpret_cast<float2*>(dst + get<1>(co(r, j))) = make_float2(o(r, j), o(r, j + 1));
    } else {
      Element* dst = p.o + t.b * p.o_batch_stride + s * p.o_seq_stride + h * p.o_head_stride;
      CUTE_UNROLL
      for (int j = 0; j < size<1>(o); j += 2) {
        cutlass::NumericArrayConverter<Element, float, 2> conv;
        cutlass::Array<float, 2> in;
        in[0] = o(r, j);
        in[1] = o(r, j + 1);
        *reinterpret_cast<cutlass::Array<Element, 2>*>(dst + get<1>(co(r, j))) = conv(in);
      }
    }
  }
}

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
  mask_decode_scores<kBlockN>(t, n, tSrS, tScS);
  if (first) softmax.template update<true>(tSrS, tOrO);
  else softmax.template update<false>(tSrS, tOrO);
  convert_fragment<typename Traits::Element>(tSrS, tOrP);
  Barrier::wait(&ss.v_full[stage], phase);
  if ((n + 1) * kBlockN > t.len) {  // the tile holding the end of the cache: zero V's rows past it
    const int first_row = t.len - n * kBlockN;
    for (int e = threadIdx.x; e < (kBlockN - first_row) * kChunks; e += Traits::kThreads)
      *reinterpret_cast<uint4*>(&sV(first_row + e / kChunks, (e % kChunks) * 8, stage)) = make_uint4(0, 0, 0, 0);
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
  const int len = p.cache_seqlens[t.b];  // issued first, used after the Q loads are issued
  QRegisters<Traits> q_regs;
  q_regs.load(p, t, threadIdx.x);
  t.set_length<typename Traits::Params, kBlockM, kBlockN>(p, len);
  if (t.bad && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) record_bad_length(p.error, t.b, t.len);
  const int n_blocks = t.n_end - t.n_begin;

  Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), typename Traits::SmemLayoutQ{});    // (BLK_M, D)
  Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Traits::SmemLayoutKV{});   // (BLK_N, D, PIPE)
  Tensor sV = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutKV{});   // (BLK_N, D, PIPE)
  Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutVt{});  // (D, BLK_N, PIPE)

  const int tma_len = max(p.cache_rows, 1);
  Tensor mK = p.tma_k.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, p.batch));
  Tensor mV = p.tma_v.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, p.batch));
  Tensor gK = local_tile(mK(_, _, t.h_kv, t.b), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));  // (BLK_N, D, n)
  Tensor gV = local_tile(mV(_, _, t.h_kv, t.b), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));  // (BLK_N, D, n)
  auto tma_k_parts = tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK));
  auto tma_v_parts = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV));
  Tensor tKgK = get<0>(tma_k_parts);  // (TMA, n)
  Tensor tKsK = get<1>(tma_k_parts);  // (TMA, PIPE)
  Tensor tVgV = get<0>(tma_v_parts);  // (TMA, n)
  Tensor tVsV = get<1>(tma_v_parts);  // (TMA, PIPE)

  auto load_kv = [&](int n, int stage) {
    Barrier::arrive_and_expect_tx(&ss.k_full[stage], Traits::kTmaBytesKV);
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
    if (is_tma_thread)
      for (int i = 0; i < kStages && i < n_blocks; ++i) load_kv(t.n_begin + i, i);
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
  OnlineSoftmax<kRows> softmax(p.softmax_scale);
  CUTE_NO_UNROLL
  for (int i = 0; i < n_blocks; ++i) {
    const int n = t.n_begin + i;
    const int stage = i % kStages;
    const uint32_t phase = (i / kStages) & 1;
    Barrier::wait(&ss.k_full[stage], phase);
    if (i == 0) HOPATTN_STAMP(p.stamps, cta, 4);  // the first K tile has landed
    decode_tile_compute<Traits>(t, ss, n, stage, phase, i == 0, mma_qk, mma_pv, tSrQ, tSrK, tOrV, tSrS, tOrO, tScS,
                                tOrP, tOrP_a, sV, softmax);
    __syncthreads();  // no thread reads this stage any more
    if (is_tma_thread && i + kStages < n_blocks) load_kv(n + kStages, stage);
  }

  HOPATTN_STAMP(p.stamps, cta, 5);  // last tile done
  float lse[kRows];
  softmax.finalize(tOrO, lse);
  store_decode_output<Traits>(p, t, tOrO, tOcO, tScS, lse, threadIdx.x, p.o_part != nullptr);
#ifdef HOPATTN_DECODE_STAMPS
  __syncthreads();
  HOPATTN_STAMP(p.stamps, cta, 6);  // every thread's stores issued
#endif
}

// Four int8 values (one 32-bit word) to exact floats without I2F: each byte, biased to unsigned,
// becomes the low mantissa byte of 2^23 (0x4B000000), and subtracting 2^23 + 128 leaves the value.
CUTE_DEVICE void int8x4_to_float(uint32_t word, float (&out)[4]) {
  const uint32_t u = word ^ 0x80808080u;
  out[0] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7540)) - 8388736.0f;
  out[1] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7541)) - 8388736.0f;
  out[2] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7542)) - 8388736.0f;
  out[3] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7543)) - 8388736.0f;
}

// Stores to shared memory through an address CuTe's swizzled pointers computed. Those pointers
// are generic, so a plain store compiles to a generic ST.E; st.shared makes it an STS. (The
// fence.proxy.async that follows still compiles to MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S after STS,
// cuobjdump 2026-11-30: what keeps global loads out of that MEMBAR is issuing them after it.) The
// swizzle acts on address bits below 1 KB and the buffers are 1 KB aligned, so the generic and
// shared addresses agree.
CUTE_DEVICE void st_shared_v4(void* ptr, uint4 v) {
  const auto a = static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
CUTE_DEVICE void st_shared_u16(void* ptr, uint16_t v) {
  const auto a = static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
  asm volatile("st.shared.u16 [%0], %1;" ::"r"(a), "h"(v) : "memory");
}

// Two floats to a packed pair of Element (round to nearest even), low half first.
template <class Element>
CUTE_DEVICE uint32_t pack_pair(float lo, float hi) {
  cutlass::NumericArrayConverter<Element, float, 2> conv;
  cutlass::Array<float, 2> in;
  in[0] = lo, in[1] = hi;
  const cutlass::Array<Element, 2> out = conv(in);
  return *reinterpret_cast<const uint32_t*>(&out);
}

// The transform's conversion of one 16-byte chunk of a raw int8 tile row: 16 values times their
// scales (scale(j), j = 0..15) in fp32, rounded once to Element, stored as 16 consecutive elements
// of the converted tile row (two 16-byte stores: dst and dst + 8, each contiguous under the
// tile's swizzle). The K and V conversions of decode_int8_kernel.
template <class Element, class Scale>
CUTE_DEVICE void convert_int8x16(uint4 raw, Scale const& scale, Element* dst, Element* dst8) {
  const uint32_t w4[4] = {raw.x, raw.y, raw.z, raw.w};
  uint32_t out[8];
  CUTE_UNROLL
  for (int w = 0; w < 4; ++w) {
    float f[4];
    int8x4_to_float(w4[w], f);
    CUTE_UNROLL
    for (int j = 0; j < 4; ++j) f[j] *= scale(4 * w + j);
    out[2 * w] = pack_pair<Element>(f[0], f[1]), out[2 * w + 1] = pack_pair<Element>(f[2], f[3]);
  }
  st_shared_v4(dst, make_uint4(out[0], out[1], out[2], out[3]));
  st_shared_v4(dst8, make_uint4(out[4], out[5], out[6], out[7]));
}

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

  CUTE_NO_UNROLL
  for (int i = 0; i < n_blocks; ++i) {
    const int n = t.n_begin + i;
    const int stage = i % kConvStages;
    float* red_i = red + (i & 1) * 4 * kQ;
    Barrier::wait(&ss.conv_full[stage], (i / kConvStages) & 1);
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

  const DecodeTile t = DecodeTile::make<typename Traits::Params, Traits::kTileRows, kBlockN>(p);
  if (t.bad && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) record_bad_length(p.error, t.b, t.len);
  const int n_blocks = t.n_end - t.n_begin;
  const int warpgroup = threadIdx.x / 128, thread = threadIdx.x % 128;

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
    const int tma_len = max(p.max_len, 1);
    Tensor mK = p.tma_k.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, p.batch));
    Tensor mV = p.tma_v.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, p.batch));
    Tensor gK = local_tile(mK(_, _, t.h_kv, t.b), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));
    Tensor gV = local_tile(mV(_, _, t.h_kv, t.b), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));
    auto tk = tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sKr), group_modes<0, 2>(gK));
    auto tv = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sVr), group_modes<0, 2>(gV));
    auto load_raw = [&](int n, int stage) {
      Barrier::arrive_and_expect_tx(&ss.raw_full[stage], 2 * Traits::kTmaBytesRaw);
      copy(p.tma_k.with(ss.raw_full[stage]), get<0>(tk)(_, n), get<1>(tk)(_, stage));
      copy(p.tma_v.with(ss.raw_full[stage]), get<0>(tv)(_, n), get<1>(tv)(_, stage));
    };
    if (thread == 0)
      for (int i = 0; i < kRawStages && i < n_blocks; ++i) load_raw(t.n_begin + i, i);

    constexpr int kChunks = kHeadDim / 16;                // 16-channel chunks per row
    constexpr int kRowStep = 128 / kChunks;               // rows between a thread's chunks
    constexpr int kPerThread = kBlockN / kRowStep;        // chunks per thread per tile
    static_assert(kPerThread >= 1 && kBlockN % kRowStep == 0, "every transform thread has whole rows");
    const int c0 = (thread % kChunks) * 16, r0 = thread / kChunks;
    const float* k_scale = p.k_scale + t.b * p.ks_batch_stride + t.h_kv * p.ks_head_stride + c0;
    const float* v_scale = p.v_scale + t.b * p.vs_batch_stride + t.h_kv * p.vs_head_stride;
    // Scales of tile n: K's for this thread's 16 channels (the tile's rows share one scale
    // block), V's for its rows (0 past the length).
    constexpr int kVs = kPerThread;
    auto load_scales = [&](int n, float (&ks)[16], float (&vs)[kVs]) {
      const float4* ksrc = reinterpret_cast<const float4*>(k_scale + (n * kBlockN / p.quant_block) * p.ks_block_stride);
      CUTE_UNROLL
      for (int j = 0; j < 4; ++j) {
        const float4 f = ksrc[j];
        ks[4 * j] = f.x, ks[4 * j + 1] = f.y, ks[4 * j + 2] = f.z, ks[4 * j + 3] = f.w;
      }
      CUTE_UNROLL
      for (int k = 0; k < kVs; ++k) {
        const int token = n * kBlockN + r0 + k * kRowStep;
        vs[k] = token < t.len ? v_scale[token * p.vs_seq_stride] : 0.0f;
      }
    };
    // The next tile's scales are loaded after this tile's fence.proxy.async: that fence compiles to
    // MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S, and the MEMBAR waits for every load in flight — issued
    // at the top of the iteration (as until 2026-11-30), the loads put a global-memory round trip
    // into every tile's conversion.
    float ks[16], vs[kVs];
    if (n_blocks > 0) load_scales(t.n_begin, ks, vs);
    CUTE_NO_UNROLL
    for (int i = 0; i < n_blocks; ++i) {
      const int n = t.n_begin + i;
      const int rs = i % kRawStages, cs = i % kConvStages;
      const bool tail = (n + 1) * kBlockN > t.len;
      Barrier::wait(&ss.raw_full[rs], (i / kRawStages) & 1);
      Barrier::wait(&ss.conv_empty[cs], ((i / kConvStages) & 1) ^ 1);
      CUTE_UNROLL
      for (int k = 0; k < kPerThread; ++k) {
        const int r = r0 + k * kRowStep;
        const uint4 kq = *reinterpret_cast<const uint4*>(&sKr(r, c0, rs));
        const uint4 vq = *reinterpret_cast<const uint4*>(&sVr(r, c0, rs));
        const float k_valid = !tail || n * kBlockN + r < t.len ? 1.0f : 0.0f;  // vs[k] is 0 there already
        const float v_scale_k = vs[k];
        convert_int8x16<Element>(kq, [&](int j) { return ks[j] * k_valid; }, &sK(r, c0, cs), &sK(r, c0 + 8, cs));
        convert_int8x16<Element>(vq, [&](int) { return v_scale_k; }, &sV(r, c0, cs), &sV(r, c0 + 8, cs));
      }
      cutlass::arch::fence_view_async_shared();  // generic writes -> visible to WGMMA (async proxy)
      Barrier::arrive(&ss.conv_full[cs]);
      if (i + 1 < n_blocks) load_scales(n + 1, ks, vs);  // in flight until the next conversion
      // Every transform thread is done with raw stage rs.
      cutlass::arch::NamedBarrier::sync(128, uint32_t(DecodeNamedBarrier::kTransform));
      if (thread == 0 && i + kRawStages < n_blocks) load_raw(n + kRawStages, rs);
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
  OnlineSoftmax<kRows> softmax(p.softmax_scale);
  CUTE_NO_UNROLL
  for (int i = consumer; i < n_blocks; ++i) {
    const int n = t.n_begin + i;
    const int cs = i % kConvStages;
    Barrier::wait(&ss.conv_full[cs], (i / kConvStages) & 1);
    wgmma_issue<true>(mma_qk, tSrQ, tSrK(_, _, _, cs), tSrS);
    warpgroup_wait<0>();
    mask_decode_scores<kBlockN>(t, n, tSrS, tScS);
    if (i == consumer) softmax.template update<true>(tSrS, tOrO);
    else softmax.template update<false>(tSrS, tOrO);
    convert_fragment<Element>(tSrS, tOrP);
    wgmma_issue<false>(mma_pv, tOrP_a, tOrV(_, _, _, cs), tOrO);
    warpgroup_wait<0>();
    Barrier::arrive(&ss.conv_empty[cs]);
  }

  float lse[kRows];
  softmax.finalize(tOrO, lse);
  store_decode_output<Traits>(p, t, tOrO, tOcO, tScS, lse, thread, p.o_part != nullptr);
}

// Split-KV merge: one warp per output row (b, q-head, position), kHeadDim / 32 channels per lane.
//   LSE = log Σ_s exp(LSE_s),  O = Σ_s exp(LSE_s − LSE) · O_s   (splits with LSE_s = −inf skipped)
template <class Element, int kHeadDim>
struct CombineParams {
  const float* o_part;
  const float* lse_part;
  const int32_t* cache_seqlens;
  Element* o;
  int64_t o_batch_stride, o_seq_stride, o_head_stride;
  float* lse;
  int64_t lse_batch_stride, lse_head_stride, lse_seq_stride;
  int batch, seqlen_q, heads_q, max_len, num_splits;
  bool causal;
#ifdef HOPATTN_DECODE_STAMPS
  uint64_t* stamps;
#endif
};

constexpr int kCombineWarps = 4;

// kBatch: splits whose O rows a lane loads at once (0: 64 / kPer, 16 at hdim 128). A call with
// few slots takes a small batch (launch_decode_combine): the registers of 16 splits' rows cap
// the resident warps (ncu r131, 64:8 128 x 2k int8 with tails, 8192 rows of 2 slots: 16.7 us).
template <class Element, int kHeadDim, int kBatch = 0>
__global__ void __launch_bounds__(32 * kCombineWarps) decode_combine_kernel(const CombineParams<Element, kHeadDim> p) {
#ifdef HOPATTN_DECODE_STAMPS
  HOPATTN_STAMP(p.stamps, blockIdx.x, 1);
  stamp_smid(p.stamps);
#endif
  constexpr int kPer = kHeadDim / 32;
  const int64_t rows = int64_t(p.batch) * p.heads_q * p.seqlen_q;
  const int64_t row = int64_t(blockIdx.x) * kCombineWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int s = int(row % p.seqlen_q);
  const int h = int((row / p.seqlen_q) % p.heads_q);
  const int b = int(row / (int64_t(p.seqlen_q) * p.heads_q));
  const bool bad = bad_cache_length(p.cache_seqlens[b], p.max_len, p.seqlen_q, p.causal);

  // Every load that does not depend on another is issued first: this lane's LSE (split lane) and
  // the partial O rows of the first kBatch splits, so a step with up to kBatch splits pays about
  // one memory latency here instead of one per group of splits (decode_timeline r38: 3.8 us for
  // 16 splits when the O rows waited for the LSE reduction and came 4 splits at a time).
  // The sum still runs over the splits in order: results are the same on every run.
  constexpr int kBatchSplits = kBatch > 0 ? kBatch : 64 / kPer;  // splits whose O values a lane holds at once
  const float* lse_row = p.lse_part + row;
  const float* o_row = p.o_part + row * kHeadDim + lane * kPer;
  const int64_t o_split_stride = rows * kHeadDim;
  float2 v[kBatchSplits][kPer / 2];
  auto load_batch = [&](int base) {
    CUTE_UNROLL
    for (int u = 0; u < kBatchSplits; ++u) {
      const float* src = o_row + (base + u) * o_split_stride;
      CUTE_UNROLL
      for (int j = 0; j < kPer; j += 2)
        v[u][j / 2] = base + u < p.num_splits ? *reinterpret_cast<const float2*>(src + j) : make_float2(0.0f, 0.0f);
    }
  };
  const float l_lane = lane < p.num_splits ? lse_row[lane * rows] : -INFINITY;
  load_batch(0);

  float m = l_lane;
  for (int sp = lane + 32; sp < p.num_splits; sp += 32) m = fmaxf(m, lse_row[sp * rows]);
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  float sum = 0.0f;
  if (m != -INFINITY) {
    sum = l_lane == -INFINITY ? 0.0f : expf(l_lane - m);
    for (int sp = lane + 32; sp < p.num_splits; sp += 32) sum += expf(lse_row[sp * rows] - m);
  }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  const float lse = m == -INFINITY ? -INFINITY : m + logf(sum);
  // Split i's weight: from lane i for the first 32 splits, re-read (one broadcast load) after.
  const float w_lane = l_lane == -INFINITY || lse == -INFINITY ? 0.0f : expf(l_lane - lse);
  auto weight = [&](int i) {
    if (i < 32) return __shfl_sync(0xffffffffu, w_lane, i);
    const float l = lse_row[i * rows];
    return l == -INFINITY || lse == -INFINITY ? 0.0f : expf(l - lse);
  };

  float acc[kPer] = {};
  for (int base = 0; base < p.num_splits; base += kBatchSplits) {
    if (base > 0) load_batch(base);
    CUTE_UNROLL
    for (int u = 0; u < kBatchSplits; ++u) {
      const float w = base + u < p.num_splits ? weight(base + u) : 0.0f;
      // An empty split (weight 0) may hold anything: it must not reach O, NaN included.
      CUTE_UNROLL
      for (int j = 0; j < kPer; j += 2) {
        acc[j] += w != 0.0f ? w * v[u][j / 2].x : 0.0f;
        acc[j + 1] += w != 0.0f ? w * v[u][j / 2].y : 0.0f;
      }
    }
  }
  cutlass::Array<Element, kPer> out;
  CUTE_UNROLL
  for (int j = 0; j < kPer; ++j) out[j] = Element(bad ? NAN : acc[j]);
  *reinterpret_cast<cutlass::Array<Element, kPer>*>(p.o + b * p.o_batch_stride + s * p.o_seq_stride +
                                                    h * p.o_head_stride + lane * kPer) = out;
  if (p.lse != nullptr && lane == 0)
    p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + s * p.lse_seq_stride] = bad ? NAN : lse;
  HOPATTN_STAMP(p.stamps, blockIdx.x, 6);  // thread 0's row stored
}

}  // namespace hopattn::attention
