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
// The FP8 yardstick (attention_fp8.hpp's attention_cpu_fp8_lowp, the FP8 kernel's arithmetic,
// fp8_accumulate.hpp): q, k, v the e4m3 code values in float32 (device); q_descale, k_descale,
// v_descale HOST arrays of (batch, heads_kv) floats, or nullptr for 1; block_n the keys per KV
// block (0: the kernel's at this head dim, fp8_kernel_block_n; a multiple of 32 up to 128). S and
// P·V accumulated as the FP8 WGMMA does, P rounded to e4m3 against the running maximum, O to bf16;
// mma_sums: the row sums of the rounded P, accumulated as P·V (attention_cpu_fp8_lowp's).
void attention_gpu_fp8_lowp(const AttnProblem& p, const float* q, const float* k, const float* v, const float* q_descale,
                            const float* k_descale, const float* v_descale, float* o, float* lse, int block_n = 0,
                            Stream stream = nullptr, bool mma_sums = false);

}  // namespace hopattn::reference
