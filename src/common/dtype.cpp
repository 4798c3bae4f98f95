#include "common/dtype.hpp"

#include <cmath>

namespace hopattn {

uint16_t float_to_fp16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf (>= 65520)
  if (abs < 0x38800000u) {                                  // below 2^-14: subnormal or zero
    // value = abs_float; subnormal half unit is 2^-24. Round-to-nearest-even via float math.
    float a;
    std::memcpy(&a, &abs, 4);
    const float scaled = a * 16777216.0f;  // exact: power of two
    const float r = std::nearbyint(scaled);  // default rounding mode: nearest even
    return uint16_t(sign | uint32_t(r));
  }
  // Normal: rebias exponent 127 -> 15 and round the 13 dropped mantissa bits to nearest even.
  uint32_t h = abs - 0x38000000u;  // (127-15) << 23
  h += 0x0fffu + ((h >> 13) & 1u);
  return uint16_t(sign | (h >> 13));
}

float fp16_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(man), -24);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u |= sign;
    std::memcpy(&f, &u, 4);
    return f;
  }
  uint32_t u = exp == 31 ? (sign | 0x7f800000u | (man << 13))
                         : (sign | ((exp + 112u) << 23) | (man << 13));
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace hopattn
