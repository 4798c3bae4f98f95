// `hopattn bench --op gemm`: hopattn's GEMM against cuBLAS on the shape sets, a cuBLAS
// row (cuBLASLt for e4m3) for every shape measured in the same run.
#pragma once

#include <string>
#include <vector>

#include "results.hpp"

namespace hopattn::gemm {

// args (without "bench" / "--op gemm"):
//   --shapes square,llm,progression   shape sets (default: all three)
//                                     square: M=N=K in 4096, 8192, 16384
//                                     llm: M in 1024, 4096, 16384 x (N,K) in (8192,8192),
//                                          (28672,8192), (8192,28672), (1024,8192)
//                                     progression: 8192^3, every compiled variant
//   --mnk 4096x4096x4096,...          explicit shapes (instead of --shapes)
//   --dtype bf16|fp16|e4m3            (default bf16; e4m3: bf16 D, scales 1, baseline cuBLASLt
//                                     FP8 with its default and its fast accumulation, the
//                                     ratio against the default)
//   --layout rcr                      A, B, D each r(ow) or c(olumn)-major (default rcr: A and B
//                                     K-major, the layout of x·Wᵀ)
//   --variants auto|all|name,...      hopattn variants per shape (default auto; the
//                                     progression set always runs all)
//   --group-ms 25                     target duration of one timed group
// Prints a table to stdout and progress to stderr; throws std::invalid_argument on bad flags.
std::vector<hopattn::bench::Row> run_gemm_bench(const std::vector<std::string>& args);
std::string gemm_bench_usage();

}  // namespace hopattn::gemm
