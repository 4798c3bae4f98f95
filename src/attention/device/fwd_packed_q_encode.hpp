// The packed Q load's TMA descriptor (fwd_packed_q.hpp), encoded on the host through the driver
// (CUTLASS's cuTensorMapEncodeTiled wrapper, resolved at run time as CuTe's make_tma_copy does).
#pragma once

#include <cuda.h>

#include "attention/fwd_packed_q.hpp"
#include "hopattn/hopattn.h"
#include "hopattn/hopattn.hpp"

namespace hopattn::attention {

// Encodes `load` for q of dtype `dtype` (bf16 or fp16) into *desc: SWIZZLE_128B, zero fill out of
// bounds (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE fills zeros), L2 promotion 128 B, element strides 1. A
// dtype other than bf16/fp16 is refused naming q's dtype; a failed encode returns a Status naming
// the descriptor's arguments (dims, strides, box) and the driver's result.
Status encode_packed_q_load(const PackedQLoad& load, hopattn_dtype_t dtype, CUtensorMap* desc);

}  // namespace hopattn::attention
