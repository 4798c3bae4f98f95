// The CPU references on hand-computed cases and on invariants any attention must satisfy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "attention_reference.hpp"
#include "common/dtype.hpp"

namespace hopattn::reference {
namespace {

std::vector<float> randn(size_t n, uint32_t seed, hopattn_dtype_t dtype = HOPATTN_DTYPE_BF16) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = round_to_dtype(dist(gen), dtype);
  return v;
}

struct Out {
  std::vector<double> o, lse;
};
Out run_fp64(const AttnProblem& p, const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v) {
  Out r{std::vector<double>(p.q_elems()), std::vector<double>(p.lse_elems())};
  attention_cpu_fp64(p, q.data(), k.data(), v.data(), r.o.data(), r.lse.data());
  return r;
}

TEST(ReferenceCpu, HandComputedTwoKeys) {
  // q = [1, 0], k0 = [1, 0], k1 = [0, 1], scale 1: scores (1, 0).
  AttnProblem p{1, 1, 2, 1, 1, 2, false, 1.0f};
  const std::vector<float> q = {1, 0}, k = {1, 0, 0, 1}, v = {1, 2, 3, 4};
  const Out r = run_fp64(p, q, k, v);
  const double e = std::exp(1.0), p0 = e / (e + 1), p1 = 1 / (e + 1);
  EXPECT_NEAR(r.o[0], p0 * 1 + p1 * 3, 1e-15);
  EXPECT_NEAR(r.o[1], p0 * 2 + p1 * 4, 1e-15);
  EXPECT_NEAR(r.lse[0], std::log(e + 1), 1e-15);
}

TEST(ReferenceCpu, DefaultScaleIsInverseSqrtHdim) {
  AttnProblem p{1, 1, 2, 1, 1, 4, false, 0.0f};
  EXPECT_FLOAT_EQ(p.effective_scale(), 0.5f);
  const std::vector<float> q = {1, 1, 1, 1}, k = {1, 1, 1, 1, 0, 0, 0, 0}, v = {1, 1, 1, 1, 0, 0, 0, 0};
  const Out r = run_fp64(p, q, k, v);  // scores (4 * 0.5, 0) = (2, 0)
  EXPECT_NEAR(r.o[0], std::exp(2.0) / (std::exp(2.0) + 1), 1e-15);
  EXPECT_NEAR(r.lse[0], std::log(std::exp(2.0) + 1), 1e-15);
}

TEST(ReferenceCpu, UniformScoresGiveMeanOfVisibleValues) {
  // q = 0 makes every score equal: O is the mean of the visible V rows. Causal, sq=3 < sk=5,
  // bottom-right aligned: row i sees keys 0 .. i + 2.
  AttnProblem p{1, 3, 5, 1, 1, 8, true, 0.0f};
  const std::vector<float> q(3 * 8, 0.0f), k = randn(5 * 8, 1), v = randn(5 * 8, 2);
  const Out r = run_fp64(p, q, k, v);
  for (int i = 0; i < 3; ++i) {
    const int n = i + 3;
    EXPECT_EQ(p.visible_keys(i), n);
    for (int d = 0; d < 8; ++d) {
      double mean = 0;
      for (int j = 0; j < n; ++j) mean += v[j * 8 + d];
      EXPECT_NEAR(r.o[i * 8 + d], mean / n, 1e-12) << "row " << i << " dim " << d;
    }
    EXPECT_NEAR(r.lse[i], std::log(double(n)), 1e-12);
  }
}

TEST(ReferenceCpu, RowsOfPSumToOne) {
  // With V = 1 everywhere, O = (sum of P over the row) = 1 for every row that sees a key.
  AttnProblem p{2, 7, 11, 4, 2, 16, true, 0.0f};
  const auto q = randn(p.q_elems(), 3), k = randn(p.kv_elems(), 4);
  const std::vector<float> v(p.kv_elems(), 1.0f);
  const Out r = run_fp64(p, q, k, v);
  for (double x : r.o) EXPECT_NEAR(x, 1.0, 1e-12);
}

TEST(ReferenceCpu, PermutingKeysAndValuesTogetherLeavesOUnchanged) {
  AttnProblem p{1, 9, 13, 2, 2, 8, false, 0.0f};
  const auto q = randn(p.q_elems(), 5), k = randn(p.kv_elems(), 6), v = randn(p.kv_elems(), 7);
  std::vector<int> perm(p.seqlen_k);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(8));
  std::vector<float> kp(k.size()), vp(v.size());
  const int row = p.heads_kv * p.hdim;  // one key position, all heads
  for (int j = 0; j < p.seqlen_k; ++j)
    for (int e = 0; e < row; ++e) kp[perm[j] * row + e] = k[j * row + e], vp[perm[j] * row + e] = v[j * row + e];
  const Out a = run_fp64(p, q, k, v), b = run_fp64(p, q, kp, vp);
  for (size_t i = 0; i < a.o.size(); ++i) EXPECT_NEAR(a.o[i], b.o[i], 1e-12);
  for (size_t i = 0; i < a.lse.size(); ++i) EXPECT_NEAR(a.lse[i], b.lse[i], 1e-12);
}

TEST(ReferenceCpu, GqaEqualsMhaWithRepeatedKvHeads) {
  AttnProblem gqa{2, 5, 6, 6, 2, 8, true, 0.0f};
  AttnProblem mha = gqa;
  mha.heads_kv = 6;
  const auto q = randn(gqa.q_elems(), 9), k = randn(gqa.kv_elems(), 10), v = randn(gqa.kv_elems(), 11);
  std::vector<float> k6(mha.kv_elems()), v6(mha.kv_elems());
  for (int b = 0; b < 2; ++b)
    for (int s = 0; s < 6; ++s)
      for (int h = 0; h < 6; ++h)
        for (int d = 0; d < 8; ++d) {
          const int64_t dst = ((int64_t(b) * 6 + s) * 6 + h) * 8 + d, src = ((int64_t(b) * 6 + s) * 2 + h / 3) * 8 + d;
          k6[dst] = k[src], v6[dst] = v[src];
        }
  const Out a = run_fp64(gqa, q, k, v), b = run_fp64(mha, q, k6, v6);
  for (size_t i = 0; i < a.o.size(); ++i) EXPECT_DOUBLE_EQ(a.o[i], b.o[i]);
}

TEST(ReferenceCpu, RowsWithoutVisibleKeysAreZeroWithMinusInfLse) {
  // Causal with seqlen_q = 5 > seqlen_k = 2: rows 0..2 see no key (i + 2 - 5 < 0).
  AttnProblem p{1, 5, 2, 1, 1, 4, true, 0.0f};
  const auto q = randn(p.q_elems(), 12), k = randn(p.kv_elems(), 13), v = randn(p.kv_elems(), 14);
  const Out r = run_fp64(p, q, k, v);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p.visible_keys(i), 0);
    EXPECT_EQ(r.lse[i], -std::numeric_limits<double>::infinity());
    for (int d = 0; d < 4; ++d) EXPECT_EQ(r.o[i * 4 + d], 0.0);
  }
  EXPECT_EQ(p.visible_keys(3), 1);
  for (int d = 0; d < 4; ++d) EXPECT_NEAR(r.o[3 * 4 + d], v[d], 1e-15);  // sees key 0 only
}

TEST(ReferenceCpu, LowPrecisionYardstickIsCloseButNotExact) {
  AttnProblem p{1, 33, 47, 2, 1, 64, false, 0.0f};
  const auto q = randn(p.q_elems(), 15), k = randn(p.kv_elems(), 16), v = randn(p.kv_elems(), 17);
  const Out exact = run_fp64(p, q, k, v);
  std::vector<float> o(p.q_elems()), lse(p.lse_elems());
  attention_cpu_lowp(p, HOPATTN_DTYPE_BF16, q.data(), k.data(), v.data(), o.data(), lse.data());
  const ErrorStats e = compare(exact.o.data(), o.data(), p.q_elems());
  EXPECT_EQ(e.bad, 0);
  EXPECT_GT(e.max_abs, 0.0);    // bf16 rounding of S, P and O is visible...
  EXPECT_LT(e.max_abs, 0.05);   // ...but small for N(0,1) inputs
  EXPECT_LT(e.rel_l2, 0.02);
}

TEST(ReferenceCpu, CompareCountsNaNAndInfMismatches) {
  const double ref[4] = {1.0, -std::numeric_limits<double>::infinity(), 2.0, 3.0};
  const float got[4] = {1.5f, -std::numeric_limits<float>::infinity(), std::nanf(""), 3.0f};
  const ErrorStats e = compare(ref, got, 4);
  EXPECT_EQ(e.bad, 1);
  EXPECT_EQ(e.first_bad, 2);
  EXPECT_DOUBLE_EQ(e.max_abs, 0.5);
  const float got2[4] = {1.0f, 0.0f, 2.0f, 3.0f};  // finite where ref is -inf
  EXPECT_EQ(compare(ref, got2, 4).bad, 1);
}

TEST(ReferenceCpu, FlopsCountVisiblePairs) {
  AttnProblem p{2, 4, 4, 3, 3, 64, false, 0.0f};
  EXPECT_DOUBLE_EQ(p.flops(), 4.0 * 2 * 3 * 16 * 64);
  p.causal = true;  // 1 + 2 + 3 + 4 visible pairs
  EXPECT_DOUBLE_EQ(p.flops(), 4.0 * 2 * 3 * 10 * 64);
}

TEST(DtypeConversion, RoundTripsAndRounding) {
  for (float x : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 3.0517578e-05f}) {
    EXPECT_EQ(fp16_bits_to_float(float_to_fp16_bits(x)), x) << x;
  }
  EXPECT_EQ(float_to_fp16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16_bits(65520.0f), 0x7c00);                 // rounds to +inf
  EXPECT_EQ(float_to_fp16_bits(1.0f + 0x1p-11f), 0x3c00);          // tie: to even
  EXPECT_EQ(float_to_fp16_bits(1.0f + 3 * 0x1p-11f), 0x3c02);      // tie: to even (up)
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f), 0x3f80);           // tie: to even
  EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(-3.140625f)), -3.140625f);
  EXPECT_TRUE(std::isnan(fp16_bits_to_float(float_to_fp16_bits(std::nanf("")))));
}

}  // namespace
}  // namespace hopattn::reference
