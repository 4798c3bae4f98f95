// The KV-cache reference (ragged lengths, causal aligned to each sequence's own length) and the
// INT8 cache format: round trip within half a step, outlier channels kept apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attention_reference.hpp"
#include "kvcache_reference.hpp"

namespace hopattn::reference {
namespace {

std::vector<float> randn(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// The options in the cache's coordinates (kvcache.h): a window around position len - seqlen_q + i,
// the softcap on the scaled scores, a sink in the denominator; written out here by hand.
TEST(KvCacheReference, OptionsInTheCachesCoordinates) {
  KvCacheProblem p{1, 2, 8, 1, 1, 4, false, 0.5f};
  p.window = true, p.window_left = 1, p.window_right = 0;
  p.softcap = 2.0f;
  p.sinks = {0.5f};
  const int32_t len = 6;  // rows at positions 4 and 5: keys {3, 4} and {4, 5}
  const auto q = randn(size_t(p.seqlen_q) * p.hdim, 11), k = randn(size_t(p.max_len) * p.hdim, 12),
             v = randn(size_t(p.max_len) * p.hdim, 13);
  std::vector<double> o(q.size()), lse(p.seqlen_q);
  kvcache_attention_cpu_fp64(p, q.data(), k.data(), v.data(), &len, o.data(), lse.data());
  for (int i = 0; i < p.seqlen_q; ++i) {
    const int pos = len - p.seqlen_q + i;
    double denom = std::exp(0.5), want[4] = {};
    for (int j = pos - 1; j <= pos; ++j) {
      double dot = 0;
      for (int d = 0; d < p.hdim; ++d) dot += double(q[size_t(i) * p.hdim + d]) * k[size_t(j) * p.hdim + d];
      const double e = std::exp(2.0 * std::tanh(0.5 * dot / 2.0));
      denom += e;
      for (int d = 0; d < p.hdim; ++d) want[d] += e * v[size_t(j) * p.hdim + d];
    }
    for (int d = 0; d < p.hdim; ++d) EXPECT_NEAR(o[size_t(i) * p.hdim + d], want[d] / denom, 1e-12) << "row " << i;
    EXPECT_NEAR(lse[i], std::log(denom), 1e-12) << "row " << i;
  }
  // Rows before the cache's first key (not causal, a cache shorter than seqlen_q): with the window
  // (0, 0) rows at positions -2 and -1 see no key: O = 0, LSE = the sink; the row at 0 sees key 0.
  p.seqlen_q = 3, p.window_left = 0, p.softcap = 0.0f;
  const int32_t one = 1;
  std::vector<double> o3(size_t(3) * p.hdim), lse3(3);
  kvcache_attention_cpu_fp64(p, randn(size_t(3) * p.hdim, 14).data(), k.data(), v.data(), &one, o3.data(), lse3.data());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(lse3[i], 0.5) << "row " << i;
    for (int d = 0; d < p.hdim; ++d) EXPECT_EQ(o3[size_t(i) * p.hdim + d], 0.0) << "row " << i;
  }
  EXPECT_GT(lse3[2], 0.5);
}

TEST(KvCacheReference, EachSequenceUsesItsOwnLength) {
  KvCacheProblem p{3, 2, 16, 4, 2, 8, true, 0.0f};
  const int32_t lens[3] = {16, 5, 1};  // full, ragged, and shorter than seqlen_q (row 0 sees nothing)
  const auto q = randn(size_t(p.batch) * p.seqlen_q * p.heads_q * p.hdim, 1);
  auto k = randn(size_t(p.batch) * p.max_len * p.heads_kv * p.hdim, 2);
  auto v = randn(k.size(), 3);
  std::vector<double> o(q.size()), lse(size_t(p.batch) * p.heads_q * p.seqlen_q);
  kvcache_attention_cpu_fp64(p, q.data(), k.data(), v.data(), lens, o.data(), lse.data());
  // Garbage past each length must not matter.
  auto k2 = k, v2 = v;
  for (int b = 0; b < p.batch; ++b)
    for (int t = lens[b]; t < p.max_len; ++t)
      for (int e = 0; e < p.heads_kv * p.hdim; ++e) {
        const size_t i = (size_t(b) * p.max_len + t) * p.heads_kv * p.hdim + e;
        k2[i] = 1e6f, v2[i] = -1e6f;
      }
  std::vector<double> o2(o.size()), lse2(lse.size());
  kvcache_attention_cpu_fp64(p, q.data(), k2.data(), v2.data(), lens, o2.data(), lse2.data());
  for (size_t i = 0; i < o.size(); ++i) ASSERT_EQ(o[i], o2[i]) << "element " << i;
  // Sequence 2 has one key and two queries: query 0 sits at position -1 and sees nothing.
  for (int h = 0; h < p.heads_q; ++h) {
    EXPECT_EQ(lse[(size_t(2) * p.heads_q + h) * p.seqlen_q + 0], -std::numeric_limits<double>::infinity());
    EXPECT_TRUE(std::isfinite(lse[(size_t(2) * p.heads_q + h) * p.seqlen_q + 1]));
  }
  // Sequence 1 (length 5), last query: the plain attention over its 5 keys.
  AttnProblem one{1, 1, 5, p.heads_q, p.heads_kv, p.hdim, false, 0.0f};
  std::vector<float> q_last(q.begin() + (size_t(1) * p.seqlen_q + 1) * p.heads_q * p.hdim,
                            q.begin() + (size_t(1) * p.seqlen_q + 2) * p.heads_q * p.hdim);
  std::vector<double> o_one(size_t(p.heads_q) * p.hdim), lse_one(p.heads_q);
  attention_cpu_fp64(one, q_last.data(), k.data() + size_t(1) * p.max_len * p.heads_kv * p.hdim,
                     v.data() + size_t(1) * p.max_len * p.heads_kv * p.hdim, o_one.data(), lse_one.data());
  for (int e = 0; e < p.heads_q * p.hdim; ++e)
    EXPECT_NEAR(o[(size_t(1) * p.seqlen_q + 1) * p.heads_q * p.hdim + e], o_one[e], 1e-12);
}

TEST(Int8Cache, RoundTripWithinHalfAStep) {
  KvCacheProblem p{2, 1, 256, 2, 2, 64, true, 0.0f};
  const auto k = randn(size_t(p.batch) * p.max_len * p.heads_kv * p.hdim, 4);
  const auto v = randn(k.size(), 5);
  const Int8Cache c = quantize_kv_int8(p, 128, k.data(), v.data());
  std::vector<float> kd(k.size()), vd(v.size());
  dequantize_kv_int8(p, 128, c, kd.data(), vd.data());
  double k_err = 0, v_err = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    const size_t t = (i / (p.heads_kv * p.hdim)) % p.max_len, h = (i / p.hdim) % p.heads_kv, ch = i % p.hdim;
    const size_t b = i / (size_t(p.max_len) * p.heads_kv * p.hdim);
    const float ks = c.k_scale[((b * (p.max_len / 128) + t / 128) * p.heads_kv + h) * p.hdim + ch];
    const float vs = c.v_scale[(b * p.max_len + t) * p.heads_kv + h];
    ASSERT_LE(std::abs(kd[i] - k[i]), 0.5f * ks * (1 + 1e-6f)) << "K element " << i;
    ASSERT_LE(std::abs(vd[i] - v[i]), 0.5f * vs * (1 + 1e-6f)) << "V element " << i;
    ASSERT_GE(c.k[i], -127);
    k_err = std::max(k_err, double(std::abs(kd[i] - k[i])));
    v_err = std::max(v_err, double(std::abs(vd[i] - v[i])));
  }
  EXPECT_GT(k_err, 0.0);  // quantization is lossy...
  EXPECT_LT(k_err, 0.05);  // ...by at most half of max|x|/127 (~4.5/254 for N(0,1) blocks)
  EXPECT_LT(v_err, 0.05);
}

TEST(Int8Cache, OutlierChannelsKeepTheirOwnScale) {
  // Channel 3 of K is 20x larger: with per-(block, head, channel) scales the other channels'
  // error stays as without the outlier; a single scale per block and head would grow it ~20x.
  KvCacheProblem p{1, 1, 128, 1, 1, 64, true, 0.0f};
  auto k = randn(size_t(p.max_len) * p.hdim, 6);
  const auto v = randn(k.size(), 7);
  const Int8Cache plain = quantize_kv_int8(p, 128, k.data(), v.data());
  for (int t = 0; t < p.max_len; ++t) k[size_t(t) * p.hdim + 3] *= 20.0f;
  const Int8Cache outlier = quantize_kv_int8(p, 128, k.data(), v.data());
  for (int ch = 0; ch < p.hdim; ++ch)
    if (ch != 3) {
      EXPECT_EQ(plain.k_scale[ch], outlier.k_scale[ch]) << "channel " << ch;
    }
  // Both scales are rounded to 8 significant bits (each by at most 2^-8 of itself).
  EXPECT_NEAR(outlier.k_scale[3], 20.0f * plain.k_scale[3], 0x1p-7f * outlier.k_scale[3]);
}

TEST(Int8Cache, ScalesHaveFewSignificantBitsAndCoverTheirGroup) {
  // The int8 mma kernels' dequantization is exact only for V scales of <= 15 significant bits
  // (dequant_fma) and K scales of <= 8 (k_pair_bf16, collective/sm90_decode_int8_mma_dequant.hpp);
  // V's rounded up keep |x| / scale <= 127, K's rounded to nearest below 127.5.
  KvCacheProblem p{2, 1, 256, 4, 2, 64, true, 0.0f};
  const size_t n = size_t(p.batch) * p.max_len * p.heads_kv * p.hdim;
  auto k = randn(n, 11);
  const auto v = randn(n, 12);
  for (size_t i = 5; i < n; i += size_t(p.hdim)) k[i] *= 20.0f;  // an outlier channel
  const Int8Cache c = quantize_kv_int8(p, 64, k.data(), v.data());
  int full_scale = 0;
  for (const std::vector<float>* scales : {&c.k_scale, &c.v_scale})
    for (float s : *scales) {
      uint32_t bits;
      std::memcpy(&bits, &s, 4);
      // K's: 8 significant bits (bf16 values: the packed bf16 dequantization, k_pair_bf16); V's: 15.
      EXPECT_EQ(bits & (scales == &c.k_scale ? 0xFFFFu : 0x1FFu), 0u) << s;
      EXPECT_GT(s, 0.0f);
    }
  // Every stored value is within [-127, 127] and within half a step of the original.
  const int blocks = p.max_len / 64;
  for (int b = 0; b < p.batch; ++b)
    for (int t = 0; t < p.max_len; ++t)
      for (int h = 0; h < p.heads_kv; ++h)
        for (int ch = 0; ch < p.hdim; ++ch) {
          const size_t i = ((size_t(b) * p.max_len + t) * p.heads_kv + h) * p.hdim + ch;
          const float ks = c.k_scale[((size_t(b) * blocks + t / 64) * p.heads_kv + h) * p.hdim + ch];
          EXPECT_LE(std::abs(k[i]), 127.5f * ks);  // K's scales are rounded to nearest: below 127.5
          EXPECT_LE(std::abs(float(c.k[i]) * ks - k[i]), 0.5f * ks * (1.0f + 1e-6f));
          full_scale += c.k[i] == 127 || c.k[i] == -127;
        }
  EXPECT_GT(full_scale, 0);  // the largest of a group still maps to ±127
  for (size_t r = 0; r < c.v_scale.size(); ++r)  // V likewise, per (token, kv-head) row
    for (int ch = 0; ch < p.hdim; ++ch) {
      const size_t i = r * p.hdim + ch;
      EXPECT_LE(std::abs(v[i]), 127.0f * c.v_scale[r]);
      EXPECT_LE(std::abs(float(c.v[i]) * c.v_scale[r] - v[i]), 0.5f * c.v_scale[r] * (1.0f + 1e-6f));
    }
}

TEST(Int8Cache, ZeroGroupsStoreZeros) {
  KvCacheProblem p{1, 1, 64, 1, 1, 64, true, 0.0f};
  std::vector<float> k(size_t(p.max_len) * p.hdim, 0.0f), v(k.size(), 0.0f);
  k[5] = 1.0f;  // one non-zero value in channel 5, token 0
  const Int8Cache c = quantize_kv_int8(p, 64, k.data(), v.data());
  EXPECT_EQ(c.k_scale[0], 0.0f);
  EXPECT_EQ(c.k[5], 127);
  for (float s : c.v_scale) EXPECT_EQ(s, 0.0f);
  for (int8_t x : c.v) EXPECT_EQ(x, 0);
}

TEST(SplitKv, CombiningSplitsEqualsTheWholeRange) {
  // One query row per (head), keys split into uneven ranges (one of them empty); the merged
  // result must equal attention over all keys to rounding.
  const int heads = 4, d = 16, keys = 300;
  const std::vector<int> bounds = {0, 7, 7, 128, 299, 300};  // split s covers [bounds[s], bounds[s+1])
  const int splits = int(bounds.size()) - 1;
  const auto q = randn(size_t(heads) * d, 11), k = randn(size_t(keys) * heads * d, 12), v = randn(k.size(), 13);
  AttnProblem whole{1, 1, keys, heads, heads, d, false, 0.0f};
  std::vector<double> o_ref(size_t(heads) * d), lse_ref(heads);
  attention_cpu_fp64(whole, q.data(), k.data(), v.data(), o_ref.data(), lse_ref.data());
  std::vector<double> o_parts(size_t(splits) * heads * d), lse_parts(size_t(splits) * heads);
  for (int s = 0; s < splits; ++s) {
    AttnProblem part{1, 1, bounds[s + 1] - bounds[s], heads, heads, d, false, whole.effective_scale()};
    attention_cpu_fp64(part, q.data(), k.data() + size_t(bounds[s]) * heads * d, v.data() + size_t(bounds[s]) * heads * d,
                       o_parts.data() + size_t(s) * heads * d, lse_parts.data() + size_t(s) * heads);
  }
  EXPECT_EQ(lse_parts[1 * heads], -std::numeric_limits<double>::infinity());  // the empty split
  std::vector<double> o(size_t(heads) * d), lse(heads);
  combine_splits_cpu(splits, heads, d, o_parts.data(), lse_parts.data(), o.data(), lse.data());
  for (int i = 0; i < heads * d; ++i) EXPECT_NEAR(o[i], o_ref[i], 1e-12) << "element " << i;
  for (int h = 0; h < heads; ++h) EXPECT_NEAR(lse[h], lse_ref[h], 1e-12) << "head " << h;
}

TEST(SplitKv, NoSplitSawAKey) {
  const double inf = std::numeric_limits<double>::infinity();
  const double o_parts[2 * 2] = {std::nan(""), std::nan(""), std::nan(""), std::nan("")};  // never read
  const double lse_parts[2] = {-inf, -inf};
  double o[2] = {1, 1}, lse[1] = {0};
  combine_splits_cpu(2, 1, 2, o_parts, lse_parts, o, lse);
  EXPECT_EQ(o[0], 0.0);
  EXPECT_EQ(o[1], 0.0);
  EXPECT_EQ(lse[0], -inf);
}

// The paged layout the paged KV kernels will be tested against (docs/plan-varlen-paged.md §2):
// every page id used once, the order shuffled, scatter then gather the identity, and the int8
// scales where the format says (a block's K scale in its first token's page, per page size).
TEST(KvCacheReference, PagedLayoutRoundTripsAndPlacesTheScales) {
  for (int page_size : {16, 64, 256}) {
    SCOPED_TRACE("page_size " + std::to_string(page_size));
    KvCacheProblem p{3, 1, 512, 4, 2, 8, true, 0.0f};
    const PagedLayout l = make_paged_layout(p.batch, p.max_len / page_size, page_size, 5, 11);
    ASSERT_EQ(l.table.size(), size_t(p.batch) * (p.max_len / page_size));
    std::vector<int> uses(size_t(l.num_pages), 0);
    int in_order = 0;
    for (size_t i = 0; i < l.table.size(); ++i) {
      ASSERT_GE(l.table[i], 0);
      ASSERT_LT(l.table[i], l.num_pages);
      ++uses[size_t(l.table[i])];
      in_order += i > 0 && l.table[i] == l.table[i - 1] + 1;
    }
    for (int u : uses) EXPECT_LE(u, 1);
    EXPECT_LT(in_order, int(l.table.size()) / 4) << "the pool is not shuffled";
    const auto cache = randn(size_t(p.batch) * p.max_len * p.heads_kv * p.hdim, 12);
    std::vector<float> pages(size_t(l.num_pages) * page_size * p.heads_kv * p.hdim, -7.0f), back(cache.size(), 0.0f);
    scatter_to_pages(p, l, cache.data(), pages.data());
    gather_pages(p, l, pages.data(), back.data());
    EXPECT_EQ(std::memcmp(cache.data(), back.data(), cache.size() * 4), 0);
    // Token (b, t) lands at its page's row t % page_size.
    const int b = 2, t = 301, row = p.heads_kv * p.hdim;
    const int64_t at = (int64_t(l.table[size_t(b) * l.max_pages + t / page_size]) * page_size + t % page_size) * row;
    EXPECT_EQ(pages[size_t(at) + 5], cache[(size_t(b) * p.max_len + t) * row + 5]);
    for (int block : {64, 128}) {
      const int blocks = p.max_len / block, per_page = std::max(1, page_size / block);
      const auto ks = randn(size_t(p.batch) * blocks * row, 13), vs = randn(size_t(p.batch) * p.max_len * p.heads_kv, 14);
      std::vector<float> ksp(size_t(l.num_pages) * per_page * row, 0.0f), vsp(size_t(l.num_pages) * page_size * p.heads_kv);
      scatter_scales_to_pages(p, block, l, ks.data(), vs.data(), ksp.data(), vsp.data());
      for (int blk = 0; blk < blocks; ++blk) {  // block blk starts at token blk * block
        const int first = blk * block;
        const int64_t page = l.table[size_t(b) * l.max_pages + first / page_size];
        const int64_t slot = page * per_page + (first % page_size) / block;
        EXPECT_EQ(ksp[size_t(slot * row + 3)], ks[(size_t(b) * blocks + blk) * row + 3]) << "block " << blk;
      }
      EXPECT_EQ(vsp[size_t((at / row) * p.heads_kv + 1)], vs[(size_t(b) * p.max_len + t) * p.heads_kv + 1]);
    }
  }
}

}  // namespace
}  // namespace hopattn::reference
