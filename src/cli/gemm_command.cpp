#include "cli/gemm_command.hpp"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "common/cuda_check.hpp"
#include "gemm/gemm.hpp"
#include "baselines/cublas_gemm.hpp"
#include "cli_parse.hpp"
#include "gemm_reference.hpp"
#include "gemm_workspace.hpp"
#include "timing.hpp"

namespace hopattn::gemm {
namespace {

const char* kUsage =
    "usage: hopattn gemm --m M --n N --k K [--dtype bf16|fp16|e4m3] [--out bf16|fp16|fp32]\n"
    "                    [--layout rcr] [--variant auto|tma_wgmma|pipelined|warp_specialized|\n"
    "                     cooperative|pingpong|persistent|1|2|3|4c|4p|5] [--alpha 1] [--beta 0]\n"
    "                    [--check] [--no-time]\n"
    "  D(MxN) = alpha·A(MxK)·B(KxN) + beta·D, timed against cuBLAS in the same run.\n"
    "  --layout: A, B, D each r(ow)- or c(olumn)-major (default rcr).\n"
    "  --check: compare every element with cuBLAS's fp32 product (tolerance from K and the output type);\n"
    "           e4m3: with the fp64 host reference and the FP8 accumulation bound (M·N·K <= 2^34).\n"
    "  e4m3: A and B K-major (layout rc?), scales 1, D bf16 unless --out; timed against cuBLASLt FP8.\n";

struct Options {
  tools::GemmSetup setup;
  bool check = false, time = true;
};

bool parse(int argc, char** argv, Options* o, std::string* error) {
  bool have_m = false, have_n = false, have_k = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--check") { o->check = true; continue; }
    if (flag == "--no-time") { o->time = false; continue; }
    if (i + 1 >= argc) { *error = flag + ": missing value"; return false; }
    const std::string value = argv[++i];
    try {
      if (flag == "--m") o->setup.m = cli::parse_int(flag, value, 1, INT32_MAX), have_m = true;
      else if (flag == "--n") o->setup.n = cli::parse_int(flag, value, 1, INT32_MAX), have_n = true;
      else if (flag == "--k") o->setup.k = cli::parse_int(flag, value, 1, INT32_MAX), have_k = true;
      else if (flag == "--alpha") o->setup.alpha = float(cli::parse_real(flag, value, -1e30, 1e30));
      else if (flag == "--beta") o->setup.beta = float(cli::parse_real(flag, value, -1e30, 1e30));
      else if (flag == "--dtype") {
        if (!tools::parse_dtype(value, &o->setup.dtype)) throw std::invalid_argument(flag + ": '" + value + "' is not bf16, fp16 or e4m3");
      } else if (flag == "--out") {
        if (!tools::parse_dtype(value, &o->setup.out)) throw std::invalid_argument(flag + ": '" + value + "' is not bf16, fp16 or fp32");
      } else if (flag == "--layout") {
        if (!tools::parse_layout(value, &o->setup)) throw std::invalid_argument(flag + ": '" + value + "' is not three of r/c (e.g. rcr)");
      } else if (flag == "--variant") {
        if (!parse_variant(value, &o->setup.variant)) throw std::invalid_argument(flag + ": '" + value + "' is not a variant name or step");
      }
      else { *error = "unknown flag " + flag; return false; }
    } catch (const std::invalid_argument& e) {
      *error = e.what();
      return false;
    } catch (const std::exception&) {
      *error = flag + ": bad value '" + value + "'";
      return false;
    }
  }
  if (!have_m || !have_n || !have_k) { *error = "--m, --n and --k are required"; return false; }
  if (o->setup.m <= 0 || o->setup.n <= 0 || o->setup.k <= 0) { *error = "--m, --n, --k must be positive"; return false; }
  if (o->setup.out == HOPATTN_DTYPE_E4M3) { *error = "--out: e4m3 is not an output type"; return false; }
  // The default output type follows the inputs (bf16 -> bf16, fp16 -> fp16).
  return true;
}

void print_timing(const char* impl, double ms, double flops, double ref_tflops) {
  const double tflops = flops / (ms * 1e-3) / 1e12;
  std::printf("  %-8s %10.4f ms %9.1f TFLOP/s", impl, ms, tflops);
  if (ref_tflops > 0) std::printf("   %.3fx cuBLAS", tflops / ref_tflops);
  std::printf("\n");
}

int run(const Options& o) {
  const tools::GemmSetup& s = o.setup;
  tools::GemmBuffers buffers(s, o.time ? 0 : 1, 7);
  tools::CublasGemm cublas;
  tools::CublasLtFp8 cublas_lt;
  GemmArgs args = buffers.args(0);
  GemmDeviceContext ctx;
  HOPATTN_CUDA_CHECK(cudaGetDevice(&ctx.current_device));
  ctx.stream_device = ctx.current_device;
  HOPATTN_CUDA_CHECK(cudaDeviceGetAttribute(&ctx.sm_count, cudaDevAttrMultiProcessorCount, ctx.current_device));
  std::string why;
  const Variant chosen = select_variant(args, ctx, &why);
  std::printf("gemm m=%lld n=%lld k=%lld dtype=%s out=%s layout=%s alpha=%g beta=%g variant=%s (%s)\n",
              (long long)s.m, (long long)s.n, (long long)s.k, hopattn_dtype_name(s.dtype), hopattn_dtype_name(s.out),
              tools::layout_string(s).c_str(), s.alpha, s.beta, variant_name(chosen), why.c_str());
  if (const Status st = gemm(args, nullptr); !st.ok()) {
    std::fprintf(stderr, "hopattn gemm: %s\n", st.to_string().c_str());
    return 1;
  }
  HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());
  int rc = 0;
  const bool fp8 = s.dtype == HOPATTN_DTYPE_E4M3;
  if (o.check && fp8) {
    if (double(s.m) * double(s.n) * double(s.k) > std::ldexp(1.0, 34)) {
      std::fprintf(stderr, "hopattn gemm: --check with e4m3 uses the host reference: M·N·K must be at most 2^34\n");
      return 2;
    }
    if (s.beta != 0.0f) {
      std::fprintf(stderr, "hopattn gemm: --check needs --beta 0 (D is updated in place)\n");
      return 2;
    }
    const tools::HostMatrix ours = tools::download_matrix(args.d);
    const tools::Fp8Reference ref = tools::reference_gemm_e4m3(tools::download_matrix(args.a),
                                                                tools::download_matrix(args.b), nullptr, s.alpha, 0.0f);
    const std::string err = tools::compare_with_e4m3_reference(ours, ref, s.out);
    std::printf("  check vs fp64: %s\n", err.empty() ? "ok (every element within tolerance)" : err.c_str());
    if (!err.empty()) rc = 1;
  } else if (o.check) {
    if (s.beta != 0.0f) {
      std::fprintf(stderr, "hopattn gemm: --check needs --beta 0 (D is updated in place by both runs)\n");
      return 2;
    }
    const tools::HostMatrix ours = tools::download_matrix(args.d);
    // The reference is cuBLAS's product in fp32: a 16-bit cuBLAS output may be reduced in that
    // type (split K), which is less accurate than the kernel under test (tools/cublas_gemm.hpp).
    reference::DeviceBuffer product(size_t(s.m) * size_t(s.n) * sizeof(float));
    if (const Status st = cublas.product_fp32(buffers.args(0), static_cast<float*>(product.get()), nullptr); !st.ok()) {
      std::fprintf(stderr, "cuBLAS: %s\n", st.to_string().c_str());
      return 1;
    }
    HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());
    const tools::HostMatrix lib = tools::download_matrix(matrix(product.get(), HOPATTN_DTYPE_FP32, s.m, s.n, true));
    const std::string err = tools::compare_with_library(ours, lib, nullptr, 0.0f, s.k, std::fabs(s.alpha), s.out);
    std::printf("  check vs cuBLAS: %s\n", err.empty() ? "ok (every element within tolerance)" : err.c_str());
    if (!err.empty()) rc = 1;
  }
  if (o.time) {
    int next = 0;
    const bench::Timing ours = bench::time_launches(
        [&] {
          const Status st = gemm(buffers.args(next++), nullptr);
          if (!st.ok()) throw std::runtime_error(st.to_string());
        },
        nullptr);
    const bench::Timing ref = bench::time_launches(
        [&] {
          const Status st = fp8 ? cublas_lt.run(buffers.args(next++), nullptr) : cublas.run(buffers.args(next++), nullptr);
          if (!st.ok()) throw std::runtime_error(st.to_string());
        },
        nullptr);
    const double flops = tools::gemm_flops(s);
    const double ref_tflops = flops / (ref.median_ms * 1e-3) / 1e12;
    print_timing("hopattn", ours.median_ms, flops, ref_tflops);
    print_timing(fp8 ? "cublaslt" : "cublas", ref.median_ms, flops, 0);
  }
  return rc;
}

}  // namespace

int run_gemm_command(int argc, char** argv) {
  Options o;
  std::string error;
  bool out_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    out_given |= a == "--out";
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    }
  }
  if (!parse(argc, argv, &o, &error)) {
    std::fprintf(stderr, "hopattn gemm: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  if (!out_given) o.setup.out = o.setup.dtype == HOPATTN_DTYPE_E4M3 ? HOPATTN_DTYPE_BF16 : o.setup.dtype;
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    cudaGetLastError();
    std::fprintf(stderr, "hopattn gemm: no usable CUDA device (%s)\n",
                 err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    return 2;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hopattn gemm: %s\n", e.what());
    return 1;
  }
}

}  // namespace hopattn::gemm
