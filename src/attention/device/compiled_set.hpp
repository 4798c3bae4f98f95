// The attention kernel set this build compiled (CMake options HOPATTN_HEAD_DIMS and
// HOPATTN_DTYPES; the list is generated into compiled_set.cpp at configure time).
#pragma once

#include <string>
#include <vector>

#include "hopattn/hopattn.h"

namespace hopattn::attention {

const std::vector<int>& compiled_head_dims();
const std::vector<hopattn_dtype_t>& compiled_dtypes();

// Forward schedules, selected through AttentionForwardArgs::schedule: 0 is the default for each
// head dim, 1..14 name every compiled kernel and tile configuration for ablations
// (src/attention/kernel/sm90_fwd_config.hpp).
constexpr int kScheduleCount = 15;

// A readable name for (head dim, schedule), e.g. "fa2_128x128x2" or "ws_pingpong_128x128x2"
// (kernel, block_m x block_n x stages).
std::string schedule_name(int hdim, int schedule);

}  // namespace hopattn::attention
