// cuDNN's SDPA (the bench's baseline) loads on the GPU machine and agrees with the float64
// reference under the same tolerance rule the hopattn kernels must meet.
#include <gtest/gtest.h>

#include <memory>

#include "attention_check.hpp"
#include "baselines/baselines.hpp"
#include "gpu_test.hpp"

namespace hopattn::reference {
namespace {

TEST(CudnnBaseline, LoadsAndAgreesWithReference) {
  HOPATTN_REQUIRE_SM90();
  std::string why;
  std::unique_ptr<baselines::CudnnSdpa> cudnn = baselines::CudnnSdpa::load(&why);
  ASSERT_NE(cudnn, nullptr) << why;
  std::printf("cuDNN %s\n", cudnn->version_string().c_str());
  int n = 0;
  for (const CheckCase& c : check_grid({64, 128, 256}, {HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_FP16}, true)) {
    const CheckResult r = run_check(c, "cudnn", [&](const AttentionForwardArgs& a, Stream s) { return cudnn->forward(a, s); });
    // cuDNN rejects bottom-right causal masks with seqlen_q > seqlen_k; that is the only case the
    // wrapper may report as unsupported.
    const bool known_gap = c.p.causal && c.p.seqlen_q > c.p.seqlen_k;
    if (known_gap) {
      EXPECT_TRUE(r.unsupported) << c.to_string() << ": " << r.message;
      continue;
    }
    EXPECT_TRUE(r.pass) << c.to_string() << ": " << r.message;
    std::printf("cudnn %-66s O err %.3g (bound %.3g, yardstick %.3g) LSE err %.3g\n", c.to_string().c_str(),
                r.o_err.max_abs, r.o_bound, r.o_yard.max_abs, r.lse_err.max_abs);
    ++n;
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace hopattn::reference
