// The bench's ceilings: cuBLAS computes the right product (checked against float64 on the host
// at an odd size), and both ceiling measurements run and give plausible figures.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "baselines/baselines.hpp"
#include "bench.hpp"
#include "device_utils.hpp"
#include "gpu_test.hpp"

namespace hopattn {
namespace {

TEST(Ceilings, CublasBf16GemmIsCorrect) {
  HOPATTN_REQUIRE_SM90();
  const int m = 129, n = 67, k = 40;
  reference::DeviceBuffer a(m * k * 2), b(k * n * 2), d(m * n * 2);
  reference::fill_normal(a.get(), HOPATTN_DTYPE_BF16, m * k, 21, 1.0f);
  reference::fill_normal(b.get(), HOPATTN_DTYPE_BF16, k * n, 22, 1.0f);
  reference::fill_nan(d.get(), 2, m * n);
  baselines::CublasGemm gemm;
  const Status s = gemm.gemm_bf16(m, n, k, a.get(), b.get(), d.get(), nullptr);
  ASSERT_TRUE(s.ok()) << s.to_string();
  const auto ha = reference::download_as_float(a.get(), HOPATTN_DTYPE_BF16, m * k);
  const auto hb = reference::download_as_float(b.get(), HOPATTN_DTYPE_BF16, k * n);
  const auto hd = reference::download_as_float(d.get(), HOPATTN_DTYPE_BF16, m * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0;
      for (int l = 0; l < k; ++l) ref += double(ha[i * k + l]) * hb[l * n + j];
      // bf16 output: one rounding (2^-8 relative) plus float accumulation.
      ASSERT_NEAR(hd[i * n + j], ref, std::abs(ref) * 0x1p-8 + 1e-3) << "D(" << i << ", " << j << ")";
    }
}

TEST(Ceilings, MeasurementsRun) {
  HOPATTN_REQUIRE_SM90();
  const bench::Row gemm = bench::measure_gemm_ceiling(nullptr, 5.0);
  const bench::Row copy = bench::measure_copy_ceiling(nullptr, 5.0);
  std::printf("cuBLAS bf16 8192^3: %.1f TFLOP/s; copy: %.2f TB/s\n", gemm.tflops, copy.tbps);
  // Plausibility only (no timing assertions): a Hopper GPU runs bf16 GEMM far above 10 TFLOP/s and
  // copies above 0.5 TB/s; anything lower means the measurement itself is broken.
  EXPECT_GT(gemm.tflops, 10.0);
  EXPECT_GT(copy.tbps, 0.5);
}

}  // namespace
}  // namespace hopattn
