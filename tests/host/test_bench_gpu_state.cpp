// The bench's GPU-state note (bench/gpu_state.hpp): ranges over the samples that are ok, nothing
// when none is (a machine without NVML, as CI's).
#include <gtest/gtest.h>

#include <cstdlib>
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
  EXPECT_TRUE(cudnn->has_fp8()) << "this tree's plugin has the FP8 entry point (hopattn_cudnn_sdpa_fp8_forward)";
  // Its FP8 entry's own argument rules come before any device call: per-(batch, kv-head) descales
  // are hopattn's, cuDNN takes one per tensor (not supported: the bench's row reason).
  AttentionForwardArgs a;
  float descales[4] = {1, 1, 1, 1};
  a.q = tensor_bshd(nullptr, HOPATTN_DTYPE_E4M3, 2, 16, 4, 128);
  a.k = a.v = tensor_bshd(nullptr, HOPATTN_DTYPE_E4M3, 2, 32, 2, 128);
  a.o = tensor_bshd(nullptr, HOPATTN_DTYPE_BF16, 2, 16, 4, 128);
  a.q_descale = a.k_descale = a.v_descale = tensor_descale(descales, 2, 2);
  const Status s = cudnn->forward(a, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported) << s.to_string();
  EXPECT_NE(s.message().find("q_descale: cuDNN's FP8 SDPA takes one float32 descale per tensor (4 given"),
            std::string::npos)
      << s.message();
#endif
}

// A plugin built before the FP8 entry point (ABI 1 without hopattn_cudnn_sdpa_fp8_forward) still
// loads: its 16-bit calls go through, an e4m3 call is not supported and says why (the bench's row
// reason). The stub plugin needs neither cuDNN nor a GPU.
TEST(CudnnBaselineLoad, PluginWithoutTheFp8EntryPointStillLoads) {
  ASSERT_EQ(setenv("HOPATTN_CUDNN_PLUGIN", HOPATTN_TEST_ABI1_PLUGIN, 1), 0);
  std::string why;
  const auto cudnn = baselines::CudnnSdpa::load(&why);
  unsetenv("HOPATTN_CUDNN_PLUGIN");
  ASSERT_NE(cudnn, nullptr) << why;
  EXPECT_FALSE(cudnn->has_fp8());
  EXPECT_EQ(cudnn->version_string(), "9.19.0");
  AttentionForwardArgs a;
  a.q = tensor_bshd(nullptr, HOPATTN_DTYPE_E4M3, 1, 16, 2, 128);
  a.k = a.v = tensor_bshd(nullptr, HOPATTN_DTYPE_E4M3, 1, 32, 2, 128);
  a.o = tensor_bshd(nullptr, HOPATTN_DTYPE_BF16, 1, 16, 2, 128);
  const Status fp8 = cudnn->forward(a, nullptr);
  EXPECT_EQ(fp8.code(), StatusCode::kNotSupported) << fp8.to_string();
  EXPECT_NE(fp8.message().find("has no FP8 entry point (hopattn_cudnn_sdpa_fp8_forward): rebuild it"),
            std::string::npos)
      << fp8.message();
  a.q.dtype = a.k.dtype = a.v.dtype = HOPATTN_DTYPE_BF16;  // the stub's 16-bit entry returns 0
  EXPECT_TRUE(cudnn->forward(a, nullptr).ok());
}

}  // namespace
}  // namespace hopattn::bench
