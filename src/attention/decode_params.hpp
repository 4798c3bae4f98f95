// Attention over a KV cache as the decode kernels see it: checked, defaults applied, the plan
// (splits, packing) decided, strides in elements. Built by device/kvcache_check.cpp from the
// public arguments after check_kvcache_attention() accepted them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hopattn/hopattn.h"

namespace hopattn::attention {

// The split kernels' internal ids (DecodeParams::variant; device/decode_registry.hpp names the
// rows that exist):
//   16-bit cache: 1 = 128-key tiles (64 at hdim 256), 3 stages, one CTA per SM;
//                 2 = 64-key tiles (128 at hdim 64), 3 stages, two CTAs per SM (hdim <= 128);
//                 25 = 8 mma.sync warps that each load their own 64-key tiles, keys as the mma's M,
//                 at most 8 packed rows, one CTA per SM (hdim 128; kernel/sm90_decode_kv16_mma.hpp;
//                 the default of such calls without options: device/decode_defaults.cpp).
//   int8 cache:   2 = one consumer warpgroup on tiles a transform warpgroup converts, one CTA per
//                 SM; 3 = as 2 with a 112 KB tile, two CTAs per SM (hdim <= 128); 4 = as 3 with the
//                 swapped-operand consumer (keys as WGMMA's M, 16 packed rows as N); 16 = 8
//                 mma.sync warps that each load their own tiles and dequantize them in registers
//                 (K's value * scale in one FFMA, V exact in fp16 with its scales folded into P),
//                 one CTA per SM (hdim 128; kernel/sm90_decode_int8_mma.hpp); 17 = as 16 with 4
//                 warps, three CTAs per SM; 20, 21 = as 16, 17 with the keys as the mma's M (at
//                 most 8 packed rows a CTA) and K dequantized in packed bf16 pairs (at bf16; fp16
//                 runs the same with K in fp16); 24 = 2 with a sliding window, softcap and sinks
//                 (the int8 calls with any of them).
// Ids not listed are kernels tried and retired (docs/decode.md, "Tried and retired").
// CTAs of one kernel resident per SM.
constexpr int decode_ctas_per_sm(int hdim, bool int8, int variant) {
  if (int8 && (variant == 17 || variant == 21)) return 3;
  if (int8 && (variant == 16 || variant == 20)) return 1;  // hdim 128 only (the registry)
  return hdim <= 128 && ((!int8 && variant == 2) || (int8 && (variant == 3 || variant == 4))) ? 2 : 1;
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

  float softmax_scale;  // already defaulted to 1/sqrt(hdim); with a softcap, the cap itself
  bool causal;
  // The options (kvcache.h; 16-bit caches), as the kernels take them (make_decode_params):
  // a sliding window: query position p sees key j iff p - window_left <= j <= p + window_right;
  // -1 leaves a side unbounded. window_left is clamped to max_len and window_right to seqlen_q
  // (wider reaches nothing more), so that positions plus widths stay in int; causal reads
  // window_right as 0 whatever it holds.
  int window_left = -1, window_right = -1;
  // The softcap: the scores become tanh(s · softcap_scale) (softcap_scale = scale / softcap), and
  // softmax_scale holds the cap (OnlineSoftmax::apply_softcap); 0: none.
  float softcap_scale = 0.0f;
  const float* sinks = nullptr;  // (heads_q) float32 logits in the softmax denominators, or none
  bool pack_gqa;        // the plan's choice
  int num_splits;       // the plan's choice: the split kernel's CTAs per row group and m-block
  // Workspace slots of partial (O, LSE): num_splits, plus one for the 16-bit tail block of an
  // int8 call (slot num_splits); > 1 uses the workspace and the combine. 0 is read as num_splits.
  int partial_slots;
  float* workspace;     // slots > 1: partial O (slots, batch, heads_q, seqlen_q, hdim) then LSE
                        // (slots, batch, heads_q, seqlen_q), fp32
  int key_range;        // DecodeKeys: which keys the split kernel's cache holds
  int split_base;       // the workspace slot of split 0
  int cache_rows;       // rows of the cache tensors the TMA sees; 0 = max_len
  // int8 cache only: scales (fp32) and the scale block (a paged cache: (num_pages, page_size /
  // quant_block, ...) and (num_pages, page_size, ...), the batch strides stepping a page).
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
  int variant;     // the split kernel's internal id (above; the registry row's DecodeKernelSpec::id)
  // A paged cache (16-bit kernels, kv8_wgmma_* kernels): k and v are (num_pages, page_size, heads_kv, hdim) pools
  // (k_batch_stride / v_batch_stride step a page), max_len = max_pages * page_size.
  const int32_t* page_table = nullptr;  // (batch, max_pages), rows pt_batch_stride apart
  int64_t pt_batch_stride = 0;
  int page_size = 0;  // a power of two, >= the kernel's key tile
  int num_pages = 0;

  int32_t* error;       // device record of the first bad cache_seqlens entry (decode_error.cu)
  // The combine launched as a programmatic dependent of the kernel before it (its launch and
  // index math overlap that kernel's last CTAs; griddepcontrol.wait before it reads a partial).
  bool combine_pdl = true;
  // The 16-bit split kernel launched as a programmatic dependent of whatever ran before it on the
  // stream (its launch, descriptor prefetch and shared-memory setup overlap that kernel's tail;
  // griddepcontrol.wait before its first global read or write).
  bool split_pdl = true;
  // The chunk path's packed plan (docs/chunk-packgqa-plan.md §2; make_decode_params sets it; with
  // Overrides::chunk_pack_gqa only): the forward kernel writes its
  // partials also at one split (one slot), and the combine writes O and LSE. Not the decode
  // kernels' pack_gqa, whose one-split calls write O themselves.
  bool partials_at_one_split = false;
};

inline int decode_partial_slots(const DecodeParams& p) {
  return p.partial_slots > p.num_splits ? p.partial_slots : p.num_splits;
}
// Whether the combine runs after the split or chunk kernel (launch_decode_combine,
// kvcache_attention): above one slot, or at one with partials_at_one_split.
inline bool decode_runs_combine(const DecodeParams& p) {
  return decode_partial_slots(p) > 1 || (p.partials_at_one_split && decode_partial_slots(p) == 1);
}

}  // namespace hopattn::attention
