// The attention kernel set this build compiled (CMake options HOPATTN_HEAD_DIMS,
// HOPATTN_DTYPES and HOPATTN_FP8_HEAD_DIMS; the list is generated into compiled_set.cpp at configure time).
#pragma once

#include <string>
#include <vector>

#include "hopattn/hopattn.h"

namespace hopattn::attention {

const std::vector<int>& compiled_head_dims();
const std::vector<hopattn_dtype_t>& compiled_dtypes();  // the 16-bit types (bf16, fp16)
// The head dims with FP8 forward kernels (e4m3 Q, K, V; HOPATTN_FP8_HEAD_DIMS); empty: none.
const std::vector<int>& compiled_fp8_head_dims();

}  // namespace hopattn::attention
