#include "attention/device/forward_dispatch.hpp"

#include <string>

#include "hopattn/hopattn.h"

namespace hopattn::attention {

Status run_forward(const FwdParams& p, Stream) {
  return Status::unsupported(std::string("attention forward: no fused kernel instance is compiled "
                                         "for dtype ") +
                             hopattn_dtype_name(p.dtype) + ", hdim " + std::to_string(p.hdim) +
                             " in this build");
}

}  // namespace hopattn::attention
