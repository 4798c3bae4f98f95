// The epilogue of the decode kernels whose consumer holds O in a WGMMA accumulator of 64 rows:
// O and LSE to their strided places, or the split's fp32 partials to the workspace.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cutlass/numeric_conversion.h>

#include "attention/collective/sm90_decode_tile.hpp"
#include "attention/collective/sm90_fwd_fragment_layouts.hpp"

namespace hopattn::attention {

// The attention sinks of the accumulator's rows (log2 units; -inf for a padding row), for
// OnlineSoftmax::finalize_rows: loaded before the KV loop, used after it. The split kernels add
// them only when the CTA writes the output itself (one slot); with several, the combine does.
template <class Params, class TensorSC, int kRows>
CUTE_DEVICE void load_decode_sinks(Params const& p, DecodeTile const& t, TensorSC const& tScS, float (&sink_log2)[kRows]) {
  auto c = acc_rowcol(tScS);
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const int row = t.row0 + cute::get<0>(c(r, 0));
    sink_log2[r] = row < t.rows ? p.sinks[t.head(row)] * float(M_LOG2E) : -INFINITY;
  }
}

// Epilogue: O (output type) and LSE to their strided places, or with `partial` (several splits)
// fp32 partials into the workspace slot t.slot. A bad length writes NaN. `thread` indexes the
// consumer warpgroup.
template <class Traits, class TensorO, class TensorOC, class TensorSC, int kRows>
CUTE_DEVICE void store_decode_output(typename Traits::Params const& p, DecodeTile const& t, TensorO& tOrO,
                                     TensorOC const& tOcO, TensorSC const& tScS, float (&lse)[kRows], int thread,
                                     bool partial) {
  using namespace cute;
  using Element = typename Traits::Element;
  constexpr int kHeadDim = Traits::kHeadDim;
  if (t.bad) {
    CUTE_UNROLL
    for (int i = 0; i < size(tOrO); ++i) tOrO(i) = NAN;
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) lse[r] = NAN;
  }
  if (thread % 4 == 0) {  // one thread of each quad holds a row's LSE
    auto c = acc_rowcol(tScS);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const int row = t.row0 + get<0>(c(r, 0));
      if (row >= t.rows) continue;
      const int s = t.pos(row), h = t.head(row);
      if (partial)
        p.lse_part[((int64_t(t.slot) * p.batch + t.b) * p.heads_q + h) * p.seqlen_q + s] = lse[r];
      else if (p.lse != nullptr)
        p.lse[t.b * p.lse_batch_stride + h * p.lse_head_stride + s * p.lse_seq_stride] = lse[r];
    }
  }
  // Per row of the fragment (two per thread in a 64-row tile), the destination once, then the
  // row's columns: pairs (j, j + 1) of the row/column view are adjacent columns. Computing the
  // (position, head) unpacking per element pair instead (two integer divisions each) made this
  // epilogue ~3,500 instructions and ~4 us per CTA (decode_timeline, 2026-11-30 r38).
  auto o = acc_rowcol(tOrO);
  auto co = acc_rowcol(tOcO);
  CUTE_UNROLL
  for (int r = 0; r < size<0>(o); ++r) {
    const int row = t.row0 + get<0>(co(r, 0));
    if (row >= t.rows) continue;
    const int s = t.pos(row), h = t.head(row);
    if (partial) {
      float* dst = p.o_part + (((int64_t(t.slot) * p.batch + t.b) * p.heads_q + h) * p.seqlen_q + s) * kHeadDim;
      CUTE_UNROLL
      for (int j = 0; j < size<1>(o); j += 2)
        *reinterpret_cast<float2*>(dst + get<1>(co(r, j))) = make_float2(o(r, j), o(r, j + 1));
    } else {
      Element* dst = p.o + t.b * p.o_batch_stride + s * p.o_seq_stride + h * p.o_head_stride;
      CUTE_UNROLL
      for (int j = 0; j < size<1>(o); j += 2) {
        cutlass::NumericArrayConverter<Element, float, 2> conv;
        cutlass::Array<float, 2> in;
        in[0] = o(r, j);
        in[1] = o(r, j + 1);
        *reinterpret_cast<cutlass::Array<Element, 2>*>(dst + get<1>(co(r, j))) = conv(in);
      }
    }
  }
}

}  // namespace hopattn::attention
