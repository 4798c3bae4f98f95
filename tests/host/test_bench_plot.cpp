// The bench's CSV round trip and SVG plot, on synthetic rows.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "plot.hpp"
#include "results.hpp"

namespace hopattn::bench {
namespace {

std::vector<Row> synthetic_rows() {
  std::vector<Row> rows;
  for (int causal = 0; causal < 2; ++causal)
    for (const char* impl : {"hopattn", "cudnn"})
      for (int s = 512; s <= 4096; s *= 2) {
        Row r;
        r.op = "attn_fwd", r.impl = impl, r.dtype = "bf16", r.hdim = 128, r.causal = causal;
        r.seqlen_q = r.seqlen_k = s, r.batch = 16384 / s, r.heads_q = r.heads_kv = 16;
        r.ms = 1.0, r.tflops = 300.0 + s / 20.0 + (causal ? 0 : 50);
        rows.push_back(r);
      }
  Row ceiling;  // not an attention row: ignored by the plot
  ceiling.op = "ceiling", ceiling.impl = "cublas", ceiling.tflops = 700;
  rows.push_back(ceiling);
  return rows;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(BenchPlot, CsvRoundTripAndOnePanelPerHeadDimAndMask) {
  const std::string csv = ::testing::TempDir() + "/bench_plot_test.csv";
  const std::string svg = ::testing::TempDir() + "/bench_plot_test.svg";
  write_csv(csv, RunInfo{"abc", "2026-11-29T00:00:00Z", "Test GPU, \"quoted\""}, synthetic_rows());
  const std::vector<Row> back = read_csv(csv);
  ASSERT_EQ(back.size(), 16u);  // the ceiling row is not an attention row
  EXPECT_EQ(back[0].impl, "hopattn");
  EXPECT_EQ(back[3].seqlen_q, 4096);
  EXPECT_DOUBLE_EQ(back[3].tflops, 300.0 + 4096 / 20.0 + 50);
  write_svg_plot(svg, back, "test <plot>");
  const std::string text = slurp(svg);
  EXPECT_EQ(count(text, "<polyline"), 4u);  // 2 panels x 2 implementations
  EXPECT_NE(text.find("hdim 128, no mask"), std::string::npos);
  EXPECT_NE(text.find("hdim 128, causal"), std::string::npos);
  EXPECT_NE(text.find("test &lt;plot&gt;"), std::string::npos);
  std::remove(csv.c_str());
  std::remove(svg.c_str());
}

TEST(BenchPlot, NothingToPlotIsAnError) {
  EXPECT_THROW(write_svg_plot(::testing::TempDir() + "/empty.svg", {}, "empty"), std::runtime_error);
}

}  // namespace
}  // namespace hopattn::bench
