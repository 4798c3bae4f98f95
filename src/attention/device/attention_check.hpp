// The forward checks' device half: where the arguments live (check_attention_forward runs it
// last). The calls run check_attention_forward with host_only_context() first, so that argument
// errors need no GPU, then query the device and run only this.
#pragma once

#include <cstddef>

#include "hopattn/hopattn.hpp"

namespace hopattn {

Status check_attention_forward_placement(const DeviceContext& ctx);

// Every argument rule but the workspace's and the placement (what the workspace size depends on).
Status check_attention_forward_sizing(const AttentionForwardArgs& args);

// The workspace a call that passed check_attention_forward_sizing needs: 0 for a padded batch
// or an empty variable-length one.
size_t attention_forward_workspace_bytes(const AttentionForwardArgs& args);

}  // namespace hopattn
