#include "attention_fp8.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>

#include "e4m3.hpp"
#include "fp8_accumulate.hpp"
#include "hopattn/hopattn.h"

namespace hopattn::reference {
namespace {

using gemm::tools::e4m3_from_float;
using gemm::tools::e4m3_to_float;

// Round to bf16, nearest even (finite inputs).
float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

float round_e4m3(float x) { return e4m3_to_float(e4m3_from_float(x)); }

}  // namespace

void hadamard_rotate(float* row, int hdim) {
  if (hdim <= 0 || (hdim & (hdim - 1)) != 0) throw std::invalid_argument("hadamard_rotate: hdim not a power of two");
  for (int i = 0; i < hdim; ++i) row[i] *= float(HOPATTN_FP8_HADAMARD_SIGN(i));
  for (int h = 1; h < hdim; h *= 2)
    for (int i = 0; i < hdim; ++i)
      if ((i & h) == 0) {
        const float a = row[i], b = row[i + h];
        row[i] = a + b, row[i + h] = a - b;
      }
  const float norm = 1.0f / std::sqrt(float(hdim));
  for (int i = 0; i < hdim; ++i) row[i] *= norm;
}

Fp8Tensor quantize_e4m3(const std::vector<float>& x_in, int batch, int seqlen, int heads, int hdim, int heads_kv,
                        bool scaled, bool hadamard) {
  if (heads_kv <= 0 || heads % heads_kv != 0) throw std::invalid_argument("quantize_e4m3: heads % heads_kv != 0");
  if (int64_t(x_in.size()) != int64_t(batch) * seqlen * heads * hdim) throw std::invalid_argument("quantize_e4m3: size");
  std::vector<float> rotated;
  if (hadamard) {
    rotated = x_in;
    for (size_t r = 0; r < rotated.size(); r += size_t(hdim)) hadamard_rotate(rotated.data() + r, hdim);
  }
  const std::vector<float>& x = hadamard ? rotated : x_in;
  const int group = heads / heads_kv;
  Fp8Tensor t;
  t.codes.resize(x.size());
  t.values.resize(x.size());
  t.dequant.resize(x.size());
  t.descale.assign(size_t(batch) * heads_kv, 1.0f);
  auto index = [&](int b, int s, int h, int d) { return ((int64_t(b) * seqlen + s) * heads + h) * hdim + d; };
  for (int b = 0; b < batch; ++b)
    for (int hk = 0; hk < heads_kv; ++hk) {
      float amax = 0.0f;
      for (int s = 0; s < seqlen; ++s)
        for (int h = hk * group; h < (hk + 1) * group; ++h)
          for (int d = 0; d < hdim; ++d) amax = std::max(amax, std::fabs(x[size_t(index(b, s, h, d))]));
      const float descale = scaled && amax > 0.0f ? amax / 448.0f : 1.0f;
      t.descale[size_t(b) * heads_kv + hk] = descale;
      for (int s = 0; s < seqlen; ++s)
        for (int h = hk * group; h < (hk + 1) * group; ++h)
          for (int d = 0; d < hdim; ++d) {
            const size_t i = size_t(index(b, s, h, d));
            t.codes[i] = e4m3_from_float(x[i] / descale);
            t.values[i] = e4m3_to_float(t.codes[i]);
            t.dequant[i] = t.values[i] * descale;
          }
    }
  return t;
}

void attention_cpu_fp8_lowp(const AttnProblem& p, const float* q, const float* k, const float* v, const float* q_descale,
                            const float* k_descale, const float* v_descale, float* o, float* lse, int block_n,
                            bool mma_sums) {
  if (p.softcap > 0 || !p.sinks.empty()) throw std::invalid_argument("attention_cpu_fp8_lowp: no softcap or sinks");
  if (block_n <= 0) block_n = fp8_kernel_block_n(p.hdim);
  if (block_n % kFp8AccStep != 0) throw std::invalid_argument("attention_cpu_fp8_lowp: block_n not a multiple of 32");
  const float scale = p.effective_scale();
  const int group = p.heads_q / p.heads_kv;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  std::vector<float> s(static_cast<size_t>(block_n)), pr(static_cast<size_t>(block_n));
  std::vector<float> acc(size_t(p.hdim));
  auto qi = [&](int b, int i, int h) { return ((int64_t(b) * p.seqlen_q + i) * p.heads_q + h) * p.hdim; };
  auto kj = [&](int b, int j, int h) { return ((int64_t(b) * p.seqlen_k + j) * p.heads_kv + h) * p.hdim; };
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads_q; ++h) {
      const int hk = h / group;
      const size_t bh = size_t(b) * p.heads_kv + hk;
      const float qd = q_descale ? q_descale[bh] : 1.0f, kd = k_descale ? k_descale[bh] : 1.0f,
                  vd = v_descale ? v_descale[bh] : 1.0f;
      const float scale_log2 = fp8_scale_log2(scale, qd, kd);
      for (int i = 0; i < p.seqlen_q; ++i) {
        const AttnProblem::KeyRange r = p.visible_range(i);
        const float* qrow = q + qi(b, i, h);
        float m = kNegInf, l = 0;
        std::fill(acc.begin(), acc.end(), 0.0f);
        // The kernel's KV blocks (multiples of block_n from key 0) that hold a visible key; a
        // block's keys outside the row's range have P = 0.
        for (int j0 = r.begin / block_n * block_n; j0 < r.end; j0 += block_n) {
          const int lo = std::max(j0, r.begin), hi = std::min(j0 + block_n, r.end);
          float m_new = m;
          for (int j = lo; j < hi; ++j) {
            const float* krow = k + kj(b, j, hk);
            s[size_t(j - j0)] = fp8_wgmma_dot(qrow, [&](int d) { return krow[d]; }, p.hdim);  // fp8_accumulate.hpp
            m_new = std::max(m_new, s[size_t(j - j0)]);
          }
          if (mma_sums) m_new = fp8_lagging_max(m, m_new, scale_log2);
          const float offset = fp8_softmax_offset(m_new, scale_log2);
          // O and the sum are 0 before the row's first block (the kernel's alpha there is moot).
          const float alpha = m == kNegInf ? 0.0f : fp8_exp2(fp8_softmax_offset(m, scale_log2) - offset);
          float sum = 0;
          for (int j = j0; j < hi; ++j) {
            const float e = j < lo ? 0.0f : fp8_softmax_p(s[size_t(j - j0)], scale_log2, offset);
            sum += e;
            pr[size_t(j - j0)] = round_e4m3(e);
          }
          // The sums by the MMA: the rounded P times a V column of 1.0, accumulated as O is.
          l = mma_sums ? fp8_wgmma_accumulate(l * alpha, [&](int t) { return pr[size_t(t)]; }, hi - j0) : l * alpha + sum;
          m = m_new;
          // O = O · alpha + P·V as the FP8 WGMMA accumulates it (fp8_accumulate.hpp), per channel,
          // in k-steps of 32 keys from the block's start.
          for (int d = 0; d < p.hdim; ++d)
            acc[size_t(d)] = fp8_wgmma_accumulate(
                acc[size_t(d)] * alpha, [&](int t) { return pr[size_t(t)] * v[kj(b, j0 + t, hk) + d]; }, hi - j0);
        }
        float* orow = o + qi(b, i, h);
        const float inv = l > 0 ? 1.0f / l : 0.0f;
        for (int d = 0; d < p.hdim; ++d) orow[d] = l > 0 ? round_bf16(acc[size_t(d)] * inv * vd) : 0.0f;
        if (lse) lse[(int64_t(b) * p.heads_q + h) * p.seqlen_q + i] = l > 0 ? fp8_softmax_lse(m, scale_log2, l) : kNegInf;
      }
    }
}

void attention_cpu_fp8_lowp(const AttnProblem& p, const Fp8Tensor& q, const Fp8Tensor& k, const Fp8Tensor& v, float* o,
                            float* lse, int block_n, bool mma_sums) {
  attention_cpu_fp8_lowp(p, q.values.data(), k.values.data(), v.values.data(), q.descale.data(), k.descale.data(),
                         v.descale.data(), o, lse, block_n, mma_sums);
}

std::vector<float> normal_with_outliers(int64_t n, uint64_t seed, double outlier_fraction, double outlier_std) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<float> out(size_t(std::max<int64_t>(n, 0)));
  for (float& x : out) {
    const bool outlier = uniform(rng) < outlier_fraction;
    x = float(normal(rng) * (outlier ? outlier_std : 1.0));
  }
  return out;
}

double rmse(const double* ref, const float* got, int64_t n) {
  double sum = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(ref[i])) continue;
    const double d = double(got[i]) - ref[i];
    sum += d * d;
    ++count;
  }
  return count > 0 ? std::sqrt(sum / double(count)) : 0.0;
}

}  // namespace hopattn::reference
