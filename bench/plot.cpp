#include "plot.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace hopattn::bench {
namespace {

constexpr double kPanelW = 360, kPanelH = 240, kMarginL = 56, kMarginB = 40, kMarginT = 30, kLegendH = 24;
constexpr const char* kColors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
      else if (c == '"') quoted = false;
      else cur += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur), cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

std::vector<Row> read_csv(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::string line;
  std::getline(f, line);
  const std::vector<std::string> header = split_csv_line(line);
  auto col = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw std::runtime_error(path + ": no column " + name);
    return size_t(it - header.begin());
  };
  const size_t op = col("op"), impl = col("impl"), hdim = col("hdim"), causal = col("causal"),
               seqlen = col("seqlen_q"), tflops = col("tflops"), dtype = col("dtype");
  std::vector<Row> rows;
  while (std::getline(f, line)) {
    const std::vector<std::string> v = split_csv_line(line);
    if (v.size() < header.size()) continue;
    Row r;
    r.op = v[op], r.impl = v[impl], r.dtype = v[dtype];
    if (r.op != "attn_fwd") continue;
    r.hdim = std::stoi(v[hdim]), r.causal = std::stoi(v[causal]), r.seqlen_q = std::stoi(v[seqlen]);
    r.tflops = std::stod(v[tflops]);
    rows.push_back(r);
  }
  return rows;
}

void write_svg_plot(const std::string& path, const std::vector<Row>& all, const std::string& title) {
  std::vector<Row> rows;
  for (const Row& r : all)
    if (r.op == "attn_fwd" && r.tflops > 0) rows.push_back(r);
  if (rows.empty()) throw std::runtime_error("no attention rows to plot");
  std::map<std::pair<int, int>, std::map<std::string, std::map<int, double>>> panels;  // (hdim, causal) -> impl -> seqlen -> tflops
  std::vector<std::string> impls;
  int s_min = rows[0].seqlen_q, s_max = rows[0].seqlen_q;
  double y_max = 0;
  for (const Row& r : rows) {
    panels[{r.hdim, r.causal}][r.impl][r.seqlen_q] = r.tflops;
    if (std::find(impls.begin(), impls.end(), r.impl) == impls.end()) impls.push_back(r.impl);
    s_min = std::min(s_min, r.seqlen_q), s_max = std::max(s_max, r.seqlen_q);
    y_max = std::max(y_max, r.tflops);
  }
  y_max = std::ceil(y_max / 100.0) * 100.0;
  const int cols = 2, n = int(panels.size()), panel_rows = (n + cols - 1) / cols;
  const double w = cols * (kPanelW + kMarginL) + 20;
  const double h = panel_rows * (kPanelH + kMarginB + kMarginT) + kLegendH * (1 + (impls.size() + 2) / 3) + 30;
  const double lx_min = std::log2(double(s_min)), lx_max = std::log2(double(std::max(s_max, s_min * 2)));
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h
      << "' font-family='sans-serif' font-size='11'>\n<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='10' y='18' font-size='14'>" << esc(title) << "</text>\n";
  int idx = 0;
  for (const auto& [key, by_impl] : panels) {
    const double ox = (idx % cols) * (kPanelW + kMarginL) + kMarginL, oy = 30 + (idx / cols) * (kPanelH + kMarginB + kMarginT) + kMarginT;
    ++idx;
    auto px = [&](int s) { return ox + (std::log2(double(s)) - lx_min) / (lx_max - lx_min) * kPanelW; };
    auto py = [&](double t) { return oy + kPanelH - t / y_max * kPanelH; };
    svg << "<text x='" << ox << "' y='" << oy - 8 << "' font-weight='bold'>hdim " << key.first
        << (key.second ? ", causal" : ", no mask") << "</text>\n"
        << "<rect x='" << ox << "' y='" << oy << "' width='" << kPanelW << "' height='" << kPanelH
        << "' fill='none' stroke='#888'/>\n";
    for (double t = 0; t <= y_max; t += 100)
      svg << "<line x1='" << ox << "' x2='" << ox + kPanelW << "' y1='" << py(t) << "' y2='" << py(t)
          << "' stroke='#eee'/><text x='" << ox - 6 << "' y='" << py(t) + 4 << "' text-anchor='end'>" << t << "</text>\n";
    for (int s = s_min; s <= s_max; s *= 2)
      svg << "<text x='" << px(s) << "' y='" << oy + kPanelH + 14 << "' text-anchor='middle'>" << s << "</text>\n";
    svg << "<text x='" << ox + kPanelW / 2 << "' y='" << oy + kPanelH + 28 << "' text-anchor='middle'>seqlen</text>\n"
        << "<text x='" << ox - 42 << "' y='" << oy + kPanelH / 2 << "' transform='rotate(-90 " << ox - 42 << ' '
        << oy + kPanelH / 2 << ")' text-anchor='middle'>TFLOP/s</text>\n";
    for (const auto& [impl, points] : by_impl) {
      const size_t c = size_t(std::find(impls.begin(), impls.end(), impl) - impls.begin());
      svg << "<polyline fill='none' stroke-width='2' stroke='" << kColors[c % 8] << "'"
          << (impl == "cudnn" ? " stroke-dasharray='5,3'" : "") << " points='";
      for (const auto& [s, t] : points) svg << px(s) << ',' << py(t) << ' ';
      svg << "'/>\n";
    }
  }
  const double ly = h - kLegendH * (1 + (impls.size() + 2) / 3) + 10;
  for (size_t c = 0; c < impls.size(); ++c) {
    const double x = 20 + (c % 3) * 240, y = ly + (c / 3) * kLegendH;
    svg << "<line x1='" << x << "' x2='" << x + 24 << "' y1='" << y << "' y2='" << y << "' stroke-width='2' stroke='"
        << kColors[c % 8] << "'" << (impls[c] == "cudnn" ? " stroke-dasharray='5,3'" : "") << "/><text x='" << x + 30
        << "' y='" << y + 4 << "'>" << esc(impls[c]) << "</text>\n";
  }
  svg << "</svg>\n";
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write plot file " + path);
  f << svg.str();
}

}  // namespace hopattn::bench
