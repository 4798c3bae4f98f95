// Variable-length forward batches (hopattn.h, 0.4): packed Q/K/V with cu_seqlens_q/k and optional
// seqused_k, against the float64 reference computed sequence by sequence; for every compiled
// (dtype, head dim): odd and empty lengths, queries longer and shorter than keys, GQA, causal and
// not, the window, softcap and sinks; the rows outside every sequence and the key rows past
// seqused_k (NaN-poisoned) never read or written; equal lengths bit for bit the padded call on the
// same kernel; bad lengths recorded and their rows NaN; repeated runs bit-identical; a CUDA graph
// replayed with new lengths.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attention/device/compiled_set.hpp"
#include "attention/device/fwd_registry.hpp"
#include "attention/experimental.hpp"
#include "attention/kernel/sm90_fwd_config.hpp"
#include "attention_check.hpp"
#include "varlen_check.hpp"
#include "common/cuda_check.hpp"
#include "common/dtype.hpp"
#include "device_utils.hpp"
#include "gpu_test.hpp"
#include "hopattn/kvcache.hpp"

namespace hopattn::reference {
namespace {

using Config = DtypeHdim;

class AttentionVarlen : public ::testing::TestWithParam<Config> {};

// Every compiled (dtype, head dim).
std::vector<Config> varlen_configs() { return compiled_dtype_hdims(); }

std::vector<int32_t> prefix(int start, const std::vector<int>& lens) { return varlen_prefix(start, lens); }

DeviceBuffer upload_ints(const std::vector<int32_t>& v) {
  DeviceBuffer buf(std::max<size_t>(v.size(), 1) * 4);
  if (!v.empty()) HOPATTN_CUDA_CHECK(cudaMemcpy(buf.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  return buf;
}

// The case's tensors (tests/reference/varlen_check.hpp: a margin of rows outside every sequence,
// inputs random, keys past seqused_k NaN, outputs NaN).
void build_run(const VarlenCase& c, hopattn_dtype_t dtype, VarlenRun& r) {
  const Status s = build_varlen_run(c, dtype, r);
  ASSERT_TRUE(s.ok()) << c.to_string() << ": " << s.to_string();
}

// The outputs against the per-sequence float64 references (2x the lowp yardstick, as run_check),
// and every row outside the sequences still NaN.
void check_outputs(const VarlenCase& c, hopattn_dtype_t dtype, const VarlenRun& r, const std::string& label) {
  const VarlenCheckResult res = check_varlen_outputs(c, dtype, r);
  for (const VarlenSequenceError& e : res.sequences)
    std::printf("  %s (%d:%d) O err %.3g (bound %.3g) LSE err %.3g (bound %.3g)\n", label.c_str(), e.lq, e.lk,
                e.o.max_abs, e.o_bound, e.lse.max_abs, e.lse_bound);
  EXPECT_TRUE(res.pass) << label << " " << c.to_string() << ": " << res.message;
}

Status run_varlen(const VarlenRun& r, const std::string& kernel = "", bool pdl = true, bool dynamic = true) {
  experimental::Overrides ov;
  ov.fwd_kernel = kernel;
  ov.fwd_varlen_pdl = pdl;
  ov.fwd_varlen_dynamic = dynamic;
  const Status s = experimental::attention_forward(r.args, nullptr, ov);
  HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());
  return s;
}

void run_case(const VarlenCase& c, const Config& cfg) {
  VarlenRun r;
  build_run(c, cfg.dtype, r);
  const Status s = run_varlen(r);
  ASSERT_TRUE(s.ok()) << c.to_string() << ": " << s.to_string();
  const Status rec = attention_device_check(nullptr);
  EXPECT_TRUE(rec.ok()) << c.to_string() << ": the device check recorded " << rec.to_string();
  check_outputs(c, cfg.dtype, r, hopattn_dtype_name(cfg.dtype));
}

AttnProblem heads(int hq, int hkv, const Config& cfg, bool causal) {
  AttnProblem p;
  p.heads_q = hq, p.heads_kv = hkv, p.hdim = cfg.hdim, p.causal = causal;
  return p;
}

// Odd lengths around the tiles (1, 17, 63..65, 113, 127..129, 1000), an empty sequence, a
// sequence with queries but no key, more queries than keys (rows that see no key under causal:
// O = 0, LSE = -inf) and fewer; GQA 6:2; offsets starting past row 0; causal and not.
TEST_P(AttentionVarlen, MixedLengthsMatchFloat64Reference) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  for (int causal = 0; causal < 2; ++causal) {
    VarlenCase c;
    c.len_q = {1, 17, 113, 1000, 0, 129, 64, 65, 5, 127, 300};
    c.len_k = {1, 17, 113, 1000, 7, 129, 64, 65, 0, 40, 200};
    c.q_start = 2, c.k_start = 1;
    c.p = heads(6, 2, cfg, causal != 0);
    c.seed = 11 + causal;
    run_case(c, cfg);
  }
}

// Odd head counts with odd Q-tile counts: the folded order leaves a middle tile pairless, so the
// list is longer than tiles x heads (the capacity's rounding up; found by review, 2026-12-06).
TEST_P(AttentionVarlen, OddHeadCounts) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  for (const auto& [hq, hkv] : {std::pair<int, int>{3, 1}, std::pair<int, int>{5, 5}, std::pair<int, int>{1, 1}}) {
    VarlenCase c;
    c.len_q = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 129, 65, 300};
    c.len_k = {1, 2, 3, 1, 1, 9, 1, 1, 1, 1, 129, 65, 300};
    c.p = heads(hq, hkv, cfg, true);
    c.seed = 51 + hq;
    run_case(c, cfg);
  }
}

// seqused_k below the cu_seqlens_k range (the keys past it NaN: reading one would poison O),
// equal to it, and 0; MQA.
TEST_P(AttentionVarlen, SequsedKLimitsTheKeys) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  for (int causal = 0; causal < 2; ++causal) {
    VarlenCase c;
    c.len_q = {50, 200, 1, 129, 31};
    c.len_k = {300, 260, 64, 129, 31};
    c.used_k = {117, 260, 0, 100, 31};
    c.p = heads(4, 1, cfg, causal != 0);
    c.seed = 21 + causal;
    run_case(c, cfg);
  }
}

// The options of 0.3 on a variable-length batch: windows (causal and two-sided), softcap with large
// logits, sinks (one -inf, one large), all three together.
TEST_P(AttentionVarlen, WindowSoftcapAndSinks) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  VarlenCase base;
  base.len_q = {1, 300, 17, 700, 129};
  base.len_k = {1, 300, 40, 650, 129};
  std::mt19937 gen(5);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> sinks(4);
  for (int h = 0; h < 4; ++h) sinks[h] = h == 0 ? -INFINITY : h == 1 ? 20.0f : dist(gen);
  struct Opt {
    bool causal;
    int left, right;
    float softcap;
    bool sinks;
  };
  const Opt opts[] = {{true, 100, 0, 0.0f, false},  {false, 64, 31, 0.0f, false}, {false, -1, 0, 0.0f, false},
                      {true, -1, -1, 30.0f, false}, {false, -1, -1, 0.0f, true},  {true, 129, 0, 20.0f, true}};
  uint64_t seed = 31;
  for (const Opt& o : opts) {
    VarlenCase c = base;
    c.p = heads(4, 2, cfg, o.causal);
    if (o.left != -1 || o.right != -1) c.p.window = true, c.p.window_left = o.left, c.p.window_right = o.right;
    c.p.softcap = o.softcap;
    if (o.sinks) c.p.sinks = sinks;
    c.input_std = o.softcap > 0 ? 8.0f : 1.0f;  // large logits: the cap matters
    c.seed = seed++;
    run_case(c, cfg);
  }
}

// Equal lengths: the varlen call and the padded call on the same kernel (the options row, which
// runs every varlen call) compute the same tiles the same way: O and LSE bit for bit.
TEST_P(AttentionVarlen, EqualLengthsBitIdenticalToPadded) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  std::string options_row;
  for (int i = 0; i < attention::kFwdKernelCount; ++i)
    if (attention::kFwdKernels[i].options && attention::fwd_kernel_index(attention::kFwdKernels[i].name, cfg.hdim) == i)
      options_row = attention::kFwdKernels[i].name;
  ASSERT_FALSE(options_row.empty()) << "no options row compiled at hdim " << cfg.hdim;
  for (int len : {1000, 1024}) {
    for (int causal = 0; causal < 2; ++causal) {
      VarlenCase c;
      c.len_q = c.len_k = std::vector<int>(3, len);
      c.p = heads(4, 2, cfg, causal != 0);
      c.seed = 41;
      VarlenRun r;
      build_run(c, cfg.dtype, r);
      ASSERT_TRUE(run_varlen(r).ok());
      // The padded call over the same memory: (3, len, h, d) from row 0 (q_start 0, no margin used).
      const int d = cfg.hdim, es = int(dtype_size(cfg.dtype));
      DeviceBuffer o2(int64_t(3) * len * 4 * d * es), lse2(int64_t(3) * 4 * len * 4);
      fill_nan(o2.get(), es, int64_t(3) * len * 4 * d);
      fill_nan(lse2.get(), 4, int64_t(3) * 4 * len);
      AttentionForwardArgs a{};
      a.q = tensor_bshd(r.q.get(), cfg.dtype, 3, len, 4, d);
      a.k = tensor_bshd(r.k.get(), cfg.dtype, 3, len, 2, d);
      a.v = tensor_bshd(r.v.get(), cfg.dtype, 3, len, 2, d);
      a.o = tensor_bshd(o2.get(), cfg.dtype, 3, len, 4, d);
      a.lse = tensor_lse(lse2.as<float>(), 3, 4, len);
      a.causal = causal;
      // The options row is compiled for the band only: a non-causal varlen call runs the band with
      // both sides unbounded, which a padded call asks for as a window of (-1, -1).
      if (!causal) a.window = 1, a.window_left = -1, a.window_right = -1;
      experimental::Overrides ov;
      ov.fwd_kernel = options_row;
      ASSERT_TRUE(experimental::attention_forward(a, nullptr, ov).ok());
      HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());
      const int64_t n = int64_t(3) * len * 4 * d;
      std::vector<uint16_t> v1(n), v2(n);
      HOPATTN_CUDA_CHECK(cudaMemcpy(v1.data(), r.o.get(), n * 2, cudaMemcpyDeviceToHost));
      HOPATTN_CUDA_CHECK(cudaMemcpy(v2.data(), o2.get(), n * 2, cudaMemcpyDeviceToHost));
      EXPECT_EQ(std::memcmp(v1.data(), v2.data(), n * 2), 0) << "O differs, len " << len << " causal " << causal;
      const std::vector<float> l1 = download_as_float(r.lse.get(), HOPATTN_DTYPE_FP32, int64_t(4) * r.rows_q);
      const std::vector<float> l2 = download_as_float(lse2.get(), HOPATTN_DTYPE_FP32, int64_t(3) * 4 * len);
      int64_t diff = 0;
      for (int b = 0; b < 3; ++b)
        for (int h = 0; h < 4; ++h)
          for (int i = 0; i < len; ++i) {
            const float x = l1[int64_t(h) * r.rows_q + b * len + i], y = l2[(int64_t(b) * 4 + h) * len + i];
            diff += std::memcmp(&x, &y, 4) != 0;
          }
      EXPECT_EQ(diff, 0) << "LSE differs, len " << len << " causal " << causal;
    }
  }
}

// A race in the scheduler or the end-aligned stores would move the result.
TEST_P(AttentionVarlen, RepeatedRunsAreBitIdentical) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  VarlenCase c;
  c.len_q = {2000, 1, 777, 129, 3000, 64, 500, 1500};
  c.len_k = c.len_q;
  c.p = heads(8, 2, cfg, true);
  VarlenRun r;
  build_run(c, cfg.dtype, r);
  const int64_t n = int64_t(r.rows_q) * 8 * cfg.hdim;
  std::vector<uint16_t> first(n), now(n);
  for (int rep = 0; rep < 10; ++rep) {
    // Odd repetitions launch the attention kernel plainly after the prepare kernel, even ones as
    // its programmatic dependent (the default); repetitions 2 and 3 of every 4 deal the list
    // statically, the others dynamically (the default): the same answer every way.
    const bool pdl = rep % 2 == 0, dynamic = rep % 4 < 2;
    fill_nan(r.o.get(), 2, n);
    ASSERT_TRUE(run_varlen(r, "", pdl, dynamic).ok());
    HOPATTN_CUDA_CHECK(cudaMemcpy(rep == 0 ? first.data() : now.data(), r.o.get(), n * 2, cudaMemcpyDeviceToHost));
    if (rep > 0) {
      ASSERT_EQ(std::memcmp(first.data(), now.data(), n * 2), 0)
          << "O changed on repetition " << rep << " (pdl " << pdl << ", dynamic " << dynamic << ")";
    }
  }
}

// More sequences than the prepare kernel keeps in shared memory (1024): its records and order in
// the workspace's scratch, the entries written sequence by sequence. Short odd lengths, empty
// ones, queries without keys and keys without queries; causal and not.
TEST_P(AttentionVarlen, ManySequencesBeyondTheSharedRecords) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  for (int causal = 0; causal < 2; ++causal) {
    VarlenCase c;
    std::mt19937 rng(61 + causal);
    for (int b = 0; b < 1100; ++b) {
      c.len_q.push_back(int(rng() % 20));
      c.len_k.push_back(int(rng() % 24));
    }
    c.len_q[7] = 130, c.len_k[7] = 70;  // a sequence of two Q tiles at every row's tile height
    c.p = heads(2, 1, cfg, causal != 0);
    c.seed = 63 + causal;
    run_case(c, cfg);
  }
}

// Bad lengths in device memory: the sequence gets no answer (NaN rows where its query range is
// valid), the others are computed, the record names the first, and the next call is clean.
TEST_P(AttentionVarlen, BadLengthsAreRecordedNotComputed) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  ASSERT_TRUE(attention_device_check(nullptr).ok());  // nothing left over from earlier tests
  struct Bad {
    const char* name;  // what the record must name
    int which;         // 0: cu_seqlens_k beyond k's rows, 1: cu_seqlens_k decreasing, 2: seqused_k too large,
                       // 3: cu_seqlens_q decreasing, 4: a sequence longer than max_seqlen_q
  };
  const Bad bads[] = {{"cu_seqlens_k", 0}, {"cu_seqlens_k", 1}, {"seqused_k", 2}, {"cu_seqlens_q", 3}, {"cu_seqlens_q", 4}};
  for (const Bad& bad : bads) {
    VarlenCase c;
    c.len_q = {100, 50, 80};
    c.len_k = {100, 50, 80};
    c.p = heads(2, 2, cfg, true);
    VarlenRun r;
    build_run(c, cfg.dtype, r);
    std::vector<int32_t> cu_q = prefix(0, c.len_q), cu_k = prefix(0, c.len_k), used = {100, 50, 80};
    if (bad.which == 0) cu_k[3] = r.rows_k + 5;          // sequence 2 ends past k
    if (bad.which == 1) cu_k[2] = cu_k[1] - 1;           // sequence 1 decreasing (and 2 starts before 1)
    if (bad.which == 2) used[1] = 51;                    // over its cu_seqlens_k range
    if (bad.which == 3) cu_q[2] = cu_q[1] - 1;           // sequence 1 decreasing
    if (bad.which == 4) r.args.max_seqlen_q = 90;        // sequence 0 has 100 rows
    HOPATTN_CUDA_CHECK(cudaMemcpy(r.cu_q.get(), cu_q.data(), 16, cudaMemcpyHostToDevice));
    HOPATTN_CUDA_CHECK(cudaMemcpy(r.cu_k.get(), cu_k.data(), 16, cudaMemcpyHostToDevice));
    if (bad.which == 2) {
      r.used = upload_ints(used);
      r.args.seqused_k = tensor_seqlens(r.used.as<int32_t>(), 3);
    }
    ASSERT_TRUE(run_varlen(r).ok()) << bad.name;
    const Status rec = attention_device_check(nullptr);
    EXPECT_FALSE(rec.ok()) << bad.name << ": nothing recorded";
    EXPECT_NE(rec.to_string().find(bad.name), std::string::npos) << rec.to_string();
    std::printf("  %s: %s\n", bad.name, rec.to_string().c_str());
    EXPECT_TRUE(attention_device_check(nullptr).ok()) << "the record was not cleared";
    // The sequences untouched by the corruption still match (sequence 0, except when it is the bad one).
    const std::vector<float> ho = download_as_float(r.o.get(), cfg.dtype, int64_t(r.rows_q) * 2 * cfg.hdim);
    const int bad_seq = bad.which == 0 ? 2 : bad.which == 4 ? 0 : 1;
    if (bad.which != 3) {  // its query range is valid: NaN rows
      const int64_t from = int64_t(cu_q[bad_seq]) * 2 * cfg.hdim, n = int64_t(c.len_q[bad_seq]) * 2 * cfg.hdim;
      int64_t finite = 0;
      for (int64_t i = 0; i < n; ++i) finite += std::isfinite(ho[from + i]);
      EXPECT_EQ(finite, 0) << bad.name << ": the bad sequence's O rows are not all NaN";
    }
    const int good = bad_seq == 0 ? 2 : 0;
    int64_t nonfinite = 0;
    for (int64_t i = 0; i < int64_t(c.len_q[good]) * 2 * cfg.hdim; ++i)
      nonfinite += !std::isfinite(ho[int64_t(cu_q[good]) * 2 * cfg.hdim + i]);
    EXPECT_EQ(nonfinite, 0) << bad.name << ": good sequence " << good << " was not computed";
    // The next, correct call is clean.
    VarlenRun ok;
    build_run(c, cfg.dtype, ok);
    ASSERT_TRUE(run_varlen(ok).ok());
    EXPECT_TRUE(attention_device_check(nullptr).ok());
    check_outputs(c, cfg.dtype, ok, "after-bad");
  }
}

// One capture, replayed with other lengths written into the same cu_seqlens arrays (the workspace
// bound depends only on total_q, batch and heads): each replay matches its own reference.
TEST_P(AttentionVarlen, GraphReplayWithNewLengths) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  VarlenCase c;
  c.len_q = {300, 1, 600, 123};
  c.len_k = {300, 1, 600, 123};
  c.p = heads(4, 4, cfg, true);
  VarlenRun r;
  build_run(c, cfg.dtype, r);
  cudaStream_t stream;
  HOPATTN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  HOPATTN_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status s = attention_forward(r.args, stream);
  HOPATTN_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  ASSERT_TRUE(s.ok()) << s.to_string();
  HOPATTN_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  // The same totals, other splits (max_seqlen stays 600).
  const std::vector<std::vector<int>> splits = {{300, 1, 600, 123}, {600, 123, 1, 300}, {24, 500, 200, 300}};
  for (const auto& lens : splits) {
    VarlenCase ci = c;
    ci.len_q = ci.len_k = lens;
    const std::vector<int32_t> cu = prefix(0, lens);
    HOPATTN_CUDA_CHECK(cudaMemcpy(r.cu_q.get(), cu.data(), cu.size() * 4, cudaMemcpyHostToDevice));
    HOPATTN_CUDA_CHECK(cudaMemcpy(r.cu_k.get(), cu.data(), cu.size() * 4, cudaMemcpyHostToDevice));
    fill_nan(r.o.get(), 2, int64_t(r.rows_q) * 4 * cfg.hdim);
    fill_nan(r.lse.get(), 4, int64_t(r.rows_q) * 4);
    HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());  // the poison (legacy stream) before the replay
    HOPATTN_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    HOPATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
    EXPECT_TRUE(attention_device_check(nullptr).ok());
    check_outputs(ci, cfg.dtype, r, "graph");
  }
  HOPATTN_CUDA_CHECK(cudaGraphExecDestroy(exec));
  HOPATTN_CUDA_CHECK(cudaGraphDestroy(graph));
  HOPATTN_CUDA_CHECK(cudaStreamDestroy(stream));
}

// A row that names no options kernel is refused for varlen calls.
TEST_P(AttentionVarlen, KernelWithoutTheTileListIsRefused) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  VarlenCase c;
  c.len_q = c.len_k = {10, 20};
  c.p = heads(2, 2, cfg, true);
  VarlenRun r;
  build_run(c, cfg.dtype, r);
  for (int i = 0; i < attention::kFwdKernelCount; ++i) {
    const attention::FwdKernelSpec& s = attention::kFwdKernels[i];
    if (s.options || attention::fwd_kernel_index(s.name, cfg.hdim) != i) continue;
    const Status st = run_varlen(r, s.name);
    EXPECT_EQ(st.code(), StatusCode::kNotSupported) << s.name << ": " << st.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(Compiled, AttentionVarlen, ::testing::ValuesIn(varlen_configs()), dtype_hdim_name);

}  // namespace
}  // namespace hopattn::reference
