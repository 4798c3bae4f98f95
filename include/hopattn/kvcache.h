/* hopattn — attention over a KV cache (decode, speculative decoding, chunked prefill).
 *
 * Kernels for 16-bit and int8 caches, query-head packing and split-KV: docs/decode.md.
 * seqlen_q == 0, batch == 0 or heads_q == 0 is a no-op.
 *
 *   q              (batch, seqlen_q, heads_q, hdim)        bf16 or fp16; seqlen_q small (1 for decode)
 *   k_cache        (batch, max_seqlen_k, heads_kv, hdim)   same dtype as q, or int8 (quantized cache)
 *   v_cache        (batch, max_seqlen_k, heads_kv, hdim)   same dtype as k_cache
 *   cache_seqlens  (batch)                                 int32, device memory: the valid length of
 *                                                          each sequence's cache (0 .. max_seqlen_k)
 *   o              (batch, seqlen_q, heads_q, hdim)        same dtype as q
 *   lse            (batch, heads_q, seqlen_q)              float32, optional, any strides
 *   k_scale        int8 cache only: (batch, max_seqlen_k / quant_block, heads_kv, hdim) float32,
 *                  one scale per (block of quant_block tokens, kv-head, channel)
 *   v_scale        int8 cache only: (batch, max_seqlen_k, heads_kv) float32, one per (token, kv-head)
 *   k_tail, v_tail int8 cache only, optional (both or neither): (batch, quant_block, heads_kv, hdim)
 *                  in q's dtype, each sequence's partial last block in 16 bits (the tokens not yet
 *                  quantized). With them, sequence b's first len - len % quant_block tokens
 *                  (len = cache_seqlens[b]) are read from the int8 cache and the last len % quant_block
 *                  from rows 0, 1, ... of the tails; without, all len from the int8 cache.
 *
 *   page_table     optional: (batch, max_pages) int32, device memory, contiguous rows: a paged
 *                  cache (vLLM's and FlashAttention-3's layout). k_cache and v_cache are then pools of
 *                  pages, (num_pages, page_size, heads_kv, hdim), page_size a power of two; token t of
 *                  sequence b lives in row t % page_size of page page_table[b][t / page_size], and
 *                  max_seqlen_k is max_pages * page_size. Entries past a sequence's last page are never
 *                  read. An id outside [0, num_pages) for a token the call reads gives that sequence
 *                  NaN rows (with causal and many query rows: the rows whose keys reach that page)
 *                  and is recorded (hopattn_kvcache_device_check). 16-bit caches: pages of 16
 *                  to 256 tokens. int8 caches: pages of 16 to 256 tokens, the scales paged by the
 *                  same ids, k_scale (num_pages, page_size / quant_block, heads_kv, hdim) and
 *                  v_scale (num_pages, page_size, heads_kv); pages smaller than quant_block take
 *                  k_scale (num_pages, 1, heads_kv, hdim), each page holding the K scales of the
 *                  block its tokens lie in (the append writes a completed block's into every page
 *                  of it). k_tail and v_tail stay per sequence.
 *
 * Query row i of sequence b is at position cache_seqlens[b] - seqlen_q + i: with causal it sees
 * keys j <= i + cache_seqlens[b] - seqlen_q (bottom-right aligned to the sequence's own length);
 * without, every key j < cache_seqlens[b]. A row that sees no key gets O = 0, LSE = -inf (or its
 * sink, below).
 *
 * Since 0.4, the forward pass's options (hopattn.h, hopattn_attention_fwd_args_t; each zero value
 * keeps the behaviour without it), in the cache's coordinates: query row i at position
 * p = cache_seqlens[b] - seqlen_q + i.
 *   window != 0: a sliding window: the row sees key j iff p - window_left <= j <= p + window_right
 *                (and j < cache_seqlens[b]; with causal, j <= p); -1 leaves a side unbounded. With
 *                causal, window_right must be 0 or -1 (both read as 0); with window == 0 both sides
 *                must be 0. The KV tiles before the first key a CTA's rows see (and after the last)
 *                are not read: a decode step's time grows with the window, not the cache length,
 *                and split-KV divides only the visible tiles. (Keys outside every row's window may
 *                hold anything, NaN included; with a paged cache, the ids of pages that hold
 *                only such keys are neither checked nor used.)
 *   softcap > 0: each score s = softmax_scale · q·k becomes softcap · tanh(s / softcap) before the
 *                mask and the softmax (Gemma 2); LSE is over the capped scores.
 *   sinks        (heads_q) float32, device memory, optional: a logit per q-head in each row's
 *                softmax denominator without a value (gpt-oss): O = Σ exp(s_j) v_j / (exp(sink_h) +
 *                Σ exp(s_j)), LSE = log(exp(sink_h) + Σ exp(s_j)); added once per row whatever the
 *                split-KV count. Finite or -inf (-inf: as no sink; +inf or NaN gives NaN rows).
 * On 16-bit and int8 caches, contiguous or paged, with or without int8 tails (an int8 cache with
 * any of them runs the one int8 kernel compiled with them). With an int8 cache, the rows outside
 * every row's window may hold any int8 value and any scale (NaN included); a K scale block that
 * holds a seen key must be valid for the whole block.
 */
#ifndef HOPATTN_KVCACHE_H
#define HOPATTN_KVCACHE_H

#include "hopattn/hopattn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hopattn_kvcache_args {
  uint32_t struct_size;  /* sizeof(hopattn_kvcache_args_t) (hopattn.h, "Extensible argument structs") */
  uint32_t reserved;     /* must be 0 */
  hopattn_tensor_t q;
  hopattn_tensor_t k_cache;
  hopattn_tensor_t v_cache;
  hopattn_tensor_t cache_seqlens;
  hopattn_tensor_t o;
  hopattn_tensor_t lse;
  hopattn_tensor_t k_scale;
  hopattn_tensor_t v_scale;
  int32_t quant_block;   /* int8 cache: tokens per K scale block (64 or 128); else ignored */
  float softmax_scale;   /* 0: 1/sqrt(hdim); otherwise positive and finite */
  int32_t causal;
  int32_t num_splits;    /* split-KV: 0 = heuristic, >= 1 forced */
  int32_t pack_gqa;      /* query-head packing (the decode kernels'): -1 = heuristic, 0 = off, 1 = on */
  void* workspace;       /* device memory of hopattn_kvcache_workspace_size() bytes, 16-byte aligned, not
                            overlapping any tensor of the call (may be NULL if 0) */
  size_t workspace_bytes;
  hopattn_tensor_t k_tail;  /* int8 cache only, optional: the 16-bit partial last blocks (see above) */
  hopattn_tensor_t v_tail;
  hopattn_tensor_t page_table;  /* optional: a paged cache (see above); zero: contiguous (0.4) */
  /* Since 0.4 (see above; all zero: none of them): */
  int32_t window;        /* nonzero: window_left and window_right apply */
  int32_t window_left;   /* -1: unbounded */
  int32_t window_right;  /* -1: unbounded */
  float softcap;         /* 0: off */
  hopattn_tensor_t sinks; /* (heads_q) float32, or data NULL: none */
} hopattn_kvcache_args_t;

#define HOPATTN_KVCACHE_ARGS_INIT {(uint32_t)sizeof(hopattn_kvcache_args_t)}

/* Bytes of device workspace a call with these arguments needs (partial O and LSE of split-KV);
 * query it once, allocate, and the call itself never allocates (CUDA-graph capturable). Returns
 * the size through *bytes. */
hopattn_status_t hopattn_kvcache_workspace_size(const hopattn_kvcache_args_t* args, size_t* bytes);

hopattn_status_t hopattn_kvcache_attention(const hopattn_kvcache_args_t* args, void* stream);

/* cache_seqlens lives in device memory, so the kernels check it: a sequence whose length is
 * negative or larger than max_seqlen_k, or (causal) shorter than seqlen_q, gets NaN in all its O
 * and LSE rows instead of an answer, and the first such sequence is recorded (one record per device).
 * This call waits for `stream`, then returns HOPATTN_INVALID_ARGUMENT naming the recorded
 * sequence and its length (and clears the record), or HOPATTN_OK. It is separate from the
 * attention call so that a decode step stays asynchronous and graph-capturable. */
hopattn_status_t hopattn_kvcache_device_check(void* stream);

/* INT8 cache quantization (symmetric, values in [-127, 127], round to nearest even):
 *   k, v        (batch, len, heads_kv, hdim)            bf16 or fp16, len a multiple of quant_block
 *   k_int8      (batch, len, heads_kv, hdim)            int8, written
 *   v_int8      (batch, len, heads_kv, hdim)            int8, written
 *   k_scale     (batch, len / quant_block, heads_kv, hdim) fp32, written: max |k| over the block / 127
 *   v_scale     (batch, len, heads_kv)                  fp32, written: max |v| over the channels / 127
 * Each scale is rounded, K's to the nearest value of 8 significant bits (a bf16 value: the low 16
 * of fp32's stored bits cleared; |k| / scale stays below 127.5) and V's up to 15 significant bits
 * (the low 9 cleared): the int8 kernels then dequantize value · scale
 * exactly (K in packed bf16 pairs, V in one FFMA). Scales from elsewhere work too (the product
 * is then off by at most scale · 2^-9 before the rounding to bf16/fp16, or, where the int8 kernel
 * dequantizes K in packed bf16 pairs (bf16 queries, hdim 128, at most 8 packed rows), K's scale is
 * first rounded to bf16).
 * An all-zero group gets scale 0 and zeros. Appending to a cache: quantize each block once it is
 * full, passing views (pointer at the block's first token, len = the new full blocks' tokens) of
 * the bf16 staging tensor, the int8 cache and both scale tensors; stored blocks never change.
 * The last, partial block of a sequence stays in the caller's bf16 staging buffer until it
 * fills; hopattn_kvcache_attention reads it from there (k_tail, v_tail; docs/decode.md). */
typedef struct hopattn_kvcache_quantize_args {
  uint32_t struct_size;  /* sizeof(hopattn_kvcache_quantize_args_t) */
  uint32_t reserved;     /* must be 0 */
  hopattn_tensor_t k;
  hopattn_tensor_t v;
  hopattn_tensor_t k_int8;
  hopattn_tensor_t v_int8;
  hopattn_tensor_t k_scale;
  hopattn_tensor_t v_scale;
  int32_t quant_block; /* 64 or 128 */
} hopattn_kvcache_quantize_args_t;

#define HOPATTN_KVCACHE_QUANTIZE_ARGS_INIT {(uint32_t)sizeof(hopattn_kvcache_quantize_args_t)}

hopattn_status_t hopattn_kvcache_quantize_int8(const hopattn_kvcache_quantize_args_t* args, void* stream);

/* Appending new rows to a cache: FlashAttention-3's `k`, `v` and rotary arguments of
 * flash_attn_with_kvcache as a call of its own, enqueued on the stream before the attention call.
 *   k_new, v_new     (batch, seqlen_new, heads_kv, hdim)   bf16 or fp16: the rows to append
 *   k_cache, v_cache, cache_seqlens, quant_block, k_scale, v_scale, k_tail, v_tail, page_table: the
 *                    cache as hopattn_kvcache_args_t describes it (paged: 16-bit caches, any page size
 *                    of the attention call's range; a new row whose page id is outside the pool is not
 *                    written, its sequence's length stays unchanged in seqlens_out, and the id is
 *                    recorded). Sequence b's new rows take positions
 *                    cache_seqlens[b] .. cache_seqlens[b] + seqlen_new - 1.
 *   16-bit cache (k_new's dtype): the rows are written into k_cache and v_cache.
 *   int8 cache (k_tail and v_tail required): a block that the new rows complete is quantized into
 *                    k_cache/v_cache and k_scale/v_scale from its 16 bits (the tail's rows before
 *                    cache_seqlens[b], the new rows after), bit for bit as hopattn_kvcache_quantize_int8
 *                    quantizes it; the rows of the block left partial go to the tails (tail row =
 *                    position % quant_block). Blocks stored before are never rewritten.
 *   rotary_cos, rotary_sin  optional, both or neither: (seqlen_ro, rotary_dim / 2) in k_new's
 *                    dtype or fp32, contiguous rows; the new K rows (and q, below) are rotated at
 *                    their positions p (row p of the tables; seqlen_ro > every position), over
 *                    their first rotary_dim channels (even, <= hdim): rotary_interleaved 1 pairs
 *                    channels (2i, 2i + 1) (GPT-J), 0 pairs (i, i + rotary_dim / 2) (GPT-NeoX).
 *   q, q_rotated     optional, both or neither (needs the tables): (batch, seqlen_q, heads_q,
 *                    hdim) in k_new's dtype, seqlen_q <= seqlen_new; q row i rotated at position
 *                    cache_seqlens[b] + seqlen_new - seqlen_q + i (its own, bottom-right aligned),
 *                    into q_rotated. (FlashAttention-3 does the same for causal calls; for a
 *                    non-causal one it rotates every q row at cache_seqlens[b]. The two agree at
 *                    seqlen_q = seqlen_new = 1, a decode step.)
 *   seqlens_out      optional (batch) int32: cache_seqlens[b] + seqlen_new, written last (it may be
 *                    cache_seqlens itself: the lengths updated in place).
 * Sizes are checked on the host; the lengths live in device memory, so the kernels check them: a
 * sequence with cache_seqlens[b] < 0 or cache_seqlens[b] + seqlen_new > max_seqlen_k gets nothing
 * appended, NaN in its q_rotated rows and its length unchanged in seqlens_out, and is recorded for
 * hopattn_kvcache_device_check (when the call has rows to append: with seqlen_new, heads_kv or
 * hdim 0 it is not recorded). Every output must not overlap any other tensor of the call (but
 * seqlens_out may be exactly cache_seqlens). Asynchronous, allocates nothing, graph-capturable. */
typedef struct hopattn_kvcache_append_args {
  uint32_t struct_size;  /* sizeof(hopattn_kvcache_append_args_t) */
  uint32_t reserved;     /* must be 0 */
  hopattn_tensor_t k_new;
  hopattn_tensor_t v_new;
  hopattn_tensor_t k_cache;
  hopattn_tensor_t v_cache;
  hopattn_tensor_t cache_seqlens;
  hopattn_tensor_t k_scale;
  hopattn_tensor_t v_scale;
  hopattn_tensor_t k_tail;
  hopattn_tensor_t v_tail;
  int32_t quant_block;        /* int8 cache: 64 or 128 */
  int32_t rotary_interleaved; /* with the rotary tables: 1 GPT-J pairs, 0 GPT-NeoX halves */
  hopattn_tensor_t rotary_cos;
  hopattn_tensor_t rotary_sin;
  hopattn_tensor_t q;
  hopattn_tensor_t q_rotated;
  hopattn_tensor_t seqlens_out;
  hopattn_tensor_t page_table;  /* optional: a paged 16-bit cache, as hopattn_kvcache_args_t's (0.4) */
} hopattn_kvcache_append_args_t;

#define HOPATTN_KVCACHE_APPEND_ARGS_INIT {(uint32_t)sizeof(hopattn_kvcache_append_args_t)}

/* Checks the arguments without touching the GPU's memory. */
hopattn_status_t hopattn_kvcache_append_check(const hopattn_kvcache_append_args_t* args, void* stream);
hopattn_status_t hopattn_kvcache_append(const hopattn_kvcache_append_args_t* args, void* stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HOPATTN_KVCACHE_H */
