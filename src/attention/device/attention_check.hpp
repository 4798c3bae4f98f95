// The forward checks' device half: where the arguments live (check_attention_forward runs it
// last). The calls run check_attention_forward with host_only_context() first, so that argument
// errors need no GPU, then query the device and run only this.
#pragma once

#include "hopattn/hopattn.hpp"

namespace hopattn {

Status check_attention_forward_placement(const DeviceContext& ctx);

}  // namespace hopattn
