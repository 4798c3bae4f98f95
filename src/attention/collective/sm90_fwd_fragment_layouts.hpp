// Views of WGMMA accumulator fragments that the softmax and the P·V GEMM need.
//
// A WGMMA m64nNk16 accumulator gives each thread the values ((2, 2, N/8), MMA_M, MMA_N):
//   mode 0.0: two adjacent columns (2·(lane%4) + {0, 1}),
//   mode 0.1: two rows, 8 apart (lane/4 and lane/4 + 8 within the warp's 16 rows),
//   mode 0.2: N/8 column groups of 8.
// The register A operand of an m64nDk16 WGMMA (16-bit types) gives each thread ((2, 2, 2), M, K):
//   two adjacent k, two rows 8 apart, two k groups of 8 — the same thread/row/column assignment
//   as two consecutive column groups of the accumulator. So P = softmax(S) becomes the A operand
//   of O += P·V by converting fp32 → 16 bit and regrouping modes; no data moves between threads.
#pragma once

#include <cute/tensor.hpp>

namespace hopattn::attention {

// ((2, 2, V), M, N) -> ((2, M), (2, V, N)): rows first, columns second, for row reductions.
template <class Layout>
CUTE_HOST_DEVICE constexpr auto acc_rowcol_layout(Layout const& l) {
  static_assert(decltype(cute::rank<0>(l))::value == 3, "expects a WGMMA accumulator layout");
  auto v = cute::get<0>(l);
  return cute::make_layout(cute::make_layout(cute::get<1>(v), cute::get<1>(l)),
                           cute::make_layout(cute::get<0>(v), cute::get<2>(v), cute::get<2>(l)));
}

template <class Tensor>
CUTE_HOST_DEVICE constexpr auto acc_rowcol(Tensor&& t) {
  return cute::make_tensor(t.data(), acc_rowcol_layout(t.layout()));
}

// ((2, 2, V), M, N) accumulator of S (atoms V·8 columns wide, N atoms) -> ((2, 2, 2), M, (V/2, N))
// register A operand of P·V: k-block v' + (V/2)·n covers columns 16·v' + 8·V·n onwards.
template <class Layout>
CUTE_HOST_DEVICE constexpr auto acc_to_a_operand_layout(Layout const& l) {
  auto v = cute::get<0>(l);
  auto groups = cute::logical_divide(cute::get<2>(v), cute::_2{});  // (2, V/2)
  return cute::make_layout(cute::make_layout(cute::get<0>(v), cute::get<1>(v), cute::get<0>(groups)),
                           cute::get<1>(l), cute::make_layout(cute::get<1>(groups), cute::get<2>(l)));
}

}  // namespace hopattn::attention
