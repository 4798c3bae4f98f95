// References for forward attention.
//
//  * attention_cpu_fp64: the exact answer in float64 (two passes per row), for small problems.
//  * attention_cpu_lowp: "plain attention in the input dtype", the yardstick of FlashAttention's
//    tolerance rule: S = Q·Kᵀ rounded to the dtype (with a softcap: capped in float32 and rounded
//    again), softmax in float32, P rounded to the dtype, O = P·V accumulated in float32 and
//    rounded to the dtype. A fused kernel passes when its error against fp64 is at most 2× this
//    one's (plus a small floor).
//  * attention_gpu (attention_gpu.hpp): a naive GPU kernel, one block per query row, with an
//    online softmax in float64 (or float32 with P rounded, as the yardstick), for problems too
//    large for the CPU.
//
// Layouts: q, o (batch, seqlen_q, heads_q, hdim) and k, v (batch, seqlen_k, heads_kv, hdim),
// contiguous; lse (batch, heads_q, seqlen_q), natural log. The options are hopattn.h's:
//  * causal, bottom-right aligned: query i, at key position pos = i + seqlen_k - seqlen_q, sees
//    key j iff j <= pos;
//  * window (FlashAttention's window_size): query i sees key j iff pos - window_left <= j <=
//    pos + window_right, -1 leaving a side unbounded (with causal the right side is causal's);
//  * softcap > 0: each scaled score s becomes softcap · tanh(s / softcap) before the softmax;
//  * sinks: a logit per q-head (neither scaled nor capped) in every row's softmax denominator.
// The keys a row sees are one contiguous range (visible_range). A row that sees no key has O = 0
// and LSE = -inf, or LSE = sink_h with a sink.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hopattn/hopattn.h"

namespace hopattn::reference {

struct AttnProblem {
  int batch = 1;
  int seqlen_q = 1;
  int seqlen_k = 1;
  int heads_q = 1;
  int heads_kv = 1;
  int hdim = 64;
  bool causal = false;
  float scale = 0.0f;  // 0: 1/sqrt(hdim)
  bool window = false;    // window_left / window_right apply
  int window_left = -1;   // -1: unbounded
  int window_right = -1;  // -1: unbounded
  float softcap = 0.0f;   // 0: off
  // Empty: no sinks. Otherwise heads_q logits, finite or -inf (the same as no sink for that head).
  std::vector<float> sinks{};

  // The keys query i sees: [begin, end), begin == end when none.
  struct KeyRange {
    int begin = 0, end = 0;
  };

  float effective_scale() const;
  int64_t q_elems() const { return int64_t(batch) * seqlen_q * heads_q * hdim; }
  int64_t kv_elems() const { return int64_t(batch) * seqlen_k * heads_kv * hdim; }
  int64_t lse_elems() const { return int64_t(batch) * heads_q * seqlen_q; }
  KeyRange visible_range(int i) const;
  // The number of keys query i sees (0 when masked out entirely).
  int visible_keys(int i) const;
  // The sink logit of q-head h (-inf without sinks).
  double sink(int h) const;
  // FLOPs of the two GEMMs: 4·b·h·d per visible (query, key) pair (4·b·h·sq·sk·d without a mask).
  double flops() const;
  std::string to_string() const;
};

// Inputs are float values (already representable in the dtype under test).
void attention_cpu_fp64(const AttnProblem& p, const float* q, const float* k, const float* v,
                        double* o, double* lse);
void attention_cpu_lowp(const AttnProblem& p, hopattn_dtype_t dtype, const float* q,
                        const float* k, const float* v, float* o, float* lse);

// Error of `got` against `ref` over n elements. NaN in `got` (an unwritten, NaN-poisoned
// element, or a computed NaN) is counted, never hidden in the maxima; -inf must match -inf.
struct ErrorStats {
  double max_abs = 0.0;
  double rel_l2 = 0.0;   // ||got - ref|| / ||ref||
  double max_ref = 0.0;  // max |ref| over finite entries
  int64_t bad = 0;       // NaN, or infinite where ref is finite (and vice versa)
  int64_t first_bad = -1;
};
ErrorStats compare(const double* ref, const float* got, int64_t n);
ErrorStats compare(const double* ref, const double* got, int64_t n);

// FlashAttention's rule: err(kernel) <= 2 * err(lowp yardstick) + floor, floor = eps(dtype) *
// max|ref| (one rounding of the largest output). Returns the bound.
double tolerance_bound(const ErrorStats& yardstick, hopattn_dtype_t dtype);

}  // namespace hopattn::reference
