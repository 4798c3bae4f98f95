// Shared by the gpu tests: skip visibly (GTEST_SKIP, "Skipped" in CTest's summary) when the
// machine has no sm_90 GPU; run for real otherwise. And the compiled kernels by name, for the
// tests that run every kernel of a registry (experimental::compiled_kernels: the rows this build
// compiled, so that a list in a test cannot go stale).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention/device/compiled_set.hpp"
#include "attention/experimental.hpp"
#include "common/cuda_check.hpp"

#define HOPATTN_REQUIRE_SM90()                                              \
  do {                                                                      \
    std::string hopattn_why_;                                               \
    if (!::hopattn::has_sm90_gpu(&hopattn_why_))                            \
      GTEST_SKIP() << "needs an sm_90 GPU (H100/H200): " << hopattn_why_;   \
  } while (0)

namespace hopattn {

// The registry names of the compiled kernels of `op` ("fwd" or "decode") at head dim `hdim` whose
// name starts with `prefix` ("" for all; "kv16_" / "kv8_" picks a decode cache type), in registry
// order: the 16-bit forward kernels, or (fp8) the e4m3 ones.
inline std::vector<std::string> compiled_kernel_names(const std::string& op, int hdim, const std::string& prefix = "",
                                                      bool fp8 = false) {
  std::vector<std::string> out;
  for (const experimental::KernelInfo& k : experimental::compiled_kernels())
    if (k.op == op && k.hdim == hdim && k.fp8 == fp8 && k.name.compare(0, prefix.size(), prefix) == 0)
      out.push_back(k.name);
  return out;
}

// A forward test's parameter: one compiled (dtype, head dim), named "bf16_hd128" in CTest.
struct DtypeHdim {
  hopattn_dtype_t dtype;
  int hdim;
};
inline std::vector<DtypeHdim> compiled_dtype_hdims() {
  std::vector<DtypeHdim> out;
  for (hopattn_dtype_t t : attention::compiled_dtypes())
    for (int d : attention::compiled_head_dims()) out.push_back({t, d});
  return out;
}
inline std::string dtype_hdim_name(const ::testing::TestParamInfo<DtypeHdim>& info) {
  return std::string(hopattn_dtype_name(info.param.dtype)) + "_hd" + std::to_string(info.param.hdim);
}

}  // namespace hopattn
