// The naive GPU reference for forward attention (see attention_reference.hpp for conventions).
#pragma once

#include "attention_reference.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn::reference {

// q, k, v: contiguous device tensors of `dtype` (BF16/FP16); every option of AttnProblem (masks,
// softcap, the sinks as host values) applies. Both calls wait for the GPU before returning.
// Exact mode: o and lse in float64.
void attention_gpu_fp64(const AttnProblem& p, hopattn_dtype_t dtype, const void* q, const void* k,
                        const void* v, double* o, double* lse, Stream stream = nullptr);
// The yardstick (attention_cpu_lowp's rounding, with an online softmax): o and lse in float32.
void attention_gpu_lowp(const AttnProblem& p, hopattn_dtype_t dtype, const void* q, const void* k,
                        const void* v, float* o, float* lse, Stream stream = nullptr);

}  // namespace hopattn::reference
