// int8 values of the mma.sync int8 decode kernels (kernel/sm90_decode_int8_mma.hpp) in registers:
// K's byte under the 2^15 magic and value · scale in one FFMA (dequant_fma), V's bytes exact in
// fp16 under the 1024 magic with the tile's power-of-two exponent (half_exponent, exp2_int), and
// the swap rows' K in packed bf16 pairs (k_pair_bf16).
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on

#include <cstdint>

#include "attention/collective/sm90_decode_int8_mma_ptx.hpp"

namespace hopattn::attention {
namespace int8_mma_detail {

// Byte b (0..3) of a biased word (x ^ 0x80) under the 2^15 magic: the float 2^15 + u exactly
// (u = value + 128 in mantissa bits 8-15). dequant_fma(x, s, neg) = fma(x, s, -(2^15 + 128)·s)
// is x·s + neg with one rounding: value · s exactly, hence the same fp32 as the host's
// dequantization (value · s in fp32), when s has at most 15 significant bits (then (2^15 + 128)·s, 9 bits
// times 15, is exact, and so is value · s, 8 bits times 15). hopattn's quantizer rounds its
// scales up to 15 bits (kvcache_quantize.cu); other scales are off by at most s · 2^-9 before the
// rounding to Element.
CUTE_DEVICE float biased_byte_magic15(uint32_t biased, int b) {
  return __uint_as_float(__byte_perm(biased, 0x47000000u, 0x7604 + 16 * b));
}
constexpr float kMagic15Offset = 32896.0f;  // 2^15 + 128
CUTE_DEVICE float dequant_fma(float x, float s, float neg_offset_s) { return fmaf(x, s, neg_offset_s); }

// ---- V exact in fp16 ----
// V's int8 values x are exact in fp16 as the byte under the 1024 magic, minus 1152, and each
// key's scale is folded into P with a power-of-two exponent e_V per tile (the largest scaled
// value in [2^14, 2^15), so nothing overflows fp16); O is kept as O · 2^-e_V and the factor comes
// back exactly at the end.

// e with m · 2^-e in [2^14, 2^15) for m > 0 (0 otherwise), kept within [-100, 100].
CUTE_DEVICE int half_exponent(float m) {
  if (!(m > 0.0f)) return 0;
  const int e = int((__float_as_uint(m) >> 23) & 0xFF) - 127 - 14;
  return e < -100 ? -100 : (e > 100 ? 100 : e);
}
// 2^e as a float for e in [-126, 127]; 0 below.
CUTE_DEVICE float exp2_int(int e) { return e < -126 ? 0.0f : __uint_as_float(uint32_t(e + 127) << 23); }

// (b ? a ^ c : c) per bit: the low bytes of each half of a, sign-flipped (biased), under the high byte 0x64.
CUTE_DEVICE uint32_t bias_into_magic(uint32_t a) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0x6A;" : "=r"(d) : "r"(a), "r"(0x00FF00FFu), "r"(0x64806480u));
  return d;
}
constexpr uint32_t kMinus1152x2 = 0xE480E480u;  // -(1024 + 128) in both fp16 halves

// Bytes 0 and 2 of w (raw int8 x = m - 128·sign, m its low 7 bits) times the bf16 scales of the
// pair s2, as a bf16 pair rounded once: 128 + m is the bf16 0x4300 | m and 128 · (1 + sign) the
// bf16 0x4300 | (x & 0x80) (the sign bit lands on the exponent's lowest bit: 128 or 256), so one
// packed subtraction gives x exactly and one packed product x · s rounded to bf16 — the host's
// value when s has at most 8 significant bits (the quantizer's K scales), 4.5 instructions a pair
// with the shift for bytes 1 and 3 instead of tile_scores' 5.5 (XOR, 2 PRMT, 2 FFMA, F2FP).
CUTE_HOST_DEVICE constexpr uint32_t k_pair_value_bits(uint32_t w) { return (w & 0x007F007Fu) | 0x43004300u; }
CUTE_HOST_DEVICE constexpr uint32_t k_pair_offset_bits(uint32_t w) { return (w & 0x00800080u) | 0x43004300u; }
CUTE_DEVICE uint32_t k_pair_bf16(uint32_t w, uint32_t s2) {
  const uint32_t value = and_or(w, 0x007F007Fu, 0x43004300u), offset = and_or(w, 0x00800080u, 0x43004300u);
  return mul_bf16x2(sub_bf16x2(value, offset), s2);  // k_pair_value_bits(w) - k_pair_offset_bits(w), times s2
}

}  // namespace int8_mma_detail
}  // namespace hopattn::attention
