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

}  // namespace hopattn::attention
