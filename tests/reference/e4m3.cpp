#include "e4m3.hpp"

#include <cmath>

namespace hopattn::gemm::tools {
namespace {

// splitmix64: a counter-based hash, so element i depends only on (seed, i).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Round a non-negative value to the nearest integer, ties to even (independent of the FP
// environment's rounding mode).
double round_half_even(double q) {
  const double lower = std::floor(q);
  const double frac = q - lower;
  if (frac > 0.5) return lower + 1.0;
  if (frac < 0.5) return lower;
  return std::fmod(lower, 2.0) == 0.0 ? lower : lower + 1.0;
}

}  // namespace

uint8_t e4m3_from_float(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return uint8_t(sign | kE4m3NaN);
  const double a = std::fabs(double(x));
  if (a >= kE4m3MaxValue) return uint8_t(sign | kE4m3Max);  // saturate (±inf included)
  if (a < std::ldexp(1.0, -6)) {
    // Subnormal range: units of the smallest subnormal 2^-9. A result of 8 units is the smallest
    // normal, whose code (exponent 1, mantissa 0) is 8 as well.
    const double units = round_half_even(a * 512.0);
    return uint8_t(sign | uint8_t(units));
  }
  int e = 0;
  std::frexp(a, &e);  // a = f · 2^e, f in [0.5, 1): the leading bit is 2^(e-1)
  const int exponent = e - 1;                                   // -6 .. 8
  double mantissa = round_half_even(std::ldexp(a, 3 - exponent));  // 8 .. 16: 1.mmm in eighths
  int biased = exponent + 7;
  if (mantissa == 16.0) mantissa = 8.0, ++biased;
  const int code = (biased << 3) | (int(mantissa) - 8);
  return uint8_t(sign | (code > kE4m3Max ? kE4m3Max : code));  // rounding up past 448 saturates too
}

std::vector<uint8_t> random_e4m3(int64_t n, uint64_t seed, E4m3Values kind) {
  static const uint8_t kIntegers[4] = {0x38, 0x40, 0x44, 0x48};  // 1, 2, 3, 4
  std::vector<uint8_t> out(size_t(n > 0 ? n : 0));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = mix(seed * 0x100000001b3ull + uint64_t(i));
    const uint8_t sign = (r & 1) ? 0x80 : 0x00;
    uint8_t code = 0;
    if (kind == E4m3Values::kSmallIntegers) {
      code = kIntegers[(r >> 1) & 3];
    } else if (((r >> 1) & 31) == 0) {
      code = uint8_t(1 + (r >> 6) % 7);  // subnormal m·2^-9, m in 1..7
    } else {
      const int exponent = int((r >> 6) & 3) - 2;  // -2 .. 1
      code = uint8_t(((exponent + 7) << 3) | int((r >> 8) & 7));
    }
    out[size_t(i)] = uint8_t(sign | code);
  }
  return out;
}

float e4m3_to_float(uint8_t bits) {
  const int e = (bits >> 3) & 0xf, m = bits & 0x7;
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  if (e == 0xf && m == 0x7) return std::nanf("");
  const double magnitude = e == 0 ? std::ldexp(double(m), -9) : std::ldexp(8.0 + m, e - 10);
  return float(sign * magnitude);
}

}  // namespace hopattn::gemm::tools
