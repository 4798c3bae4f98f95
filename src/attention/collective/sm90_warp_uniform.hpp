// warp_uniform: a value every lane of a warp holds, as ptxas can see it is (the forward and decode
// kernels' loops).
#pragma once

#include <cute/config.hpp>

namespace hopattn::attention {

// Lane 0's copy of a value every lane of the warp holds. ptxas knows a shuffle from lane 0 to be
// warp-uniform, so what is derived from it (a loop's ring stage and phase, a WGMMA descriptor) can
// live in uniform registers; a loop whose body holds a one-thread branch (a refill, a TMA issue)
// has a counter ptxas takes for divergent, and its descriptors then went through an R2UR before
// every WGMMA. Whole warps only: never inside a branch that part of the warp takes.
CUTE_DEVICE int warp_uniform(int v) { return __shfl_sync(0xffffffffu, v, 0); }

}  // namespace hopattn::attention
