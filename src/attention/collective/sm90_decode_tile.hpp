// What one CTA of a decode split kernel computes (DecodeTile: its rows, its sequence's length and
// its KV tiles), the parameters every split kernel reads (DecodeSplitParams), the bad-length
// record, the decode kernels' named barriers, and the measurement builds' per-CTA timestamps.
// Shared by the 16-bit split kernel (kernel/sm90_decode.hpp, whose header describes the grid),
// the int8 kernels (kernel/sm90_decode_int8.hpp, kernel/sm90_decode_int8_mma.hpp) and the combine
// (kernel/sm90_decode_combine.hpp).
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on

#include <cstdint>

#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/decode_params.hpp"

namespace hopattn::attention {

// Per-CTA phase timestamps for measurement only (bench/decode_timeline.cu and
// bench/decode_int8_timeline.cu define HOPATTN_DECODE_STAMPS in their own translation units; the
// library's kernels compile without them): %globaltimer (ns, one clock for every SM) into
// stamps[cta * kStampsPerCta + k], slot 0 the SM id (the mma.sync kernel's own layout:
// int8_mma_stamps_per_cta).
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
  int cache_rows;  // rows the TMA sees: max_len, or quant_block for an int8 call's tail (16-bit kernel only);
                   // a paged cache: page_size
  // A paged cache (DecodeParams::page_table; every split kernel): the TMA views the pool as
  // (page_size, hdim, heads_kv, num_pages); key tile n of sequence b is tile
  // (n·BN mod page_size) / BN of page page_table[b][n·BN / page_size] (pages smaller than the
  // 16-bit kernel's tile: its 16-key boxes, each from its own page).
  const int32_t* page_table;
  int64_t pt_batch_stride;
  int page_shift;  // log2(page_size)
  int num_pages;
  // The options (DecodeParams; read by the 16-bit kernel and the int8 options row,
  // DecodeInt8Traits::kOptions; the plan gives the other int8 rows no call with them): the
  // window's sides (-1 unbounded; DecodeTile's band), the softcap (OnlineSoftmax::apply_softcap)
  // and the sinks (the epilogue of a single split, or the combine).
  int window_left, window_right;
  float softcap_scale;
  const float* sinks;
};

// The int8 cache's scales on top of them (the launch fills these itself).
template <class Element, class TmaK, class TmaV>
struct DecodeInt8SplitParams : DecodeSplitParams<Element, TmaK, TmaV> {
  // A paged cache: the scales paged by the same ids, (num_pages, page_size / quant_block, ...) and
  // (num_pages, page_size, ...), the batch strides stepping a page.
  const float* k_scale;  // (batch, max_len / quant_block, heads_kv, hdim)
  int64_t ks_batch_stride, ks_block_stride, ks_head_stride;
  const float* v_scale;  // (batch, max_len, heads_kv)
  int64_t vs_batch_stride, vs_seq_stride, vs_head_stride;
  int quant_block;
};

// Named barriers of the int8 kernels (ids past CUTLASS's reserved ones; __syncthreads is id 0).
enum class DecodeNamedBarrier : uint32_t {
  kTransform = 1,      // the 128 transform threads: a raw stage is read and may be refilled
  kConsumersQ = 2,     // all consumer threads: the Q tile is gathered (the mma.sync kernels: also their merge)
  kSwappedReduce = 4,  // swapped consumer (128 threads): column maxima / P / row sums in shared memory
};

// Records the first bad page_table entry of a paged cache: error = {6, batch index, the id}
// (kDecodeErrorPageId, device/decode_dispatch.hpp).
CUTE_DEVICE void record_bad_page(int32_t* error, int b, int id) {
  if (atomicCAS(error, 0, 6) == 0) {
    error[1] = b;
    error[2] = id;
  }
}

// The loads of a CTA's first min(kStages, n_blocks) key tiles from n_begin: their page ids
// (page_of(n); 0 unpaged) read together, one memory latency for all, then load(n, stage, page)
// for each.
template <int kStages, class PageOf, class Load>
CUTE_DEVICE void load_first_tiles(int n_begin, int n_blocks, PageOf const& page_of, Load const& load) {
  int pages[kStages];
  CUTE_UNROLL
  for (int i = 0; i < kStages; ++i) pages[i] = i < n_blocks ? page_of(n_begin + i) : 0;
  CUTE_UNROLL
  for (int i = 0; i < kStages; ++i)
    if (i < n_blocks) load(n_begin + i, i, pages[i]);
}

// A paged cache: whether the page ids of sequence b's keys [first_key, end_key) (end_key >
// first_key) all lie in the pool. Every one of the CTA's kThreads threads calls it (it ends in
// __syncthreads_or) and checks a share of the ids; a bad one is recorded (record_bad_page) and
// must never reach a TMA coordinate: the caller makes the CTA a bad one (NaN rows).
template <int kThreads, class Params>
CUTE_DEVICE bool cta_pages_in_pool(Params const& p, const int32_t* pages, int first_key, int end_key, int b) {
  const int first = first_key >> p.page_shift, last = (end_key - 1) >> p.page_shift;
  int bad_id = 0;
  bool bad = false;
  for (int j = first + int(threadIdx.x); j <= last; j += kThreads) {
    const int id = pages[j];
    if (id < 0 || id >= p.num_pages) bad = true, bad_id = id;
  }
  if (bad) record_bad_page(p.error, b, bad_id);
  return __syncthreads_or(bad) == 0;
}

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
// The band: query position p sees key j iff p - left <= j <= p + right and j < len, where right
// is 0 with causal, the window's right side without (-1: unbounded, every key to len), and left the
// window's left side (-1: unbounded, from key 0). The CTA's rows see keys [key_lo, key_hi) between
// them: its first row the earliest, its last row the latest; only the tiles holding those keys
// are divided among the splits, so that a window's decode reads the window, not the cache.
struct DecodeTile {
  int m_block, split, slot, group_idx, b, h_kv;  // slot: the split's workspace slot
  int group, rows, seqlen_q, heads_q;
  int len, diag, row0;  // len: the keys this cache holds (the sequence's length, or a bad one)
  int seq_len;          // the sequence's length as read (len before an int8 call's tail narrows it)
  int left, right;      // the band's sides (above)
  int key_lo, key_hi;   // the keys any row of the CTA sees (key_hi <= len)
  int n_total, n_begin, n_end;  // n_total: the row group's KV tiles, from tile key_lo / kBlockN
  int mask_from;  // tiles ending past this key need the element-wise mask (the row with the fewest keys)
  int left_to;    // tiles starting before this key need the window's left edge masked (0 without)
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
    t.left = p.window_left;
    t.right = p.causal ? 0 : p.window_right;
    return t;
  }
  template <class Params, int kBlockM, int kBlockN>
  CUTE_DEVICE void read_length(Params const& p) {
    set_length<Params, kBlockM, kBlockN>(p, p.cache_seqlens[b]);
  }
  // (Host and device: tests/host/test_decode_band.cu checks the band's tiles and masks on the host.)
  template <class Params, int kBlockM, int kBlockN>
  CUTE_HOST_DEVICE void set_length(Params const& p, int len_b) {
    DecodeTile& t = *this;
    t.len = t.seq_len = len_b;
    t.bad = bad_cache_length(t.len, p.max_len, p.seqlen_q, p.causal);
    t.diag = t.len - p.seqlen_q;  // position of query s is diag + s
    if (p.key_range != kDecodeAllKeys && !t.bad) {  // an int8 call with a 16-bit tail (DecodeKeys)
      const int tail = len_b % p.key_block;
      if (p.key_range == kDecodeFullBlocks) t.len = len_b - tail;
      else t.len = tail, t.diag -= len_b - tail;  // key j of the tail is key len_b - tail + j
    }
    const int row_last = cute::min(p.rows, t.row0 + kBlockM) - 1;
    // With a tail, a causal row may sit before every key of this cache: limits below 0 are 0.
    t.key_hi = t.bad ? 0 : t.key_limit(row_last);
    t.key_lo = t.bad ? 0 : cute::min(t.key_first(t.row0), t.key_hi);
    const int n_lo = t.key_lo / kBlockN;
    t.n_total = t.key_hi > t.key_lo ? (t.key_hi + kBlockN - 1) / kBlockN - n_lo : 0;
    t.n_begin = n_lo + int(int64_t(t.split) * t.n_total / p.num_splits);
    t.n_end = n_lo + int(int64_t(t.split + 1) * t.n_total / p.num_splits);
    t.mask_from = t.bad ? 0 : t.key_limit(t.row0);
    t.left_to = t.bad ? 0 : t.key_first(row_last);
  }
  // Row r of the row group -> query position and q-head.
  CUTE_HOST_DEVICE int pos(int r) const { return r / group; }
  // r - pos(r) * group rather than r % group: next to pos(r) the compiler then does one division.
  CUTE_HOST_DEVICE int head(int r) const { return group > 1 ? group_idx * group + (r - pos(r) * group) : group_idx; }
  // The first key row r must not see (past its band's right side, or the cache's end).
  CUTE_HOST_DEVICE int key_limit(int r) const {
    return right >= 0 ? cute::max(0, cute::min(len, diag + pos(r) + 1 + right)) : len;
  }
  // Whether tile n (of kBlockN keys) needs the element-wise mask: it ends past the row with the
  // fewest keys (the cache's end, the causal diagonal, a window's right side), or starts before
  // the row whose window starts last (a window's left side; never without one: left_to 0).
  template <int kBlockN>
  CUTE_HOST_DEVICE bool right_edge(int n) const { return (n + 1) * kBlockN > mask_from; }
  template <int kBlockN>
  CUTE_HOST_DEVICE bool left_edge(int n) const { return n * kBlockN < left_to; }
  // The first key row r sees (its band's left side).
  CUTE_HOST_DEVICE int key_first(int r) const { return left >= 0 ? cute::max(0, diag + pos(r) - left) : 0; }
};

// Masks the scores of tile n past each row's band: a uniform test per tile, element-wise only on
// the tiles at the band's edges (the cache's end or the causal diagonal, and with kWindow a
// window's left side). kWindow false: the kernels without windows (the int8 ones but the options
// row) carry no left-edge code (nor its registers: kv8_wgmma_1c_2cta spilled with it).
template <int kBlockN, bool kWindow = false, class TensorS, class TensorC>
CUTE_DEVICE void mask_decode_scores(DecodeTile const& t, int n, TensorS& tSrS, TensorC const& tScS) {
  const bool left_edge = kWindow && t.template left_edge<kBlockN>(n);
  if (!left_edge && !t.template right_edge<kBlockN>(n)) return;
  auto s = acc_rowcol(tSrS);
  auto c = acc_rowcol(tScS);
  CUTE_UNROLL
  for (int r = 0; r < cute::size<0>(s); ++r) {
    const int row = t.row0 + cute::get<0>(c(r, 0));
    const int limit = t.key_limit(row);
    const int first = left_edge ? t.key_first(row) : 0;
    CUTE_UNROLL
    for (int j = 0; j < cute::size<1>(s); ++j) {
      // int, not the coordinate's unsigned type: with it a negative limit masked nothing.
      const int key = n * kBlockN + int(cute::get<1>(c(r, j)));
      if (key >= limit || key < first) s(r, j) = -INFINITY;
    }
  }
}

}  // namespace hopattn::attention
