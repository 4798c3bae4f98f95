#include "attention/device/forward_dispatch.hpp"

#include <string>

#include "hopattn/hopattn.h"

namespace hopattn::attention {

// One function per compiled (dtype, head dim), defined in its generated instance file (the e4m3
// ones listed apart, in fwd_fp8_instances.inc).
#define HOPATTN_FWD_INSTANCE(ENUM, NAME, HDIM) Status run_forward_##NAME##_hd##HDIM(const FwdParams&, Stream);
#include "fwd_instances.inc"
#include "fwd_fp8_instances.inc"
#undef HOPATTN_FWD_INSTANCE

Status run_forward(const FwdParams& p, Stream stream) {
#define HOPATTN_FWD_INSTANCE(ENUM, NAME, HDIM) \
  if (p.dtype == ENUM && p.hdim == HDIM) return run_forward_##NAME##_hd##HDIM(p, stream);
#include "fwd_instances.inc"
#include "fwd_fp8_instances.inc"
#undef HOPATTN_FWD_INSTANCE
  return Status::unsupported(std::string("attention forward: no kernel instance is compiled for dtype ") +
                             hopattn_dtype_name(p.dtype) + ", hdim " + std::to_string(p.hdim) + " in this build");
}

}  // namespace hopattn::attention
