// The fused forward kernel against the float64 reference over the whole check grid (odd
// lengths, seqlen_q < and > seqlen_k, batch 1..4, MHA/GQA/MQA, causal on and off, inputs x1 and
// x8, padded strides, the bench's shapes), one test per (dtype, head dim), every compiled kernel
// of the registry (by name, through experimental::Overrides) on a subset, both persistent causal
// tile orders, run-to-run bit equality (a moving result is a race), and the options of 0.3
// (sliding windows, softcap, sinks, and all three together) through the defaults table.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention/device/compiled_set.hpp"
#include "attention/device/fwd_registry.hpp"
#include "attention/experimental.hpp"
#include "attention/fwd_tile_order.hpp"
#include "attention/kernel/sm90_fwd_config.hpp"
#include "attention_check.hpp"
#include "device_utils.hpp"
#include "gpu_test.hpp"

namespace hopattn::reference {
namespace {

// The persistent band tile order a run asks for (experimental::Overrides::fwd_persistent_group):
// the library's choice (the folded order; for a sliding window the grouped order at
// windowed_persistent_group's size), the folded order, the grouped zig-zag order at its exactly
// balanced group size (computed per call, below), or N >= 0 pairs per group.
constexpr int kLibraryChoice = -2;
constexpr int kFolded = -1;
constexpr int kZigzagBalanced = -3;

int sm_count() {
  int device = 0, sms = 0;
  HOPATTN_CUDA_CHECK(cudaGetDevice(&device));
  HOPATTN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// The registry row of `name` at `hdim` (kernel/sm90_fwd_config.hpp), or nullptr.
const attention::FwdKernelSpec* fwd_spec(const std::string& name, int hdim) {
  for (const attention::FwdKernelSpec& k : attention::kFwdKernels)
    if (k.hdim == hdim && name == k.name) return &k;
  return nullptr;
}

// The compiled kernels of one family at this head dim, by name.
std::vector<std::string> kernels_of(int hdim, attention::FwdKernel family) {
  std::vector<std::string> out;
  for (const std::string& name : compiled_kernel_names("fwd", hdim)) {
    const attention::FwdKernelSpec* s = fwd_spec(name, hdim);
    if (s != nullptr && s->kernel == family) out.push_back(name);
  }
  return out;
}

// The grouped zig-zag order's balanced group size for a call on a persistent kernel with
// `block_m`-row Q tiles: the largest that keeps a group's K and V within ~24 MB of L2, on the
// persistent grid (min(tiles, SMs) CTAs). What HOPATTN_FWD_PERSISTENT_ORDER=zigzag selected
// before the experiments moved into experimental::Overrides.
int zigzag_group(const AttentionForwardArgs& a, int block_m) {
  const int64_t pairs = a.q.shape[2] * a.q.shape[0];
  const int m_blocks = int((a.q.shape[1] + block_m - 1) / block_m);
  const int ctas = int(std::min<int64_t>(int64_t(m_blocks) * pairs, sm_count()));
  const int64_t kv_bytes = a.k.shape[1] * a.q.shape[3] * 2 * 2;  // K and V, 16-bit
  return attention::fwd_persistent_causal_group(m_blocks, pairs, ctas, kv_bytes, int64_t(24) << 20);
}

// The forward call with `kernel` forced ("": the defaults table) and the persistent causal order.
ForwardFn fused(const std::string& kernel, int persistent_group = kLibraryChoice) {
  return [kernel, persistent_group](const AttentionForwardArgs& a, Stream s) {
    experimental::Overrides o;
    o.fwd_kernel = kernel;
    o.fwd_persistent_group = persistent_group;
    if (persistent_group == kZigzagBalanced) {
      const attention::FwdKernelSpec* spec = fwd_spec(kernel, int(a.q.shape[3]));
      if (spec == nullptr) return Status::invalid("test: no registry row '" + kernel + "' at this head dim");
      o.fwd_persistent_group = zigzag_group(a, spec->tile.block_m);
    }
    return experimental::attention_forward(a, s, o);
  };
}

std::string run_label(const std::string& kernel, int persistent_group) {
  std::string label = kernel.empty() ? "default" : kernel;
  if (persistent_group == kZigzagBalanced) label += " zigzag";
  else if (persistent_group >= 0) label += " zigzag/" + std::to_string(persistent_group);
  return label;
}

using Config = DtypeHdim;

class AttentionFwd : public ::testing::TestWithParam<Config> {};

// Whether the named kernel is compiled for that mask ("" = the defaults: always).
bool compiled_for_mask(const std::string& kernel, int hdim, bool causal) {
  if (kernel.empty()) return true;
  const int i = attention::fwd_kernel_index(kernel, hdim);
  return i >= 0 && attention::fwd_kernel_compiled(i, hdim, causal);
}

void run_grid(const std::vector<CheckCase>& grid, const std::string& kernel, int persistent_group = kLibraryChoice) {
  const std::string label = run_label(kernel, persistent_group);
  int passed = 0, other_mask = 0;
  for (const CheckCase& c : grid) {
    // A window runs the band (causal) kernels.
    if (!compiled_for_mask(kernel, c.p.hdim, c.p.causal || c.p.window)) {  // refused: KernelNotCompiledForTheHeadDimIsRefused
      ++other_mask;
      continue;
    }
    const CheckResult r = run_check(c, "hopattn", fused(kernel, persistent_group));
    std::printf("%-4s %s %-72s O err %.3g (bound %.3g) LSE err %.3g (bound %.3g) %s\n", r.pass ? "ok" : "FAIL",
                label.c_str(), c.to_string().c_str(), r.o_err.max_abs, r.o_bound, r.lse_err.max_abs, r.lse_bound,
                r.message.c_str());
    EXPECT_TRUE(r.pass) << "kernel " << label << ", " << c.to_string() << ": " << r.message;
    passed += r.pass;
  }
  std::printf("kernel %s: %d of %zu cases passed (%d of a mask it is not compiled for)\n", label.c_str(), passed,
              grid.size() - other_mask, other_mask);
}

CheckCase make_case(const AttnProblem& p, hopattn_dtype_t dtype, uint64_t seed) {
  CheckCase c;
  c.p = p;
  c.dtype = dtype;
  c.seed = seed;
  return c;
}

TEST_P(AttentionFwd, MatchesFloat64Reference) {
  HOPATTN_REQUIRE_SM90();
  run_grid(check_grid({GetParam().hdim}, {GetParam().dtype}, false), "");
}

// More tiles than SMs (a persistent CTA loops over several, including causal tiles that see no
// key), on top of the quick grid.
std::vector<CheckCase> kernel_grid(const Config& cfg) {
  std::vector<CheckCase> grid = check_grid({cfg.hdim}, {cfg.dtype}, true);
  uint64_t seed = 500;
  for (int causal = 0; causal < 2; ++causal) {
    CheckCase many;
    many.p = AttnProblem{4, 1000, 1000, 16, 2, cfg.hdim, causal != 0, 0.0f};
    many.dtype = cfg.dtype;
    many.seed = seed++;
    grid.push_back(many);
  }
  CheckCase empty_rows;  // seqlen_q > seqlen_k, causal: the first Q tiles see no key at all
  empty_rows.p = AttnProblem{8, 1000, 300, 8, 8, cfg.hdim, true, 0.0f};
  empty_rows.dtype = cfg.dtype;
  empty_rows.seed = seed++;
  grid.push_back(empty_rows);
  return grid;
}

// Every kernel this build compiled for the head dim (experimental::compiled_kernels: the defaults'
// rows, and the ablation's with HOPATTN_BUILD_ABLATIONS).
TEST_P(AttentionFwd, EveryKernelMatchesFloat64Reference) {
  HOPATTN_REQUIRE_SM90();
  const std::vector<std::string> kernels = compiled_kernel_names("fwd", GetParam().hdim);
  for (const std::string& k : kernels) run_grid(kernel_grid(GetParam()), k);
  EXPECT_GE(kernels.size(), 1u);
}

// A kernel name that is not compiled for the call's head dim (a row of another head dim, an
// ablation row of a build without them, a name no row has) is refused with NOT_SUPPORTED naming
// the kernel and the head dim, and nothing is written.
TEST_P(AttentionFwd, KernelNotCompiledForTheHeadDimIsRefused) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  const std::vector<std::string> here = compiled_kernel_names("fwd", cfg.hdim);
  std::vector<std::string> absent = {"no_such_kernel"};
  for (const attention::FwdKernelSpec& k : attention::kFwdKernels)
    if (std::find(here.begin(), here.end(), k.name) == here.end() &&
        std::find(absent.begin(), absent.end(), k.name) == absent.end())
      absent.push_back(k.name);
  const int b = 1, s = 200, h = 2, d = cfg.hdim;
  DeviceBuffer q(int64_t(b) * s * h * d * 2), k(int64_t(b) * s * h * d * 2), v(int64_t(b) * s * h * d * 2),
      o(int64_t(b) * s * h * d * 2);
  fill_normal(q.get(), cfg.dtype, int64_t(b) * s * h * d, 31, 1.0f);
  fill_normal(k.get(), cfg.dtype, int64_t(b) * s * h * d, 32, 1.0f);
  fill_normal(v.get(), cfg.dtype, int64_t(b) * s * h * d, 33, 1.0f);
  AttentionForwardArgs a;
  a.q = tensor_bshd(q.get(), cfg.dtype, b, s, h, d);
  a.k = tensor_bshd(k.get(), cfg.dtype, b, s, h, d);
  a.v = tensor_bshd(v.get(), cfg.dtype, b, s, h, d);
  a.o = tensor_bshd(o.get(), cfg.dtype, b, s, h, d);
  for (const std::string& name : absent) {
    fill_nan(o.get(), 2, int64_t(b) * s * h * d);
    experimental::Overrides ov;
    ov.fwd_kernel = name;
    const Status st = experimental::attention_forward(a, nullptr, ov);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(st.code(), StatusCode::kNotSupported) << name << " at hdim " << d << ": " << st.to_string();
    EXPECT_NE(st.message().find("'" + name + "'"), std::string::npos) << st.to_string();
    EXPECT_NE(st.message().find("hdim " + std::to_string(d)), std::string::npos) << st.to_string();
    std::string picked;
    EXPECT_EQ(experimental::forward_kernel_name(a, ov, &picked).code(), StatusCode::kNotSupported) << name;
    const std::vector<float> ho = download_as_float(o.get(), cfg.dtype, int64_t(b) * s * h * d);
    EXPECT_TRUE(std::all_of(ho.begin(), ho.end(), [](float x) { return std::isnan(x); }))
        << "a refused call (" << name << ") wrote O";
  }
  // And every compiled name is accepted for the masks it is compiled for (and reported back as
  // the kernel that runs), refused for the other with NOT_SUPPORTED, writing nothing.
  for (const std::string& name : here)
    for (int causal = 0; causal < 2; ++causal) {
      a.causal = causal;
      experimental::Overrides ov;
      ov.fwd_kernel = name;
      std::string picked;
      const Status st = experimental::forward_kernel_name(a, ov, &picked);
      if (compiled_for_mask(name, d, causal != 0)) {
        EXPECT_TRUE(st.ok()) << name << ": " << st.to_string();
        EXPECT_EQ(picked, name);
      } else {
        EXPECT_EQ(st.code(), StatusCode::kNotSupported) << name << ": " << st.to_string();
        EXPECT_NE(st.message().find("calls only"), std::string::npos) << st.to_string();
        fill_nan(o.get(), 2, int64_t(b) * s * h * d);
        EXPECT_EQ(experimental::attention_forward(a, nullptr, ov).code(), StatusCode::kNotSupported) << name;
        const std::vector<float> ho = download_as_float(o.get(), cfg.dtype, int64_t(b) * s * h * d);
        EXPECT_TRUE(std::all_of(ho.begin(), ho.end(), [](float x) { return std::isnan(x); })) << name;
      }
    }
  // With a window, a softcap or sinks the defaults pick the head dim's options row; a named row
  // without the options is refused with NOT_SUPPORTED naming the row that has them, writing nothing.
  a.causal = 1;
  a.softcap = 30.0f;
  int options_rows = 0;
  for (const std::string& name : here) {
    const attention::FwdKernelSpec* spec = fwd_spec(name, d);
    ASSERT_NE(spec, nullptr) << name;
    experimental::Overrides ov;
    ov.fwd_kernel = name;
    std::string picked;
    const Status st = experimental::forward_kernel_name(a, ov, &picked);
    if (spec->options) {
      ++options_rows;
      EXPECT_TRUE(st.ok()) << name << ": " << st.to_string();
      std::string by_default;
      EXPECT_TRUE(experimental::forward_kernel_name(a, experimental::Overrides{}, &by_default).ok());
      EXPECT_EQ(by_default, name);
    } else if (compiled_for_mask(name, d, true)) {
      EXPECT_EQ(st.code(), StatusCode::kNotSupported) << name << ": " << st.to_string();
      EXPECT_NE(st.message().find("does not take a window, softcap, sinks or a variable-length batch"), std::string::npos) << st.to_string();
      fill_nan(o.get(), 2, int64_t(b) * s * h * d);
      EXPECT_EQ(experimental::attention_forward(a, nullptr, ov).code(), StatusCode::kNotSupported) << name;
      const std::vector<float> ho = download_as_float(o.get(), cfg.dtype, int64_t(b) * s * h * d);
      EXPECT_TRUE(std::all_of(ho.begin(), ho.end(), [](float x) { return std::isnan(x); })) << name;
    }
  }
  EXPECT_EQ(options_rows, 1) << "one row per head dim takes the options";
}

// The persistent causal tile orders (fwd_tile_order.hpp): shapes whose unit count is below, near
// and above the SM count: an odd number of Q tiles (1100 rows are 9 tiles of 128, 6 of 192: two
// pairs' middle tiles make a unit, and with an odd pair count the last unit names no second
// pair), an even one, GQA, seqlen_q < seqlen_k. Units: 128 / 192 rows.
std::vector<CheckCase> persistent_causal_cases(const Config& cfg) {
  std::vector<CheckCase> cases;
  const AttnProblem shapes[] = {{1, 1100, 1100, 3, 1, cfg.hdim, true, 0.0f},   // 3 pairs: 18 / 9 units
                                {5, 1100, 1100, 8, 2, cfg.hdim, true, 0.0f},   // 40 pairs: 180 / 120 units
                                {3, 1024, 1024, 12, 12, cfg.hdim, true, 0.0f}, // 36 pairs, even tile count
                                {2, 700, 2000, 6, 3, cfg.hdim, true, 0.0f}};   // bottom-right, sq < sk
  int seed = 1500;
  for (const AttnProblem& sh : shapes) cases.push_back(make_case(sh, cfg.dtype, seed++));
  return cases;
}

// The folded order (the default).
TEST_P(AttentionFwd, PersistentCausalFoldedOrder) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  const std::vector<std::string> persistent = kernels_of(cfg.hdim, attention::FwdKernel::kPersistentPingPong);
  std::vector<CheckCase> cases = persistent_causal_cases(cfg);
  cases.push_back(make_case({2, 64, 64, 140, 14, cfg.hdim, true, 0.0f}, cfg.dtype, 1601));  // 140 one-block tiles
  cases.push_back(make_case({3, 1, 1, 8, 8, cfg.hdim, true, 0.0f}, cfg.dtype, 1602));       // fewer units than SMs
  cases.push_back(make_case({1, 1000, 17, 16, 4, cfg.hdim, true, 0.0f}, cfg.dtype, 1603));  // rows without keys
  for (const std::string& k : persistent) run_grid(cases, k, kFolded);
  EXPECT_GE(persistent.size(), 1u);
}

// A padded GQA call's tensors on the device: q and k N(0, 2^2), v N(0, 1) (seeds seed, +1, +2), O
// and LSE, and its arguments (no workspace).
struct PaddedCall {
  hopattn_dtype_t dtype;
  int b, s, hq, hkv, d;
  DeviceBuffer q, k, v, o, lse;
  PaddedCall(hopattn_dtype_t dt, int b_, int s_, int hq_, int hkv_, int d_, uint64_t seed)
      : dtype(dt), b(b_), s(s_), hq(hq_), hkv(hkv_), d(d_), q(o_elems() * 2), k(kv_elems() * 2), v(kv_elems() * 2),
        o(o_elems() * 2), lse(lse_elems() * 4) {
    fill_normal(q.get(), dtype, o_elems(), seed, 2.0f);
    fill_normal(k.get(), dtype, kv_elems(), seed + 1, 2.0f);
    fill_normal(v.get(), dtype, kv_elems(), seed + 2, 1.0f);
  }
  int64_t o_elems() const { return int64_t(b) * s * hq * d; }
  int64_t kv_elems() const { return int64_t(b) * s * hkv * d; }
  int64_t lse_elems() const { return int64_t(b) * hq * s; }
  AttentionForwardArgs args(int causal) const {
    AttentionForwardArgs a{};
    a.q = tensor_bshd(q.get(), dtype, b, s, hq, d);
    a.k = tensor_bshd(k.get(), dtype, b, s, hkv, d);
    a.v = tensor_bshd(v.get(), dtype, b, s, hkv, d);
    a.o = tensor_bshd(o.get(), dtype, b, s, hq, d);
    a.lse = tensor_lse(lse.as<float>(), b, hq, s);
    a.causal = causal;
    return a;
  }
  // O and LSE poisoned (NaN), then `launch` (a Status), then O and LSE as floats.
  template <class Launch>
  Status run(Launch&& launch, std::vector<float>* out, std::vector<float>* lse_out) const {
    fill_nan(o.get(), 2, o_elems());
    fill_nan(lse.get(), 4, lse_elems());
    const Status st = launch();
    if (!st.ok()) return st;
    *out = download_as_float(o.get(), dtype, o_elems());
    *lse_out = download_as_float(lse.get(), HOPATTN_DTYPE_FP32, lse_elems());
    return st;
  }
};

// The grouped zig-zag order (kept for ablations; Overrides::fwd_persistent_group) at its balanced
// group size on the folded test's shapes, and on a small problem with more tiles than SMs (140
// one-block Q tiles per batch: CTAs take several tiles).
TEST_P(AttentionFwd, PersistentCausalZigzagOrder) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  std::vector<CheckCase> cases = persistent_causal_cases(cfg);
  cases.push_back(make_case({2, 64, 64, 140, 14, cfg.hdim, true, 0.0f}, cfg.dtype, 1600));
  const std::vector<std::string> persistent = kernels_of(cfg.hdim, attention::FwdKernel::kPersistentPingPong);
  for (const std::string& k : persistent) run_grid(cases, k, kZigzagBalanced);
  EXPECT_GE(persistent.size(), 1u);
}

// The grouped zig-zag order takes effect only with more pairs than a group: 9 x 16 pairs at
// seqlen 1000 (8 Q tiles of 128 rows, 6 of 192) on 132 SMs make groups of 33 pairs (128-row tiles,
// hdim 128 and 256) or 44 (the 192-row tiles of hdim 64), the last group with the remainder. Each
// persistent kernel runs the folded order (the default) and the zig-zag order at that size.
TEST_P(AttentionFwd, PersistentCausalOrderInGroups) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  const CheckCase c = make_case({9, 1000, 1000, 16, 4, cfg.hdim, true, 0.0f}, cfg.dtype, 777);
  const int sms = sm_count();
  const int pairs = 9 * 16;
  const std::vector<std::string> persistent = kernels_of(cfg.hdim, attention::FwdKernel::kPersistentPingPong);
  for (const std::string& k : persistent) {
    const int block_m = fwd_spec(k, cfg.hdim)->tile.block_m;
    const int m_blocks = (1000 + block_m - 1) / block_m;
    const int group = attention::fwd_persistent_causal_group(m_blocks, pairs, std::min(sms, m_blocks * pairs),
                                                             int64_t(1000) * cfg.hdim * 2 * 2, int64_t(24) << 20);
    std::printf("%s on %d SMs: %d pairs per group of the balanced zig-zag order (0: one group)\n", k.c_str(), sms,
                group);
    if (sms == 132) {
      EXPECT_EQ(group, block_m == 192 ? 44 : 33) << k;
    }
    run_grid({c}, k, kFolded);
    run_grid({c}, k, group);
  }
  EXPECT_GE(persistent.size(), 1u);
}

// One small problem per kernel, causal and not: the case gpu-run.sh runs under compute-sanitizer
// (racecheck, synccheck), where the full grid would take too long.
TEST_P(AttentionFwd, SanitizerSmallShapeEveryKernel) {
  HOPATTN_REQUIRE_SM90();
  const std::vector<std::string> kernels = compiled_kernel_names("fwd", GetParam().hdim);
  for (size_t i = 0; i < kernels.size(); ++i)
    for (int causal = 0; causal < 2; ++causal)
      run_grid({make_case({1, 300, 300, 2, 1, GetParam().hdim, causal != 0, 0.0f}, GetParam().dtype,
                          900 + i * 2 + causal)},
               kernels[i]);
  EXPECT_GE(kernels.size(), 1u);
}

// The persistent kernels on a small problem with more tiles than SMs (140 one-block Q tiles;
// causal: 70 folded units of two pairs' tiles), so some CTAs' warpgroups go round their Q, K/V and
// O-staging pipelines more than once: what gpu-run.sh --sanitize runs under racecheck and synccheck
// beside the shape above, whose tiles fit one per CTA (the 160 four-block tiles of 256 rows took
// more than 120 s under racecheck at hdim 256, r115).
TEST_P(AttentionFwd, SanitizerPersistentSeveralTilesPerCta) {
  HOPATTN_REQUIRE_SM90();
  const std::vector<std::string> persistent = kernels_of(GetParam().hdim, attention::FwdKernel::kPersistentPingPong);
  for (size_t i = 0; i < persistent.size(); ++i)
    for (int causal = 0; causal < 2; ++causal)
      run_grid({make_case({1, 64, 64, 140, 14, GetParam().hdim, causal != 0, 0.0f}, GetParam().dtype,
                          1900 + i * 2 + causal)},
               persistent[i]);
  EXPECT_GE(persistent.size(), 1u);
}

TEST_P(AttentionFwd, RepeatedRunsAreBitIdentical) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  // 256 Q tiles (causal: 128 folded units): persistent CTAs take two tiles or more.
  const PaddedCall call(cfg.dtype, 4, 1000, 8, 2, cfg.hdim, 91);
  // The default choice 20 times, every compiled kernel 5 times (a race moves the result).
  std::vector<std::string> kernels = {""};
  for (const std::string& name : compiled_kernel_names("fwd", call.d)) kernels.push_back(name);
  for (const std::string& kernel : kernels)
    for (int causal = 0; causal < 2; ++causal) {
      if (!compiled_for_mask(kernel, call.d, causal != 0)) continue;
      AttentionForwardArgs a = call.args(causal);
      experimental::Overrides ov;
      ov.fwd_kernel = kernel;
      const std::string label = kernel.empty() ? "default" : kernel;
      std::vector<float> first_o, first_lse;
      const int reps = kernel.empty() ? 20 : 5;
      for (int rep = 0; rep < reps; ++rep) {
        std::vector<float> ho, hl;
        const Status st = call.run(
            [&] { return kernel.empty() ? attention_forward(a, nullptr) : experimental::attention_forward(a, nullptr, ov); },
            &ho, &hl);
        ASSERT_TRUE(st.ok()) << "kernel " << label << ": " << st.to_string();
        if (rep == 0) {
          first_o = ho, first_lse = hl;
          continue;
        }
        ASSERT_EQ(std::memcmp(ho.data(), first_o.data(), ho.size() * 4), 0)
            << "O changed on repetition " << rep << " (kernel " << label << ", causal " << causal << ")";
        ASSERT_EQ(std::memcmp(hl.data(), first_lse.data(), hl.size() * 4), 0)
            << "LSE changed on repetition " << rep << " (kernel " << label << ", causal " << causal << ")";
      }
    }
}

// --- The options of 0.3 (hopattn.h): sliding window, softcap, sinks ---
// Each case runs the defaults table's kernel against the float64 reference (the CPU's for small
// problems, the GPU's for large ones), O and LSE, NaN-poisoned outputs, the 2x-yardstick rule.

AttnProblem windowed(AttnProblem p, int left, int right) {
  p.window = true, p.window_left = left, p.window_right = right;
  return p;
}

AttnProblem capped(AttnProblem p, float softcap) {
  p.softcap = softcap;
  return p;
}

// One sink per q-head: head 0 -inf (the same as none), head 1 +20 (takes nearly all of a row's
// mass), the others N(0, 2^2) (a fixed draw).
AttnProblem with_sinks(AttnProblem p) {
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  p.sinks.resize(p.heads_q);
  for (int h = 0; h < p.heads_q; ++h) p.sinks[h] = h == 0 ? -INFINITY : h == 1 ? 20.0f : dist(gen);
  return p;
}

CheckCase make_case(const AttnProblem& p, const Config& cfg, uint64_t seed, float input_std) {
  CheckCase c = make_case(p, cfg.dtype, seed);
  c.input_std = input_std;
  return c;
}

// Windows (left, right) of each kind: both sides bounded, one side unbounded, (0, 0) (a row sees
// its own key), right > 0 without causal, causal with a window; seqlen_q below, equal to and above
// seqlen_k (rows that see no key: O = 0, LSE = -inf); left edges at and around 64- and 128-key
// tile boundaries; a long seqlen_k whose KV tiles outside the window are skipped; GQA 6:2.
TEST_P(AttentionFwd, SlidingWindowMatchesFloat64Reference) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  const int d = cfg.hdim;
  std::vector<CheckCase> grid;
  uint64_t seed = 3000;
  auto add = [&](const AttnProblem& p) { grid.push_back(make_case(p, cfg.dtype, seed++)); };
  add(windowed({1, 17, 17, 2, 2, d, false, 0.0f}, 0, 0));
  add(windowed({1, 17, 17, 6, 2, d, true, 0.0f}, 1, 0));
  add(windowed({1, 17, 17, 2, 2, d, false, 0.0f}, 0, 3));
  add(windowed({2, 113, 1000, 6, 2, d, false, 0.0f}, 17, -1));
  add(windowed({1, 113, 1000, 6, 2, d, false, 0.0f}, 17, 33));
  add(windowed({1, 113, 1000, 6, 2, d, true, 0.0f}, 100, -1));  // causal: right -1 reads as 0
  add(windowed({1, 1000, 113, 4, 4, d, false, 0.0f}, -1, 5));    // rows 0..881 see no key
  add(windowed({1, 1000, 113, 6, 2, d, true, 0.0f}, 40, 0));
  add(windowed({1, 1, 129, 2, 2, d, false, 0.0f}, 3, 0));
  add(windowed({1, 1, 129, 2, 2, d, true, 0.0f}, 200, 0));
  add(windowed({2, 300, 300, 6, 2, d, false, 0.0f}, 3, 200));
  add(windowed({2, 300, 300, 6, 2, d, false, 0.0f}, 1000, 1000));  // wider than the sequence: no mask
  add(windowed({1, 129, 4096, 2, 1, d, true, 0.0f}, 256, 0));       // 257 of 4096 keys: tiles skipped
  add(windowed({1, 129, 4096, 2, 1, d, false, 0.0f}, 256, 256));
  for (int left : {63, 64, 65, 127, 128, 129}) add(windowed({1, 512, 512, 2, 2, d, true, 0.0f}, left, 0));
  add(windowed({1, 512, 512, 2, 2, d, false, 0.0f}, 128, 128));
  add(windowed({1, 512, 512, 2, 2, d, false, 0.0f}, 127, 129));
  add(windowed({1, 512, 512, 2, 2, d, false, 0.0f}, 129, 127));
  run_grid(grid, "");
}

// Softcap on large logits: inputs x4 make the raw scores ±50 and more, which a cap of 30 bends
// and a cap of 5 flattens.
TEST_P(AttentionFwd, SoftcapMatchesFloat64Reference) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  const int d = cfg.hdim;
  std::vector<CheckCase> grid;
  uint64_t seed = 3100;
  for (float cap : {30.0f, 5.0f}) {
    grid.push_back(make_case(capped({2, 300, 300, 6, 2, d, false, 0.0f}, cap), cfg, seed++, 4.0f));
    grid.push_back(make_case(capped({2, 300, 300, 6, 2, d, true, 0.0f}, cap), cfg, seed++, 4.0f));
    grid.push_back(make_case(capped({1, 113, 257, 4, 4, d, false, 0.0f}, cap), cfg, seed++, 4.0f));
  }
  grid.push_back(make_case(capped({1, 113, 257, 4, 4, d, true, 0.3f}, 5.0f), cfg, seed++, 1.0f));  // a set scale
  CheckCase padded = make_case(capped({1, 130, 70, 2, 1, d, true, 0.0f}, 30.0f), cfg, seed++, 4.0f);
  padded.padded = true;
  grid.push_back(padded);
  run_grid(grid, "");
}

// Sinks per q-head (-inf, +20 and N(0, 4) values), with and without causal, with inputs x1 and
// x4, and with windows that leave rows seeing no key (O = 0, LSE = the head's sink).
TEST_P(AttentionFwd, SinksMatchFloat64Reference) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  const int d = cfg.hdim;
  std::vector<CheckCase> grid;
  uint64_t seed = 3200;
  for (int causal = 0; causal < 2; ++causal)
    for (float input_std : {1.0f, 4.0f})
      grid.push_back(make_case(with_sinks({2, 200, 333, 6, 2, d, causal != 0, 0.0f}), cfg, seed++, input_std));
  grid.push_back(make_case(with_sinks({1, 1, 129, 8, 8, d, false, 0.0f}), cfg, seed++, 1.0f));
  // sq > sk: rows 0..699 see no key, the others 65 keys at most.
  grid.push_back(make_case(with_sinks(windowed({1, 1000, 300, 6, 2, d, true, 0.0f}, 64, 0)), cfg, seed++, 1.0f));
  // Rows 0..259 see no key; the tensors in padded rows.
  CheckCase padded = make_case(with_sinks(windowed({1, 400, 130, 6, 2, d, false, 0.0f}, 50, 10)), cfg, seed++, 1.0f);
  padded.padded = true;
  grid.push_back(padded);
  run_grid(grid, "");
}

// Window, softcap and sinks together.
TEST_P(AttentionFwd, WindowSoftcapAndSinksTogetherMatchFloat64Reference) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  const int d = cfg.hdim;
  std::vector<CheckCase> grid;
  uint64_t seed = 3300;
  grid.push_back(make_case(with_sinks(capped(windowed({2, 513, 700, 6, 2, d, false, 0.0f}, 200, 30), 30.0f)),
                           cfg, seed++, 4.0f));
  grid.push_back(make_case(with_sinks(capped(windowed({1, 700, 400, 6, 2, d, true, 0.0f}, 129, -1), 5.0f)),
                           cfg, seed++, 4.0f));  // rows 0..299 see no key
  grid.push_back(make_case(with_sinks(capped(windowed({1, 17, 17, 2, 2, d, false, 0.0f}, 0, 0), 5.0f)),
                           cfg, seed++, 4.0f));
  grid.push_back(make_case(with_sinks(capped(windowed({1, 129, 4096, 6, 2, d, true, 0.0f}, 256, 0), 30.0f)),
                           cfg, seed++, 4.0f));
  run_grid(grid, "");
}

// Every row that takes the options: windows whose tiles start past KV tile 0 (n_first > 0)
// on grids with several tiles per persistent CTA (the K/V ring positions run on across tiles),
// a window that leaves whole Q tiles without a key, and softcap and sinks on top.
TEST_P(AttentionFwd, EveryKernelWithWindowSoftcapAndSinks) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  const int d = cfg.hdim;
  std::vector<CheckCase> grid;
  uint64_t seed = 3400;
  grid.push_back(make_case(windowed({4, 1000, 1000, 16, 2, d, true, 0.0f}, 200, 0), cfg.dtype, seed++));
  grid.push_back(make_case(windowed({4, 1000, 1000, 16, 2, d, false, 0.0f}, 130, 70), cfg.dtype, seed++));
  grid.push_back(make_case(windowed({2, 1000, 300, 8, 8, d, true, 0.0f}, 40, 0), cfg.dtype, seed++));
  grid.push_back(make_case(with_sinks(capped(windowed({2, 700, 2000, 6, 2, d, true, 0.0f}, 300, -1), 20.0f)), cfg,
                           seed++, 4.0f));
  grid.push_back(make_case(with_sinks(capped({2, 300, 300, 6, 2, d, false, 0.0f}, 20.0f)), cfg, seed++, 4.0f));
  // The rows that take the options (the others refuse them: KernelNotCompiledForTheHeadDimIsRefused).
  int runs = 0;
  for (const std::string& k : compiled_kernel_names("fwd", d)) {
    const attention::FwdKernelSpec* spec = fwd_spec(k, d);
    if (spec == nullptr || !spec->options) continue;
    for (int group : {kFolded, kZigzagBalanced}) run_grid(grid, k, group);  // both persistent causal orders
    ++runs;
  }
  EXPECT_GE(runs, 1);
}


INSTANTIATE_TEST_SUITE_P(Compiled, AttentionFwd, ::testing::ValuesIn(compiled_dtype_hdims()), dtype_hdim_name);

}  // namespace
}  // namespace hopattn::reference
