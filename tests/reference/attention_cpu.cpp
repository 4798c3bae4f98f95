#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "attention_reference.hpp"
#include "common/dtype.hpp"

namespace hopattn::reference {

float AttnProblem::effective_scale() const {
  return scale != 0.0f ? scale : 1.0f / std::sqrt(float(hdim));
}

int AttnProblem::visible_keys(int i) const {
  if (!causal) return seqlen_k;
  return std::clamp(i + seqlen_k - seqlen_q + 1, 0, seqlen_k);
}

double AttnProblem::flops() const {
  double pairs = 0;
  if (!causal) {
    pairs = double(seqlen_q) * seqlen_k;
  } else {
    for (int i = 0; i < seqlen_q; ++i) pairs += visible_keys(i);
  }
  return 4.0 * batch * heads_q * pairs * hdim;
}

std::string AttnProblem::to_string() const {
  std::ostringstream os;
  os << "b=" << batch << " sq=" << seqlen_q << " sk=" << seqlen_k << " hq=" << heads_q
     << " hkv=" << heads_kv << " d=" << hdim << (causal ? " causal" : "") << " scale=" << effective_scale();
  return os.str();
}

namespace {

struct Index {
  const AttnProblem& p;
  int64_t q(int b, int s, int h) const { return ((int64_t(b) * p.seqlen_q + s) * p.heads_q + h) * p.hdim; }
  int64_t kv(int b, int s, int h) const { return ((int64_t(b) * p.seqlen_k + s) * p.heads_kv + h) * p.hdim; }
  int64_t lse(int b, int h, int s) const { return (int64_t(b) * p.heads_q + h) * p.seqlen_q + s; }
  int kv_head(int h) const { return h / (p.heads_q / p.heads_kv); }
};

}  // namespace

void attention_cpu_fp64(const AttnProblem& p, const float* q, const float* k, const float* v,
                        double* o, double* lse) {
  const Index ix{p};
  const double scale = p.effective_scale();
  std::vector<double> s(std::max(p.seqlen_k, 1));
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads_q; ++h)
      for (int i = 0; i < p.seqlen_q; ++i) {
        const int n = p.visible_keys(i), hk = ix.kv_head(h);
        const float* qi = q + ix.q(b, i, h);
        double* oi = o + ix.q(b, i, h);
        double m = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < n; ++j) {
          const float* kj = k + ix.kv(b, j, hk);
          double acc = 0;
          for (int d = 0; d < p.hdim; ++d) acc += double(qi[d]) * double(kj[d]);
          s[j] = acc * scale;
          m = std::max(m, s[j]);
        }
        double l = 0;
        for (int j = 0; j < n; ++j) l += (s[j] = std::exp(s[j] - m));
        for (int d = 0; d < p.hdim; ++d) oi[d] = 0;
        for (int j = 0; j < n; ++j) {
          const float* vj = v + ix.kv(b, j, hk);
          for (int d = 0; d < p.hdim; ++d) oi[d] += s[j] * double(vj[d]);
        }
        for (int d = 0; d < p.hdim && n > 0; ++d) oi[d] /= l;
        if (lse) lse[ix.lse(b, h, i)] = n > 0 ? m + std::log(l) : -std::numeric_limits<double>::infinity();
      }
}

void attention_cpu_lowp(const AttnProblem& p, hopattn_dtype_t dtype, const float* q,
                        const float* k, const float* v, float* o, float* lse) {
  const Index ix{p};
  const float scale = p.effective_scale();
  std::vector<float> s(std::max(p.seqlen_k, 1));
  std::vector<float> acc(p.hdim);
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads_q; ++h)
      for (int i = 0; i < p.seqlen_q; ++i) {
        const int n = p.visible_keys(i), hk = ix.kv_head(h);
        const float* qi = q + ix.q(b, i, h);
        float m = -std::numeric_limits<float>::infinity();
        for (int j = 0; j < n; ++j) {
          const float* kj = k + ix.kv(b, j, hk);
          float dot = 0;
          for (int d = 0; d < p.hdim; ++d) dot += qi[d] * kj[d];
          s[j] = round_to_dtype(dot * scale, dtype);
          m = std::max(m, s[j]);
        }
        float l = 0;
        for (int j = 0; j < n; ++j) l += (s[j] = std::exp(s[j] - m));
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int j = 0; j < n; ++j) {
          const float pj = round_to_dtype(s[j] / l, dtype);
          const float* vj = v + ix.kv(b, j, hk);
          for (int d = 0; d < p.hdim; ++d) acc[d] += pj * vj[d];
        }
        float* oi = o + ix.q(b, i, h);
        for (int d = 0; d < p.hdim; ++d) oi[d] = round_to_dtype(acc[d], dtype);
        if (lse) lse[ix.lse(b, h, i)] = n > 0 ? m + std::log(l) : -std::numeric_limits<float>::infinity();
      }
}

namespace {

template <typename T>
ErrorStats compare_impl(const double* ref, const T* got, int64_t n) {
  ErrorStats e;
  double diff2 = 0, ref2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double r = ref[i], g = double(got[i]);
    const bool r_fin = std::isfinite(r), g_fin = std::isfinite(g);
    if (std::isnan(g) || r_fin != g_fin || (!r_fin && r != g)) {
      if (e.first_bad < 0) e.first_bad = i;
      ++e.bad;
      continue;
    }
    if (!r_fin) continue;  // -inf == -inf (an LSE row with no visible key)
    e.max_abs = std::max(e.max_abs, std::abs(g - r));
    e.max_ref = std::max(e.max_ref, std::abs(r));
    diff2 += (g - r) * (g - r);
    ref2 += r * r;
  }
  e.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return e;
}

}  // namespace

ErrorStats compare(const double* ref, const float* got, int64_t n) { return compare_impl(ref, got, n); }
ErrorStats compare(const double* ref, const double* got, int64_t n) { return compare_impl(ref, got, n); }

double tolerance_bound(const ErrorStats& yardstick, hopattn_dtype_t dtype) {
  const double eps = dtype == HOPATTN_DTYPE_BF16 ? 0x1p-8 : dtype == HOPATTN_DTYPE_FP16 ? 0x1p-11 : 0x1p-24;
  return 2.0 * yardstick.max_abs + eps * yardstick.max_ref;
}

}  // namespace hopattn::reference
