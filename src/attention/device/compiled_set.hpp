// The attention kernel set this build compiled (CMake options HOPATTN_HEAD_DIMS and
// HOPATTN_DTYPES; the list is generated into compiled_set.cpp at configure time).
#pragma once

#include <vector>

#include "hopattn/hopattn.h"

namespace hopattn::attention {

const std::vector<int>& compiled_head_dims();
const std::vector<hopattn_dtype_t>& compiled_dtypes();

// Forward schedules: 0 is the default for every head dim. Later schedules (warp-specialized,
// ping-pong, ...) are added here and selected through AttentionForwardArgs::schedule.
constexpr int kScheduleCount = 1;

// Whether this build holds the fused forward kernels (issue 3). Until then attention_forward
// checks its arguments, handles the empty cases and reports kNotSupported for real work.
constexpr bool kHasFusedForward = false;

}  // namespace hopattn::attention
