// Value tables in the style of cute::print_layout.
#pragma once

#include <string>
#include <vector>

#include "layout.hpp"

namespace hopattn::layout {

// Tables larger than this are not printed.
inline constexpr Int kMaxTableSize = 4096;

// values[x] for x in the domain of `shape`, arranged as cute::print_layout arranges a rank-2
// layout: rows are mode 0, columns the remaining modes (colexicographic). A rank-1 shape prints
// as a single row. Ends with a newline.
std::string value_table(const Layout& shape, const std::vector<Int>& values);

// The layout's own values.
std::string value_table(const Layout& layout);

}  // namespace hopattn::layout
