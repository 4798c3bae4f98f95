// The bench's CSV round trip and SVG plot, on synthetic rows; its option parsing (the attention
// grid, --varlen and --op decode), the decode section's FLOP and byte counts and --varlen's FLOP
// count, preset and padded shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "attention_reference.hpp"
#include "bench.hpp"
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
  write_csv(csv, RunInfo{"abc", "2026-11-29T00:00:00Z", "Test GPU, \"quoted\"", ""}, synthetic_rows());
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

// Decode rows (one timed, one that the API refused) share the CSV with attention rows: the
// header is unchanged, the plot reader skips them, and an untimed row has empty figures.
TEST(BenchPlot, DecodeRowsInTheCsv) {
  std::vector<Row> rows = synthetic_rows();
  Row d;
  d.op = "decode", d.impl = "cudnn", d.dtype = "bf16", d.hdim = 128, d.causal = 1, d.batch = 8;
  d.heads_q = 32, d.heads_kv = 8, d.seqlen_q = 1, d.seqlen_k = 8192;
  d.ms = 0.05, d.tflops = 0.1, d.tbps = 2.5, d.ratio_vs_cudnn = 1, d.note = "CUDA graph of 32 calls, per call";
  rows.push_back(d);
  d.impl = "hopattn", d.dtype = "int8", d.ms = d.tflops = d.tbps = d.ratio_vs_cudnn = 0;
  d.note = "not timed: not supported: kvcache attention: not built, yet";
  rows.push_back(d);
  const std::string csv = ::testing::TempDir() + "/bench_decode_test.csv";
  write_csv(csv, RunInfo{"abc", "2026-11-29T00:00:00Z", "Test GPU", ""}, rows);
  EXPECT_EQ(read_csv(csv).size(), 16u);  // attention rows only
  std::istringstream lines(slurp(csv));
  std::string header, line, timed, untimed;
  std::getline(lines, header);
  EXPECT_EQ(header,
            "commit,date,gpu,op,impl,dtype,hdim,causal,batch,heads_q,heads_kv,seqlen_q,seqlen_k,"
            "m,n,k,layout,ms,tflops,tbps,ratio_vs_cudnn,frac_of_gemm,note");
  while (std::getline(lines, line)) {
    if (line.find(",decode,cudnn,") != std::string::npos) timed = line;
    if (line.find(",decode,hopattn,") != std::string::npos) untimed = line;
  }
  EXPECT_EQ(timed, "abc,2026-11-29T00:00:00Z,Test GPU,decode,cudnn,bf16,128,1,8,32,8,1,8192,,,,,0.05,0.1,2.5,1,,"
                   "\"CUDA graph of 32 calls, per call\"");
  EXPECT_EQ(untimed, "abc,2026-11-29T00:00:00Z,Test GPU,decode,hopattn,int8,128,1,8,32,8,1,8192,,,,,,,,,,"
                     "\"not timed: not supported: kvcache attention: not built, yet\"");
  std::remove(csv.c_str());
}

// ---- option parsing ------------------------------------------------------------------------------

bool parse(std::vector<std::string> args, BenchOptions* o, std::string* error) {
  args.insert(args.begin(), "bench");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return parse_bench_options(int(argv.size()), argv.data(), o, error);
}

void expect_parse_error(const std::vector<std::string>& args, const std::string& needle) {
  BenchOptions o;
  std::string error;
  EXPECT_FALSE(parse(args, &o, &error)) << "expected an error mentioning '" << needle << "'";
  EXPECT_NE(error.find(needle), std::string::npos) << "error: " << error;
}

TEST(BenchOptions, AttentionDefaultsAndQuick) {
  BenchOptions o;
  std::string error;
  ASSERT_TRUE(parse({}, &o, &error)) << error;
  EXPECT_EQ(o.op, "attn");
  EXPECT_EQ(o.hdims, (std::vector<int>{64, 128, 256}));
  ASSERT_TRUE(parse({"--op", "attn", "--quick", "--csv", "x.csv"}, &o, &error)) << error;
  EXPECT_EQ(o.hdims, std::vector<int>{128});
  EXPECT_EQ(o.seqlens, (std::vector<int>{1024, 4096}));
  EXPECT_EQ(o.csv_path, "x.csv");
  expect_parse_error({"--seqlen", "1000"}, "must divide --tokens");
  expect_parse_error({"--op", "prefill"}, "--op: attn (default), decode or gemm");
  expect_parse_error({"--qlen", "1"}, "--qlen applies to --op decode only");
}

TEST(BenchOptions, DecodeDefaultsAreTheIssueGrid) {
  BenchOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--op", "decode", "--csv", "d.csv"}, &o, &error)) << error;
  EXPECT_EQ(o.op, "decode");
  EXPECT_EQ(o.csv_path, "d.csv");
  EXPECT_TRUE(o.ceilings);
  EXPECT_EQ(o.qlens, (std::vector<int>{1, 4, 16}));
  EXPECT_EQ(o.decode_heads, (std::vector<std::pair<int, int>>{{64, 8}, {32, 8}, {8, 1}}));
  EXPECT_EQ(o.decode_caches,
            (std::vector<std::pair<int, int>>{{1, 8192}, {1, 65536}, {8, 8192}, {32, 8192}, {128, 2048}, {16, 32768}}));
  EXPECT_EQ(o.kv_dtypes, (std::vector<std::string>{"bf16", "int8"}));
  EXPECT_EQ(o.decode_hdims, std::vector<int>{128});
}

TEST(BenchOptions, DecodeQuickAndExplicitFlags) {
  BenchOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--op", "decode", "--quick", "--no-ceilings"}, &o, &error)) << error;
  EXPECT_EQ(o.qlens, std::vector<int>{1});
  EXPECT_EQ(o.decode_heads, (std::vector<std::pair<int, int>>{{32, 8}}));
  EXPECT_EQ(o.decode_caches, (std::vector<std::pair<int, int>>{{1, 8192}, {8, 8192}}));
  EXPECT_FALSE(o.ceilings);
  EXPECT_DOUBLE_EQ(o.target_group_ms, 10.0);

  o = BenchOptions();  // explicit flags win over --quick, in any order; --op may come last
  ASSERT_TRUE(parse({"--qlen", "4,16", "--quick", "--heads", "16:2,8:8", "--cache", "2:4096", "--kv-dtype", "int8",
                     "--hdim", "64", "--op", "decode"},
                    &o, &error))
      << error;
  EXPECT_EQ(o.qlens, (std::vector<int>{4, 16}));
  EXPECT_EQ(o.decode_heads, (std::vector<std::pair<int, int>>{{16, 2}, {8, 8}}));
  EXPECT_EQ(o.decode_caches, (std::vector<std::pair<int, int>>{{2, 4096}}));
  EXPECT_EQ(o.kv_dtypes, std::vector<std::string>{"int8"});
  EXPECT_EQ(o.decode_hdims, std::vector<int>{64});
  EXPECT_EQ(o.splits, std::vector<int>{0});  // the heuristic unless --splits
  ASSERT_TRUE(parse({"--op", "decode", "--splits", "0,2,16"}, &o, &error)) << error;
  EXPECT_EQ(o.splits, (std::vector<int>{0, 2, 16}));
}

TEST(BenchOptions, DecodeErrors) {
  expect_parse_error({"--op", "decode", "--heads", "64:6"}, "heads_q must be a positive multiple of heads_kv");
  expect_parse_error({"--op", "decode", "--heads", "64"}, "--heads: '64' is not A:B");
  expect_parse_error({"--op", "decode", "--cache", "1:x"}, "--cache: 'x' is not an integer in [1, 2147483647]");
  expect_parse_error({"--op", "decode", "--cache", "0:8192"}, "--cache: '0' is not an integer in [1, 2147483647]");
  expect_parse_error({"--op", "decode", "--cache", "1:99999999999"}, "--cache: '99999999999' is not an integer");
  expect_parse_error({"--op", "decode", "--qlen", "0"}, "--qlen: '0' is not an integer in [1, 65536]");
  expect_parse_error({"--op", "decode", "--qlen", "1,"}, "--qlen: an empty item in '1,'");
  expect_parse_error({"--op", "decode", "--qlen", "32", "--cache", "1:16"}, "--qlen 32 is longer than the cache length 16");
  expect_parse_error({"--op", "decode", "--kv-dtype", "fp8"}, "--kv-dtype: fp8 is not bf16, fp16 or int8");
  expect_parse_error({"--op", "decode", "--seqlen", "1024"}, "--seqlen applies to --op attn, not decode");
  expect_parse_error({"--op", "decode", "--plot", "x.svg"}, "--plot applies to --op attn, not decode");
  expect_parse_error({"--op", "decode", "--dtype", "fp16"}, "--dtype applies to --op attn, not decode");
  expect_parse_error({"--op", "decode", "--qlen"}, "--qlen needs a value");
  expect_parse_error({"--op", "decode", "--splits", "4,-1"}, "--splits: '-1' is not an integer in [0, 128]");
  expect_parse_error({"--splits", "4"}, "--splits applies to --op decode only");
  expect_parse_error({"--op", "decode", "--window", "-1"}, "--window: '-1' is not an integer in [0, 2147483647]");
  expect_parse_error({"--window", "256"}, "--window applies to --op decode only");
}

TEST(BenchOptions, DecodeWindow) {
  BenchOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--op", "decode", "--quick"}, &o, &error)) << error;
  EXPECT_EQ(o.decode_window, -1);  // no windowed rows unless asked
  ASSERT_TRUE(parse({"--op", "decode", "--window", "0"}, &o, &error)) << error;
  EXPECT_EQ(o.decode_window, 0);
  ASSERT_TRUE(parse({"--op", "decode", "--window", "1024", "--page-sizes", "0,16"}, &o, &error)) << error;
  EXPECT_EQ(o.decode_window, 1024);
}

TEST(BenchDecode, FlopAndByteCounts) {
  // b 8, hq 32, q_len 4, len 8192, d 128: 4·8·32·4·8192·128 FLOPs.
  EXPECT_DOUBLE_EQ(decode_flops(8, 32, 4, 8192, 128), 4.0 * 8 * 32 * 4 * 8192 * 128);
  // bf16 K+V of (128, 2048, 8, 128): 2 · 2^28 elements · 2 bytes = 1 GiB; (16, 32768, 8, 128): 2 GiB.
  EXPECT_DOUBLE_EQ(decode_kv_bytes(128, 2048, 8, 128, HOPATTN_DTYPE_BF16), double(size_t(1) << 30));
  EXPECT_DOUBLE_EQ(decode_kv_bytes(16, 32768, 8, 128, HOPATTN_DTYPE_BF16), double(size_t(2) << 30));
  // int8: 1 byte per element, plus fp32 K scales (b, len/128, hkv, d) and V scales (b, len, hkv).
  const double elems = 16.0 * 32768 * 8 * 128;
  EXPECT_DOUBLE_EQ(decode_kv_bytes(16, 32768, 8, 128, HOPATTN_DTYPE_INT8, 128),
                   2 * elems + 4.0 * (16.0 * 256 * 8 * 128 + 16.0 * 32768 * 8));
}

// ---- --varlen ------------------------------------------------------------------------------------

TEST(BenchVarlen, Mix16IsSixteenSequencesOf16kTokens) {
  const std::vector<int> mix = varlen_preset("mix16");
  ASSERT_EQ(mix.size(), 16u);
  int64_t total = 0;
  for (int l : mix) total += l;
  EXPECT_EQ(total, 16384);
  EXPECT_EQ(*std::max_element(mix.begin(), mix.end()), 7984);
  EXPECT_EQ(*std::min_element(mix.begin(), mix.end()), 100);
  EXPECT_TRUE(varlen_preset("mix17").empty());
}

TEST(BenchVarlen, FlopCount) {
  const int h = 16, d = 128;
  // Non-causal: 4·d·h·Σ lq·lk.
  EXPECT_DOUBLE_EQ(varlen_flops({100, 300}, {100, 300}, h, d, false), 4.0 * d * h * (100.0 * 100 + 300.0 * 300));
  EXPECT_DOUBLE_EQ(varlen_flops({7, 5}, {9, 2}, h, d, false), 4.0 * d * h * (7.0 * 9 + 5.0 * 2));
  // Causal, lq == lk: lq·(lq + 1)/2 pairs per sequence.
  EXPECT_DOUBLE_EQ(varlen_flops({100, 300}, {100, 300}, h, d, true),
                   4.0 * d * h * (100.0 * 101 / 2 + 300.0 * 301 / 2));
  EXPECT_DOUBLE_EQ(varlen_flops({1}, {1}, h, d, true), 4.0 * d * h);
  // Bottom-right aligned per sequence: lq < lk (a chunk against its prefix), lq > lk (the first
  // lq - lk queries see nothing), each against the reference's pair count of one padded sequence.
  for (const auto& [lq, lk] : std::vector<std::pair<int, int>>{{3, 10}, {10, 3}, {1, 4096}, {77, 77}, {5000, 7}})
    for (bool causal : {false, true}) {
      reference::AttnProblem p{1, lq, lk, h, h, d, causal, 0.0f};
      EXPECT_DOUBLE_EQ(varlen_flops({lq}, {lk}, h, d, causal), p.flops()) << lq << ":" << lk << " causal " << causal;
    }
  // A packed batch is the sum of its sequences; mix16's causal count against the padded reference's.
  const std::vector<int> mix = varlen_preset("mix16");
  double sum = 0;
  for (int l : mix) sum += reference::AttnProblem{1, l, l, h, h, d, true, 0.0f}.flops();
  EXPECT_DOUBLE_EQ(varlen_flops(mix, mix, h, d, true), sum);
  // GQA: the count follows heads_q.
  EXPECT_DOUBLE_EQ(varlen_flops({64}, {64}, 32, 64, false), 4.0 * 64 * 32 * 64 * 64);
}

TEST(BenchVarlen, PaddedShapes) {
  EXPECT_EQ(varlen_padded_shape(16384, 4096), (std::pair<int, int>{4, 4096}));
  EXPECT_EQ(varlen_padded_shape(16384, 2048), (std::pair<int, int>{8, 2048}));
  EXPECT_EQ(varlen_padded_shape(14000, 4096), (std::pair<int, int>{3, 4096}));  // 3.42 rounds down
  EXPECT_EQ(varlen_padded_shape(15000, 4096), (std::pair<int, int>{4, 4096}));  // 3.66 rounds up
  EXPECT_EQ(varlen_padded_shape(3000, 4096), (std::pair<int, int>{1, 3000}));   // below one sequence
  EXPECT_EQ(varlen_padded_shape(4096, 4096), (std::pair<int, int>{1, 4096}));
}

TEST(BenchVarlen, Options) {
  BenchOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--varlen", "mix16", "--hdim", "64,128,256", "--causal", "0,1", "--rounds", "3"}, &o, &error))
      << error;
  EXPECT_EQ(o.varlen_name, "mix16");
  EXPECT_EQ(o.varlen_lens, varlen_preset("mix16"));
  EXPECT_EQ(o.varlen_heads, (std::pair<int, int>{0, 0}));  // hidden / hdim
  o = BenchOptions();
  ASSERT_TRUE(parse({"--varlen", "100,2000,50", "--varlen-heads", "32:8", "--hdim", "96"}, &o, &error)) << error;
  EXPECT_EQ(o.varlen_name, "");
  EXPECT_EQ(o.varlen_lens, (std::vector<int>{100, 2000, 50}));
  EXPECT_EQ(o.varlen_heads, (std::pair<int, int>{32, 8}));  // --hdim need not divide --hidden then
  expect_parse_error({"--varlen", "mix"}, "--varlen: 'mix' is not mix16 or a list of lengths");
  expect_parse_error({"--varlen", "100,0"}, "--varlen: '0' is not an integer in [1, 2147483647]");
  expect_parse_error({"--varlen", "2000000000,2000000000"}, "at most 2^31 - 1");
  expect_parse_error({"--varlen-heads", "32:8"}, "--varlen-heads applies with --varlen only");
  expect_parse_error({"--varlen", "mix16", "--varlen-heads", "32:6"}, "HQ a multiple of HKV");
  expect_parse_error({"--varlen", "mix16", "--seqlen", "4096"}, "--seqlen does not apply with --varlen");
  expect_parse_error({"--varlen", "mix16", "--plot", "x.svg"}, "--plot does not apply with --varlen");
  expect_parse_error({"--varlen", "mix16", "--hdim", "96"}, "--hdim 96 must divide --hidden");
  expect_parse_error({"--op", "decode", "--varlen", "mix16"}, "--varlen applies to --op attn, not decode");
}

// attn_varlen rows carry the attention shape columns in the CSV; the plot reader skips them.
TEST(BenchVarlen, RowsInTheCsv) {
  Row r;
  r.op = "attn_varlen", r.impl = "hopattn:varlen", r.dtype = "bf16", r.hdim = 128, r.causal = 1, r.batch = 16;
  r.heads_q = r.heads_kv = 16, r.seqlen_q = r.seqlen_k = 7984, r.ms = 0.5, r.tflops = 400;
  r.note = "packed 16 seqs of 100..7984, 16384 tokens (mix16); vs padded-equal 0.980";
  const std::string csv = ::testing::TempDir() + "/bench_varlen_test.csv";
  write_csv(csv, RunInfo{"abc", "2026-11-29T00:00:00Z", "Test GPU", ""}, {r});
  EXPECT_TRUE(read_csv(csv).empty());
  std::istringstream lines(slurp(csv));
  std::string header, line;
  std::getline(lines, header);
  std::getline(lines, line);
  EXPECT_EQ(line, "abc,2026-11-29T00:00:00Z,Test GPU,attn_varlen,hopattn:varlen,bf16,128,1,16,16,16,7984,7984,,,,,0.5,"
                  "400,,,,\"packed 16 seqs of 100..7984, 16384 tokens (mix16); vs padded-equal 0.980\"");
  std::remove(csv.c_str());
}

}  // namespace
}  // namespace hopattn::bench
