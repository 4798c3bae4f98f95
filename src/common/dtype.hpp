// Element-type facts used on the host side (sizes, names, conversions for references).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hopattn/hopattn.h"

namespace hopattn {

constexpr size_t dtype_size(hopattn_dtype_t t) {
  switch (t) {
    case HOPATTN_DTYPE_BF16:
    case HOPATTN_DTYPE_FP16: return 2;
    case HOPATTN_DTYPE_FP32:
    case HOPATTN_DTYPE_INT32: return 4;
    case HOPATTN_DTYPE_E4M3:
    case HOPATTN_DTYPE_INT8: return 1;
  }
  return 0;
}

// bf16 <-> float, round to nearest even (NaN stays NaN).
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
inline float bf16_bits_to_float(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE half <-> float, round to nearest even, with subnormals, infinities and NaN.
uint16_t float_to_fp16_bits(float f);
float fp16_bits_to_float(uint16_t h);

// Rounds a float to the nearest value representable in `t` (BF16/FP16; FP32 unchanged).
inline float round_to_dtype(float x, hopattn_dtype_t t) {
  if (t == HOPATTN_DTYPE_BF16) return bf16_bits_to_float(float_to_bf16_bits(x));
  if (t == HOPATTN_DTYPE_FP16) return fp16_bits_to_float(float_to_fp16_bits(x));
  return x;
}
inline uint16_t float_to_bits(float x, hopattn_dtype_t t) {
  return t == HOPATTN_DTYPE_BF16 ? float_to_bf16_bits(x) : float_to_fp16_bits(x);
}
inline float bits_to_float(uint16_t b, hopattn_dtype_t t) {
  return t == HOPATTN_DTYPE_BF16 ? bf16_bits_to_float(b) : fp16_bits_to_float(b);
}

}  // namespace hopattn
