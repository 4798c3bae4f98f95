// Lookups over the forward registry (kFwdKernels, kernel/sm90_fwd_config.hpp) and the compiled set.
#include <string>

#include "attention/device/compiled_set.hpp"
#include "attention/device/fwd_registry.hpp"
#include "attention/kernel/sm90_fwd_config.hpp"

namespace hopattn::attention {

bool fwd_fp8_compiled(int hdim) {
  for (int d : compiled_fp8_head_dims())
    if (d == hdim) return true;
  return false;
}

bool fwd_config_compiled(int hdim, hopattn_dtype_t dtype) {
  if (dtype == HOPATTN_DTYPE_E4M3) return fwd_fp8_compiled(hdim);
  bool dim = false, type = false;
  for (int d : compiled_head_dims()) dim |= d == hdim;
  for (hopattn_dtype_t t : compiled_dtypes()) type |= t == dtype;
  return dim && type;
}

int fwd_kernel_index(const std::string& name, int hdim) {
  bool dim = false;
  for (int d : compiled_head_dims()) dim |= d == hdim;
  const bool fp8 = fwd_fp8_compiled(hdim);
  for (int i = 0; i < kFwdKernelCount; ++i)
    if (fwd_kernel_compiled(i, hdim) && name == kFwdKernels[i].name && (kFwdKernels[i].fp8 ? fp8 : dim)) return i;
  return -1;
}

}  // namespace hopattn::attention
