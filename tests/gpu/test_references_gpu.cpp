// The naive GPU reference kernel against the CPU reference, both float64: they must agree to
// rounding on every shape class the check grid uses.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "attention_check.hpp"
#include "gpu_test.hpp"

namespace hopattn::reference {
namespace {

TEST(ReferenceGpu, AgreesWithCpuInFloat64) {
  HOPATTN_REQUIRE_SM90();
  std::vector<CheckCase> cases = check_grid({64, 128, 256}, {HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_FP16}, true);
  CheckCase big;  // inputs x8: a wide softmax range
  big.p = AttnProblem{2, 130, 257, 4, 2, 128, true, 0.0f};
  big.input_std = 8.0f;
  cases.push_back(big);
  CheckCase scaled;  // a non-default softmax scale, sq > sk with causal rows that see nothing
  scaled.p = AttnProblem{1, 40, 17, 2, 1, 64, true, 0.3f};
  cases.push_back(scaled);
  for (const CheckCase& c : cases) {
    const ReferenceAgreement a = compare_gpu_and_cpu_references(c);
    EXPECT_EQ(a.bad, 0) << c.to_string();
    EXPECT_LT(a.o_max_rel, 1e-10) << c.to_string();
    EXPECT_LT(a.lse_max_abs, 1e-10) << c.to_string();
  }
}

// The options of 0.3: the GPU reference reads each row's key range from the host
// (AttnProblem::visible_range) and starts its online softmax at the sink. Windows that start
// mid-chunk and span several 128-key chunks, rows that see no key (with a sink, -inf and
// finite), softcap on scores of ±50, and all three together.
TEST(ReferenceGpu, AgreesWithCpuWithWindowSoftcapAndSinks) {
  HOPATTN_REQUIRE_SM90();
  const float kNegInf = -INFINITY;
  std::vector<CheckCase> cases;
  auto add = [&](AttnProblem p, float input_std) {
    CheckCase c;
    c.p = std::move(p);
    c.input_std = input_std;
    c.seed = 4000 + cases.size();
    cases.push_back(c);
  };
  AttnProblem w{2, 150, 700, 4, 2, 128, false, 0.0f};
  w.window = true, w.window_left = 300, w.window_right = 17;
  add(w, 1.0f);
  AttnProblem empty{1, 300, 90, 3, 1, 64, true, 0.0f};  // rows 0..209 see no key
  empty.window = true, empty.window_left = 40, empty.window_right = 0;
  empty.sinks = {0.5f, kNegInf, 20.0f};
  add(empty, 1.0f);
  AttnProblem cap{1, 64, 333, 2, 2, 256, true, 0.0f};
  cap.softcap = 5.0f;
  add(cap, 4.0f);
  AttnProblem all{2, 200, 260, 6, 2, 64, false, 0.0f};
  all.window = true, all.window_left = -1, all.window_right = 3;
  all.softcap = 30.0f;
  all.sinks = {-1.0f, 0.0f, 2.5f, kNegInf, 20.0f, -40.0f};
  add(all, 4.0f);
  for (const CheckCase& c : cases) {
    const ReferenceAgreement a = compare_gpu_and_cpu_references(c);
    EXPECT_EQ(a.bad, 0) << c.to_string();
    EXPECT_LT(a.o_max_rel, 1e-10) << c.to_string();
    EXPECT_LT(a.lse_max_abs, 1e-10) << c.to_string();
  }
}

}  // namespace
}  // namespace hopattn::reference
