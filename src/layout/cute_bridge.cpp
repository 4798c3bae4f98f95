// Evaluates CuTe's layout operations on run-time integers.
//
// Compiled with NDEBUG (see CMakeLists.txt): CuTe 4.2's composition has its run-time divisibility
// asserts commented out, and a debug assert elsewhere must not abort a sweep of millions of cases.
// What does kill the process is integer division by zero: with a run-time stride 0, CuTe's
// composition and complement evaluate ceil_div(x, 0). Those inputs are recognized before calling
// CuTe and reported as rejected; tests/host/layout confirms in a death test that the unguarded
// calls do die with SIGFPE, so the guard describes CuTe rather than an assumption.
#include "cute_bridge.hpp"

#include <utility>
#include <vector>

#include "cute_convert.hpp"
#include "cute_result.hpp"

namespace hopattn::layout {

namespace {

using cute_convert::from_cute;
using cute_result::evaluated;
using cute_result::rejected;

template <std::size_t... I>
auto shape_tuple(const std::vector<Mode>& modes, std::index_sequence<I...>) {
  return cute::make_tuple(modes[I].shape...);
}

template <std::size_t... I>
auto stride_tuple(const std::vector<Mode>& modes, std::index_sequence<I...>) {
  return cute::make_tuple(modes[I].stride...);
}

// A flat cute::Layout of run-time integers; one leaf becomes an integer layout, as CuTe writes
// "8:1" rather than "(8):(1)".
template <std::size_t R>
auto to_cute(const std::vector<Mode>& modes) {
  if constexpr (R == 1) {
    return cute::make_layout(modes[0].shape, modes[0].stride);
  } else {
    return cute::make_layout(shape_tuple(modes, std::make_index_sequence<R>{}),
                             stride_tuple(modes, std::make_index_sequence<R>{}));
  }
}

CuteRun unsupported(const Layout& layout) {
  return cute_result::unsupported("not evaluated: " + layout.str() + " has " +
                                  std::to_string(layout.modes().size()) +
                                  " leaves, the CuTe check instantiates at most " +
                                  std::to_string(kCuteMaxLeaves));
}

// Calls f with `layout` as a flat run-time cute::Layout.
template <class F>
CuteRun with_cute(const Layout& layout, F&& f) {
  const std::vector<Mode>& m = layout.modes();
  switch (m.size()) {
    case 1: return f(to_cute<1>(m));
    case 2: return f(to_cute<2>(m));
    case 3: return f(to_cute<3>(m));
    case 4: return f(to_cute<4>(m));
    default: return unsupported(layout);
  }
}

bool has_zero_stride(const Layout& layout) {
  for (const Mode& mode : layout.modes()) {
    if (mode.stride == 0) return true;
  }
  return false;
}

const char* const kComplementRankRejection =
    "CuTe rejects it at compile time: complement of a layout with more than one leaf needs "
    "static strides (static_assert \"Dynamic-stride complement only for rank-1 layouts\")";

// cute::composition with a tuple A walks A's leaves computing ceil_div(shape, stride) with B's
// stride; a run-time 0 there is a division by zero. (A static 0 takes a shortcut, an integer A
// never divides.)
bool composition_divides_by_zero(const Layout& a, const Layout& b) {
  return a.modes().size() > 1 && has_zero_stride(b);
}

const char* const kDivisionByZero =
    "CuTe divides by zero: ceil_div(x, 0) with a run-time stride 0 (the process dies with SIGFPE)";

}  // namespace

CuteRun cute_composition(const Layout& a, const Layout& b) {
  if (composition_divides_by_zero(a, b)) return rejected(kDivisionByZero);
  return with_cute(a, [&](const auto& ca) {
    return with_cute(b, [&](const auto& cb) { return evaluated(cute::composition(ca, cb)); });
  });
}

CuteRun cute_complement(const Layout& a, Int m) {
  if (a.modes().size() > 1) return rejected(kComplementRankRejection);
  if (has_zero_stride(a)) return rejected(kDivisionByZero);
  const Mode& leaf = a.modes()[0];
  return evaluated(cute::complement(cute::make_layout(leaf.shape, leaf.stride), m));
}

CuteRun cute_logical_divide(const Layout& a, const Layout& b) {
  // logical_divide(A, B) = composition(A, (B, complement(B, shape(coalesce(A))))).
  if (b.modes().size() > 1) return rejected(kComplementRankRejection);
  if (has_zero_stride(b)) return rejected(kDivisionByZero);
  const Mode& leaf = b.modes()[0];
  return with_cute(a, [&](const auto& ca) {
    return evaluated(cute::logical_divide(ca, cute::make_layout(leaf.shape, leaf.stride)));
  });
}

CuteRun cute_logical_product(const Layout& a, const Layout& b) {
  // logical_product(A, B) = (A, composition(complement(A, size(A)*cosize(B)), B)); the
  // complement has two run-time leaves, so a zero stride in B divides by zero.
  if (a.modes().size() > 1) return rejected(kComplementRankRejection);
  if (has_zero_stride(a) || has_zero_stride(b)) return rejected(kDivisionByZero);
  const Mode& leaf = a.modes()[0];
  return with_cute(b, [&](const auto& cb) {
    return evaluated(cute::logical_product(cute::make_layout(leaf.shape, leaf.stride), cb));
  });
}

CuteRun cute_coalesce(const Layout& a) {
  return with_cute(a, [](const auto& ca) { return evaluated(cute::coalesce(ca)); });
}

Layout cute_composition_unguarded(const Layout& a, const Layout& b) {
  const CuteRun run = with_cute(a, [&](const auto& ca) {
    return with_cute(b, [&](const auto& cb) { return evaluated(cute::composition(ca, cb)); });
  });
  return run.result;
}

Layout cute_complement_unguarded(const Layout& a, Int m) {
  const Mode& leaf = a.modes()[0];
  return from_cute(cute::complement(cute::make_layout(leaf.shape, leaf.stride), m));
}

}  // namespace hopattn::layout
