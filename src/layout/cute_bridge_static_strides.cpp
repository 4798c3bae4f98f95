// cute::complement of two-leaf layouts with static strides and run-time shapes, for every
// stride pair up to kStaticStrideLimit (one instantiation each; see cute_bridge.hpp).
#include <array>
#include <utility>

#include "cute_bridge.hpp"
#include "cute_result.hpp"

namespace hopattn::layout {

namespace {

constexpr int kSpan = kStaticStrideLimit + 1;

template <int D0, int D1>
CuteRun complement_with(const Layout& a, Int m) {
  const std::vector<Mode>& leaves = a.modes();
  const auto layout = cute::make_layout(cute::make_shape(leaves[0].shape, leaves[1].shape),
                                        cute::make_stride(cute::Int<D0>{}, cute::Int<D1>{}));
  return cute_result::evaluated(cute::complement(layout, m));
}

using Complement = CuteRun (*)(const Layout&, Int);

template <int... I>
constexpr std::array<Complement, sizeof...(I)> complement_table(std::integer_sequence<int, I...>) {
  return {&complement_with<I / kSpan, I % kSpan>...};
}

}  // namespace

CuteRun cute_complement_static_strides(const Layout& a, Int m) {
  static constexpr std::array<Complement, kSpan * kSpan> kTable =
      complement_table(std::make_integer_sequence<int, kSpan * kSpan>{});
  const std::vector<Mode>& leaves = a.modes();
  if (leaves.size() != 2 || leaves[0].stride > kStaticStrideLimit || leaves[1].stride > kStaticStrideLimit) {
    return cute_result::unsupported("not evaluated: the static-stride complement is instantiated for two "
                                    "leaves with strides up to " + std::to_string(kStaticStrideLimit));
  }
  return kTable[static_cast<std::size_t>(leaves[0].stride * kSpan + leaves[1].stride)](a, m);
}

}  // namespace hopattn::layout
