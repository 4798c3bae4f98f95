// The hopattn command: info, check, bench, layout.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "bench.hpp"
#include "cli/commands.hpp"

namespace hopattn::layout {
int run_layout_command(int argc, char** argv);  // src/layout/layout_command.hpp
}

namespace {

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: hopattn <command> [options]\n"
               "  info                 GPU, SM count, clocks, memory, driver/runtime, compiled kernel set\n"
               "  check [--quick]      correctness grid on the GPU against the fp64 references\n"
               "  bench [options]      FlashAttention-3 paper grid vs cuDNN, with GEMM/copy ceilings\n"
               "                       (hopattn bench --help for options)\n"
               "  layout EXPR [--check]  CuTe layout algebra: composition, complement, division\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "info") return hopattn::cli::run_info();
    if (cmd == "check") return hopattn::cli::run_check_command(argc - 1, argv + 1);
    if (cmd == "layout") return hopattn::layout::run_layout_command(argc - 1, argv + 1);
    if (cmd == "bench") {
      hopattn::bench::BenchOptions options;
      std::string error;
      for (int i = 2; i < argc; ++i)
        if (!std::strcmp(argv[i], "--help")) {
          std::fputs(hopattn::bench::bench_usage().c_str(), stdout);
          return 0;
        }
      if (!hopattn::bench::parse_bench_options(argc - 1, argv + 1, &options, &error)) {
        std::fprintf(stderr, "hopattn bench: %s\n%s", error.c_str(), hopattn::bench::bench_usage().c_str());
        return 2;
      }
      return hopattn::bench::run_bench(options);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hopattn %s: error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "hopattn: unknown command '%s'\n", cmd.c_str());
  usage(stderr);
  return 2;
}
