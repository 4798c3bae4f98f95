// int8 -> 16-bit conversion pieces of the int8 decode kernels: exact int8 values as floats, the
// packed Element pairs, shared-memory stores through CuTe's swizzled addresses, and the transform
// warpgroup's conversion of a 16-byte chunk (kernel/sm90_decode_int8.hpp).
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cutlass/numeric_conversion.h>

#include <cstdint>

namespace hopattn::attention {

// Four int8 values (one 32-bit word) to exact floats without I2F: each byte, biased to unsigned,
// becomes the low mantissa byte of 2^23 (0x4B000000), and subtracting 2^23 + 128 leaves the value.
CUTE_DEVICE void int8x4_to_float(uint32_t word, float (&out)[4]) {
  const uint32_t u = word ^ 0x80808080u;
  out[0] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7540)) - 8388736.0f;
  out[1] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7541)) - 8388736.0f;
  out[2] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7542)) - 8388736.0f;
  out[3] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7543)) - 8388736.0f;
}

// Stores to shared memory through an address CuTe's swizzled pointers computed. Those pointers
// are generic, so a plain store compiles to a generic ST.E; st.shared makes it an STS. (The
// fence.proxy.async that follows still compiles to MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S after STS,
// cuobjdump 2026-11-30: what keeps global loads out of that MEMBAR is issuing them after it.) The
// swizzle acts on address bits below 1 KB and the buffers are 1 KB aligned, so the generic and
// shared addresses agree.
CUTE_DEVICE void st_shared_v4(void* ptr, uint4 v) {
  const auto a = static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
CUTE_DEVICE void st_shared_u16(void* ptr, uint16_t v) {
  const auto a = static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
  asm volatile("st.shared.u16 [%0], %1;" ::"r"(a), "h"(v) : "memory");
}

// Two floats to a packed pair of Element (round to nearest even), low half first.
template <class Element>
CUTE_DEVICE uint32_t pack_pair(float lo, float hi) {
  cutlass::NumericArrayConverter<Element, float, 2> conv;
  cutlass::Array<float, 2> in;
  in[0] = lo, in[1] = hi;
  const cutlass::Array<Element, 2> out = conv(in);
  return *reinterpret_cast<const uint32_t*>(&out);
}

// The transform's conversion of one 16-byte chunk of a raw int8 tile row: 16 values times their
// scales (scale(j), j = 0..15) in fp32, rounded once to Element, stored as 16 consecutive elements
// of the converted tile row (two 16-byte stores: dst and dst + 8, each contiguous under the
// tile's swizzle). The K and V conversions of decode_int8_kernel.
template <class Element, class Scale>
CUTE_DEVICE void convert_int8x16(uint4 raw, Scale const& scale, Element* dst, Element* dst8) {
  const uint32_t w4[4] = {raw.x, raw.y, raw.z, raw.w};
  uint32_t out[8];
  CUTE_UNROLL
  for (int w = 0; w < 4; ++w) {
    float f[4];
    int8x4_to_float(w4[w], f);
    CUTE_UNROLL
    for (int j = 0; j < 4; ++j) f[j] *= scale(4 * w + j);
    out[2 * w] = pack_pair<Element>(f[0], f[1]), out[2 * w + 1] = pack_pair<Element>(f[2], f[3]);
  }
  st_shared_v4(dst, make_uint4(out[0], out[1], out[2], out[3]));
  st_shared_v4(dst8, make_uint4(out[4], out[5], out[6], out[7]));
}

}  // namespace hopattn::attention
