#include "table.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace hopattn::layout {

namespace {

int digits(Int value) {
  int n = 1;
  for (; value >= 10; value /= 10) ++n;
  return n;
}

void separator(std::ostringstream& out, Int columns, int width) {
  out << "    ";
  for (Int c = 0; c < columns; ++c) out << '+' << std::string(static_cast<std::size_t>(width), '-');
  out << "+\n";
}

std::string omitted(Int size) {
  return "(table omitted: " + std::to_string(size) + " entries, more than " +
         std::to_string(kMaxTableSize) + ")\n";
}

}  // namespace

std::string value_table(const Layout& shape, const std::vector<Int>& values) {
  const Int size = static_cast<Int>(values.size());
  if (size > kMaxTableSize) return omitted(size);
  const Int rows = shape.rank() == 1 ? 1 : shape.mode(0).size();
  const Int columns = rows == 0 ? 0 : size / rows;
  const Int largest = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  // Like print_layout: the cell is two wider than the widest number.
  const int width = std::max(digits(largest), digits(columns - 1)) + 2;
  std::ostringstream out;
  out << "    ";
  for (Int c = 0; c < columns; ++c) out << "  " << std::setw(width - 2) << c << ' ';
  out << '\n';
  for (Int r = 0; r < rows; ++r) {
    separator(out, columns, width);
    out << std::setw(2) << r << "  ";
    for (Int c = 0; c < columns; ++c) {
      out << "| " << std::setw(width - 2) << values[static_cast<std::size_t>(r + rows * c)] << ' ';
    }
    out << "|\n";
  }
  separator(out, columns, width);
  return out.str();
}

std::string value_table(const Layout& layout) {
  if (layout.size() > kMaxTableSize) return omitted(layout.size());
  return value_table(layout, values(layout));
}

}  // namespace hopattn::layout
