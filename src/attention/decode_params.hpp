// Attention over a KV cache as the decode kernels see it: checked, defaults applied, the plan
// (splits, packing) decided, strides in elements. Built by device/kvcache_check.cpp from the
// public arguments after check_kvcache_attention() accepted them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hopattn/hopattn.h"

namespace hopattn::attention {

// The decode kernel variants as the host plans them (sm90_decode.hpp holds the tiles):
//   16-bit cache: 1 = 128-key tiles (64 at hdim 256), 3 stages, one CTA per SM;
//                 2 = 64-key tiles (128 at hdim 64), 3 stages, two CTAs per SM (hdim <= 128);
//                 6 = variant 1's tiles with balanced split-KV (chunks claimed by the CTAs);
//                 22 = variant 1 with uneven splits: per row group `num_splits - small_splits`
//                 big splits, then `small_splits` small ones, every big CTA numbered before every
//                 small one (DecodeTile::make_rows), so the SMs that finish first take the small
//                 ones (the block scheduler hands out CTAs in order).
//   int8 cache:   1 = two consumer warpgroups (hdim <= 128; one at 256); 2 = one consumer;
//                 3 = one consumer, 112 KB, two CTAs per SM (hdim <= 128); 4 = as 3 with the
//                 swapped-operand consumer (16 packed rows per CTA); 5 = as 4 with K converted
//                 in the consumer's registers (two CTAs per SM, hdim <= 128); 7 = as 4 with
//                 Q·Kᵀ as 8-bit WGMMAs on the raw K tile ("half INT8": Q' in three int8 parts);
//                 8 = as 4 with one CTA per SM and a 128 KB raw ring (hdim <= 128);
//                 9 = no transform warpgroup: 8 warps dequantize the raw tiles into their
//                 mma.sync fragments, one CTA per SM (kernel/sm90_decode_int8_mma.hpp; hdim 128,
//                 refused at other head dims), 64 keys per stage; 10 = as 9 with 6 consumer
//                 warps (the ablation: more stages spare per warp); 11 = as 9 with no producer:
//                 each warp loads its own tiles into a private ring; 12 = as 11 with fp16
//                 operands: the int8 values exact, the scales shifted by powers of two; 13 = as
//                 11 with 4 warps per CTA and two CTAs per SM; 14 = as 11 with the value · scale
//                 products in one FFMA a value (the same fp32 for scales of <= 15 significant
//                 bits, which the quantizer writes); 15 = as 14 with 4 warps per CTA, two slots
//                 a warp and three CTAs per SM; 16 = as 14 with V's int8 values exact in fp16
//                 and its per-token scales folded into P (fp16 P·V); 17 = as 16 with 15's three
//                 CTAs per SM; 18 = 16's values with the keys as the mma's M and the rows as
//                 its N (at most 8 packed rows a CTA: half the mma work of 16 there); 19 = as 18
//                 with 17's three CTAs per SM; 20, 21 = as 18, 19 with K dequantized in packed
//                 bf16 pairs (at bf16; fp16 runs 18's and 19's code).
// The defaults are chosen by plan_kvcache_attention (kvcache_check.cpp, with the measurements);
// variants 5-8 and 10 are forced only.
// Variants that exist for the int8 cache only (3-5, 7-21; at hdim 256 they run variant 2's kernel).
constexpr bool decode_variant_int8_only(int variant) {
  return (variant >= 3 && variant <= 5) || (variant >= 7 && variant <= 21);
}
// Variants 8-12, 14, 16, 18 and 20 (hdim 128): one CTA per SM; 13: two; 15, 17, 19 and 21: three.
constexpr int decode_ctas_per_sm(int hdim, bool int8, int variant) {
  if (int8 && variant == 13) return 2;
  if (int8 && (variant == 15 || variant == 17 || variant == 19 || variant == 21)) return 3;
  if (int8 && ((variant >= 9 && variant <= 12) || variant == 14 || variant == 16 || variant == 18 || variant == 20)) return hdim == 64 ? 2 : 1;
  return hdim <= 128 && ((!int8 && variant == 2) || (int8 && decode_variant_int8_only(variant) && variant != 8)) ? 2 : 1;
}

#if defined(__CUDACC__)
#define HOPATTN_HOST_DEVICE __host__ __device__ inline
#else
#define HOPATTN_HOST_DEVICE inline
#endif

// Variant 6's workspace (kernel/sm90_decode_balanced.hpp), shared by the host's plan and the kernels.
constexpr int kChunkTiles = 8;  // tiles per chunk: 1024 keys at hdim <= 128 (4 until r45: ~1.5 us lost per chunk)
constexpr uint64_t kBalancedMagic = 0x686f7061626c6e63ull;

struct BalancedHeader {
  uint64_t magic;
  uint32_t zeroed;  // counters[0, zeroed) are 0
  uint32_t pad[13];
};
static_assert(sizeof(BalancedHeader) == 64);

// Offsets in bytes from the workspace base, for `groups` counters.
struct BalancedLayout {
  size_t counters, o_part, lse_part, bytes;
};
HOPATTN_HOST_DEVICE BalancedLayout balanced_workspace_layout(int64_t groups, int64_t chunks, int64_t rows_total, int hdim) {
  BalancedLayout l;
  l.counters = sizeof(BalancedHeader);
  l.o_part = ((l.counters + size_t(groups) * 4 + 255) / 256) * 256;
  l.lse_part = l.o_part + size_t(chunks) * size_t(rows_total) * size_t(hdim) * 4;
  l.bytes = l.lse_part + size_t(chunks) * size_t(rows_total) * 4;
  return l;
}

// Which keys of each sequence a split kernel's cache holds. An int8 call with a 16-bit tail block
// (KvCacheArgs::k_tail/v_tail) runs two kernels over one sequence of len = cache_seqlens[b]
// keys, tail = len % key_block: the int8 kernel over the full blocks and the 16-bit kernel over
// the tail tensors; each writes its partial (O, LSE) into its own workspace slots and the combine
// merges them. Query row s sits at position len - seqlen_q + s in every case (causal masks and
// bad-length checks use the whole len).
enum DecodeKeys : int {
  kDecodeAllKeys = 0,     // keys [0, len)
  kDecodeFullBlocks = 1,  // keys [0, len - tail): the int8 cache's full blocks
  kDecodeTailBlock = 2,   // keys [len - tail, len), rows [0, tail) of the tail tensors
};

// Chunks of a row group with n_tiles KV tiles.
HOPATTN_HOST_DEVICE int balanced_chunks(int n_tiles) { return (n_tiles + kChunkTiles - 1) / kChunkTiles; }

struct DecodeParams {
  hopattn_dtype_t dtype;  // of q and o: BF16 or FP16
  hopattn_dtype_t cache_dtype;  // q's dtype, or INT8
  int hdim;

  const void* q;               // (batch, seqlen_q, heads_q, hdim)
  const void* k;               // (batch, max_len, heads_kv, hdim)
  const void* v;               // (batch, max_len, heads_kv, hdim)
  const int32_t* cache_seqlens;  // (batch), device memory, checked by the kernels
  void* o;                     // (batch, seqlen_q, heads_q, hdim)
  float* lse;                  // (batch, heads_q, seqlen_q) or nullptr

  int batch, seqlen_q, heads_q, heads_kv, max_len;
  int64_t q_batch_stride, q_seq_stride, q_head_stride;
  int64_t k_batch_stride, k_seq_stride, k_head_stride;
  int64_t v_batch_stride, v_seq_stride, v_head_stride;
  int64_t o_batch_stride, o_seq_stride, o_head_stride;
  int64_t lse_batch_stride, lse_head_stride, lse_seq_stride;

  float softmax_scale;  // already defaulted to 1/sqrt(hdim)
  bool causal;
  bool pack_gqa;        // the plan's choice
  int num_splits;       // the plan's choice: the split kernel's CTAs per row group and m-block
  // Workspace slots of partial (O, LSE): num_splits, plus one for the 16-bit tail block of an
  // int8 call (slot num_splits); > 1 uses the workspace and the combine. 0 is read as num_splits.
  int partial_slots;
  float* workspace;     // slots > 1: partial O (slots, batch, heads_q, seqlen_q, hdim) then LSE
                        // (slots, batch, heads_q, seqlen_q), fp32
  int key_range;        // DecodeKeys: which keys the split kernel's cache holds
  // Uneven splits (variant 22; 0 = even): of num_splits, the last small_splits are small. Split
  // s's tiles are [n·P(s)/P(S), n·P(s+1)/P(S)) with P the prefix sum of the weights (big_weight
  // for the big splits, small_weight for the small).
  int small_splits, big_weight, small_weight;
  int split_base;       // the workspace slot of split 0
  int cache_rows;       // rows of the cache tensors the TMA sees; 0 = max_len
  // int8 cache only: scales (fp32) and the scale block.
  const float* k_scale;  // (batch, max_len / quant_block, heads_kv, hdim)
  int64_t ks_batch_stride, ks_block_stride, ks_head_stride;
  const float* v_scale;  // (batch, max_len, heads_kv)
  int64_t vs_batch_stride, vs_seq_stride, vs_head_stride;
  int quant_block;
  // int8 cache with a 16-bit tail block (nullptr: none): (batch, quant_block, heads_kv, hdim) in
  // q's dtype, each sequence's last cache_seqlens[b] % quant_block tokens in rows 0, 1, ...
  const void* k_tail;
  const void* v_tail;
  int64_t kt_batch_stride, kt_seq_stride, kt_head_stride;
  int64_t vt_batch_stride, vt_seq_stride, vt_head_stride;
  int variant;     // 1 .. kDecodeVariantMax (0 resolved to the default): see KvCacheArgs::variant
  // Variant 6 (balanced split-KV): num_splits is the CTAs per row group and `chunks` the chunk
  // slots in the workspace (kernel/sm90_decode_balanced.hpp lays it out).
  int chunks;

  int32_t* error;       // device record of the first bad cache_seqlens entry (decode_error.cu)
};

inline int decode_partial_slots(const DecodeParams& p) {
  return p.partial_slots > p.num_splits ? p.partial_slots : p.num_splits;
}

}  // namespace hopattn::attention
