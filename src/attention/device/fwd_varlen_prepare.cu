// The variable-length forward's prepare kernel: one CTA that checks every sequence's lengths
// (they live in device memory), orders the sequences and writes the tile list the options rows'
// persistent scheduler deals out (fwd_varlen.hpp; ws::FwdTileScheduler).
//
//  1. Per sequence: its offsets and lengths from cu_seqlens_q/k (and seqused_k), checked against
//     the tensors' extents and max_seqlen_q/k. A bad sequence gets no tile, NaN in its O and LSE
//     rows when its query range is itself valid, and the first found is recorded (the record that
//     hopattn_attention_device_check reads; kVarlenError*).
//  2. The order: sequences by the KV tiles of their costliest Q tile, longest first (ties: more
//     tiles first, then the batch index), so that the persistent CTAs end on short tiles (a greedy
//     longest-processing-time order). Ranks by counting, O(batch²) over the CTA's threads; above
//     kSortLimit sequences the batch order is kept.
//  3. Each sequence's tiles in the folded order of the padded causal kernels (fwd_tile_order.hpp):
//     units of its longest and shortest Q tile of one head, heads slowest within the sequence so
//     that the tiles in flight share one head's K/V in L2. Every sequence holds an even number of
//     entries, so a unit (the two entries a CTA takes together) never spans two sequences.
//     Positions of the folded order without a tile are entries with m_block = -1.
// The arithmetic of the KV-tile counts is FwdMask<true>'s (n_block_min, n_blocks_seen) at run-time
// tile sizes, for the clamped band ws::tile_mask gives the kernel.
#include <cuda_runtime.h>
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <cstdint>

#include "attention/device/decode_dispatch.hpp"
#include "attention/device/fwd_varlen_prepare.hpp"
#include "attention/fwd_tile_order.hpp"
#include "attention/fwd_varlen.hpp"
#include "common/cuda_check.hpp"

namespace hopattn::attention {
namespace {

constexpr int kThreads = 1024;
constexpr int kSortLimit = 8192;
constexpr int kSmemSequences = 1024;  // 40 KB of records, order and first entries

struct PrepareArgs {
  const int32_t* cu_q;
  const int32_t* cu_k;
  const int32_t* seqused_k;
  int batch, heads, total_q, total_k, max_q, max_k;
  int block_m, block_n;
  int window_left, window_right;  // the band (FwdParams: clamped to max_seqlen_k / max_seqlen_q)
  uint16_t* o;                    // NaN rows of bad sequences
  uint16_t nan16;                 // NaN in the output type
  int64_t o_seq_stride, o_head_stride;
  float* lse;
  int64_t lse_head_stride, lse_seq_stride;
  int hdim;
  int32_t* error;
  char* workspace;
};

// KV tiles Q tile m of a sequence visits (FwdMask<true>::n_block_count with the sequence's lengths
// and the call's sides, as ws::tile_mask gives the kernel).
__device__ int tile_kv_blocks(const PrepareArgs& a, int m, int len_q, int len_k) {
  const int wl = a.window_left, wr = a.window_right;
  const int diag = len_k - len_q;
  const int first = m * a.block_m + diag - wl;
  const int n_min = first <= 0 ? 0 : first / a.block_n;
  const int keys = min(len_k, m * a.block_m + a.block_m + diag + wr);
  const int n_max = keys <= 0 ? 0 : (keys + a.block_n - 1) / a.block_n;
  return max(0, n_max - n_min);
}

__device__ void record(const PrepareArgs& a, int kind, int b, int value) {
  if (atomicCAS(a.error, 0, kind) == 0) {
    a.error[1] = b;
    a.error[2] = value;
  }
}

__global__ void __launch_bounds__(kThreads, 1) fwd_varlen_prepare_kernel(PrepareArgs a) {
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ int carry;
  // Up to kSmemSequences sequences, the records, the order and each rank's first entry live in
  // shared memory (every step reads them back, step 4 by binary search); above, in the workspace's
  // scratch, and step 4 walks the sequences one by one.
  __shared__ FwdVarlenSequence smem_seq[kSmemSequences];
  __shared__ int32_t smem_order[kSmemSequences];
  __shared__ int32_t smem_rank_start[kSmemSequences];
  // The attention kernel (launched as this one's programmatic dependent, FwdParams::varlen_pdl)
  // may start its CTAs now: they wait for this grid's completion before reading the list.
  asm volatile("griddepcontrol.launch_dependents;");
  const bool small = a.batch <= kSmemSequences;
  auto* seq = small ? smem_seq : reinterpret_cast<FwdVarlenSequence*>(a.workspace + kVarlenHeaderBytes);
  auto* order = small ? smem_order
                      : reinterpret_cast<int32_t*>(a.workspace + kVarlenHeaderBytes + size_t(a.batch) * sizeof(FwdVarlenSequence));
  auto* tiles = reinterpret_cast<FwdVarlenTile*>(a.workspace + varlen_entries_offset(a.batch));
  const int tid = int(threadIdx.x);

  // 1. Lengths, checks, costs.
  for (int b = tid; b < a.batch; b += kThreads) {
    const int q0 = a.cu_q[b], q1 = a.cu_q[b + 1], k0 = a.cu_k[b], k1 = a.cu_k[b + 1];
    // In this order, so that no difference below can overflow.
    const bool q_ok = q0 >= 0 && q1 >= q0 && q1 <= a.total_q && q1 - q0 <= a.max_q;
    const bool k_ok = k0 >= 0 && k1 >= k0 && k1 <= a.total_k && k1 - k0 <= a.max_k;
    int len_k = k_ok ? k1 - k0 : 0;
    bool used_ok = true;
    if (a.seqused_k != nullptr) {
      const int used = a.seqused_k[b];
      used_ok = used >= 0 && used <= len_k;
      if (used_ok) len_k = used;
    }
    int status = 0;
    if (!q_ok) {
      status = kVarlenErrorCuSeqlensQ;
      record(a, status, b, q1);
    } else if (!k_ok) {
      status = kVarlenErrorCuSeqlensK;
      record(a, status, b, k1);
    } else if (!used_ok) {
      status = kVarlenErrorSequsedK;
      record(a, status, b, a.seqused_k[b]);
    }
    FwdVarlenSequence s{};
    s.status = status;
    if (status == 0) {
      s.q_offset = q0, s.len_q = q1 - q0, s.k_offset = k0, s.len_k = len_k;
      const int m_blocks = (s.len_q + a.block_m - 1) / a.block_m;
      s.tiles = m_blocks > 0 ? int(folded_positions(m_blocks, a.heads)) : 0;
      s.cost = m_blocks > 0 ? tile_kv_blocks(a, m_blocks - 1, s.len_q, s.len_k) : 0;
    } else if (q_ok) {  // its rows get NaN (step 4)
      s.q_offset = q0, s.len_q = q1 - q0;
    }
    seq[b] = s;
  }
  __syncthreads();

  // 2. The order: rank = how many sequences go before this one.
  for (int b = tid; b < a.batch; b += kThreads) {
    int rank = b;
    if (a.batch <= kSortLimit) {
      const FwdVarlenSequence s = seq[b];
      rank = 0;
      for (int j = 0; j < a.batch; ++j) {
        const int cj = seq[j].cost, tj = seq[j].tiles;
        rank += cj > s.cost || (cj == s.cost && (tj > s.tiles || (tj == s.tiles && j < b)));
      }
    }
    order[rank] = b;
  }
  if (tid == 0) carry = 0;
  __syncthreads();

  // 3. Each sequence's first entry: an exclusive scan of the entry counts in that order.
  for (int base = 0; base < a.batch; base += kThreads) {
    const int r = base + tid;
    const int b = r < a.batch ? order[r] : 0;
    const int n = r < a.batch ? seq[b].tiles : 0;
    int start = 0, sum = 0;
    Scan(scan_storage).ExclusiveSum(n, start, sum);
    if (r < a.batch) {
      seq[b].start = carry + start;
      if (small) smem_rank_start[r] = carry + start;
    }
    __syncthreads();  // every thread has read carry (and scan_storage is free)
    if (tid == 0) carry += sum;
    __syncthreads();
  }
  const int count = carry;
  if (tid == 0) {
    reinterpret_cast<int32_t*>(a.workspace)[0] = count;  // the list's length
    *reinterpret_cast<int32_t*>(a.workspace + kVarlenClaimOffset) = 0;  // the dynamic dealing's counter
  }

  // 4. The entries: entry e of sequence order[r] (its e - start-th); NaN rows for the bad
  //    sequences with a valid query range.
  auto write_entry = [&](int r, int e) {
    const int b = order[r];
    const FwdVarlenSequence s = seq[b];
    const int m_blocks = (s.len_q + a.block_m - 1) / a.block_m;
    const FwdFoldedTile f = folded_causal_tile(e - s.start, m_blocks, a.heads);
    FwdVarlenTile t{-1, 0, 0, 0, s.q_offset, s.len_q, s.k_offset, s.len_k};
    if (f.valid) t.m_block = f.m_block, t.h = f.hb, t.b = b, t.n_blocks = tile_kv_blocks(a, f.m_block, s.len_q, s.len_k);
    tiles[e] = t;
  };
  if (small) {  // every entry at once: its rank is the last whose first entry is <= e
    for (int e = tid; e < count; e += kThreads) {
      int lo = 0, hi = a.batch - 1;
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (smem_rank_start[mid] <= e) lo = mid;
        else hi = mid - 1;
      }
      write_entry(lo, e);
    }
  }
  for (int r = 0; r < a.batch; ++r) {
    const FwdVarlenSequence s = seq[order[r]];
    if (s.status == 0) {
      if (!small)
        for (int e = s.start + tid; e < s.start + s.tiles; e += kThreads) write_entry(r, e);
    } else if (s.len_q > 0) {
      const int64_t elems = int64_t(s.len_q) * a.heads * a.hdim;
      for (int64_t i = tid; i < elems; i += kThreads) {
        const int d = int(i % a.hdim);
        const int64_t row = i / a.hdim;
        const int h = int(row % a.heads);
        const int64_t t = s.q_offset + row / a.heads;
        a.o[t * a.o_seq_stride + h * a.o_head_stride + d] = a.nan16;
        if (d == 0 && a.lse != nullptr) a.lse[h * a.lse_head_stride + t * a.lse_seq_stride] = __int_as_float(0x7fc00000);
      }
    }
  }
}

// A KV-cache call's list (fwd_varlen.hpp, "KV-cache lists"): one CTA.
//  1. Per sequence: cache_seqlens[b], checked as the decode kernels check it (bad_cache_length:
//     < 0, > max_len, or causal and shorter than seqlen_q); the first bad one is recorded with the
//     decode kernels' kind (kDecodeErrorAttention, {1, b, len}), and its O and LSE rows are NaN
//     (with splits, or a packed list, the combine writes them NaN again: it checks the lengths too).
//     A paged cache: the page ids of a good length's keys [0, len), each in [0, num_pages); the
//     first bad one is recorded as the decode kernels record it ({6, b, id}), the sequence gets no
//     tile and NaN rows as for a bad length, and its split-0 LSE partials are NaN so that the
//     combine (which checks lengths, not pages) makes its rows NaN too.
//  2. The order: sequences by length, longest first (ties: the batch index), so that the
//     dynamically dealt CTAs end on short entries; by counting, O(batch²) over the lengths in
//     shared memory, up to kSmemSequences sequences (above, the batch order: such a batch has
//     tiles for many waves without splits).
//  3. The entries: sequence order[r] holds entries [r·E, (r+1)·E), E = m_blocks · heads · splits,
//     the split slowest, then the q-head (the heads of a KV group, which read the same keys, next
//     to each other), then the Q tile, longest first; entry k at position 2k, and the odd
//     positions empty (m_block -1), so that a dealt unit is one entry; a bad sequence's entries
//     hold no tile either. Beside each position its KV range
//     (FwdKvRange, kvcache_entry_range: its Q tile's tiles by FwdMask<true>'s arithmetic with the
//     band the kernel gets, split evenly) and the split index. A packed list (group > 1,
//     docs/chunk-packgqa-plan.md): heads and m_blocks are kvcache_list_shape's (kv heads, tiles of
//     2P positions), an entry's head is its group's first q head; the NaN rows (4. below) still
//     cover every q head (heads_q).
struct KvCachePrepareArgs {
  const int32_t* cache_seqlens;
  int batch, heads, seqlen_q, max_len, m_blocks, num_splits;
  int heads_q, group;  // the call's q heads (the NaN rows); the list's GQA group (0 or 1: unpacked)
  int block_m, block_n;
  int window_left, window_right;  // the band (FwdParams), as the kernel's mask takes it
  bool causal;
  uint16_t* o;     // NaN rows of bad sequences
  uint16_t nan16;  // NaN in the output type
  int64_t o_batch_stride, o_seq_stride, o_head_stride;
  float* lse;
  int64_t lse_batch_stride, lse_head_stride, lse_seq_stride;
  int hdim;
  int32_t* error;
  char* workspace;
  const int32_t* page_table;  // a paged cache (FwdParams::page_table), or nullptr
  int64_t pt_batch_stride;
  int page_size, num_pages;
  float* split_lse;  // the partials' LSE (decode layout), when the combine runs; else nullptr
};

__device__ bool bad_kvcache_length(const KvCachePrepareArgs& a, int len) {
  return len < 0 || len > a.max_len || (a.causal && len < a.seqlen_q);  // bad_cache_length (sm90_decode_tile.hpp)
}

__global__ void __launch_bounds__(kThreads, 1) fwd_kvcache_prepare_kernel(KvCachePrepareArgs a) {
  // The attention kernel (a programmatic dependent) may start its CTAs now: they wait for this
  // grid's completion before reading the list.
  asm volatile("griddepcontrol.launch_dependents;");
  auto* order = reinterpret_cast<int32_t*>(a.workspace + kVarlenHeaderBytes);
  auto* tiles = reinterpret_cast<FwdVarlenTile*>(a.workspace + kvcache_entries_offset(a.batch));
  auto* ranges = reinterpret_cast<FwdKvRange*>(a.workspace + kvcache_ranges_offset(a.batch, a.m_blocks, a.heads, a.num_splits));
  const int tid = int(threadIdx.x);
  __shared__ int32_t smem_key[kSmemSequences];  // the sort keys: the length, -1 for a bad one
  __shared__ uint32_t smem_bad_pages[65536 / 32];  // a paged cache: the sequences with a bad page id
  const bool sorted = a.batch <= kSmemSequences;
  for (int w = tid; w < (a.batch + 31) / 32; w += kThreads) smem_bad_pages[w] = 0u;
  __syncthreads();
  // 1. Checks.
  for (int b = tid; b < a.batch; b += kThreads) {
    const int len = a.cache_seqlens[b];
    const bool bad = bad_kvcache_length(a, len);
    if (bad && atomicCAS(a.error, 0, kDecodeErrorAttention) == 0) {
      a.error[1] = b;
      a.error[2] = len;
    }
    if (sorted) smem_key[b] = bad ? -1 : len;
  }
  // A paged cache's page ids, a warp per sequence, its lanes over the pages (a thread per sequence
  // waited on each id's load before the next, 256 of them for a 32k sequence of 128-token pages:
  // paged chunks ran at 0.83x the contiguous cache's at 1 x 32k, 0.955x with the warp; H100
  // 2026-12-07, bench/records/chunk-paged-warp-2026-12-07-h100-s14.csv).
  if (a.page_table != nullptr) {
    const int warp = tid / 32, lane = tid % 32;
    for (int b = warp; b < a.batch; b += kThreads / 32) {
      const int len = a.cache_seqlens[b];
      if (bad_kvcache_length(a, len)) continue;
      const int pages = (len + a.page_size - 1) / a.page_size;
      const int32_t* row = a.page_table + b * a.pt_batch_stride;
      bool bad_page = false;
#pragma unroll 4
      for (int j = lane; j < pages; j += 32) {
        const int id = row[j];
        if (id < 0 || id >= a.num_pages) {
          bad_page = true;
          if (atomicCAS(a.error, 0, kDecodeErrorPageId) == 0) a.error[1] = b, a.error[2] = id;
        }
      }
      if (__any_sync(0xffffffffu, bad_page) && lane == 0) atomicOr(&smem_bad_pages[b / 32], 1u << (b % 32));
    }
    __syncthreads();
    if (sorted)
      for (int b = tid; b < a.batch; b += kThreads)
        if ((smem_bad_pages[b / 32] >> (b % 32) & 1u) != 0u) smem_key[b] = -1;
  }
  __syncthreads();
  auto bad_sequence = [&](int b, int len) {
    return bad_kvcache_length(a, len) || (smem_bad_pages[b / 32] >> (b % 32) & 1u) != 0u;
  };
  // 2. The order: rank = how many sequences go before this one.
  for (int b = tid; b < a.batch; b += kThreads) {
    int rank = b;
    if (sorted) {
      const int k = smem_key[b];
      rank = 0;
      for (int j = 0; j < a.batch; ++j) rank += smem_key[j] > k || (smem_key[j] == k && j < b);
    }
    order[rank] = b;
  }
  const int64_t per_seq = int64_t(a.m_blocks) * a.heads * a.num_splits;
  const int64_t count = kvcache_list_entries(a.batch, a.m_blocks, a.heads, a.num_splits);
  if (tid == 0) {
    reinterpret_cast<int32_t*>(a.workspace)[0] = int32_t(count);  // the list's length
    *reinterpret_cast<int32_t*>(a.workspace + kVarlenClaimOffset) = 0;  // the dynamic dealing's counter
  }
  __syncthreads();  // order[] is written (global memory, visible within the CTA after the barrier)

  // 3. The entries (kvcache_list_position).
  const FwdKvCacheListParams lp{a.heads,   a.seqlen_q, a.max_len,     a.m_blocks,     a.num_splits,
                                a.block_m, a.block_n,  a.window_left, a.window_right, a.group};
  for (int64_t pos = tid; pos < count; pos += kThreads) {
    const int b = order[pos / 2 / per_seq];
    const int len = a.cache_seqlens[b];
    FwdVarlenTile t;
    FwdKvRange r;
    kvcache_list_position(lp, pos, b, len, bad_sequence(b, len), t, r);
    ranges[pos] = r;
    tiles[pos] = t;
  }

  // 4. NaN rows for the bad sequences (and a bad page's split-0 LSE partials).
  for (int b = 0; b < a.batch; ++b) {
    if (sorted ? smem_key[b] >= 0 : !bad_sequence(b, a.cache_seqlens[b])) continue;
    if (a.split_lse != nullptr && (smem_bad_pages[b / 32] >> (b % 32) & 1u) != 0u)
      for (int64_t i = tid; i < int64_t(a.seqlen_q) * a.heads_q; i += kThreads)  // rows (b, h, s), split 0
        a.split_lse[int64_t(b) * a.heads_q * a.seqlen_q + i] = __int_as_float(0x7fc00000);
    const int64_t elems = int64_t(a.seqlen_q) * a.heads_q * a.hdim;  // every q head, packed or not
    for (int64_t i = tid; i < elems; i += kThreads) {
      const int d = int(i % a.hdim);
      const int64_t row = i / a.hdim;
      const int h = int(row % a.heads_q);
      const int64_t s = row / a.heads_q;
      a.o[b * a.o_batch_stride + s * a.o_seq_stride + h * a.o_head_stride + d] = a.nan16;
      if (d == 0 && a.lse != nullptr)
        a.lse[b * a.lse_batch_stride + h * a.lse_head_stride + s * a.lse_seq_stride] = __int_as_float(0x7fc00000);
    }
  }
}

}  // namespace

Status launch_fwd_kvcache_prepare(const FwdParams& fp, int block_m, int block_n, Stream stream) {
  KvCachePrepareArgs a{};
  a.cache_seqlens = fp.cache_seqlens;
  a.batch = fp.batch;
  // The list's shape: heads_q and ceil(seqlen_q / block_m) unpacked, kv heads and tiles of 2P
  // positions packed (fp.pack_group > 1; fwd_varlen.hpp).
  const KvCacheListShape shape = kvcache_list_shape(fp.seqlen_q, fp.heads_q, fp.heads_kv, block_m, fp.pack_group);
  a.heads = int(shape.heads);
  a.heads_q = fp.heads_q;
  a.group = fp.pack_group > 1 ? fp.pack_group : 0;
  a.seqlen_q = fp.seqlen_q;
  a.max_len = fp.seqlen_k;
  a.m_blocks = int(shape.m_blocks);
  a.num_splits = std::max(fp.num_splits, 1);
  a.block_m = block_m;
  a.block_n = block_n;
  a.window_left = fp.window_left;
  a.window_right = fp.window_right;
  // The chunk path takes no window (kvcache_check.cpp): the band's right side is 0 exactly when
  // the call is causal (seqlen_q > 0 otherwise).
  a.causal = fp.window_right == 0;
  a.o = static_cast<uint16_t*>(fp.o);
  a.nan16 = fp.dtype == HOPATTN_DTYPE_BF16 ? uint16_t(0x7fc0) : uint16_t(0x7e00);
  a.o_batch_stride = fp.o_batch_stride;
  a.o_seq_stride = fp.o_seq_stride;
  a.o_head_stride = fp.o_head_stride;
  a.lse = fp.lse;
  a.lse_batch_stride = fp.lse_batch_stride;
  a.lse_head_stride = fp.lse_head_stride;
  a.lse_seq_stride = fp.lse_seq_stride;
  a.hdim = fp.hdim;
  a.error = fp.error;
  a.workspace = static_cast<char*>(fp.workspace);
  a.page_table = fp.page_table;
  a.pt_batch_stride = fp.pt_batch_stride;
  a.page_size = fp.page_size, a.num_pages = fp.num_pages;
  a.split_lse = fp.num_splits > 1 || fp.pack_group > 1 ? fp.split_lse : nullptr;  // the combine runs
  fwd_kvcache_prepare_kernel<<<1, kThreads, 0, stream>>>(a);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status();
}

Status launch_fwd_varlen_prepare(const FwdParams& fp, int block_m, int block_n, Stream stream) {
  PrepareArgs a{};
  a.cu_q = fp.cu_seqlens_q;
  a.cu_k = fp.cu_seqlens_k;
  a.seqused_k = fp.seqused_k;
  a.batch = fp.batch;
  a.heads = fp.heads_q;
  a.total_q = fp.total_q;
  a.total_k = fp.total_k;
  a.max_q = fp.seqlen_q;
  a.max_k = fp.seqlen_k;
  a.block_m = block_m;
  a.block_n = block_n;
  a.window_left = fp.window_left;
  a.window_right = fp.window_right;
  a.o = static_cast<uint16_t*>(fp.o);
  a.nan16 = fp.dtype == HOPATTN_DTYPE_BF16 ? uint16_t(0x7fc0) : uint16_t(0x7e00);
  a.o_seq_stride = fp.o_seq_stride;
  a.o_head_stride = fp.o_head_stride;
  a.lse = fp.lse;
  a.lse_head_stride = fp.lse_head_stride;
  a.lse_seq_stride = fp.lse_seq_stride;
  a.hdim = fp.hdim;
  a.error = fp.error;
  a.workspace = static_cast<char*>(fp.workspace);
  fwd_varlen_prepare_kernel<<<1, kThreads, 0, stream>>>(a);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status();
}

}  // namespace hopattn::attention
