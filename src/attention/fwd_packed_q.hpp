// The packed Q load of the chunk path's PackGQA (docs/chunk-packgqa-plan.md §1 (a′)): the shape of
// the TMA descriptor that loads a GQA group's query heads into the rows of a Q tile, without the
// driver (device/fwd_packed_q_encode.cu encodes it; tests/host checks this part).
//
// q is (batch, seqlen_q, heads_q, hdim), 16-bit, hdim contiguous. The descriptor sees it as the
// 4-D tensor (hdim, heads_q, seqlen_q, batch) with q's strides, box (64, g, P, 1), P = floor(64 /
// g) positions, SWIZZLE_128B (64 16-bit channels are one 128-byte row), zero fill out of bounds.
// One box is one warpgroup's 64-row slot of one 64-channel half of SmemLayoutQ: box row
// i · g + k (position i, head k in the group) is tile row w · 64 + i · g + k, as
// fwd_varlen.hpp's packed_row_position / packed_row_head count them; rows g · P .. 63 of the slot
// are not written (nothing reads them as valid). A tile takes (hdim / 64) · (block_m / 64) boxes
// (4 at hdim 128, block_m 128), at coordinates (64 · half, list head, p0 + w · P, b), p0 =
// m_block · 2P; its expect-tx bytes are the boxes' (4 · g · P · 128 at hdim 128, 16-bit).
// The kvlists kernel instance reads it (ran on an H200, 2026-12-06; behind Overrides::chunk_pack_gqa).
#pragma once

#include <cstdint>
#include <string>

#include "attention/fwd_varlen.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn::attention {

constexpr int kPackedQBoxChannels = 64;  // 128 bytes of 16-bit channels: the SWIZZLE_128B row

struct PackedQLoad {
  const void* base = nullptr;  // q's first element (the descriptor's global address)
  int element_bytes = 2;
  uint64_t dims[4] = {};     // hdim, heads_q, seqlen_q, batch (elements)
  uint64_t strides[3] = {};  // bytes: head, position, sequence (the hdim stride is one element)
  uint32_t box[4] = {};      // 64, g, P, 1
  int group = 0, positions = 0;  // g, and P per box (a warpgroup's positions)
  int boxes_per_tile = 0;        // (hdim / 64) · (block_m / 64)
  uint32_t expect_tx_bytes = 0;  // per tile: boxes_per_tile · 64 · g · P · element_bytes
};

// The packed Q load for q at `q` (16-bit, element_bytes 2) with strides in elements, Q tiles of
// block_m rows (block_m / 64 warpgroups), a GQA group of `group` q heads (2 to 64). Refuses, naming
// the argument, what cuTensorMapEncodeTiled would (CUDA driver API, "Tensor Map Object Management"):
// a base not 16-byte aligned, a stride not a multiple of 16 bytes or not below 2^40, a dimension
// of 0 or above 2^32, and what the packed tile cannot hold (hdim not a multiple of 64, block_m
// not a multiple of 64, a group outside 2..64 or not dividing heads_q).
inline Status make_packed_q_load(const void* q, int element_bytes, int64_t hdim, int block_m, int64_t batch,
                                 int64_t seqlen_q, int64_t heads_q, int group, int64_t batch_stride,
                                 int64_t seq_stride, int64_t head_stride, PackedQLoad* out) {
  auto refuse = [](const std::string& what) { return Status::invalid("packed q load (PackGQA): " + what); };
  if (element_bytes != 2) return refuse("q: " + std::to_string(element_bytes) + "-byte elements; only 16-bit q packs");
  if (reinterpret_cast<uintptr_t>(q) % 16 != 0) return refuse("q: the base address is not 16-byte aligned");
  if (hdim <= 0 || hdim % kPackedQBoxChannels != 0)
    return refuse("head dim " + std::to_string(hdim) + " is not a multiple of 64 (the 128-byte swizzled box row)");
  if (block_m <= 0 || block_m % kPackRowsPerWarpgroup != 0)
    return refuse("block_m " + std::to_string(block_m) + " is not a multiple of 64 (a warpgroup's rows)");
  if (group < 2 || group > kPackRowsPerWarpgroup)
    return refuse("group " + std::to_string(group) + " is outside 2..64 (q heads per kv head that a warpgroup holds)");
  if (heads_q <= 0 || heads_q % group != 0)
    return refuse("heads_q " + std::to_string(heads_q) + " is not a multiple of the group " + std::to_string(group));
  const int64_t dims[4] = {hdim, heads_q, seqlen_q, batch};
  const char* dim_names[4] = {"head dim", "heads_q", "seqlen_q", "batch"};
  for (int i = 0; i < 4; ++i)
    if (dims[i] <= 0 || dims[i] > (int64_t(1) << 32))
      return refuse(std::string(dim_names[i]) + " " + std::to_string(dims[i]) + " is outside 1..2^32");
  const int64_t strides[3] = {head_stride, seq_stride, batch_stride};
  const char* stride_names[3] = {"q_head_stride", "q_seq_stride", "q_batch_stride"};
  for (int i = 0; i < 3; ++i) {
    const int64_t bytes = strides[i] * element_bytes;
    if (strides[i] < 0 || bytes % 16 != 0 || bytes >= (int64_t(1) << 40))
      return refuse(std::string(stride_names[i]) + " " + std::to_string(strides[i]) +
                    " elements is negative, not a multiple of 16 bytes or not below 2^40 bytes");
  }
  PackedQLoad l;
  l.base = q;
  l.element_bytes = element_bytes;
  for (int i = 0; i < 4; ++i) l.dims[i] = uint64_t(dims[i]);
  for (int i = 0; i < 3; ++i) l.strides[i] = uint64_t(strides[i] * element_bytes);
  l.group = group;
  l.positions = packed_warpgroup_positions(group);
  l.box[0] = kPackedQBoxChannels, l.box[1] = uint32_t(group), l.box[2] = uint32_t(l.positions), l.box[3] = 1;
  l.boxes_per_tile = int(hdim / kPackedQBoxChannels) * (block_m / kPackRowsPerWarpgroup);
  l.expect_tx_bytes = uint32_t(l.boxes_per_tile) * kPackedQBoxChannels * uint32_t(group) * uint32_t(l.positions) *
                      uint32_t(element_bytes);
  *out = l;
  return Status();
}

}  // namespace hopattn::attention
