// The int8 KV-cache quantization's arithmetic, shared by hopattn_kvcache_quantize_int8
// (kvcache_quantize.cu) and hopattn_kvcache_append (kvcache_append.cu), so that a block quantized
// by either is the same bits (the GPU tests compare them). Rounding matches the host reference
// (tests/reference/kvcache_reference.cpp) bit for bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace hopattn::int8_rounding {

// Element i of a bf16 or fp16 array, in fp32.
__device__ inline float load_element(const void* base, int64_t i, bool bf16) {
  return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i])
              : __half2float(static_cast<const __half*>(base)[i]);
}

// amax / 127 (correctly rounded), then V's rounded up to 15 significant bits and K's to the
// nearest value of 8 (a bf16 value; amax / scale <= 127 / (1 - 2^-8) < 127.5, so the largest still
// maps to ±127 and nothing clips): the int8 mma kernels' one-FFMA dequantization
// (collective/sm90_decode_int8_mma_dequant.hpp, dequant_fma) is exact for both, and their packed
// bf16 dequantization of K (k_pair_bf16) for K's.
__device__ inline float scale_of(float amax, uint32_t add, uint32_t low_bits) {
  return __uint_as_float((__float_as_uint(__fdiv_rn(amax, 127.0f)) + add) & ~low_bits);
}
__device__ inline float k_scale_of(float amax) { return scale_of(amax, 0x8000u, 0xFFFFu); }
__device__ inline float v_scale_of(float amax) { return scale_of(amax, 0x1FFu, 0x1FFu); }

// round-to-nearest-even(x / scale), correctly rounded in fp32, within [-127, 127]; 0 for scale 0.
__device__ inline int8_t quantize_value(float x, float scale) {
  if (scale == 0.0f) return 0;
  return int8_t(max(-127, min(127, __float2int_rn(__fdiv_rn(x, scale)))));
}

}  // namespace hopattn::int8_rounding
