// The attention kernel set this build compiled (CMake options HOPATTN_HEAD_DIMS and
// HOPATTN_DTYPES; the list is generated into compiled_set.cpp at configure time).
#pragma once

#include <string>
#include <vector>

#include "hopattn/hopattn.h"

namespace hopattn::attention {

const std::vector<int>& compiled_head_dims();
const std::vector<hopattn_dtype_t>& compiled_dtypes();

// Forward schedules, selected through AttentionForwardArgs::schedule: 0 is the default for every
// head dim; 1 and 2 are the alternative tile configurations of the FA2-style kernel kept for the
// ablation (src/attention/kernel/sm90_fwd_config.hpp).
constexpr int kScheduleCount = 3;

// A readable name for (head dim, schedule), e.g. "fa2_128x128x2" (block_m x block_n x stages).
std::string schedule_name(int hdim, int schedule);

}  // namespace hopattn::attention
