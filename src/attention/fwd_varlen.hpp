// Variable-length forward batches: the workspace the call's tile list lives in, and one entry of
// that list. Shared by the host (sizes, the host tests' model of the order) and the kernels
// (device/fwd_varlen_prepare.cu writes the list, the options rows' scheduler reads it). No CUDA or
// CuTe header: compiled by nvcc and by the host compiler alike.
//
// Workspace layout (16-byte aligned base):
//   [0, 64)                         header: int32 tile count (entries written), int32 claim
//                                   counter (zeroed; the dynamic dealing's), the rest unused
//   [64, 64 + 36 * batch)           the prepare kernel's scratch: a FwdVarlenSequence per
//                                   sequence, then the sequences' order (int32 each)
//   then, 32-byte aligned,          varlen_tile_capacity() entries of FwdVarlenTile
// The capacity bounds the list's length for every row's Q tile (64 rows or more): sequence b
// writes folded_positions(m_b, heads_q) entries, m_b = ceil(len_q[b] / BM) <= len_q[b] / 64 + 1,
// which is m_b * heads_q, or m_b * (heads_q + 1) when both are odd (the folded order pairs the
// middle tiles of two heads, and an odd head count leaves one pairless: fwd_tile_order.hpp), so
//   sum_b folded_positions(m_b, heads_q) <= (total_q / 64 + batch) * (heads_q rounded up to even).
//
// KV-cache lists (hopattn_kvcache_attention's chunk path, FwdParams::cache_seqlens; written by
// fwd_kvcache_prepare in device/fwd_varlen_prepare.cu): the same entries over padded q / o
// (batch, seqlen_q, heads_q, hdim) and a contiguous cache (batch, max_len, heads_kv, hdim) read
// as max_len-row sequences of a packed one (k_offset = b · max_len, len_k = cache_seqlens[b]:
// the end-aligned view then clips every load at the sequence's own length, so that the cache's
// rows past it, which may hold anything, NaN included, are never read). Each Q tile is
// num_splits entries, one per KV split, and every entry is followed by an empty position: a dealt
// unit (two positions) is then one entry, so that a call of E entries runs on min(E, SMs)
// persistent CTAs (its entries cost about the same; the variable-length list pairs a long tile
// with a short one instead). An entry's fields there:
//   m_block, h, b     as above (m_block -1: no tile: the odd positions, and every entry of a
//                     sequence with a bad length)
//   n_blocks          the KV tiles it visits (its split's share)
//   q_offset, len_q   b - seqlen_q and seqlen_q: the variable-length origin formula
//                     (ws::q_origin: (max_len_q - len_q, q_offset + len_q)) then gives (0, b),
//                     the padded views' origin
//   k_offset, len_k   b · max_len and cache_seqlens[b]
// and beside it, entry e's KV range (FwdKvRange, 16 bytes, at the same index of an array after
// the list; ws::list_kv_range): of the n = n_block_count tiles from lo = n_block_min that its Q
// tile sees (FwdMask<true>'s arithmetic with the sequence's lengths), split s of S takes
// [lo + s·n / S, lo + (s+1)·n / S) (the decode kernels' and FA3's even division; a split may get
// none), and its index s (its partials' workspace slot). The prepare kernel divides, so that the
// attention kernel's producer (24 registers) does not.
// Its layout (16-byte aligned base), inside the KV-cache workspace (kvcache_check.cpp: the split
// partials first, at offset 0, then this region, kvcache_list_offset() bytes in):
//   [0, 64)                         the header, as above
//   [64, 64 + 4 * batch)            the sequences' order (int32 each, longest cache first)
//   then, 32-byte aligned,          kvcache_list_entries() entries of FwdVarlenTile
//   then                            as many FwdKvRange
// A packed list (PackGQA, docs/chunk-packgqa-plan.md §2-4; the plan gives one with
// Overrides::chunk_pack_gqa): a tile holds a GQA group's g = heads_q / heads_kv query heads, its
// entries count kv heads (h = the group's first q head, h_kv · g) and its m_blocks tiles of 2P
// positions (kvcache_list_shape, packed_row_position below).
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define HOPATTN_VARLEN_HD __host__ __device__ inline
#else
#define HOPATTN_VARLEN_HD inline
#endif

namespace hopattn::attention {

// One Q tile of the list: sequence b's m-th tile of rows, q-head h; its sequence's offsets (rows
// of the packed tensors) and lengths, so that a reader needs no second load.
struct alignas(16) FwdVarlenTile {
  int32_t m_block, h, b, n_blocks;  // n_blocks: the KV tiles it visits (0: no key; written last)
  int32_t q_offset, len_q, k_offset, len_k;
};
static_assert(sizeof(FwdVarlenTile) == 32, "two 16-byte loads per entry");

// A KV-cache list entry's KV range (above): its tiles [n_first, n_first + n_blocks) of block_n keys,
// counted from the sequence's key 0; split: its partials' workspace slot.
struct alignas(16) FwdKvRange {
  int32_t n_first, n_blocks, split, unused;
};
static_assert(sizeof(FwdKvRange) == 16, "one 16-byte load per entry");

// The KV range of split `split` of `splits` of Q tile m_block (block_m rows, block_n-key tiles) of
// a sequence of len_q queries and len_k keys under the band (window_left, window_right; clamped as
// FwdParams holds them): FwdMask<true>'s n_block_min and n_block_count, divided evenly
// (fwd_kvcache_prepare writes it; tests/host checks it against a brute-force band).
HOPATTN_VARLEN_HD FwdKvRange kvcache_entry_range(int m_block, int block_m, int block_n, int len_q, int len_k,
                                                 int window_left, int window_right, int split, int splits) {
  const int diag = len_k - len_q;
  const int first_key = m_block * block_m + diag - window_left;  // the tile's first row's first key
  const int first = first_key <= 0 ? 0 : first_key / block_n;
  const int last_limit = m_block * block_m + block_m + diag + window_right;  // past its last row's last key
  const int keys = len_k < last_limit ? len_k : last_limit;
  const int n_max = keys <= 0 ? 0 : (keys + block_n - 1) / block_n;
  const int n = n_max > first ? n_max - first : 0;
  const int lo = int(int64_t(split) * n / splits), hi = int(int64_t(split + 1) * n / splits);
  return FwdKvRange{first + lo, hi - lo, split, 0};
}

// PackGQA's rows (docs/chunk-packgqa-plan.md §2): a tile of block_m rows is block_m / 64 warpgroups
// of 64 rows; warpgroup w holds P = floor(64 / g) positions of the g heads of one group, row
// w · 64 + l (l < g · P) position p0 + w · P + l / g and head h_kv · g + l % g, p0 = m_block ·
// (block_m / 64) · P; rows l >= g · P hold nothing. At g = 1 (P = 64) that is the unpacked tile,
// row r position m_block · block_m + r. group 0 or 1: unpacked.
constexpr int kPackRowsPerWarpgroup = 64;
HOPATTN_VARLEN_HD constexpr int packed_group(int group) { return group > 1 ? group : 1; }
// Positions one warpgroup's rows hold (P; 64 unpacked).
HOPATTN_VARLEN_HD constexpr int packed_warpgroup_positions(int group) {
  return kPackRowsPerWarpgroup / packed_group(group);
}
// Positions one Q tile's rows hold: block_m unpacked, 2P at block_m 128 packed.
HOPATTN_VARLEN_HD constexpr int kvcache_tile_positions(int block_m, int group) {
  return group > 1 ? block_m / kPackRowsPerWarpgroup * packed_warpgroup_positions(group) : block_m;
}
// Whether row `row` of a tile holds a (position, head) at all (l < g · P; every row unpacked).
HOPATTN_VARLEN_HD constexpr bool packed_row_used(int row, int group) {
  return row % kPackRowsPerWarpgroup < packed_group(group) * packed_warpgroup_positions(group);
}
// The query position of row `row` of Q tile m_block (for a used row).
HOPATTN_VARLEN_HD constexpr int packed_row_position(int m_block, int row, int block_m, int group) {
  return m_block * kvcache_tile_positions(block_m, group) + row / kPackRowsPerWarpgroup * packed_warpgroup_positions(group) +
         row % kPackRowsPerWarpgroup / packed_group(group);
}
// The query head of row `row` of a tile whose list entry has head tile_h (h_kv · g packed).
HOPATTN_VARLEN_HD constexpr int packed_row_head(int tile_h, int row, int group) {
  return tile_h + row % kPackRowsPerWarpgroup % packed_group(group);
}
// Whether the row holds a query of a sequence of seqlen_q positions (used, and not past its end).
HOPATTN_VARLEN_HD constexpr bool packed_row_valid(int m_block, int row, int block_m, int group, int seqlen_q) {
  return packed_row_used(row, group) && packed_row_position(m_block, row, block_m, group) < seqlen_q;
}

// Row `row` of a packed tile as the kernel decodes it (sm90_fwd_ws.hpp: apply_packed_mask,
// store_split_partial_packed), from g and P = packed_warpgroup_positions(g) as the host passes
// them (KvListParams): its position relative to the tile's first (p0), its head in the group (the
// list head's h_kv · g plus it), and whether it holds anything (l < g · P). The same rows as
// packed_row_position / packed_row_head / packed_row_used without their division of 64 by g.
struct PackedRow {
  int position, head;
  bool used;
};
HOPATTN_VARLEN_HD constexpr PackedRow packed_row(int row, int group, int positions) {
  const int l = row % kPackRowsPerWarpgroup, q = l / group;
  return PackedRow{row / kPackRowsPerWarpgroup * positions + q, l - q * group, l < group * positions};
}

// A KV-cache list's shape: its heads (heads_q, or heads_kv packed), Q tiles per (sequence, head)
// (ceil(seqlen_q / block_m), or ceil(seqlen_q / 2P) packed), the positions a tile holds, and the
// q heads an entry's head steps over (entry head = list head · head_step). group: 0 or 1
// unpacked, else heads_q / heads_kv (the caller's; 2 to 64).
struct KvCacheListShape {
  int64_t heads, m_blocks;
  int tile_positions, head_step;
};
HOPATTN_VARLEN_HD KvCacheListShape kvcache_list_shape(int64_t seqlen_q, int64_t heads_q, int64_t heads_kv, int block_m,
                                                      int group) {
  const int positions = kvcache_tile_positions(block_m, group);
  return KvCacheListShape{group > 1 ? heads_kv : heads_q, (seqlen_q + positions - 1) / positions, positions,
                          packed_group(group)};
}

// Position `pos` of a KV-cache list (fwd_kvcache_prepare writes every position so; tests/host
// checks the whole list): sequence b = order[pos / 2 / per_seq] of length len (bad: a length the
// decode kernels' rule rejects), per_seq = m_blocks · heads · splits entries each; the entry, or
// no tile (an odd position, a bad sequence). Packed (group > 1): heads and m_blocks are the
// packed list's (kvcache_list_shape), an entry's h is its kv head · group, and its KV range is
// that of its tile's 2P positions.
struct FwdKvCacheListParams {
  int heads, seqlen_q, max_len, m_blocks, splits, block_m, block_n, window_left, window_right;
  int group = 0;  // 0 or 1: unpacked
};
HOPATTN_VARLEN_HD void kvcache_list_position(const FwdKvCacheListParams& a, int64_t pos, int b, int len, bool bad,
                                             FwdVarlenTile& t, FwdKvRange& r) {
  t = FwdVarlenTile{-1, 0, 0, 0, 0, a.seqlen_q, 0, 0};
  r = FwdKvRange{0, 0, 0, 0};
  if (pos % 2 != 0 || bad) return;
  const int64_t per_seq = int64_t(a.m_blocks) * a.heads * a.splits;
  const int i = int((pos / 2) % per_seq);
  const int m = i % a.m_blocks, rest = i / a.m_blocks;
  t.m_block = a.m_blocks - 1 - m;  // longest first
  t.h = rest % a.heads * packed_group(a.group);
  t.b = b;
  t.q_offset = b - a.seqlen_q;  // q_origin then gives (0, b)
  t.k_offset = b * a.max_len;
  t.len_k = len;
  r = kvcache_entry_range(t.m_block, kvcache_tile_positions(a.block_m, a.group), a.block_n, a.seqlen_q, len,
                          a.window_left, a.window_right, rest / a.heads, a.splits);
  t.n_blocks = r.n_blocks;
}

constexpr int kVarlenMinBlockM = 64;         // the smallest Q tile of any row
constexpr size_t kVarlenHeaderBytes = 64;
constexpr size_t kVarlenClaimOffset = 4;  // int32 in the header: the dynamic dealing's claim counter
// The prepare kernel's record of one sequence.
struct alignas(16) FwdVarlenSequence {
  int32_t cost;    // KV tiles of its costliest Q tile (the sort key)
  int32_t tiles;   // its entries in the list (folded positions, some without a tile); 0 if bad
  int32_t status;  // 0, or the record kind of a bad sequence (kVarlenError*, decode_dispatch.hpp)
  int32_t start;   // its first entry
  int32_t q_offset, len_q, k_offset, len_k;
};
static_assert(sizeof(FwdVarlenSequence) == 32, "");
constexpr size_t kVarlenSequenceBytes = sizeof(FwdVarlenSequence) + sizeof(int32_t);  // per sequence, scratch

HOPATTN_VARLEN_HD int64_t varlen_tile_capacity(int64_t total_q, int64_t batch, int64_t heads_q) {
  return (total_q / kVarlenMinBlockM + batch) * (heads_q + (heads_q & 1));
}
HOPATTN_VARLEN_HD size_t varlen_entries_offset(int64_t batch) {
  return (kVarlenHeaderBytes + size_t(batch) * kVarlenSequenceBytes + 31) / 32 * 32;
}
HOPATTN_VARLEN_HD size_t varlen_workspace_bytes(int64_t total_q, int64_t batch, int64_t heads_q) {
  return varlen_entries_offset(batch) + size_t(varlen_tile_capacity(total_q, batch, heads_q)) * sizeof(FwdVarlenTile);
}

// KV-cache lists (above): the positions of batch sequences of m_blocks Q tiles of heads_q heads in
// `splits` KV splits: two per entry (the entry, then an empty position; a dealt unit is two).
// A packed list: its own m_blocks and heads (kvcache_list_shape) in place of heads_q.
HOPATTN_VARLEN_HD int64_t kvcache_list_entries(int64_t batch, int64_t m_blocks, int64_t heads_q, int64_t splits) {
  return 2 * batch * m_blocks * heads_q * splits;
}
HOPATTN_VARLEN_HD size_t kvcache_entries_offset(int64_t batch) {
  return (kVarlenHeaderBytes + size_t(batch) * sizeof(int32_t) + 31) / 32 * 32;
}
HOPATTN_VARLEN_HD size_t kvcache_ranges_offset(int64_t batch, int64_t m_blocks, int64_t heads_q, int64_t splits) {
  return kvcache_entries_offset(batch) + size_t(kvcache_list_entries(batch, m_blocks, heads_q, splits)) * sizeof(FwdVarlenTile);
}
HOPATTN_VARLEN_HD size_t kvcache_list_bytes(int64_t batch, int64_t m_blocks, int64_t heads_q, int64_t splits) {
  return kvcache_ranges_offset(batch, m_blocks, heads_q, splits) +
         size_t(kvcache_list_entries(batch, m_blocks, heads_q, splits)) * sizeof(FwdKvRange);
}
// The split partials of a KV-cache call (the decode combine's layout, decode_params.hpp: O then
// LSE, fp32), 0 at one split; the list follows them, 256-byte aligned. packed: a packed list's
// tiles always write partials (the combine writes O and LSE, also at one split): max(splits, 1).
HOPATTN_VARLEN_HD size_t kvcache_partial_bytes(int64_t rows, int64_t hdim, int64_t splits, bool packed = false) {
  const int64_t slots = packed && splits < 1 ? 1 : splits;
  return slots > 1 || packed ? size_t(slots) * size_t(rows) * size_t(hdim + 1) * sizeof(float) : 0;
}
HOPATTN_VARLEN_HD size_t kvcache_list_offset(int64_t rows, int64_t hdim, int64_t splits, bool packed = false) {
  return (kvcache_partial_bytes(rows, hdim, splits, packed) + 255) / 256 * 256;
}

// The chunk path's workspace (make_chunk_params, make_fwd_params): the partial slots the forward
// kernel writes (0: none, it stores O and LSE itself; splits above one; max(splits, 1) packed),
// the LSE partials' offset in floats from the workspace's start (O's partials at 0: the decode
// combine's layout), and the list's offset in bytes (kvcache_list_offset).
struct KvCacheChunkLayout {
  int64_t slots, lse_offset;
  size_t list_offset;
};
HOPATTN_VARLEN_HD KvCacheChunkLayout kvcache_chunk_layout(int64_t rows, int64_t hdim, int64_t splits, bool packed) {
  const int64_t slots = splits > 1 ? splits : packed ? 1 : 0;
  return KvCacheChunkLayout{slots, rows * hdim * slots, kvcache_list_offset(rows, hdim, splits, packed)};
}
// The band's left side that the chunk path passes (make_chunk_params; it takes no window): max_len
// reaches every key. Packed (group > 1), block_m more: the kernel's element-wise left mask counts
// a row's position as its unpacked one (m_block · block_m + row, less the tile-level shift of
// docs/chunk-packgqa-plan.md §2), up to block_m - 1 past its packed position, and must never fire.
// Clamped to int (the list's ranges and the mask subtract it from a position).
HOPATTN_VARLEN_HD int kvcache_chunk_window_left(int max_len, int block_m, int group) {
  const int64_t left = int64_t(max_len) + (group > 1 ? block_m : 0);
  return left < int64_t(0x7fffffff) ? int(left) : 0x7fffffff;
}

}  // namespace hopattn::attention
