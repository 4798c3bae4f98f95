// Online softmax on the S accumulator registers (FlashAttention-2's recurrence).
//
// Each thread holds two rows of S per 64-row warpgroup tile; the four threads of a quad share a
// row, so row reductions are a thread-local pass plus two shuffles. The running max is kept on
// raw scores; exponentials are exp2(s · scale·log2(e) − max · scale·log2(e)), one FFMA and one
// MUFU.EX2 per element (exp2_ftz). The row sum stays thread-partial until finalize().
#pragma once

#include <cute/tensor.hpp>

#include "attention/collective/sm90_fwd_fragment_layouts.hpp"

namespace hopattn::attention {

// 2^x on MUFU.EX2 with denormal results flushed to zero (ex2.approx.ftz.f32). exp2f keeps
// denormal results, which costs a range test and two predicated multiplies around every MUFU.EX2
// (FSETP.GEU + 2 FMUL: ncu, 2026-11-30 r38, hdim 128 non-causal 16k: 3 of the kernel's ~10
// instructions per score, where cuDNN's kernel has none). A softmax weight below 2^-126 is 0
// for every purpose here; exp2(-inf) is still +0 and NaN stays NaN.
CUTE_DEVICE float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// kMaxOffset: the exponents are taken against (row maximum − kMaxOffset), so that the row
// maximum's weight is exactly 2^kMaxOffset. 0 for 16-bit P. 8 for e4m3 P (FlashAttention-3's
// Max_offset): P in [0, 256] uses e4m3's range (max 448) and keeps fewer weights subnormal; it
// needs an exact maximum (stale_log2 0: with a stale one P could pass 448, and a kept maximum's
// weight 2^frac would round by up to 1/16 in e4m3 while the sum keeps it unrounded: the first
// FP8 kernel's accuracy failures, H100 2026-12-06).
// kSumsByMma: the row sums come from the P·V WGMMA (Fa2Traits::kMmaRowSum: O's last 8-column group
// accumulates each row's sum of the e4m3-rounded P, rescaled with O), so online_exp adds no score
// and finalize reads the sum from O; its LSE is then that of the rounded weights (the e4m3 rows
// without LSE; docs/perf-diagnosis-fa3.md §9d).
template <int kRows, int kMaxOffset = 0, bool kSumsByMma_ = false>
struct OnlineSoftmax {
  static constexpr bool kSumsByMma = kSumsByMma_;
  float row_max[kRows];   // the maximum the exponentials are taken against (see stale_log2)
  float row_sum[kRows];  // partial: this thread's columns only, until finalize()
  float scale_log2;
  // A row keeps its maximum while a new tile's scores exceed it by at most this much after
  // scaling (log2 units), so its weights stay ≤ 2^stale_log2 and O needs no rescale (the lazy
  // rescale of FlashAttention-4). 0: the maximum is always exact (weights ≤ 1).
  float stale_log2;
  float softcap_scale;  // apply_softcap's; 0: no softcap

  CUTE_DEVICE explicit OnlineSoftmax(float softmax_scale, float stale_log2_ = 0.0f, float softcap_scale_ = 0.0f)
      : scale_log2(softmax_scale * float(M_LOG2E)), stale_log2(stale_log2_), softcap_scale(softcap_scale_) {
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) row_max[r] = -INFINITY, row_sum[r] = 0.0f;
  }

  CUTE_DEVICE static float quad_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
  }
  CUTE_DEVICE static float quad_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
  }

  // Turns S into unnormalized P in place, updates the row maxima and sums, and returns in
  // alpha[] the factor the O accumulator must be scaled by for the new maxima (1 on the first
  // tile). Kept apart from rescale() so that a schedule can scale O only after an in-flight
  // P·V GEMM into O has completed.
  // kMaskedRows: a row may have had every earlier score masked (a window's left edge: the options
  // rows); its rescale factor is then 0. Without, a row's first tile has its first visible key
  // (the masks without a left edge), and the factor is computed as in 0.2, so that the plain
  // kernels compile to the same code.
  template <bool kFirst, bool kMaskedRows = false, class TensorS>
  CUTE_DEVICE void online_exp(TensorS& tSrS, float (&alpha)[kRows]) {
    auto s = acc_rowcol(tSrS);
    static_assert(decltype(cute::size<0>(s))::value == kRows);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      float m = row_max[r];
      CUTE_UNROLL
      for (int j = 0; j < cute::size<1>(s); ++j) m = fmaxf(m, s(r, j));
      m = quad_max(m);
      // Keep the row's maximum if the new one is within stale_log2 of it (the whole quad decides
      // alike: m and row_max are quad-uniform).
      const bool keep = !kFirst && row_max[r] != -INFINITY && (m - row_max[r]) * scale_log2 <= stale_log2;
      if (keep) m = row_max[r];
      // A row that has seen only masked scores keeps max = -inf; use 0 as the offset so that
      // exp2(-inf - 0) = 0 instead of NaN.
      const float offset = m == -INFINITY ? 0.0f : m * scale_log2 - float(kMaxOffset);
      alpha[r] = 1.0f;
      if constexpr (!kFirst) {
        if (!keep) {
          if constexpr (kMaskedRows) {
            // A row with no score yet (every earlier one masked: a window's left edge) has nothing
            // to rescale: alpha 0, which exp2(-inf - offset) is (scale_log2 > 0 and offset finite),
            // not exp2(0 - offset), which is inf for offset < -128. Without a select: one written
            // as `row_max == -inf ? 0 : exp2(..)` compiled to a branch around the exponential that
            // split the options kernels' softmax into a basic block per row (BSSY/BSYNC; cuobjdump
            // of the hdim-128 options row, 2026-12-07).
            alpha[r] = exp2_ftz(row_max[r] * scale_log2 - float(kMaxOffset) - offset);
          } else {
            const float old = row_max[r] == -INFINITY ? 0.0f : row_max[r] * scale_log2 - float(kMaxOffset);
            alpha[r] = exp2_ftz(old - offset);
          }
          if constexpr (!kSumsByMma) row_sum[r] *= alpha[r];
        }
      }
      row_max[r] = m;
      if constexpr (kSumsByMma) {
        CUTE_UNROLL
        for (int j = 0; j < cute::size<1>(s); ++j) s(r, j) = exp2_ftz(s(r, j) * scale_log2 - offset);
      } else {
        float sum = 0.0f;
        CUTE_UNROLL
        for (int j = 0; j < cute::size<1>(s); ++j) {
          s(r, j) = exp2_ftz(s(r, j) * scale_log2 - offset);
          sum += s(r, j);
        }
        row_sum[r] += sum;
      }
    }
  }

  template <class TensorO>
  CUTE_DEVICE static void rescale(TensorO& tOrO, float const (&alpha)[kRows]) {
    auto o = acc_rowcol(tOrO);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      CUTE_UNROLL
      for (int j = 0; j < cute::size<1>(o); ++j) o(r, j) *= alpha[r];
    }
  }

  // rescale(), left out when no row of the warp changed its maximum (every alpha 1): with
  // stale_log2 > 0 that is most tiles after the first few. Call with the whole warp.
  template <class TensorO>
  CUTE_DEVICE static void rescale_if_needed(TensorO& tOrO, float const (&alpha)[kRows]) {
    bool needed = false;
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) needed |= alpha[r] != 1.0f;
    if (__any_sync(0xffffffffu, needed)) rescale(tOrO, alpha);
  }

  // Both steps at once, for schedules whose O is not being written while the softmax runs.
  template <bool kFirst, class TensorS, class TensorO>
  CUTE_DEVICE void update(TensorS& tSrS, TensorO& tOrO) {
    float alpha[kRows];
    online_exp<kFirst>(tSrS, alpha);
    if constexpr (!kFirst) rescale(tOrO, alpha);
  }

  // O /= rowsum; returns per-row LSE (natural log) in lse[]. Rows with no visible key (sum 0)
  // get O = 0 and LSE = -inf. sink_log2: the row's attention sink (a logit that joins the
  // denominator without a value; FwdParams::sinks) times log2(e), or -inf for none: O /= (rowsum
  // + 2^sink), taken against the larger of the row's offset and the sink so that neither
  // overflows; a row with no visible key then gets O = 0 and LSE = the sink.
  template <class TensorO>
  CUTE_DEVICE void finalize(TensorO& tOrO, float (&lse)[kRows], float sink_log2 = -INFINITY) {
    auto o = acc_rowcol(tOrO);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      // By the MMA: O's last column (every column of its last 8-column group holds the row's sum).
      const float sum = kSumsByMma ? o(r, cute::size<1>(o) - 1) : quad_sum(row_sum[r]);
      const bool empty = sum == 0.0f || sum != sum;
      if (sink_log2 == -INFINITY) {  // (a compile-time -inf for the kernels without sinks: 0.2's code)
        const float inv = empty ? 0.0f : 1.0f / sum;
        CUTE_UNROLL
        for (int j = 0; j < cute::size<1>(o); ++j) o(r, j) *= inv;
        lse[r] = empty ? -INFINITY : (row_max[r] * scale_log2 - float(kMaxOffset)) * float(M_LN2) + logf(sum);
      } else {
        const float inv = normalize_with_sink(r, sum, empty, sink_log2, lse[r]);
        CUTE_UNROLL
        for (int j = 0; j < cute::size<1>(o); ++j) o(r, j) *= inv;
      }
    }
  }

  // finalize with a sink per row (sink_log2[r]: -inf for none): the decode kernels' packed rows
  // belong to different q-heads.
  template <class TensorO>
  CUTE_DEVICE void finalize_rows(TensorO& tOrO, float (&lse)[kRows], float const (&sink_log2)[kRows]) {
    auto o = acc_rowcol(tOrO);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const float sum = quad_sum(row_sum[r]);
      const bool empty = sum == 0.0f || sum != sum;
      float inv;
      if (sink_log2[r] == -INFINITY) {  // finalize's row without a sink
        inv = empty ? 0.0f : 1.0f / sum;
        lse[r] = empty ? -INFINITY : (row_max[r] * scale_log2 - float(kMaxOffset)) * float(M_LN2) + logf(sum);
      } else {
        inv = normalize_with_sink(r, sum, empty, sink_log2[r], lse[r]);
      }
      CUTE_UNROLL
      for (int j = 0; j < cute::size<1>(o); ++j) o(r, j) *= inv;
    }
  }

  // Row r's factor for O and its LSE with the sink (log2 units, not -inf) in the denominator:
  // against the larger of the row's offset and the sink, so that neither overflows.
  CUTE_DEVICE float normalize_with_sink(int r, float sum, bool empty, float sink_log2, float& lse_r) const {
    const float offset = empty ? -INFINITY : row_max[r] * scale_log2 - float(kMaxOffset);  // the exponents' offset
    const float top = fmaxf(offset, sink_log2);
    const float kept = empty ? 0.0f : exp2f(offset - top);  // the row's weights, rescaled to top
    const float total = (empty ? 0.0f : sum * kept) + exp2f(sink_log2 - top);
    lse_r = (top + log2f(total)) * float(M_LN2);
    return kept / total;
  }

  // Gemma 2's logit softcap on raw scores s: tanh(s · softcap_scale), where softcap_scale =
  // softmax_scale / softcap and the softmax then scales by softcap (FwdParams), so that the
  // exponent is softcap · tanh(softmax_scale · s / softcap). No-op when softcap_scale is 0.
  // tanh.approx.f32 (MUFU.TANH): max relative error 2^-11, below bf16's rounding of P.
  template <class TensorS>
  CUTE_DEVICE void apply_softcap(TensorS& tSrS) const {
    if (softcap_scale == 0.0f) return;
    CUTE_UNROLL
    for (int i = 0; i < cute::size(tSrS); ++i) {
      float y;
      asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(tSrS(i) * softcap_scale));
      tSrS(i) = y;
    }
  }
};

}  // namespace hopattn::attention
