// `hopattn check`: the correctness grid on the GPU. Prints one line per case and a summary;
// exits 1 on any failure, 2 without an sm_90 GPU.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "attention/device/compiled_set.hpp"
#include "attention_check.hpp"
#include "fp8_check.hpp"
#include "kvcache_check.hpp"
#include "varlen_check.hpp"
#include "baselines/baselines.hpp"
#include "cli/commands.hpp"
#include "common/cuda_check.hpp"

namespace hopattn::cli {
namespace {

void print_result(const reference::CheckResult& r, const char* verdict) {
  std::printf("%-5s %-8s %-62s O %-9.3g bound %-9.3g LSE %-9.3g bound %-9.3g %s\n", verdict,
              r.impl.c_str(), r.c.to_string().c_str(), r.o_err.max_abs, r.o_bound, r.lse_err.max_abs, r.lse_bound,
              r.message.c_str());
  std::fflush(stdout);
}

}  // namespace

int run_check_command(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::printf("usage: hopattn check [--quick]\n  Every supported case against the fp64 reference and cuDNN; exit 1 if one fails.\n");
      return 0;
    } else {
      std::fprintf(stderr, "usage: hopattn check [--quick]\n");
      return 2;
    }
  }
  std::string why;
  if (!has_sm90_gpu(&why)) {
    std::fprintf(stderr, "hopattn check needs an NVIDIA Hopper GPU (sm_90: H100 or H200); %s\n", why.c_str());
    return 2;
  }
  int failures = 0, passes = 0, baseline_unsupported = 0;

  // 1. The naive GPU reference agrees with the CPU reference (both float64).
  std::printf("== reference: GPU float64 kernel vs CPU float64 ==\n");
  for (const reference::CheckCase& c : reference::check_grid({64, 128, 256}, {HOPATTN_DTYPE_BF16}, true)) {
    const reference::ReferenceAgreement a = reference::compare_gpu_and_cpu_references(c);
    const bool ok = a.bad == 0 && a.o_max_rel < 1e-9 && a.lse_max_abs < 1e-9;
    std::printf("%-5s %-70s O rel %.2e  LSE abs %.2e  bad %lld\n", ok ? "ok" : "FAIL", c.to_string().c_str(),
                a.o_max_rel, a.lse_max_abs, static_cast<long long>(a.bad));
    ok ? ++passes : ++failures;
  }

  // 2. The implementations against the float64 reference, FlashAttention's tolerance rule.
  std::vector<std::pair<std::string, reference::ForwardFn>> impls;
  impls.emplace_back("hopattn", [](const AttentionForwardArgs& a, Stream s) { return attention_forward(a, s); });
  std::unique_ptr<baselines::CudnnSdpa> cudnn = baselines::CudnnSdpa::load(&why);
  if (cudnn) {
    std::printf("cuDNN %s loaded\n", cudnn->version_string().c_str());
    impls.emplace_back("cudnn", [&](const AttentionForwardArgs& a, Stream s) { return cudnn->forward(a, s); });
  } else {
    std::printf("note: cuDNN baseline unavailable: %s\n", why.c_str());
  }
  std::printf("== forward attention vs float64 reference (bound = 2 x error of plain attention in the dtype + floor) ==\n");
  const auto grid = reference::check_grid(attention::compiled_head_dims(), attention::compiled_dtypes(), quick);
  for (const auto& [name, fn] : impls)
    for (const reference::CheckCase& c : grid) {
      const reference::CheckResult r = reference::run_check(c, name, fn);
      // A case a baseline library does not support is reported, not failed; hopattn itself must
      // support every case of the grid.
      const bool excused = r.unsupported && name != "hopattn";
      print_result(r, r.pass ? "ok" : excused ? "n/a" : "FAIL");
      if (excused) ++baseline_unsupported;
      else r.pass ? ++passes : ++failures;
    }
  // 3. Variable-length batches (hopattn only: the cuDNN baseline has no ragged path here), per
  // sequence against the float64 reference, the rows outside every sequence left untouched.
  std::printf("== variable-length forward vs float64 reference, per sequence ==\n");
  for (hopattn_dtype_t dtype : attention::compiled_dtypes())
    for (int hdim : attention::compiled_head_dims()) {
      for (const reference::VarlenCase& c : reference::varlen_check_cases(hdim)) {
        if (quick && dtype != HOPATTN_DTYPE_BF16) continue;
        const reference::VarlenCheckResult r = reference::run_varlen_check(c, dtype, impls[0].second);
        double worst = 0;  // the largest O error as a fraction of its bound
        for (const reference::VarlenSequenceError& e : r.sequences)
          worst = std::max(worst, e.o_bound > 0 ? e.o.max_abs / e.o_bound : 0.0);
        std::printf("%-5s hopattn %s %s  O err/bound %.2f%s%s\n", r.pass ? "ok" : "FAIL", hopattn_dtype_name(dtype),
                    c.to_string().c_str(), worst, r.pass ? "" : "  ", r.message.c_str());
        r.pass ? ++passes : ++failures;
      }
    }
  // 4. Attention over a KV cache (16-bit caches, contiguous and paged; the int8 cache is the GPU
  // tests'), per sequence against the float64 reference, through the public call.
  std::printf("== attention over a KV cache vs float64 reference, per sequence ==\n");
  for (hopattn_dtype_t dtype : attention::compiled_dtypes())
    for (int hdim : attention::compiled_head_dims()) {
      if (quick && dtype != HOPATTN_DTYPE_BF16) continue;
      for (const reference::KvCheckCase& c : reference::kvcache_check_cases(hdim)) {
        const reference::KvCheckResult r = reference::run_kvcache_check(c, dtype);
        std::printf("%-5s hopattn %s kvcache %s  O err/bound %.2f%s%s\n", r.pass ? "ok" : "FAIL",
                    hopattn_dtype_name(dtype), c.to_string().c_str(), r.worst, r.pass ? "" : "  ", r.message.c_str());
        r.pass ? ++passes : ++failures;
      }
    }
  // 5. FP8 (e4m3) forward attention, against float64 attention on the dequantized inputs.
  if (!attention::compiled_fp8_head_dims().empty())
    std::printf("== FP8 (e4m3) attention vs float64 on the dequantized inputs ==\n");
  for (int hdim : attention::compiled_fp8_head_dims())
    for (const reference::Fp8Case& c : reference::fp8_check_cases(hdim)) {
      if (quick && c.p.seqlen_q > 200) continue;
      const reference::Fp8Result r = reference::run_fp8_case(c);
      std::printf("%-5s hopattn e4m3 %s  O err %.3g (bound %.3g) LSE err %.3g (bound %.3g)%s%s\n", r.pass ? "ok" : "FAIL",
                  c.to_string().c_str(), r.o_err.max_abs, r.o_bound, r.lse_err.max_abs, r.lse_bound,
                  r.pass ? "" : "  ", r.message.c_str());
      r.pass ? ++passes : ++failures;
    }
  if (baseline_unsupported > 0)
    std::printf("note: %d case(s) not supported by a baseline (marked n/a)\n", baseline_unsupported);
  std::printf("check: %d passed, %d failed\n", passes, failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace hopattn::cli
