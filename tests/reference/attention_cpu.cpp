#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "attention_reference.hpp"
#include "common/dtype.hpp"

namespace hopattn::reference {

float AttnProblem::effective_scale() const {
  return scale != 0.0f ? scale : 1.0f / std::sqrt(float(hdim));
}

AttnProblem::KeyRange AttnProblem::visible_range(int i) const {
  // In 64 bits: pos ± a window side of up to 2^31-1 must not wrap.
  const int64_t pos = int64_t(i) + seqlen_k - seqlen_q;
  int64_t begin = 0, end = seqlen_k;
  if (causal) end = std::min(end, pos + 1);
  if (window && window_left >= 0) begin = std::max(begin, pos - window_left);
  if (window && window_right >= 0) end = std::min(end, pos + 1 + window_right);
  begin = std::clamp<int64_t>(begin, 0, seqlen_k);
  end = std::clamp<int64_t>(end, begin, seqlen_k);
  return {int(begin), int(end)};
}

int AttnProblem::visible_keys(int i) const {
  const KeyRange r = visible_range(i);
  return r.end - r.begin;
}

double AttnProblem::sink(int h) const {
  return sinks.empty() ? -std::numeric_limits<double>::infinity() : double(sinks.at(h));
}

double AttnProblem::flops() const {
  double pairs = 0;
  for (int i = 0; i < seqlen_q; ++i) pairs += visible_keys(i);
  return 4.0 * batch * heads_q * pairs * hdim;
}

std::string AttnProblem::to_string() const {
  std::ostringstream os;
  os << "b=" << batch << " sq=" << seqlen_q << " sk=" << seqlen_k << " hq=" << heads_q
     << " hkv=" << heads_kv << " d=" << hdim << (causal ? " causal" : "") << " scale=" << effective_scale();
  if (window) os << " window=(" << window_left << "," << window_right << ")";
  if (softcap > 0.0f) os << " softcap=" << softcap;
  if (!sinks.empty()) {
    constexpr size_t kShown = 8;
    os << " sinks=[";
    for (size_t h = 0; h < std::min(sinks.size(), kShown); ++h) os << (h ? "," : "") << sinks[h];
    os << (sinks.size() > kShown ? ",...]" : "]");
  }
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

void check_sinks(const AttnProblem& p) {
  if (!p.sinks.empty() && p.sinks.size() != size_t(p.heads_q))
    throw std::invalid_argument("attention reference: " + std::to_string(p.sinks.size()) + " sinks for " +
                                std::to_string(p.heads_q) + " q-heads");
}

}  // namespace

void attention_cpu_fp64(const AttnProblem& p, const float* q, const float* k, const float* v,
                        double* o, double* lse) {
  check_sinks(p);
  const Index ix{p};
  const double scale = p.effective_scale(), cap = p.softcap;
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  std::vector<double> s(std::max(p.seqlen_k, 1));
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads_q; ++h)
      for (int i = 0; i < p.seqlen_q; ++i) {
        const AttnProblem::KeyRange r = p.visible_range(i);
        const int hk = ix.kv_head(h);
        const double sink = p.sink(h);
        const float* qi = q + ix.q(b, i, h);
        double* oi = o + ix.q(b, i, h);
        double m = sink;  // the sink joins the row's maximum and denominator
        for (int j = r.begin; j < r.end; ++j) {
          const float* kj = k + ix.kv(b, j, hk);
          double acc = 0;
          for (int d = 0; d < p.hdim; ++d) acc += double(qi[d]) * double(kj[d]);
          s[j] = acc * scale;
          if (cap > 0) s[j] = cap * std::tanh(s[j] / cap);
          m = std::max(m, s[j]);
        }
        for (int d = 0; d < p.hdim; ++d) oi[d] = 0;
        if (m == kNegInf) {  // no key and no sink (or a -inf one)
          if (lse) lse[ix.lse(b, h, i)] = kNegInf;
          continue;
        }
        double l = std::exp(sink - m);  // 0 without a sink
        for (int j = r.begin; j < r.end; ++j) l += (s[j] = std::exp(s[j] - m));
        for (int j = r.begin; j < r.end; ++j) {
          const float* vj = v + ix.kv(b, j, hk);
          for (int d = 0; d < p.hdim; ++d) oi[d] += s[j] * double(vj[d]);
        }
        for (int d = 0; d < p.hdim; ++d) oi[d] /= l;
        if (lse) lse[ix.lse(b, h, i)] = m + std::log(l);
      }
}

void attention_cpu_lowp(const AttnProblem& p, hopattn_dtype_t dtype, const float* q,
                        const float* k, const float* v, float* o, float* lse) {
  check_sinks(p);
  const Index ix{p};
  const float scale = p.effective_scale(), cap = p.softcap;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  std::vector<float> s(std::max(p.seqlen_k, 1));
  std::vector<float> acc(p.hdim);
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads_q; ++h)
      for (int i = 0; i < p.seqlen_q; ++i) {
        const AttnProblem::KeyRange r = p.visible_range(i);
        const int hk = ix.kv_head(h);
        const float sink = float(p.sink(h));
        const float* qi = q + ix.q(b, i, h);
        float m = sink;
        for (int j = r.begin; j < r.end; ++j) {
          const float* kj = k + ix.kv(b, j, hk);
          float dot = 0;
          for (int d = 0; d < p.hdim; ++d) dot += qi[d] * kj[d];
          s[j] = round_to_dtype(dot * scale, dtype);
          // The cap in float on S in the dtype, its result rounded to the dtype again: the score
          // matrix of plain attention lives in the dtype (FlashAttention's reference computes the
          // cap on that tensor). The extra rounding also covers a kernel's tanh.approx.f32
          // (relative error up to 2^-11, as large as fp16's rounding of the capped score).
          if (cap > 0) s[j] = round_to_dtype(cap * std::tanh(s[j] / cap), dtype);
          m = std::max(m, s[j]);
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        float l = 0;
        if (m != kNegInf) {  // else no key and no sink: O = 0, LSE = -inf
          l = std::exp(sink - m);
          for (int j = r.begin; j < r.end; ++j) l += (s[j] = std::exp(s[j] - m));
          for (int j = r.begin; j < r.end; ++j) {
            const float pj = round_to_dtype(s[j] / l, dtype);
            const float* vj = v + ix.kv(b, j, hk);
            for (int d = 0; d < p.hdim; ++d) acc[d] += pj * vj[d];
          }
        }
        float* oi = o + ix.q(b, i, h);
        for (int d = 0; d < p.hdim; ++d) oi[d] = round_to_dtype(acc[d], dtype);
        if (lse) lse[ix.lse(b, h, i)] = l > 0 ? m + std::log(l) : kNegInf;
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
