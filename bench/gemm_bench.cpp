#include "gemm_bench.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "common/cuda_check.hpp"
#include "gemm/gemm.hpp"
#include "baselines/cublas_gemm.hpp"
#include "gemm_workspace.hpp"
#include "timing.hpp"
#include "cli_parse.hpp"

namespace hopattn::gemm {
namespace {

using bench::Row;

struct Shape {
  long long m, n, k;
  bool progression;  // run every compiled variant
};

struct BenchArgs {
  std::vector<Shape> shapes;
  tools::GemmSetup setup;
  std::vector<Variant> variants = {HOPATTN_GEMM_AUTO};
  double group_ms = 25.0;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

void add_set(const std::string& name, std::vector<Shape>* shapes) {
  if (name == "square") {
    for (long long s : {4096LL, 8192LL, 16384LL}) shapes->push_back({s, s, s, false});
  } else if (name == "llm") {
    const long long nk[4][2] = {{8192, 8192}, {28672, 8192}, {8192, 28672}, {1024, 8192}};
    for (long long m : {1024LL, 4096LL, 16384LL})
      for (const auto& p : nk) shapes->push_back({m, p[0], p[1], false});
  } else if (name == "progression") {
    shapes->push_back({8192, 8192, 8192, true});
  } else {
    throw std::invalid_argument("--shapes: unknown set '" + name + "' (square, llm, progression)");
  }
}

BenchArgs parse(const std::vector<std::string>& args) {
  BenchArgs b;
  std::string sets = "square,llm,progression", mnk;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) throw std::invalid_argument(flag + ": missing value");
    const std::string& value = args[++i];
    if (flag == "--shapes") sets = value;
    else if (flag == "--mnk") mnk = value;
    else if (flag == "--dtype") {
      if (!tools::parse_dtype(value, &b.setup.dtype) || b.setup.dtype == HOPATTN_DTYPE_FP32)
        throw std::invalid_argument("--dtype: '" + value + "' (bf16, fp16, e4m3)");
    } else if (flag == "--layout") {
      if (!tools::parse_layout(value, &b.setup)) throw std::invalid_argument("--layout: '" + value + "' (e.g. rcr)");
    } else if (flag == "--variants") {
      b.variants.clear();
      for (const std::string& v : split(value, ',')) {
        if (v == "all") {
          b.variants = {};
          break;
        }
        Variant parsed{};
        if (!parse_variant(v, &parsed)) throw std::invalid_argument("--variants: unknown '" + v + "'");
        b.variants.push_back(parsed);
      }
    } else if (flag == "--group-ms") {
      b.group_ms = cli::parse_real(flag, value, 0.1, 60000);
    } else {
      throw std::invalid_argument("unknown flag " + flag + "\n" + gemm_bench_usage());
    }
  }
  // The output follows 16-bit inputs; e4m3 inputs give bf16 D (the FP8 GEMM).
  b.setup.out = b.setup.dtype == HOPATTN_DTYPE_E4M3 ? HOPATTN_DTYPE_BF16 : b.setup.dtype;
  if (b.setup.dtype == HOPATTN_DTYPE_E4M3 && (!b.setup.a_row || b.setup.b_row))
    throw std::invalid_argument("--layout: e4m3 needs K-major operands: rcr or rcc");
  if (!mnk.empty()) {
    for (const std::string& s : split(mnk, ',')) {
      const std::vector<std::string> d = split(s, 'x');
      if (d.size() != 3) throw std::invalid_argument("--mnk: '" + s + "' is not MxNxK");
      b.shapes.push_back({cli::parse_int("--mnk", d[0], 1, INT32_MAX), cli::parse_int("--mnk", d[1], 1, INT32_MAX),
                          cli::parse_int("--mnk", d[2], 1, INT32_MAX), false});
    }
  } else {
    for (const std::string& s : split(sets, ',')) add_set(s, &b.shapes);
  }
  return b;
}

Row make_row(const tools::GemmSetup& s, const std::string& impl, double ms, const std::string& note) {
  Row r;
  r.op = "gemm";
  r.impl = impl;
  r.dtype = hopattn_dtype_name(s.dtype);
  r.m = s.m, r.n = s.n, r.k = s.k;
  r.layout = tools::layout_string(s);
  r.ms = ms;
  r.tflops = tools::gemm_flops(s) / (ms * 1e-3) / 1e12;
  r.note = note;
  return r;
}

// Times one implementation, rotating through the buffer copies.
template <class Run>
double time_ms(const tools::GemmBuffers& buffers, double group_ms, Run&& run) {
  int next = 0;
  const bench::Timing t = bench::time_launches(
      [&] {
        const Status st = run(buffers.args(next++));
        if (!st.ok()) throw std::runtime_error(st.to_string());
      },
      nullptr, group_ms);
  return t.median_ms;
}

// The library rows of one shape; the first is the reference of the ratios. e4m3: cuBLASLt with
// its default accumulation (partial sums promoted to fp32) and with fast accumulation (in the
// tensor cores only, as hopattn's kernel does).
Row baseline_rows(const BenchArgs& b, const tools::GemmSetup& s, const tools::GemmBuffers& buffers,
                  tools::CublasGemm& cublas, tools::CublasLtFp8& cublas_lt, std::vector<Row>* rows) {
  if (s.dtype != HOPATTN_DTYPE_E4M3) {
    const double ms = time_ms(buffers, b.group_ms, [&](const GemmArgs& a) { return cublas.run(a, nullptr); });
    Row ref = make_row(s, "cublas", ms, "cublasGemmEx, fp32 compute");
    ref.frac_of_gemm = 1.0;
    rows->push_back(ref);
    return ref;
  }
  // A baseline that fails (cuBLASLt refuses a configuration) is a row saying so, with no figures;
  // the hopattn rows are still timed (their ratio column is then 0).
  auto timed_or_failed = [&](const char* impl, const char* note, bool fast) {
    try {
      const double ms = time_ms(buffers, b.group_ms, [&](const GemmArgs& a) { return cublas_lt.run(a, nullptr, fast); });
      return make_row(s, impl, ms, note);
    } catch (const std::exception& e) {
      Row r = make_row(s, impl, 0.0, std::string("failed: ") + e.what());
      r.tflops = 0.0;
      return r;
    }
  };
  Row ref = timed_or_failed("cublaslt", "cublasLt e4m3, fp32 compute", false);
  ref.frac_of_gemm = ref.tflops > 0 ? 1.0 : 0.0;
  rows->push_back(ref);
  Row fast = timed_or_failed("cublaslt_fast", "cublasLt e4m3 fast accum", true);
  fast.frac_of_gemm = ref.tflops > 0 ? fast.tflops / ref.tflops : 0.0;
  rows->push_back(fast);
  return ref;
}

void bench_shape(const BenchArgs& b, const Shape& shape, tools::CublasGemm& cublas, tools::CublasLtFp8& cublas_lt,
                 std::vector<Row>* rows) {
  tools::GemmSetup s = b.setup;
  s.m = shape.m, s.n = shape.n, s.k = shape.k;
  tools::GemmBuffers buffers(s, 0, 17);
  const Row ref = baseline_rows(b, s, buffers, cublas, cublas_lt, rows);
  std::vector<Variant> variants = b.variants;
  if (variants.empty() || shape.progression) variants = compiled_variants(s.dtype);
  for (Variant v : variants) {
    GemmArgs probe = buffers.args(0);
    probe.variant = v;
    GemmDeviceContext ctx;
    HOPATTN_CUDA_CHECK(cudaGetDevice(&ctx.current_device));
    ctx.stream_device = ctx.current_device;
    HOPATTN_CUDA_CHECK(cudaDeviceGetAttribute(&ctx.sm_count, cudaDevAttrMultiProcessorCount, ctx.current_device));
    std::string why;
    const Variant chosen = select_variant(probe, ctx, &why);
    if (const Status st = gemm(probe, nullptr); !st.ok()) {
      Row skipped = make_row(s, "hopattn", 0, std::string(variant_name(v)) + ": skipped: " + st.to_string());
      skipped.tflops = 0;
      rows->push_back(skipped);
      continue;
    }
    const double ms = time_ms(buffers, b.group_ms, [&](GemmArgs a) {
      a.variant = v;
      return gemm(a, nullptr);
    });
    Row r = make_row(s, "hopattn", ms, std::string("variant=") + variant_name(chosen) + (v == HOPATTN_GEMM_AUTO ? " (auto)" : ""));
    r.frac_of_gemm = ref.tflops > 0 ? r.tflops / ref.tflops : 0.0;
    rows->push_back(r);
  }
}

void print_table(const std::vector<Row>& rows) {
  std::printf("\n%-5s %6s %6s %6s %-6s %-8s %-28s %9s %9s %9s\n", "dtype", "m", "n", "k", "layout", "impl", "variant",
              "ms", "TFLOP/s", "vs_cublas");
  for (const Row& r : rows) {
    std::printf("%-5s %6lld %6lld %6lld %-6s %-8s %-28s %9.4f %9.1f %9.3f\n", r.dtype.c_str(), r.m, r.n, r.k,
                r.layout.c_str(), r.impl.c_str(), r.note.substr(0, 28).c_str(), r.ms, r.tflops, r.frac_of_gemm);
  }
}

}  // namespace

std::string gemm_bench_usage() {
  return "gemm bench flags: --shapes square,llm,progression | --mnk MxNxK,...  --dtype bf16|fp16|e4m3  --layout rcr\n"
         "                  --variants auto|all|name,...  --group-ms 25\n";
}

std::vector<Row> run_gemm_bench(const std::vector<std::string>& args) {
  const BenchArgs b = parse(args);
  tools::CublasGemm cublas;
  tools::CublasLtFp8 cublas_lt;
  std::vector<Row> rows;
  int done = 0;
  for (const Shape& shape : b.shapes) {
    std::fprintf(stderr, "[gemm bench %d/%zu] %lldx%lldx%lld %s\n", ++done, b.shapes.size(), shape.m, shape.n,
                 shape.k, shape.progression ? "(every compiled variant)" : "");
    bench_shape(b, shape, cublas, cublas_lt, &rows);
  }
  print_table(rows);
  return rows;
}

}  // namespace hopattn::gemm
