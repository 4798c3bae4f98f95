// `hopattn bench`: the default grid is the FlashAttention-3 paper's prefill grid (16k tokens per
// batch, hidden 2048, bf16, head dims 64/128/256, causal and not, seqlen 512..16k), with the
// ceilings (cuBLAS bf16 GEMM 8192³, device copy) and cuDNN's SDPA measured in the same run.
#pragma once

#include <string>
#include <vector>

#include "hopattn/hopattn.hpp"
#include "results.hpp"

namespace hopattn::bench {

struct BenchOptions {
  std::string csv_path;   // empty: no CSV
  std::string plot_path;  // empty: no plot (SVG: TFLOP/s vs seqlen per head dim and mask)
  std::vector<int> hdims = {64, 128, 256};
  std::vector<int> seqlens = {512, 1024, 2048, 4096, 8192, 16384};
  std::vector<int> causal = {0, 1};
  hopattn_dtype_t dtype = HOPATTN_DTYPE_BF16;
  int tokens = 16384;  // batch = tokens / seqlen
  int hidden = 2048;   // heads = hidden / hdim
  bool ceilings = true;
  std::vector<int> schedules = {0};  // hopattn schedules to time (0: the default per head dim)
  double target_group_ms = 25.0;
};

// Parses bench flags (argv[0] is "bench"). Returns false and prints usage on error.
bool parse_bench_options(int argc, char** argv, BenchOptions* out, std::string* error);
std::string bench_usage();

// The ceilings of this GPU, measured now: cuBLAS bf16 GEMM 8192³ (TFLOP/s) and a 1 GiB
// device-to-device copy (TB/s, bytes read + written).
Row measure_gemm_ceiling(Stream stream, double target_group_ms);
Row measure_copy_ceiling(Stream stream, double target_group_ms);

// Runs the benchmark; prints the table to stdout and progress to stderr. Returns the exit code.
int run_bench(const BenchOptions& options);

}  // namespace hopattn::bench
