// Converts a cute::Layout (static or dynamic integers, any nesting) into a hopattn layout.
// Header-only because it is instantiated for every CuTe result type; it includes CuTe.
#pragma once

#include <cute/layout.hpp>

#include <string>
#include <utility>
#include <vector>

#include "layout.hpp"

namespace hopattn::layout::cute_convert {

template <class Shape, class Stride>
void collect(const Shape& shape, const Stride& stride, std::vector<Mode>& modes,
             std::string& profile);

template <class Shape, class Stride, std::size_t... I>
void collect_tuple(const Shape& shape, const Stride& stride, std::vector<Mode>& modes,
                   std::string& profile, std::index_sequence<I...>) {
  profile += '(';
  if constexpr (cute::is_tuple<Stride>::value) {
    (collect(cute::get<I>(shape), cute::get<I>(stride), modes, profile), ...);
  } else {
    // A single stride for a whole tuple of shapes applies to each of them.
    (collect(cute::get<I>(shape), stride, modes, profile), ...);
  }
  profile += ')';
}

template <class Shape, class Stride>
void collect(const Shape& shape, const Stride& stride, std::vector<Mode>& modes,
             std::string& profile) {
  if constexpr (cute::is_tuple<Shape>::value) {
    constexpr std::size_t kRank = cute::tuple_size<Shape>::value;
    if constexpr (kRank == 0) {
      // An empty tuple is CuTe's empty shape; as a function it is the trivial layout.
      modes.push_back(Mode{1, 0});
      profile += '.';
    } else {
      collect_tuple(shape, stride, modes, profile, std::make_index_sequence<kRank>{});
    }
  } else {
    static_assert(!cute::is_tuple<Stride>::value, "a tuple stride for an integer shape");
    modes.push_back(Mode{static_cast<Int>(shape), static_cast<Int>(stride)});
    profile += '.';
  }
}

template <class Shape, class Stride>
Layout from_cute(const cute::Layout<Shape, Stride>& layout) {
  std::vector<Mode> modes;
  std::string profile;
  collect(layout.shape(), layout.stride(), modes, profile);
  return Layout(std::move(modes), std::move(profile));
}

}  // namespace hopattn::layout::cute_convert
