// The naive GPU reference for forward attention (see attention_reference.hpp for conventions).
#pragma once

#include "attention_reference.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn::reference {

// q, k, v: contiguous device tensors of `dtype` (BF16/FP16; FP32 too for the float64 reference,
// e.g. dequantized FP8 inputs); every option of AttnProblem (masks, softcap, the sinks as host
// values) applies. The calls wait for the GPU before returning.
// Exact mode: o and lse in float64.
void attention_gpu_fp64(const AttnProblem& p, hopattn_dtype_t dtype, const void* q, const void* k,
                        const void* v, double* o, double* lse, Stream stream = nullptr);
// The yardstick (attention_cpu_lowp's rounding, with an online softmax): o and lse in float32.
void attention_gpu_lowp(const AttnProblem& p, hopattn_dtype_t dtype, const void* q, const void* k,
                        const void* v, float* o, float* lse, Stream stream = nullptr);
// The FP8 yardstick (attention_fp8.hpp's attention_cpu_fp8_lowp with an online softmax): q, k, v
// the dequantized e4m3 inputs in float32; S and P·V accumulated as the FP8 WGMMA does
// (fp8_accumulate.hpp), P rounded to e4m3 against the running maximum, O rounded to bf16.
void attention_gpu_fp8_lowp(const AttnProblem& p, const float* q, const float* k, const float* v, float* o,
                            float* lse, Stream stream = nullptr);

}  // namespace hopattn::reference
