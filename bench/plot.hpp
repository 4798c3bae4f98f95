// An SVG plot of attention benchmark rows: TFLOP/s against seqlen (log scale), one line per
// implementation, one panel per (head dim, mask). Plain SVG, no dependencies.
#pragma once

#include <string>
#include <vector>

#include "results.hpp"

namespace hopattn::bench {

// Writes the plot of the op == "attn_fwd" rows; throws std::runtime_error if the file cannot be
// written or there is nothing to plot.
void write_svg_plot(const std::string& path, const std::vector<Row>& rows, const std::string& title);

// Reads rows back from a CSV written by write_csv (the columns the plot needs).
std::vector<Row> read_csv(const std::string& path);

}  // namespace hopattn::bench
