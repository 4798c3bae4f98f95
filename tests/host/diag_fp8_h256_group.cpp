// Host-only companion of diag_fp8_h256_row.cpp: the (batch 3, kv-head 0) group of
// Fp8Forward.ManyTilesPerCta at hdim 256 (seed 506, non-causal; 8 q-heads x 1000 rows, group
// scale 8, the group that holds the reported worst element), emulated under several models of the
// FP8 WGMMA's accumulation: the kernel (codes, online softmax per 64-key block, offset 8, P e4m3,
// row sum of fp32 P, O x v_descale) and the GPU yardstick (dequantized floats, 128-key chunks,
// P = e4m3(exp(s - m))). Prints each emulation's max |O - fp64|, where, and the group's share of
// the whole case's RMSE (the other groups' errors are orders of magnitude smaller). Build:
//   g++ -std=c++20 -O3 -march=native -pthread -Itests/reference -Iinclude -Isrc tests/host/diag_fp8_h256_group.cpp \
//       tests/reference/attention_fp8.cpp tests/reference/e4m3.cpp tests/reference/attention_cpu.cpp src/common/dtype.cpp
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "attention_fp8.hpp"
#include "e4m3.hpp"

using namespace hopattn::reference;
using hopattn::gemm::tools::e4m3_from_float;
using hopattn::gemm::tools::e4m3_to_float;

namespace {

std::vector<float> case_inputs(const AttnProblem& p, int seqlen, int heads, uint64_t seed) {  // fp8_case_inputs
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
float truncate_bits(float x, int bits) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u &= ~((1u << (23 - bits)) - 1u);
  std::memcpy(&x, &u, 4);
  return x;
}

// An accumulation model: per k-step of 32 products, the products aligned to the largest of them
// (and, with align_acc, of the incoming accumulator) and cut to prod_bits fraction bits below it,
// toward zero; the accumulator cut to acc_bits fraction bits after each step. fp32: plain float.
struct AccModel {
  std::string name;
  int prod_bits = 13, acc_bits = 13;
  bool align_acc = false, fp32 = false;
};

template <class Product>
float accumulate(float acc, Product product, int n, const AccModel& m) {
  if (m.fp32) {
    for (int i = 0; i < n; ++i) acc += product(i);
    return acc;
  }
  float pr[32];
  for (int i0 = 0; i0 < n; i0 += 32) {
    const int cnt = std::min(32, n - i0);
    float largest = m.align_acc ? std::fabs(acc) : 0.0f;
    for (int i = 0; i < cnt; ++i) largest = std::max(largest, std::fabs(pr[i] = product(i0 + i)));
    float step = 0.0f;
    if (largest > 0.0f) {
      const int e = std::ilogb(largest) - m.prod_bits;
      const float quantum = std::ldexp(1.0f, std::max(e, -149));
      for (int i = 0; i < cnt; ++i) step += std::trunc(pr[i] / quantum) * quantum;
      if (m.align_acc) acc = std::trunc(acc / quantum) * quantum;
    }
    acc = truncate_bits(acc + step, m.acc_bits);
  }
  return acc;
}

struct Stats {
  double max_err = 0, sse = 0;
  int at_i = -1, at_h = -1, at_d = -1;
  float at_got = 0;
  double at_ref = 0;
  float row914 = NAN;
  double lse_max_err = 0;  // O at (q 914, h 3, d 230), the GPU's worst element
};

}  // namespace

int main(int argc, char** argv) {
  // Environment HD and SEED: another head dim / seed of ManyTilesPerCta's non-causal shape (the
  // kernel's block then 128 keys at hdim <= 128); the defaults are the reported case.
  const int env_hd = std::getenv("HD") ? std::atoi(std::getenv("HD")) : 256;
  AttnProblem p{4, 1000, 1000, 16, 2, env_hd, false, 0.0f};
  const uint64_t seed = std::getenv("SEED") ? std::strtoull(std::getenv("SEED"), nullptr, 10) : 506;
  const int kernel_block = env_hd > 128 ? 64 : 128;
  const int B = 3, HK = 0, hd = p.hdim, n = p.seqlen_k, group = p.heads_q / p.heads_kv;
  const std::vector<float> qf = case_inputs(p, p.seqlen_q, p.heads_q, seed * 3 + 0);
  const std::vector<float> kf = case_inputs(p, p.seqlen_k, p.heads_kv, seed * 3 + 1);
  const std::vector<float> vf = case_inputs(p, p.seqlen_k, p.heads_kv, seed * 3 + 2);
  const Fp8Tensor q = quantize_e4m3(qf, p.batch, p.seqlen_q, p.heads_q, hd, p.heads_kv, true);
  const Fp8Tensor k = quantize_e4m3(kf, p.batch, p.seqlen_k, p.heads_kv, hd, p.heads_kv, true);
  const Fp8Tensor v = quantize_e4m3(vf, p.batch, p.seqlen_k, p.heads_kv, hd, p.heads_kv, true);
  const float qd = q.descale[B * p.heads_kv + HK], kd = k.descale[B * p.heads_kv + HK], vd = v.descale[B * p.heads_kv + HK];
  const float scale = p.effective_scale();
  const float scale_log2 = scale * qd * kd * float(M_LOG2E);
  auto qoff = [&](int i, int h) { return ((int64_t(B) * p.seqlen_q + i) * p.heads_q + h) * hd; };
  auto koff = [&](int j) { return ((int64_t(B) * p.seqlen_k + j) * p.heads_kv + HK) * hd; };
  // Codes and dequantized values of the group, K and V as (key, channel) and V also (channel, key).
  std::vector<float> kc(size_t(n) * hd), kdq(size_t(n) * hd), vct(size_t(hd) * n), vdqt(size_t(hd) * n);
  for (int j = 0; j < n; ++j)
    for (int c = 0; c < hd; ++c) {
      kc[size_t(j) * hd + c] = e4m3_to_float(k.codes[koff(j) + c]);
      kdq[size_t(j) * hd + c] = k.dequant[koff(j) + c];
      vct[size_t(c) * n + j] = e4m3_to_float(v.codes[koff(j) + c]);
      vdqt[size_t(c) * n + j] = v.dequant[koff(j) + c];
    }

  std::vector<AccModel> models;
  {
    AccModel m;
    m.name = "fp32 (no FP8 accumulation effect)";
    m.fp32 = true;
    models.push_back(m);
    m = AccModel{};
    m.name = "fp8_accumulate.hpp (step aligned to its largest product, 13/13 bits)";
    models.push_back(m);
    for (int bits : {12, 11, 10}) {
      m = AccModel{};
      m.prod_bits = m.acc_bits = bits;
      m.name = "as fp8_accumulate.hpp with " + std::to_string(bits) + "/" + std::to_string(bits) + " bits";
      models.push_back(m);
    }
    m = AccModel{};
    m.align_acc = true;
    m.name = "products aligned with the accumulator (max of |acc| and products), 13/13 bits";
    models.push_back(m);
  }
  const int only = argc > 1 ? std::atoi(argv[1]) : -1;
  // argv[3] = 1: the "yardstick" row is the kernel's recurrence on the codes (offset 8, v_descale
  // after the normalisation) in the GPU yardstick's 128-key chunks: a yardstick in the kernel's domain.
  const bool codes_yard = argc > 3 && std::atoi(argv[3]) != 0;
  const int pv_split = argc > 2 ? std::atoi(argv[2]) : -1;  // P·V under another model than Q·Kᵀ
  if (pv_split >= 0) std::printf("P·V under: %s\n", models[size_t(pv_split)].name.c_str());

  // fp64 once.
  std::vector<double> o64(size_t(group) * p.seqlen_q * hd), lse64(size_t(group) * p.seqlen_q);
  auto worker64 = [&](int h0, int h1) {
    std::vector<double> s(n);
    for (int h = h0; h < h1; ++h)
      for (int i = 0; i < p.seqlen_q; ++i) {
        const float* qr = q.dequant.data() + qoff(i, h);
        double m = -INFINITY;
        for (int j = 0; j < n; ++j) {
          double a = 0;
          for (int c = 0; c < hd; ++c) a += double(qr[c]) * double(kdq[size_t(j) * hd + c]);
          s[j] = a * double(scale);
          m = std::max(m, s[j]);
        }
        double l = 0;
        for (int j = 0; j < n; ++j) l += (s[j] = std::exp(s[j] - m));
        lse64[size_t(h) * p.seqlen_q + i] = m + std::log(l);
        for (int c = 0; c < hd; ++c) {
          double o = 0;
          for (int j = 0; j < n; ++j) o += s[j] * double(vdqt[size_t(c) * n + j]);
          o64[(size_t(h) * p.seqlen_q + i) * hd + c] = o / l;
        }
      }
  };
  {
    std::thread t(worker64, 0, group / 2);
    worker64(group / 2, group);
    t.join();
  }
  auto ref = [&](int h, int i, int c) { return o64[(size_t(h) * p.seqlen_q + i) * hd + c]; };

  // kernel = true: the FP8 kernel's recurrence on the codes; false: the GPU yardstick's. block: keys
  // per online-softmax step (the kernel's 64, the GPU yardstick's 128).
  auto emulate = [&](const AccModel& model, const AccModel& pv_model, bool kernel, int block, Stats& st_out) {
    Stats st[2];
    auto work = [&](int h0, int h1, Stats& st) {
      std::vector<float> s(n), pr(128), qc(hd);
      std::vector<float> o(hd);
      for (int h = h0; h < h1; ++h)
        for (int i = 0; i < p.seqlen_q; ++i) {
          const float* qr = kernel ? qc.data() : q.dequant.data() + qoff(i, h);
          if (kernel)
            for (int c = 0; c < hd; ++c) qc[c] = e4m3_to_float(q.codes[qoff(i, h) + c]);
          const float* kk = kernel ? kc.data() : kdq.data();
          const float* vv = kernel ? vct.data() : vdqt.data();
          for (int j = 0; j < n; ++j) {
            const float* kr = kk + size_t(j) * hd;
            s[j] = accumulate(0.0f, [&](int c) { return qr[c] * kr[c]; }, hd, model);
            if (!kernel) s[j] *= scale;  // the yardstick: natural-log units
          }
          float m = -INFINITY, l = 0;
          std::fill(o.begin(), o.end(), 0.0f);
          for (int j0 = 0; j0 < n; j0 += block) {
            const int j1 = std::min(n, j0 + block);
            float mn = m;
            for (int j = j0; j < j1; ++j) mn = std::max(mn, s[j]);
            float alpha;
            if (kernel) {
              const float old = m == -INFINITY ? 0.0f : m * scale_log2 - 8.0f, off = mn * scale_log2 - 8.0f;
              alpha = j0 == 0 ? 1.0f : std::exp2(old - off);
              for (int j = j0; j < j1; ++j) {
                const float e = std::exp2(std::fma(s[j], scale_log2, -off));
                l = (j == j0 ? l * alpha : l) + e;
                pr[j - j0] = round_e4m3(e);
              }
            } else {
              alpha = std::exp(m - mn);
              float sum = 0;
              for (int j = j0; j < j1; ++j) {
                const float e = std::exp(s[j] - mn);
                sum += e;
                pr[j - j0] = round_e4m3(e);
              }
              l = l * alpha + sum;
            }
            m = mn;
            for (int c = 0; c < hd; ++c) {
              const float* vr = vv + size_t(c) * n + j0;
              o[c] = accumulate(o[c] * alpha, [&](int t) { return pr[t] * vr[t]; }, j1 - j0, pv_model);
            }
          }
          const float inv = 1.0f / l;
          const float lse = kernel ? (m * scale_log2 - 8.0f) * float(M_LN2) + std::log(l) : m + std::log(l);
          st.lse_max_err = std::max(st.lse_max_err, std::fabs(double(lse) - lse64[size_t(h) * p.seqlen_q + i]));
          for (int c = 0; c < hd; ++c) {
            const float got = kernel ? round_bf16(o[c] * inv * vd) : round_bf16(o[c] / l);
            const double e = std::fabs(double(got) - ref(h, i, c));
            st.sse += e * e;
            if (h == 3 && i == 914 && c == 230) st.row914 = got;
            if (e > st.max_err) st.max_err = e, st.at_i = i, st.at_h = h, st.at_d = c, st.at_got = got, st.at_ref = ref(h, i, c);
          }
        }
    };
    std::thread t(work, 0, group / 2, std::ref(st[0]));
    work(group / 2, group, st[1]);
    t.join();
    st_out = st[0].max_err >= st[1].max_err ? st[0] : st[1];
    st_out.sse = st[0].sse + st[1].sse;
    st_out.lse_max_err = std::max(st[0].lse_max_err, st[1].lse_max_err);
    st_out.row914 = std::isnan(st[0].row914) ? st[1].row914 : st[0].row914;
  };

  const double n_total = double(p.q_elems());
  std::printf("group (b %d, kv-head %d): q-heads 0..%d, 1000 rows; RMSE below is this group's share of the whole case's\n"
              "(sqrt(SSE_group / all %.0f elements)); the GPU reported kernel 2.19 at (q 914, h 3, d 230), RMSE 0.0167;\n"
              "yardstick max 0.732, RMSE 0.0108\n\n", B, HK, group - 1, n_total);
  for (size_t mi = 0; mi < models.size(); ++mi) {
    if (only >= 0 && int(mi) != only) continue;
    for (int kernel = 1; kernel >= 0; --kernel) {
      Stats st;
      emulate(models[mi], pv_split >= 0 ? models[pv_split] : models[mi], kernel != 0 || codes_yard, kernel ? kernel_block : 128, st);
      double ref914 = ref(3, 914, 230);
      std::printf("%-9s %-80s max %.4f at (q %d, h %d, d %d: got %.4f, fp64 %.4f)  RMSE share %.5f  O(914,3,230) %.4f (fp64 %.4f)  LSE max err %.4f\n",
                  kernel ? "kernel" : codes_yard ? "yard-code" : "yardstick", models[mi].name.c_str(), st.max_err, st.at_i, st.at_h, st.at_d,
                  st.at_got, st.at_ref, std::sqrt(st.sse / n_total), st.row914, ref914, st.lse_max_err);
      std::fflush(stdout);
    }
  }
  return 0;
}
