// The hopattn command: info, check, bench, layout.
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.hpp"
#include "plot.hpp"
#include "cli/commands.hpp"
#include "common/cuda_check.hpp"
#if HOPATTN_WITH_GEMM
#include "gemm_bench.hpp"
#include "cli/gemm_command.hpp"
#endif

namespace hopattn::layout {
int run_layout_command(int argc, char** argv);  // src/layout/layout_command.hpp
}

namespace {

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: hopattn <command> [options]\n"
               "  --version            the library's version and ABI version\n"
               "  info                 GPU, SM count, clocks, memory, driver/runtime, compiled kernels by name\n"
               "  check [--quick]      correctness grid on the GPU against the fp64 references\n"
               "  bench [options]      FlashAttention-3 paper grid vs cuDNN, with GEMM/copy ceilings\n"
               "                       (hopattn bench --help for options)\n"
               "  bench --op decode [...] KV-cache attention (decode, q_len 1/4/16) vs cuDNN, with the copy ceiling\n"
#if HOPATTN_WITH_GEMM
               "  bench --op gemm [...] hopattn's GEMM vs cuBLAS (hopattn bench --op gemm --help)\n"
               "  gemm --m --n --k [--dtype] [--layout] [--variant] [--check]   one GEMM vs cuBLAS\n"
#endif
               "  plot CSV OUT.svg     plot a bench CSV (TFLOP/s vs seqlen, per head dim and mask)\n"
               "  layout EXPR [--check]  CuTe layout algebra: composition, complement, division\n");
}

#if HOPATTN_WITH_GEMM
// `hopattn bench --op gemm [--csv FILE] [gemm bench flags]`
int run_gemm_bench_command(int argc, char** argv) {
  std::string csv, why;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--op") {
      ++i;  // "gemm", already dispatched on
    } else if (a == "--csv" && i + 1 < argc) {
      csv = argv[++i];
    } else if (a == "--help") {
      std::fputs(hopattn::gemm::gemm_bench_usage().c_str(), stdout);
      return 0;
    } else {
      args.push_back(a);
    }
  }
  if (!hopattn::has_sm90_gpu(&why)) {
    std::fprintf(stderr, "hopattn bench needs an NVIDIA Hopper GPU (sm_90: H100 or H200); %s\n", why.c_str());
    return 2;
  }
  std::vector<hopattn::bench::Row> rows;
  try {
    rows = hopattn::gemm::run_gemm_bench(args);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "hopattn bench --op gemm: %s\n%s", e.what(), hopattn::gemm::gemm_bench_usage().c_str());
    return 2;
  }
  if (!csv.empty()) {
    hopattn::bench::write_csv(csv, hopattn::bench::current_run_info(), rows);
    std::printf("CSV written to %s (%zu rows)\n", csv.c_str(), rows.size());
  }
  return 0;
}

bool wants_gemm_bench(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--op") && !std::strcmp(argv[i + 1], "gemm")) return true;
  return false;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "--version" || cmd == "version") {
    std::printf("hopattn %s (ABI %d)\n", hopattn_version(), int(hopattn_abi_version()));
    return 0;
  }
  const bool help = argc > 2 && (!std::strcmp(argv[2], "--help") || !std::strcmp(argv[2], "-h"));
  try {
    if (cmd == "info" && help) {
      std::printf("usage: hopattn info\n  The compiled kernels by name, the CUDA driver and runtime, the GPUs (exit 2 without an sm_90 GPU).\n");
      return 0;
    }
    if (cmd == "plot" && help) {
      std::printf("usage: hopattn plot CSV OUT.svg\n  An SVG of a `hopattn bench --csv` file's attention rows.\n");
      return 0;
    }
    if (cmd == "info") return hopattn::cli::run_info();
    if (cmd == "check") return hopattn::cli::run_check_command(argc - 1, argv + 1);
    if (cmd == "layout") return hopattn::layout::run_layout_command(argc - 1, argv + 1);
    if (cmd == "plot") {
      if (argc != 4) {
        std::fprintf(stderr, "usage: hopattn plot CSV OUT.svg\n");
        return 2;
      }
      hopattn::bench::write_svg_plot(argv[3], hopattn::bench::read_csv(argv[2]), std::string("hopattn bench: ") + argv[2]);
      std::printf("plot written to %s\n", argv[3]);
      return 0;
    }
#if HOPATTN_WITH_GEMM
    if (cmd == "gemm") return hopattn::gemm::run_gemm_command(argc - 1, argv + 1);
    if (cmd == "bench" && wants_gemm_bench(argc - 1, argv + 1)) return run_gemm_bench_command(argc - 1, argv + 1);
#endif
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
