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

// The options' rules the forward and the KV-cache calls share (hopattn.h, kvcache.h): the window's
// switch and sides (window_right 0 or -1 with causal), the softcap, the sinks ((heads_q) float32,
// contiguous, 4-byte aligned). With a window, `band` (the lengths the kernels' band arithmetic adds
// in 32 bits; -1: not checked) must stay within 2^30; `band_what` names them in the message.
Status check_logit_options(int32_t window, int32_t window_left, int32_t window_right, bool causal, int64_t band,
                           const char* band_what, float softcap, const Tensor& sinks, int64_t heads_q);

}  // namespace hopattn
