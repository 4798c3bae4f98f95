// The attention kernel set this build compiled (CMake options HOPATTN_HEAD_DIMS and
// HOPATTN_DTYPES; the list is generated into compiled_set.cpp at configure time).
#pragma once

#include <string>
#include <vector>

#include "hopattn/hopattn.h"

namespace hopattn::attention {

const std::vector<int>& compiled_head_dims();
const std::vector<hopattn_dtype_t>& compiled_dtypes();

}  // namespace hopattn::attention
