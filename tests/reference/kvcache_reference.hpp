// References for attention over a KV cache and for the INT8 cache format (docs/decode.md).
//
// Layouts (contiguous): q, o (batch, seqlen_q, heads_q, d); k, v caches (batch, max_len,
// heads_kv, d); cache_seqlens (batch); lse (batch, heads_q, seqlen_q). Query row i of sequence b
// sits at position p = cache_seqlens[b] - seqlen_q + i (causal: it sees keys j <= p); the options
// are kvcache.h's, in those coordinates (a window: p - window_left <= j <= p + window_right).
#pragma once

#include <cstdint>
#include <vector>

namespace hopattn::reference {

struct KvCacheProblem {
  int batch = 1, seqlen_q = 1, max_len = 1, heads_q = 1, heads_kv = 1, hdim = 128;
  bool causal = true;
  float scale = 0.0f;  // 0: 1/sqrt(hdim)
  // The options (0.4; AttnProblem's meanings, attention_reference.hpp): a sliding window
  // (-1: an unbounded side), the softcap (0: off), sinks (heads_q logits, or empty: none).
  bool window = false;
  int window_left = -1, window_right = -1;
  float softcap = 0.0f;
  std::vector<float> sinks{};
};

// float64 attention with each sequence's own length (the existing reference, per sequence).
void kvcache_attention_cpu_fp64(const KvCacheProblem& p, const float* q, const float* k_cache, const float* v_cache,
                                const int32_t* cache_seqlens, double* o, double* lse);

// The INT8 cache: symmetric quantization, values in [-127, 127].
//   K: one scale per (block of `block` tokens, kv-head, channel) = max |k| over the block / 127
//      (outlier channels get their own scale; appending a block never rescales older ones);
//   V: one scale per (token, kv-head) = max |v| over the channels / 127.
// Each scale is rounded: K's to the nearest value of 8 significant bits (a bf16 value: the low 16
// stored bits of the fp32 cleared), V's up to 15 (the low 9 cleared).
// A scale of 0 (an all-zero group) stores zeros.
struct Int8Cache {
  std::vector<int8_t> k, v;           // (batch, max_len, heads_kv, d)
  std::vector<float> k_scale;         // (batch, max_len / block, heads_kv, d)
  std::vector<float> v_scale;         // (batch, max_len, heads_kv)
};
Int8Cache quantize_kv_int8(const KvCacheProblem& p, int block, const float* k, const float* v);
// The values the INT8 cache represents (q · scale), in the cache layout.
void dequantize_kv_int8(const KvCacheProblem& p, int block, const Int8Cache& c, float* k, float* v);

// Split-KV (flash-decoding) merge: each of `splits` partial results covers a disjoint key range
// and holds O_s (normalized over its range) and LSE_s; the exact result is
//   LSE = log Σ_s exp(LSE_s),  O = Σ_s exp(LSE_s − LSE) · O_s.
// A split that saw no key has LSE_s = −inf and contributes nothing; if none saw a key, O = 0 and
// LSE = −inf. o_parts: (splits, rows, d); lse_parts: (splits, rows); o: (rows, d); lse: (rows).
void combine_splits_cpu(int splits, int64_t rows, int d, const double* o_parts, const double* lse_parts, double* o,
                        double* lse);

// A paged KV cache (docs/plan-varlen-paged.md §2; vLLM's and FlashAttention-3's layout): a pool of
// pages (num_pages, page_size, heads_kv, d) and a page table (batch, max_pages) int32, token t of
// sequence b at page table[b][t / page_size], row t % page_size; max_len = max_pages · page_size.
// int8 scales by the same page ids: V's (num_pages, page_size, heads_kv); K's (num_pages,
// max(1, page_size / block), heads_kv, d), a block's scale in the page of its first token (at
// index (t % page_size) / block; index 0 when a block spans several pages).
struct PagedLayout {
  int num_pages = 0, page_size = 0, max_pages = 0;
  std::vector<int32_t> table;  // (batch, max_pages)
};
// Every sequence's pages drawn without replacement from a shuffled pool of batch · max_pages +
// spare pages (seeded), so that neighbours in a sequence are rarely neighbours in the pool.
PagedLayout make_paged_layout(int batch, int max_pages, int page_size, int spare_pages, uint64_t seed);
// Contiguous (batch, max_len, heads_kv, d) <-> pages (num_pages, page_size, heads_kv, d); pages no
// table entry names keep their values (scatter) / are not read (gather).
void scatter_to_pages(const KvCacheProblem& p, const PagedLayout& l, const float* cache, float* pages);
void gather_pages(const KvCacheProblem& p, const PagedLayout& l, const float* pages, float* cache);
// The int8 cache's scales, paged the same way: k_scale (batch, max_len / block, hkv, d) -> (num_pages,
// max(1, page_size / block), hkv, d); v_scale (batch, max_len, hkv) -> (num_pages, page_size, hkv).
void scatter_scales_to_pages(const KvCacheProblem& p, int block, const PagedLayout& l, const float* k_scale,
                             const float* v_scale, float* k_scale_pages, float* v_scale_pages);

}  // namespace hopattn::reference
