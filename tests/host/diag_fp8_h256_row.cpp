// Host-only diagnosis of Fp8Forward.ManyTilesPerCta at hdim 256 (seed 506, non-causal), the row
// (b 3, q 914, h 3) where an H200 gave O[230] = -14.62 against fp64 -12.44. Rebuilds the case's
// inputs bit for bit (fp8_case_inputs' scheme, quantize_e4m3) and computes O[230] of that row
// under several models of the kernel. Not a test; build by hand:
//   g++ -std=c++20 -O2 -Itests/reference -Iinclude -Isrc tests/host/diag_fp8_h256_row.cpp \
//       tests/reference/attention_fp8.cpp tests/reference/e4m3.cpp tests/reference/attention_cpu.cpp -o diag
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "attention_fp8.hpp"
#include "e4m3.hpp"
#include "fp8_accumulate.hpp"

using namespace hopattn::reference;
using hopattn::gemm::tools::e4m3_from_float;
using hopattn::gemm::tools::e4m3_to_float;

namespace {

// fp8_check.cpp's fp8_case_inputs (copied: that file needs the CUDA runtime), for descales = true,
// head_scales = true, input_std = 1, no outliers.
std::vector<float> case_inputs(const AttnProblem& p, int seqlen, int heads, uint64_t seed) {
  std::vector<float> x = normal_with_outliers(int64_t(p.batch) * seqlen * heads * p.hdim, seed, 0.0, 10.0);
  const int group = heads / p.heads_kv;
  for (size_t i = 0; i < x.size(); ++i) {
    const int h = int(i / size_t(p.hdim)) % heads, b = int(i / (size_t(p.hdim) * heads * seqlen));
    const int kv = b * p.heads_kv + h / group;
    x[i] *= 1.0f * std::ldexp(1.0f, kv % 7 - 3);
  }
  return x;
}

float round_e4m3(float x) { return e4m3_to_float(e4m3_from_float(x)); }
float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace

int main() {
  AttnProblem p{4, 1000, 1000, 16, 2, 256, false, 0.0f};
  const uint64_t seed = 506;
  const int B = 3, I = 914, H = 3, D = 230;
  const int group = p.heads_q / p.heads_kv, HK = H / group;
  const std::vector<float> qf = case_inputs(p, p.seqlen_q, p.heads_q, seed * 3 + 0);
  const std::vector<float> kf = case_inputs(p, p.seqlen_k, p.heads_kv, seed * 3 + 1);
  const std::vector<float> vf = case_inputs(p, p.seqlen_k, p.heads_kv, seed * 3 + 2);
  const Fp8Tensor q = quantize_e4m3(qf, p.batch, p.seqlen_q, p.heads_q, p.hdim, p.heads_kv, true);
  const Fp8Tensor k = quantize_e4m3(kf, p.batch, p.seqlen_k, p.heads_kv, p.hdim, p.heads_kv, true);
  const Fp8Tensor v = quantize_e4m3(vf, p.batch, p.seqlen_k, p.heads_kv, p.hdim, p.heads_kv, true);
  const int n = p.seqlen_k, hd = p.hdim;
  const float qd = q.descale[B * p.heads_kv + HK], kd = k.descale[B * p.heads_kv + HK], vd = v.descale[B * p.heads_kv + HK];
  const float scale = p.effective_scale();
  std::printf("row (b %d, q %d, h %d), kv-head %d; descales q %.9g k %.9g v %.9g; scale %g\n", B, I, H, HK, qd, kd, vd, scale);

  const int64_t qoff = ((int64_t(B) * p.seqlen_q + I) * p.heads_q + H) * hd;
  auto koff = [&](int j) { return ((int64_t(B) * p.seqlen_k + j) * p.heads_kv + HK) * hd; };
  const float* qdq = q.dequant.data() + qoff;
  std::vector<float> qc(hd);
  for (int c = 0; c < hd; ++c) qc[c] = e4m3_to_float(q.codes[qoff + c]);

  // Scores: fp64 (dequantized, as attention_cpu_fp64 / attention_gpu_fp64); the yardstick's
  // (fp8_wgmma_dot on dequantized floats, x scale); the kernel's as modelled (fp8_wgmma_dot on the
  // codes, then x softmax_scale·q_descale·k_descale, in log2 units); fp32-exact on the codes.
  std::vector<double> s64(n), s_code_exact(n);
  std::vector<float> s_yard(n), s_code_model_log2(n), s_code_exact_log2(n);
  const float tile_scale = scale * qd * kd;  // tile_softmax_scale: softmax_scale * q_descale * k_descale
  const float scale_log2 = tile_scale * float(M_LOG2E);
  for (int j = 0; j < n; ++j) {
    const float* kdq = k.dequant.data() + koff(j);
    double acc = 0, accc = 0;
    std::vector<float> kc(hd);
    for (int c = 0; c < hd; ++c) {
      acc += double(qdq[c]) * double(kdq[c]);
      kc[c] = e4m3_to_float(k.codes[koff(j) + c]);
      accc += double(qc[c]) * double(kc[c]);
    }
    s64[j] = acc * double(scale);
    s_code_exact[j] = accc;
    s_yard[j] = fp8_wgmma_dot(qdq, [&](int c) { return kdq[c]; }, hd) * scale;
    const float dot_code = fp8_wgmma_dot(qc.data(), [&](int c) { return kc[c]; }, hd);
    s_code_model_log2[j] = dot_code * scale_log2;
    s_code_exact_log2[j] = float(accc) * scale_log2;
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return s64[a] > s64[b]; });
  const int j1 = order[0], j2 = order[1], j3 = order[2];
  auto vdq = [&](int j, int c) { return double(v.dequant[koff(j) + c]); };
  auto vcode = [&](int j, int c) { return e4m3_to_float(v.codes[koff(j) + c]); };
  std::printf("\nthe dominant keys (fp64 scores, natural-log units):\n");
  for (int j : {j1, j2, j3})
    std::printf("  key %4d  block %2d  s64 %.6f  s_yard %.6f  s_kernel_model %.6f  s_code_fp32exact %.6f  (s - s64: yard %+.4f, kernel model %+.4f)  V[%d] code %g dequant %.6f\n",
                j, j / 64, s64[j], s_yard[j], s_code_model_log2[j] / M_LOG2E, s_code_exact_log2[j] / M_LOG2E,
                s_yard[j] - s64[j], s_code_model_log2[j] / M_LOG2E - s64[j], D, vcode(j, D), vdq(j, D));
  std::printf("  gap s64 %.6f, yardstick %.6f, kernel model %.6f\n", s64[j1] - s64[j2], s_yard[j1] - s_yard[j2],
              (s_code_model_log2[j1] - s_code_model_log2[j2]) / M_LOG2E);
  std::printf("  Q·K (code units, exact) key %d: %.1f, key %d: %.1f; |q|_codes %.1f\n", j1, s_code_exact[j1], j2,
              s_code_exact[j2], std::sqrt(std::inner_product(qc.begin(), qc.end(), qc.begin(), 0.0)));

  // (1) fp64.
  double m64 = *std::max_element(s64.begin(), s64.end()), l64 = 0, o64 = 0;
  for (int j = 0; j < n; ++j) l64 += std::exp(s64[j] - m64), o64 += std::exp(s64[j] - m64) * vdq(j, D);
  o64 /= l64;
  std::printf("\n(1) fp64 exact: O[%d] = %.6f  (weights %.4f, %.4f)  LSE %.6f\n", D, o64, std::exp(s64[j1] - m64) / l64,
              std::exp(s64[j2] - m64) / l64, m64 + std::log(l64));

  // Hypotheses with a given score vector (log2 units, already scaled), exact max or online per
  // block of 64, P = e4m3(2^(s - (m - 8))), row sum of the fp32 P, P·V in fp32 or modelled WGMMA,
  // on V codes (x v_descale after the normalisation) or dequantized V.
  auto run = [&](const char* name, const std::vector<float>& sl2, bool online, bool round_p, bool model_pv, bool codes,
                 int block, float offset) {
    const int nb = (n + block - 1) / block;
    float m = -INFINITY, l = 0, o = 0;
    if (!online) m = *std::max_element(sl2.begin(), sl2.end());
    for (int b = 0; b < nb; ++b) {
      const int j0 = b * block, j1e = std::min(n, j0 + block);
      float alpha = 1;
      if (online) {
        float mn = m;
        for (int j = j0; j < j1e; ++j) mn = std::max(mn, sl2[j]);
        alpha = m == -INFINITY ? 1.0f : std::exp2((m - offset) - (mn - offset));
        l *= alpha;
        m = mn;
      }
      std::vector<float> pr(block, 0.0f);
      for (int j = j0; j < j1e; ++j) {
        const float e = std::exp2(sl2[j] - (m - offset));
        l += e;
        pr[j - j0] = round_p ? round_e4m3(e) : e;
      }
      auto prod = [&](int t) { return j0 + t < j1e ? pr[t] * (codes ? vcode(j0 + t, D) : float(vdq(j0 + t, D))) : 0.0f; };
      if (model_pv)
        o = fp8_wgmma_accumulate(o * alpha, prod, block);
      else {
        float acc = 0;
        for (int t = 0; t < block; ++t) acc += prod(t);
        o = o * alpha + acc;
      }
    }
    float out = o / l;
    if (codes) out *= vd;
    const float lse = (m - offset) * float(M_LN2) + std::log(l);
    std::printf("%-92s O[%d] = %.6f  bf16 %.4f  LSE %.6f\n", name, D, out, round_bf16(out), lse);
  };
  std::vector<float> s64_log2(n), s_yard_log2(n);
  for (int j = 0; j < n; ++j) s64_log2[j] = float(s64[j] * M_LOG2E), s_yard_log2[j] = s_yard[j] * float(M_LOG2E);

  std::printf("\nS exact (fp64 scores):\n");
  run("(2) exact max, P=e4m3(256·2^..), sum fp32 P, fp32 PV, dequant V", s64_log2, false, true, false, false, 64, 8);
  run("(2') same, no P rounding", s64_log2, false, false, false, false, 64, 8);
  run("(3) online per 64-key block, P e4m3, fp32 PV, dequant V", s64_log2, true, true, false, false, 64, 8);
  run("(3') online per 64, P e4m3, WGMMA-model PV on V codes, x v_descale", s64_log2, true, true, true, true, 64, 8);
  std::printf("\nS as the yardstick models it (dequantized floats through fp8_wgmma_dot):\n");
  run("(Y) the GPU yardstick: online per 128, P=e4m3(exp(s-m)) (offset 0), model PV, dequant V", s_yard_log2, true, true,
      true, false, 128, 0);
  run("(Y') CPU yardstick: exact max, offset 0, model PV, dequant V", s_yard_log2, false, true, true, false, 64, 0);
  std::printf("\nS as the kernel computes it, modelled (codes through fp8_wgmma_dot, x scale·q_descale·k_descale):\n");
  run("(4) kernel model: online per 64, offset 8, P e4m3, model PV on codes, x v_descale", s_code_model_log2, true, true,
      true, true, 64, 8);
  run("(4') same, fp32 PV on codes", s_code_model_log2, true, true, false, true, 64, 8);
  std::printf("\nS fp32-exact on the codes (no truncating accumulation):\n");
  run("(5) online per 64, offset 8, P e4m3, model PV on codes", s_code_exact_log2, true, true, true, true, 64, 8);

  // What S error on the two top keys would give -14.62: O as a function of the gap (the rest fixed).
  std::printf("\nO[%d] (fp64, all other scores exact) if key %d's score moved by ds (gap changes by -ds):\n", D, j2);
  for (double ds : {-2.0, -1.5, -1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5}) {
    double l = 0, o = 0;
    for (int j = 0; j < n; ++j) {
      const double s = s64[j] + (j == j2 ? ds : 0.0);
      l += std::exp(s - m64), o += std::exp(s - m64) * vdq(j, D);
    }
    std::printf("  ds %+5.2f: O %.4f  LSE %.4f\n", ds, o / l, m64 + std::log(l));
  }
  return 0;
}
