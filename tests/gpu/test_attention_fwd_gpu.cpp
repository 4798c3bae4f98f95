// The fused forward kernel against the float64 reference over the whole check grid (odd
// lengths, seqlen_q < and > seqlen_k, batch 1..4, MHA/GQA/MQA, causal on and off, inputs x1 and
// x8, padded strides, the bench's shapes), one test per (dtype, head dim), every schedule on a
// subset, and run-to-run bit equality (a moving result is a race).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "attention/device/compiled_set.hpp"
#include "attention/fwd_tile_order.hpp"
#include "attention/kernel/sm90_fwd_config.hpp"
#include "attention_check.hpp"
#include "device_utils.hpp"
#include "gpu_test.hpp"

namespace hopattn::reference {
namespace {

ForwardFn fused(int schedule) {
  return [schedule](const AttentionForwardArgs& a, Stream s) {
    AttentionForwardArgs b = a;
    b.schedule = schedule;
    return attention_forward(b, s);
  };
}

struct Config {
  hopattn_dtype_t dtype;
  int hdim;
};

std::vector<Config> compiled_configs() {
  std::vector<Config> out;
  for (hopattn_dtype_t t : attention::compiled_dtypes())
    for (int d : attention::compiled_head_dims()) out.push_back({t, d});
  return out;
}

class AttentionFwd : public ::testing::TestWithParam<Config> {};

void run_grid(const std::vector<CheckCase>& grid, int schedule) {
  int passed = 0;
  for (const CheckCase& c : grid) {
    const CheckResult r = run_check(c, "hopattn", fused(schedule));
    std::printf("%-4s s%d %-72s O err %.3g (bound %.3g) LSE err %.3g (bound %.3g) %s\n", r.pass ? "ok" : "FAIL",
                schedule, c.to_string().c_str(), r.o_err.max_abs, r.o_bound, r.lse_err.max_abs, r.lse_bound,
                r.message.c_str());
    EXPECT_TRUE(r.pass) << "schedule " << schedule << ", " << c.to_string() << ": " << r.message;
    passed += r.pass;
  }
  std::printf("schedule %d: %d of %zu cases passed\n", schedule, passed, grid.size());
}

CheckCase make_case(const AttnProblem& p, hopattn_dtype_t dtype, uint64_t seed) {
  CheckCase c;
  c.p = p;
  c.dtype = dtype;
  c.seed = seed;
  return c;
}

// The schedules whose kernel is `kernel` at this head dim.
std::vector<int> schedules_of(int hdim, attention::FwdKernel kernel) {
  std::vector<int> out;
  for (int s = 1; s < attention::kScheduleCount; ++s)
    if (attention::fwd_schedule(hdim, s).kernel == kernel) out.push_back(s);
  return out;
}

TEST_P(AttentionFwd, MatchesFloat64Reference) {
  HOPATTN_REQUIRE_SM90();
  run_grid(check_grid({GetParam().hdim}, {GetParam().dtype}, false), 0);
}

// More tiles than SMs (a persistent CTA loops over several, including causal tiles that see no
// key), on top of the quick grid.
std::vector<CheckCase> schedule_grid(const Config& cfg) {
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

TEST_P(AttentionFwd, EveryScheduleMatchesFloat64Reference) {
  HOPATTN_REQUIRE_SM90();
  for (int s = 1; s < attention::kScheduleCount; ++s) run_grid(schedule_grid(GetParam()), s);
}

// The persistent causal tile orders (fwd_tile_order.hpp). The folded order (the default) on shapes
// whose unit count is below, near and above the SM count: an odd number of Q tiles (1100 rows are
// 9 tiles of 128, 6 of 192: two pairs' middle tiles make a unit, and with an odd pair count the
// last unit names no second pair), an even one, GQA, seqlen_q < seqlen_k. Units: 128 / 192 rows.
TEST_P(AttentionFwd, PersistentCausalFoldedOrder) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  std::vector<CheckCase> cases;
  const AttnProblem shapes[] = {{1, 1100, 1100, 3, 1, cfg.hdim, true, 0.0f},   // 3 pairs: 18 / 9 units
                                {5, 1100, 1100, 8, 2, cfg.hdim, true, 0.0f},   // 40 pairs: 180 / 120 units
                                {3, 1024, 1024, 12, 12, cfg.hdim, true, 0.0f}, // 36 pairs, even tile count
                                {2, 700, 2000, 6, 3, cfg.hdim, true, 0.0f}};   // bottom-right, sq < sk
  int seed = 1500;
  for (const AttnProblem& sh : shapes) {
    CheckCase c;
    c.p = sh;
    c.dtype = cfg.dtype;
    c.seed = seed++;
    cases.push_back(c);
  }
  const std::vector<int> persistent = schedules_of(cfg.hdim, attention::FwdKernel::kPersistentPingPong);
  for (int s : persistent) run_grid(cases, s);
  EXPECT_GE(persistent.size(), 1u);
}

// The grouped zig-zag order (HOPATTN_FWD_PERSISTENT_ORDER=zigzag, as gpu-run.sh reruns the
// persistent tests; the folded order otherwise) takes
// effect only with more pairs than a group: 9 x 16 pairs at seqlen 1000 (8 Q tiles) on 132 SMs
// make groups of 66 (hdim 64) or 33 pairs (hdim 128, 256), the last group with the remainder.
TEST_P(AttentionFwd, PersistentCausalOrderInGroups) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  CheckCase c;
  c.p = AttnProblem{9, 1000, 1000, 16, 4, cfg.hdim, true, 0.0f};
  c.dtype = cfg.dtype;
  c.seed = 777;
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  const int m_blocks = 8, pairs = 9 * 16;
  const int group = attention::fwd_persistent_causal_group(m_blocks, pairs, sms, int64_t(1000) * cfg.hdim * 2 * 2,
                                                           int64_t(24) << 20);
  std::printf("%d SMs: %d pairs per group of the persistent causal order (0: one group)\n", sms, group);
  if (sms == 132) {
    EXPECT_EQ(group, cfg.hdim == 64 ? 66 : 33);
  }
  const std::vector<int> persistent = schedules_of(cfg.hdim, attention::FwdKernel::kPersistentPingPong);
  for (int s : persistent) run_grid({c}, s);
  EXPECT_GE(persistent.size(), 1u);
}

// One small problem per schedule, causal and not: the case gpu-run.sh runs under
// compute-sanitizer (racecheck, synccheck), where the full grid would take too long.
TEST_P(AttentionFwd, SanitizerSmallShapeEverySchedule) {
  HOPATTN_REQUIRE_SM90();
  for (int s = 1; s < attention::kScheduleCount; ++s)
    for (int causal = 0; causal < 2; ++causal)
      run_grid({make_case({1, 300, 300, 2, 1, GetParam().hdim, causal != 0, 0.0f}, GetParam().dtype,
                          900 + s * 2 + causal)},
               s);
}

// The persistent schedules on a small problem with more tiles than SMs (140 one-block Q tiles;
// causal: 70 folded units of two pairs' tiles), so some CTAs' warpgroups go round their Q, K/V and
// O-staging pipelines more than once: what gpu-run.sh --sanitize runs under racecheck and synccheck
// beside the shape above, whose tiles fit one per CTA (the 160 four-block tiles of 256 rows took
// more than 120 s under racecheck at hdim 256, r115).
TEST_P(AttentionFwd, SanitizerPersistentSeveralTilesPerCta) {
  HOPATTN_REQUIRE_SM90();
  const std::vector<int> persistent = schedules_of(GetParam().hdim, attention::FwdKernel::kPersistentPingPong);
  for (int s : persistent)
    for (int causal = 0; causal < 2; ++causal)
      run_grid({make_case({1, 64, 64, 140, 14, GetParam().hdim, causal != 0, 0.0f}, GetParam().dtype,
                          1900 + s * 2 + causal)},
               s);
  EXPECT_GE(persistent.size(), 1u);
}

// Schedule 12, clusters of two CTAs sharing K/V by multicast (ws::FwdTileScheduler with kCluster
// 2): an even number of Q tiles with two units or more per cluster (8 tiles = 4 units per head,
// 32 heads x batches: 128 units on at most 66 clusters), an odd one (3 tiles: the second unit's
// rank-1 tile has no rows and must store nothing) with a KV length that is not a whole number of
// tiles, GQA and MQA, seqlen_q < seqlen_k and seqlen_q = 1. With a causal mask schedule 12 runs
// schedule 6's kernel (checked too). gpu-run.sh --sanitize runs the small one under racecheck
// and synccheck.
TEST_P(AttentionFwd, ClusterScheduleSeveralUnitsPerCluster) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  const std::vector<int> cluster = schedules_of(cfg.hdim, attention::FwdKernel::kPersistentPingPongCluster);
  const AttnProblem shapes[] = {{2, 1000, 1000, 16, 4, cfg.hdim, false, 0.0f},
                                {1, 300, 257, 140, 14, cfg.hdim, false, 0.0f},
                                {3, 113, 1000, 8, 1, cfg.hdim, false, 0.0f},
                                {2, 1, 129, 4, 4, cfg.hdim, false, 0.0f},
                                {2, 1000, 1000, 16, 4, cfg.hdim, true, 0.0f}};
  for (int s : cluster) {
    std::vector<CheckCase> cases;
    uint64_t seed = 2100;
    for (const AttnProblem& p : shapes) cases.push_back(make_case(p, cfg.dtype, seed++));
    run_grid(cases, s);
  }
  EXPECT_GE(cluster.size(), 1u);
}

TEST_P(AttentionFwd, SanitizerClusterSchedule) {
  HOPATTN_REQUIRE_SM90();
  const std::vector<int> cluster = schedules_of(GetParam().hdim, attention::FwdKernel::kPersistentPingPongCluster);
  for (int s : cluster)  // 3 Q tiles: 2 units per head, 80 units on at most 66 clusters
    run_grid({make_case({1, 300, 300, 40, 8, GetParam().hdim, false, 0.0f}, GetParam().dtype, 2200 + s)}, s);
  EXPECT_GE(cluster.size(), 1u);
}

TEST_P(AttentionFwd, RepeatedRunsAreBitIdentical) {
  HOPATTN_REQUIRE_SM90();
  const Config cfg = GetParam();
  // 256 Q tiles (causal: 128 folded units): persistent CTAs take two tiles or more.
  const int b = 4, s = 1000, hq = 8, hkv = 2, d = cfg.hdim;
  DeviceBuffer q(int64_t(b) * s * hq * d * 2), k(int64_t(b) * s * hkv * d * 2), v(int64_t(b) * s * hkv * d * 2),
      o(int64_t(b) * s * hq * d * 2), lse(int64_t(b) * hq * s * 4);
  fill_normal(q.get(), cfg.dtype, int64_t(b) * s * hq * d, 91, 2.0f);
  fill_normal(k.get(), cfg.dtype, int64_t(b) * s * hkv * d, 92, 2.0f);
  fill_normal(v.get(), cfg.dtype, int64_t(b) * s * hkv * d, 93, 1.0f);
  // The default schedule 20 times, every explicit schedule 5 times (a race moves the result).
  for (int schedule = 0; schedule < attention::kScheduleCount; ++schedule)
    for (int causal = 0; causal < 2; ++causal) {
      AttentionForwardArgs a{};
      a.q = tensor_bshd(q.get(), cfg.dtype, b, s, hq, d);
      a.k = tensor_bshd(k.get(), cfg.dtype, b, s, hkv, d);
      a.v = tensor_bshd(v.get(), cfg.dtype, b, s, hkv, d);
      a.o = tensor_bshd(o.get(), cfg.dtype, b, s, hq, d);
      a.lse = tensor_lse(lse.as<float>(), b, hq, s);
      a.causal = causal;
      a.schedule = schedule;
      std::vector<float> first_o, first_lse;
      const int reps = schedule == 0 ? 20 : 5;
      for (int rep = 0; rep < reps; ++rep) {
        fill_nan(o.get(), 2, int64_t(b) * s * hq * d);
        ASSERT_TRUE(attention_forward(a, nullptr).ok()) << "schedule " << schedule;
        std::vector<float> ho = download_as_float(o.get(), cfg.dtype, int64_t(b) * s * hq * d);
        std::vector<float> hl = download_as_float(lse.get(), HOPATTN_DTYPE_FP32, int64_t(b) * hq * s);
        if (rep == 0) {
          first_o = ho, first_lse = hl;
          continue;
        }
        ASSERT_EQ(std::memcmp(ho.data(), first_o.data(), ho.size() * 4), 0)
            << "O changed on repetition " << rep << " (schedule " << schedule << ", causal " << causal << ")";
        ASSERT_EQ(std::memcmp(hl.data(), first_lse.data(), hl.size() * 4), 0)
            << "LSE changed on repetition " << rep << " (schedule " << schedule << ", causal " << causal << ")";
      }
    }
}

std::string config_name(const ::testing::TestParamInfo<Config>& info) {
  return std::string(hopattn_dtype_name(info.param.dtype)) + "_hd" + std::to_string(info.param.hdim);
}

INSTANTIATE_TEST_SUITE_P(Compiled, AttentionFwd, ::testing::ValuesIn(compiled_configs()), config_name);

}  // namespace
}  // namespace hopattn::reference
