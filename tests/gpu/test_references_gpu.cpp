// The naive GPU reference kernel against the CPU reference, both float64: they must agree to
// rounding on every shape class the check grid uses.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hopattn::reference
