// The bench's GPU-state note (bench/gpu_state.hpp): ranges over the samples that are ok, nothing
// when none is (a machine without NVML, as CI's).
#include <gtest/gtest.h>

#include <string>

#include "baselines/baselines.hpp"
#include "gpu_state.hpp"

namespace hopattn::bench {
namespace {

TEST(BenchGpuState, DescribesRangesOfTheValidSamples) {
  GpuState s[3];
  s[0].ok = true, s[0].sm_mhz = 1980, s[0].power_mw = 612400, s[0].temp_c = 51;
  s[1].ok = false, s[1].sm_mhz = 100, s[1].power_mw = 1000, s[1].temp_c = 99;  // ignored
  s[2].ok = true, s[2].sm_mhz = 1755, s[2].power_mw = 690000, s[2].temp_c = 51;
  EXPECT_EQ(describe_gpu_states(s, 3), "sm 1755-1980 MHz, 612-690 W, 51 C");
  EXPECT_EQ(describe_gpu_states(s, 1), "sm 1980 MHz, 612 W, 51 C");
  EXPECT_EQ(describe_gpu_states(s + 1, 1), "");
  EXPECT_EQ(describe_gpu_states(s, 0), "");
}

// hopattn bench --cudnn-lib: the named libcudnn is loaded before the plugin (no GPU needed for
// that: cudnnGetVersion is a host call), and a name that cannot be loaded is reported as such.
TEST(CudnnBaselineLoad, NamedLibrary) {
  std::string why;
  EXPECT_EQ(baselines::CudnnSdpa::load(&why, "/nonexistent/libcudnn.so.9"), nullptr);
  EXPECT_NE(why.find("cannot load the cuDNN library /nonexistent/libcudnn.so.9"), std::string::npos) << why;
#ifdef HOPATTN_TEST_CUDNN_LIBRARY  // a build with the plugin: the library it links, named
  why.clear();
  const auto cudnn = baselines::CudnnSdpa::load(&why, HOPATTN_TEST_CUDNN_LIBRARY);
  ASSERT_NE(cudnn, nullptr) << why;
  EXPECT_GE(cudnn->version(), 90000u) << cudnn->version_string();
#endif
}

}  // namespace
}  // namespace hopattn::bench
