// The forward-attention problem as the kernels see it: checked, defaults applied, strides in
// elements. Built by device/attention_forward.cpp from the public arguments after
// check_attention_forward() accepted them; every kernel schedule reads only this.
#pragma once

#include <cstdint>

#include "hopattn/hopattn.h"

namespace hopattn::attention {

struct FwdParams {
  hopattn_dtype_t dtype;  // BF16 or FP16 (Q, K, V and O share it), or E4M3 (Q, K, V; O is bf16)
  int hdim;               // 64, 128 or 256

  const void* q;  // (batch, seqlen_q, heads_q, hdim)
  const void* k;  // (batch, seqlen_k, heads_kv, hdim)
  const void* v;  // (batch, seqlen_k, heads_kv, hdim)
  void* o;        // (batch, seqlen_q, heads_q, hdim)
  float* lse;     // (batch, heads_q, seqlen_q) or nullptr

  int batch;
  int seqlen_q;
  int seqlen_k;
  int heads_q;
  int heads_kv;  // heads_q % heads_kv == 0; q-head h reads kv-head h / (heads_q / heads_kv)

  // Strides in elements; the hdim stride is 1 for all four tensors.
  int64_t q_batch_stride, q_seq_stride, q_head_stride;
  int64_t k_batch_stride, k_seq_stride, k_head_stride;
  int64_t v_batch_stride, v_seq_stride, v_head_stride;
  int64_t o_batch_stride, o_seq_stride, o_head_stride;
  int64_t lse_batch_stride, lse_head_stride, lse_seq_stride;

  // The exponent's scale: the call's softmax_scale (defaulted to 1/sqrt(hdim)), or with a softcap
  // the cap itself (the scores are then tanh(s · softcap_scale); OnlineSoftmax::apply_softcap).
  float softmax_scale;
  float softcap_scale = 0.0f;  // softmax_scale / softcap of the call, 0 without a softcap

  // The band mask (FwdMask<true>): causal or a sliding window. Query i, at key position
  // p = i + seqlen_k - seqlen_q (bottom-right), sees key j iff p - window_left <= j <= p + window_right.
  // An unbounded side is clamped to a width that reaches every key (seqlen_k on the left,
  // seqlen_q on the right); causal is (seqlen_k, 0). Unused without the band.
  bool band;
  int window_left = 0, window_right = 0;

  const float* sinks = nullptr;  // (heads_q) float32 logits in the softmax denominators, or none

  // E4M3 inputs: the (batch, heads_kv) float32 descales, all three or none (1). A q-head uses its
  // kv-head's: S = (q_descale · k_descale · softmax_scale) · Q·Kᵀ, O = v_descale · P·V.
  const float* q_descale = nullptr;
  const float* k_descale = nullptr;
  const float* v_descale = nullptr;
  int64_t q_descale_batch_stride = 0, q_descale_head_stride = 0;
  int64_t k_descale_batch_stride = 0, k_descale_head_stride = 0;
  int64_t v_descale_batch_stride = 0, v_descale_head_stride = 0;

  // Variable-length batches (cu_seqlens_q != nullptr; hopattn.h): q, o (total_q, heads_q, hdim),
  // k, v (total_k, heads_kv, hdim), lse (heads_q, total_q). seqlen_q and seqlen_k then hold
  // max_seqlen_q and max_seqlen_k, batch the sequence count; the *_batch_stride fields are unused
  // and lse_head_stride / lse_seq_stride address (h, token). Only the options rows run them.
  const int32_t* cu_seqlens_q = nullptr;  // (batch + 1), device
  const int32_t* cu_seqlens_k = nullptr;  // (batch + 1), device
  const int32_t* seqused_k = nullptr;     // (batch) or none
  int total_q = 0, total_k = 0;           // rows of q / o and of k / v
  void* workspace = nullptr;              // fwd_varlen.hpp's layout, varlen_workspace_bytes() (a KV-cache
                                          // call: its list region, kvcache_list_bytes())
  int32_t* error = nullptr;               // the device record of bad lengths (decode_error_record)
  bool varlen() const { return cu_seqlens_q != nullptr; }

  // A KV-cache call's chunk path (kvcache_check.cpp; fwd_varlen.hpp, "KV-cache lists"): q, o padded
  // (batch, seqlen_q, heads_q, hdim), k, v the contiguous cache (batch, seqlen_k = max_len,
  // heads_kv, hdim) whose sequence b holds cache_seqlens[b] keys (device memory, checked by the
  // prepare kernel as the decode kernels check it: bad_cache_length, the record kind
  // kDecodeErrorAttention, NaN rows). Bottom-right causal per sequence. The options rows only.
  const int32_t* cache_seqlens = nullptr;  // (batch), device
  // KV splits per Q tile (KV-cache lists): > 1 writes each split's O (fp32, normalised over its
  // keys) and LSE into split_o / split_lse, the decode combine's workspace layout (decode_params.hpp,
  // DecodeParams::workspace: slot s, row (b, h, position)), and the sinks are left to the combine.
  int num_splits = 1;
  float* split_o = nullptr;    // (num_splits, batch, heads_q, seqlen_q, hdim) fp32
  float* split_lse = nullptr;  // (num_splits, batch, heads_q, seqlen_q) fp32
  // PackGQA on the chunk path (docs/chunk-packgqa-plan.md; behind Overrides::chunk_pack_gqa, off
  // by default; its GPU tests ran on an H200, 2026-12-06): > 1 packs a GQA
  // group of pack_group = heads_q / heads_kv query heads into each Q tile's rows, the list then
  // counts kv heads (fwd_varlen.hpp, kvcache_list_shape), and split_o / split_lse are set at one
  // split too (max(num_splits, 1) slots; the combine writes O and LSE). 0 or 1: unpacked.
  int pack_group = 0;
  // A paged cache on the chunk path (Overrides::chunk_paged, on by default): k, v the
  // pools (num_pages, page_size, heads_kv, hdim), page_size a power of two of at least the row's
  // block_n (each KV tile in one page); token t of sequence b in row t % page_size of page
  // page_table[b · pt_batch_stride + t / page_size]; seqlen_k = max_pages · page_size. The prepare
  // kernel checks the ids of each sequence's pages (kind kDecodeErrorPageId, NaN rows).
  const int32_t* page_table = nullptr;
  int64_t pt_batch_stride = 0;
  int page_size = 0, num_pages = 0;
  bool kvcache() const { return cache_seqlens != nullptr; }

  int kernel;  // the row of kFwdKernels (kernel/sm90_fwd_config.hpp) that runs

  // Tuning the kernels read at launch; the values are the defaults, experiments change them
  // through experimental::Overrides (attention/experimental.hpp).
  float stale_max_log2 = 8.0f;  // how far a row maximum may lag before O is rescaled (log2 units)
  bool narrow_pv = true;        // causal ws kernels: a warpgroup's last P·V only over the keys it sees
  bool skip_unseen = true;      // causal ws kernels: skip a tile's last KV block no row of a warpgroup sees
  int causal_group = 0;         // non-persistent causal: (head, batch) pairs per group; 0 = by L2 size
  int persistent_group = -2;    // persistent band: -2 the library's choice, -1 folded, N >= 0 grouped zig-zag of N pairs
  bool varlen_dynamic = true;   // variable-length batches: units claimed by the CTAs as they get free
  bool varlen_pdl = true;       // variable-length batches: the attention kernel a programmatic dependent of
                                // the prepare kernel (its launch and prologue overlap the prepare kernel)
};

}  // namespace hopattn::attention
