// Host-only check of the FP8 yardstick on the codes (attention_cpu_fp8_lowp with Fp8Tensor::values
// and the descales): one (batch, kv-head) group of Fp8Forward.ManyTilesPerCta's non-causal case
// (4 x 1000 x 1000, 16 q-heads, 2 kv-heads), by default hdim 256, seed 506, (b 3, kv-head 0): the
// group that holds the GPU's worst element (2.19 at (q 914, h 3, d 230), -14.625, fp64 -12.44).
// Prints the yardstick's max |O - fp64| and LSE error on the group, its O at (914, 3, 230), and
// the same for the yardstick run on the dequantized floats (descales 1; the pre-codes domain).
// diag_fp8_h256_group.cpp's "kernel" row is the independent emulation of the kernel to compare
// with. Build (from the repository root):
//   g++ -std=c++20 -O3 -march=native -pthread -Itests/reference -Iinclude -Isrc tests/host/diag_fp8_yardstick_codes.cpp \
//       tests/reference/attention_fp8.cpp tests/reference/e4m3.cpp tests/reference/attention_cpu.cpp src/common/dtype.cpp
// Run: ./a.out [hdim seed batch kv_head]; ./a.out hdim seed all [causal]: the whole case
// (judge_fp8's O bound, 2 x the yardstick's max error + 2^-8 x its largest |O|, and LSE errors).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "attention_fp8.hpp"
#include "fp8_accumulate.hpp"

using namespace hopattn::reference;

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

}  // namespace

int main(int argc, char** argv) {
  const int hd = argc > 1 ? std::atoi(argv[1]) : 256;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 506;
  const bool all = argc > 3 && std::string(argv[3]) == "all";
  const int B = argc > 3 && !all ? std::atoi(argv[3]) : 3, HK = argc > 4 && !all ? std::atoi(argv[4]) : 0;
  const AttnProblem p{4, 1000, 1000, 16, 2, hd, all && argc > 4 && std::atoi(argv[4]) != 0, 0.0f};
  const std::vector<float> qf = case_inputs(p, p.seqlen_q, p.heads_q, seed * 3 + 0);
  const std::vector<float> kf = case_inputs(p, p.seqlen_k, p.heads_kv, seed * 3 + 1);
  const std::vector<float> vf = case_inputs(p, p.seqlen_k, p.heads_kv, seed * 3 + 2);
  const Fp8Tensor q = quantize_e4m3(qf, p.batch, p.seqlen_q, p.heads_q, hd, p.heads_kv, true);
  const Fp8Tensor k = quantize_e4m3(kf, p.batch, p.seqlen_k, p.heads_kv, hd, p.heads_kv, true);
  const Fp8Tensor v = quantize_e4m3(vf, p.batch, p.seqlen_k, p.heads_kv, hd, p.heads_kv, true);
  if (all) {  // the whole case, one thread per half of the batch
    std::vector<double> o64(size_t(p.q_elems())), l64(size_t(p.lse_elems()));
    std::vector<float> o(o64.size()), l(l64.size());
    auto part = [&](int b0, int b1) {
      AttnProblem s = p;
      s.batch = b1 - b0;
      const size_t qo = size_t(b0) * p.seqlen_q * p.heads_q * hd, ko = size_t(b0) * p.seqlen_k * p.heads_kv * hd;
      const size_t lo = size_t(b0) * p.heads_q * p.seqlen_q, dso = size_t(b0) * p.heads_kv;
      attention_cpu_fp64(s, q.dequant.data() + qo, k.dequant.data() + ko, v.dequant.data() + ko, o64.data() + qo, l64.data() + lo);
      attention_cpu_fp8_lowp(s, q.values.data() + qo, k.values.data() + ko, v.values.data() + ko, q.descale.data() + dso,
                             k.descale.data() + dso, v.descale.data() + dso, o.data() + qo, l.data() + lo);
    };
    std::thread th(part, 0, p.batch / 2);
    part(p.batch / 2, p.batch);
    th.join();
    const ErrorStats eo = compare(o64.data(), o.data(), p.q_elems()), el = compare(l64.data(), l.data(), p.lse_elems());
    std::printf("%s: yardstick on the codes: max O err %.4f (bound 2 x that + 2^-8 x %.4g = %.4f), RMSE %.5f, LSE max err %.4f\n",
                p.to_string().c_str(), eo.max_abs, eo.max_ref, 2 * eo.max_abs + 0x1p-8 * eo.max_ref,
                rmse(o64.data(), o.data(), p.q_elems()), el.max_abs);
    return 0;
  }
  const int group = p.heads_q / p.heads_kv, half = group / 2;
  const size_t bh = size_t(B) * p.heads_kv + HK;
  const float qd = q.descale[bh], kd = k.descale[bh], vd = v.descale[bh];
  // The group as two problems of half the q-heads each (one per thread), one kv-head.
  const AttnProblem sub{1, p.seqlen_q, p.seqlen_k, half, 1, hd, false, 0.0f};
  std::vector<float> qv[2], qdq[2], kv(size_t(sub.kv_elems())), kdq(kv.size()), vv(kv.size()), vdq(kv.size());
  for (int j = 0; j < p.seqlen_k; ++j)
    for (int c = 0; c < hd; ++c) {
      const size_t src = ((size_t(B) * p.seqlen_k + j) * p.heads_kv + HK) * hd + c, dst = size_t(j) * hd + c;
      kv[dst] = k.values[src], kdq[dst] = k.dequant[src], vv[dst] = v.values[src], vdq[dst] = v.dequant[src];
    }
  for (int t = 0; t < 2; ++t) {
    qv[t].resize(size_t(sub.q_elems())), qdq[t].resize(qv[t].size());
    for (int i = 0; i < p.seqlen_q; ++i)
      for (int h = 0; h < half; ++h)
        for (int c = 0; c < hd; ++c) {
          const size_t src = ((size_t(B) * p.seqlen_q + i) * p.heads_q + HK * group + t * half + h) * hd + c;
          const size_t dst = (size_t(i) * half + h) * hd + c;
          qv[t][dst] = q.values[src], qdq[t][dst] = q.dequant[src];
        }
  }
  std::vector<double> o64[2], l64[2];
  std::vector<float> oc[2], lc[2], od[2], ld[2];
  auto work = [&](int t) {
    o64[t].resize(size_t(sub.q_elems())), l64[t].resize(size_t(sub.lse_elems()));
    oc[t].resize(o64[t].size()), lc[t].resize(l64[t].size()), od[t].resize(o64[t].size()), ld[t].resize(l64[t].size());
    attention_cpu_fp64(sub, qdq[t].data(), kdq.data(), vdq.data(), o64[t].data(), l64[t].data());
    attention_cpu_fp8_lowp(sub, qv[t].data(), kv.data(), vv.data(), &qd, &kd, &vd, oc[t].data(), lc[t].data());
    attention_cpu_fp8_lowp(sub, qdq[t].data(), kdq.data(), vdq.data(), nullptr, nullptr, nullptr, od[t].data(), ld[t].data());
  };
  std::thread th(work, 1);
  work(0);
  th.join();
  std::printf("hdim %d seed %llu group (b %d, kv-head %d), descales q %.4g k %.4g v %.4g, block_n %d\n", hd,
              (unsigned long long)seed, B, HK, qd, kd, vd, fp8_kernel_block_n(hd));
  for (int which = 0; which < 2; ++which) {
    double max_err = 0, lse_err = 0, sse = 0, at_ref = 0;
    int at_i = 0, at_h = 0, at_d = 0;
    float at_got = 0, o914 = NAN;
    for (int t = 0; t < 2; ++t) {
      const std::vector<float>& o = which == 0 ? oc[t] : od[t];
      const std::vector<float>& l = which == 0 ? lc[t] : ld[t];
      for (size_t e = 0; e < o.size(); ++e) {
        const double err = std::fabs(double(o[e]) - o64[t][e]);
        sse += err * err;
        const int c = int(e % hd), h = t * half + int(e / hd % half), i = int(e / hd / half);
        if (i == 914 && h == 3 && c == 230) o914 = o[e];
        if (err > max_err) max_err = err, at_i = i, at_h = h, at_d = c, at_got = o[e], at_ref = o64[t][e];
      }
      for (size_t e = 0; e < l.size(); ++e) lse_err = std::max(lse_err, std::fabs(double(l[e]) - l64[t][e]));
    }
    std::printf("%-34s max O err %.4f at (q %d, h %d, d %d: %.4f, fp64 %.4f)  RMSE share %.5f  O(914,3,230) %.4f  LSE max err %.4f\n",
                which == 0 ? "yardstick on the codes" : "yardstick on dequantized floats", max_err, at_i, at_h, at_d,
                at_got, at_ref, std::sqrt(sse / double(p.q_elems())), o914, lse_err);
  }
  return 0;
}
