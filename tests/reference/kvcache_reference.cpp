#include "kvcache_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

#include "attention_reference.hpp"

namespace hopattn::reference {

void kvcache_attention_cpu_fp64(const KvCacheProblem& p, const float* q, const float* k_cache, const float* v_cache,
                                const int32_t* cache_seqlens, double* o, double* lse) {
  const int64_t q_seq = int64_t(p.seqlen_q) * p.heads_q * p.hdim;
  const int64_t kv_seq = int64_t(p.max_len) * p.heads_kv * p.hdim;
  for (int b = 0; b < p.batch; ++b) {
    const int len = cache_seqlens[b];
    if (len < 0 || len > p.max_len) throw std::invalid_argument("cache_seqlens out of [0, max_len]");
    // One sequence: the first `len` cache rows are contiguous, and bottom-right causal alignment
    // with seqlen_k = len is exactly "query i sits at position len - seqlen_q + i".
    AttnProblem one{1, p.seqlen_q, len, p.heads_q, p.heads_kv, p.hdim, p.causal, p.scale};
    one.window = p.window, one.window_left = p.window_left, one.window_right = p.window_right;
    one.softcap = p.softcap, one.sinks = p.sinks;
    std::vector<double> lse_one(int64_t(p.heads_q) * p.seqlen_q);
    attention_cpu_fp64(one, q + b * q_seq, k_cache + b * kv_seq, v_cache + b * kv_seq, o + b * q_seq, lse_one.data());
    std::copy(lse_one.begin(), lse_one.end(), lse + int64_t(b) * p.heads_q * p.seqlen_q);
  }
}

namespace {

// amax / 127, V's rounded up to 15 significant bits (the low 9 of fp32's 23 stored bits cleared)
// and K's to the nearest value of 8 (the low 16 cleared: a bf16 value), so that the kernels'
// one-FFMA dequantization (dequant_fma) and packed bf16 dequantization of K (k_pair_bf16,
// collective/sm90_decode_int8_mma_dequant.hpp) are exact. K's largest value still maps to ±127:
// amax / scale <= 127 / (1 - 2^-8) < 127.5.
float scale_of(float amax, uint32_t add, uint32_t low_bits) {
  uint32_t bits;
  const float s = amax / 127.0f;
  std::memcpy(&bits, &s, 4);
  bits = (bits + add) & ~low_bits;
  float r;
  std::memcpy(&r, &bits, 4);
  return r;
}

int8_t quantize(float x, float scale) {
  if (scale == 0.0f) return 0;
  return int8_t(std::clamp(std::nearbyint(x / scale), -127.0f, 127.0f));
}

}  // namespace

Int8Cache quantize_kv_int8(const KvCacheProblem& p, int block, const float* k, const float* v) {
  if (block <= 0 || p.max_len % block != 0) throw std::invalid_argument("max_len must be a multiple of block");
  const int blocks = p.max_len / block, d = p.hdim, hkv = p.heads_kv;
  const int64_t n = int64_t(p.batch) * p.max_len * hkv * d;
  Int8Cache c{std::vector<int8_t>(n), std::vector<int8_t>(n), std::vector<float>(int64_t(p.batch) * blocks * hkv * d),
              std::vector<float>(int64_t(p.batch) * p.max_len * hkv)};
  auto at = [&](int b, int t, int h, int ch) { return ((int64_t(b) * p.max_len + t) * hkv + h) * d + ch; };
  for (int b = 0; b < p.batch; ++b)
    for (int blk = 0; blk < blocks; ++blk)
      for (int h = 0; h < hkv; ++h)
        for (int ch = 0; ch < d; ++ch) {
          float amax = 0.0f;
          for (int t = blk * block; t < (blk + 1) * block; ++t) amax = std::max(amax, std::abs(k[at(b, t, h, ch)]));
          const float scale = scale_of(amax, 0x8000u, 0xFFFFu);
          c.k_scale[((int64_t(b) * blocks + blk) * hkv + h) * d + ch] = scale;
          for (int t = blk * block; t < (blk + 1) * block; ++t) c.k[at(b, t, h, ch)] = quantize(k[at(b, t, h, ch)], scale);
        }
  for (int b = 0; b < p.batch; ++b)
    for (int t = 0; t < p.max_len; ++t)
      for (int h = 0; h < hkv; ++h) {
        float amax = 0.0f;
        for (int ch = 0; ch < d; ++ch) amax = std::max(amax, std::abs(v[at(b, t, h, ch)]));
        const float scale = scale_of(amax, 0x1FFu, 0x1FFu);
        c.v_scale[(int64_t(b) * p.max_len + t) * hkv + h] = scale;
        for (int ch = 0; ch < d; ++ch) c.v[at(b, t, h, ch)] = quantize(v[at(b, t, h, ch)], scale);
      }
  return c;
}

void dequantize_kv_int8(const KvCacheProblem& p, int block, const Int8Cache& c, float* k, float* v) {
  const int blocks = p.max_len / block, d = p.hdim, hkv = p.heads_kv;
  for (int b = 0; b < p.batch; ++b)
    for (int t = 0; t < p.max_len; ++t)
      for (int h = 0; h < hkv; ++h)
        for (int ch = 0; ch < d; ++ch) {
          const int64_t i = ((int64_t(b) * p.max_len + t) * hkv + h) * d + ch;
          k[i] = float(c.k[i]) * c.k_scale[((int64_t(b) * blocks + t / block) * hkv + h) * d + ch];
          v[i] = float(c.v[i]) * c.v_scale[(int64_t(b) * p.max_len + t) * hkv + h];
        }
}

void combine_splits_cpu(int splits, int64_t rows, int d, const double* o_parts, const double* lse_parts, double* o,
                        double* lse) {
  for (int64_t r = 0; r < rows; ++r) {
    double m = -std::numeric_limits<double>::infinity();
    for (int s = 0; s < splits; ++s) m = std::max(m, lse_parts[s * rows + r]);
    double* out = o + r * d;
    std::fill(out, out + d, 0.0);
    if (m == -std::numeric_limits<double>::infinity()) {  // no split saw a key
      lse[r] = m;
      continue;
    }
    double sum = 0;
    for (int s = 0; s < splits; ++s) sum += std::exp(lse_parts[s * rows + r] - m);
    lse[r] = m + std::log(sum);
    for (int s = 0; s < splits; ++s) {
      const double w = std::exp(lse_parts[s * rows + r] - lse[r]);
      if (w == 0.0) continue;
      for (int i = 0; i < d; ++i) out[i] += w * o_parts[(s * rows + r) * d + i];
    }
  }
}

PagedLayout make_paged_layout(int batch, int max_pages, int page_size, int spare_pages, uint64_t seed) {
  PagedLayout l;
  l.page_size = page_size, l.max_pages = max_pages, l.num_pages = batch * max_pages + spare_pages;
  std::vector<int32_t> pool(size_t(l.num_pages));
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), std::mt19937_64(seed));
  l.table.assign(pool.begin(), pool.begin() + int64_t(batch) * max_pages);
  return l;
}

namespace {
// The offset, in elements, of (b, t) in the contiguous cache and in the pages, per (head, channel) row.
int64_t page_row(const PagedLayout& l, int b, int t) {
  return int64_t(l.table[size_t(b) * l.max_pages + t / l.page_size]) * l.page_size + t % l.page_size;
}
}  // namespace

void scatter_to_pages(const KvCacheProblem& p, const PagedLayout& l, const float* cache, float* pages) {
  const int64_t row = int64_t(p.heads_kv) * p.hdim;
  for (int b = 0; b < p.batch; ++b)
    for (int t = 0; t < p.max_len; ++t)
      std::copy_n(cache + (int64_t(b) * p.max_len + t) * row, row, pages + page_row(l, b, t) * row);
}

void gather_pages(const KvCacheProblem& p, const PagedLayout& l, const float* pages, float* cache) {
  const int64_t row = int64_t(p.heads_kv) * p.hdim;
  for (int b = 0; b < p.batch; ++b)
    for (int t = 0; t < p.max_len; ++t)
      std::copy_n(pages + page_row(l, b, t) * row, row, cache + (int64_t(b) * p.max_len + t) * row);
}

void scatter_scales_to_pages(const KvCacheProblem& p, int block, const PagedLayout& l, const float* k_scale,
                             const float* v_scale, float* k_scale_pages, float* v_scale_pages) {
  const int64_t krow = int64_t(p.heads_kv) * p.hdim, per_page = std::max(1, l.page_size / block);
  for (int b = 0; b < p.batch; ++b) {
    for (int t = 0; t < p.max_len; ++t)  // V: one scale per (token, kv-head), as the tokens
      std::copy_n(v_scale + (int64_t(b) * p.max_len + t) * p.heads_kv, p.heads_kv, v_scale_pages + page_row(l, b, t) * p.heads_kv);
    for (int blk = 0; blk < p.max_len / block; ++blk) {  // K: the block's scale in its first token's page
      const int t = blk * block;
      const int64_t page = l.table[size_t(b) * l.max_pages + t / l.page_size];
      const int64_t slot = page * per_page + (t % l.page_size) / block;
      std::copy_n(k_scale + (int64_t(b) * (p.max_len / block) + blk) * krow, krow, k_scale_pages + slot * krow);
    }
  }
}

}  // namespace hopattn::reference
