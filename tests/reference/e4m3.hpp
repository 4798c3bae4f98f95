// FP8 e4m3 ("e4m3fn", the OCP FP8 E4M3 format WGMMA reads) on the host: encode and decode, for
// the tests and the references. Written here rather than taken from cuda_fp8.h so that the host
// tests can check the GPU's decoding against an independent implementation.
//
//   bits: s eeee mmm, exponent bias 7
//   e = 0:      subnormal, (-1)^s · m/8 · 2^-6   (smallest: 2^-9 = 0x01; 0x00 / 0x80 are ±0)
//   e = 1..15:  normal,    (-1)^s · (1 + m/8) · 2^(e-7), except e = 15, m = 7: NaN (0x7f, 0xff)
//   largest finite: 1.75 · 2^8 = 448 (0x7e); there is no infinity.
//
// Encoding rounds to nearest, ties to even, and saturates: every |x| above 448 (±inf included)
// becomes ±448 — the choice of cuda_fp8.h's __NV_SATFINITE and of scaled-FP8 quantization,
// where an overflow should clip rather than poison a whole tensor with NaN. NaN becomes 0x7f
// (0xff when its sign bit is set). Values below half the smallest subnormal (2^-10, a tie,
// included) become ±0.
#pragma once

#include <cstdint>
#include <vector>

namespace hopattn::gemm::tools {

constexpr uint8_t kE4m3Max = 0x7e;      // 448
constexpr uint8_t kE4m3NaN = 0x7f;
constexpr double kE4m3MaxValue = 448.0;

uint8_t e4m3_from_float(float x);
float e4m3_to_float(uint8_t bits);

// Random test inputs, drawn as codes (so the decoded values are exact by construction; never 0,
// never NaN); the code at index i depends only on (seed, i).
//   kGeneral:       random sign, magnitudes (1 + m/8)·2^e for e in [-2, 1] (0.25 .. 3.75, like
//                   scaled activations) and one value in 32 a subnormal (m·2^-9)
//   kSmallIntegers: ±1, ±2, ±3, ±4: every product and (random-sign) partial sum of K ≤ 4096
//                   stays on the integer grid below 2^12, where the FP8 accumulation model
//                   (gemm_reference.hpp) predicts an exact result
enum class E4m3Values { kGeneral, kSmallIntegers };
std::vector<uint8_t> random_e4m3(int64_t n, uint64_t seed, E4m3Values kind);

}  // namespace hopattn::gemm::tools
