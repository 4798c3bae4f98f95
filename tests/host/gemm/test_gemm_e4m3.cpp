// The host side of the FP8 GEMM: the e4m3 codec on exact known values and against cuda_fp8.h's
// conversion (an independent implementation), the test-input generator, and the FP8 tolerance:
// the bound must hold for a host simulation of the Hopper accumulation model and must reject
// deliberately broken results.
#include <gtest/gtest.h>

#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "e4m3.hpp"
#include "gemm_reference.hpp"

namespace hopattn::gemm {
namespace {

using tools::e4m3_from_float;
using tools::e4m3_to_float;

TEST(E4m3, KnownValues) {
  struct Known {
    float value;
    uint8_t bits;
  };
  const Known known[] = {
      {1.0f, 0x38},   {-1.0f, 0xb8},  {2.0f, 0x40},   {3.0f, 0x44},          {0.5f, 0x30},
      {448.0f, 0x7e}, {-448.0f, 0xfe}, {1.75f, 0x3e}, {std::ldexp(1.0f, -6), 0x08},  // smallest normal
      {std::ldexp(1.0f, -9), 0x01},                                                  // smallest subnormal
      {7.0f * std::ldexp(1.0f, -9), 0x07},                                           // largest subnormal
      {0.0f, 0x00},   {-0.0f, 0x80},  {240.0f, 0x77}, {0.1171875f, 0x1f},            // 1.875·2^-4
  };
  for (const Known& k : known) {
    EXPECT_EQ(int(e4m3_from_float(k.value)), int(k.bits)) << "encode " << k.value;
    const float back = e4m3_to_float(k.bits);
    EXPECT_EQ(back, k.value) << "decode 0x" << std::hex << int(k.bits);
    EXPECT_EQ(std::signbit(back), std::signbit(k.value)) << "sign of 0x" << std::hex << int(k.bits);
  }
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xff)));
}

TEST(E4m3, RoundsToNearestTiesToEven) {
  // Halfway between two codes: the one with an even mantissa wins.
  EXPECT_EQ(int(e4m3_from_float(1.0625f)), 0x38);  // 1 (m=0) vs 1.125 (m=1): 1
  EXPECT_EQ(int(e4m3_from_float(1.1875f)), 0x3a);  // 1.125 (m=1) vs 1.25 (m=2): 1.25
  EXPECT_EQ(int(e4m3_from_float(-1.1875f)), 0xba);
  EXPECT_EQ(int(e4m3_from_float(1.9375f)), 0x40);  // 1.875 (m=7) vs 2 (next exponent, m=0): 2
  EXPECT_EQ(int(e4m3_from_float(std::ldexp(1.0f, -10))), 0x00);        // half the smallest subnormal: 0
  EXPECT_EQ(int(e4m3_from_float(std::ldexp(1.5f, -9))), 0x02);         // 1.5 units: 2 units
  EXPECT_EQ(int(e4m3_from_float(std::ldexp(2.5f, -9))), 0x02);         // 2.5 units: 2 units
  EXPECT_EQ(int(e4m3_from_float(std::ldexp(7.5f, -9))), 0x08);         // into the smallest normal
  // Not halfway: nearest.
  EXPECT_EQ(int(e4m3_from_float(1.07f)), 0x39);
  EXPECT_EQ(int(e4m3_from_float(std::ldexp(1.01f, -10))), 0x01);
}

TEST(E4m3, SaturatesAndKeepsNaN) {
  EXPECT_EQ(int(e4m3_from_float(449.0f)), 0x7e);
  EXPECT_EQ(int(e4m3_from_float(464.0f)), 0x7e);  // would round to 480, which does not exist
  EXPECT_EQ(int(e4m3_from_float(1e30f)), 0x7e);
  EXPECT_EQ(int(e4m3_from_float(std::numeric_limits<float>::infinity())), 0x7e);
  EXPECT_EQ(int(e4m3_from_float(-std::numeric_limits<float>::infinity())), 0xfe);
  EXPECT_EQ(int(e4m3_from_float(std::numeric_limits<float>::quiet_NaN())), 0x7f);
  EXPECT_EQ(int(e4m3_from_float(-std::numeric_limits<float>::quiet_NaN())), 0xff);
}

TEST(E4m3, EveryCodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7f) == 0x7f) continue;  // NaN
    const float v = e4m3_to_float(uint8_t(code));
    EXPECT_EQ(int(e4m3_from_float(v)), code) << "value " << v;
  }
}

// cuda_fp8.h's host conversion (round to nearest even, __NV_SATFINITE) as an independent check
// of both directions, over every code and a million floats spread across e4m3's range.
TEST(E4m3, AgreesWithCudaFp8) {
  for (int code = 0; code < 256; ++code) {
    __nv_fp8_e4m3 x;
    x.__x = __nv_fp8_storage_t(code);
    const float theirs = float(x), ours = e4m3_to_float(uint8_t(code));
    if (std::isnan(theirs) || std::isnan(ours)) {
      EXPECT_TRUE(std::isnan(theirs) && std::isnan(ours)) << "code " << code;
    } else {
      EXPECT_EQ(ours, theirs) << "code " << code;
    }
  }
  uint64_t state = 12345;
  int mismatches = 0;
  for (int i = 0; i < 1000000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float mantissa = float((state >> 40) & 0xffffff) / float(1 << 24);  // [0, 1)
    const int exponent = int((state >> 20) & 31) - 16;                          // 2^-16 .. 2^15
    const float v = ((state >> 10) & 1 ? -1.0f : 1.0f) * std::ldexp(1.0f + mantissa, exponent);
    const uint8_t theirs = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
    if (e4m3_from_float(v) != theirs && ++mismatches <= 5)
      ADD_FAILURE() << v << ": ours 0x" << std::hex << int(e4m3_from_float(v)) << ", cuda_fp8.h 0x" << int(theirs);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(E4m3, RandomInputsAreExactAndNeverZero) {
  for (tools::E4m3Values kind : {tools::E4m3Values::kGeneral, tools::E4m3Values::kSmallIntegers}) {
    const std::vector<uint8_t> codes = tools::random_e4m3(100000, 7, kind);
    int subnormals = 0, negatives = 0;
    for (uint8_t c : codes) {
      const float v = e4m3_to_float(c);
      ASSERT_TRUE(std::isfinite(v) && v != 0.0f) << "code 0x" << std::hex << int(c);
      EXPECT_EQ(e4m3_from_float(v), c);
      subnormals += (c & 0x78) == 0;
      negatives += v < 0.0f;
      if (kind == tools::E4m3Values::kSmallIntegers) {
        EXPECT_TRUE(v == std::round(v) && std::fabs(v) <= 4.0f) << v;
      } else {
        EXPECT_LE(std::fabs(v), 3.75f) << v;
      }
    }
    EXPECT_NEAR(negatives, 50000, 1500);
    if (kind == tools::E4m3Values::kGeneral) {
      EXPECT_GT(subnormals, 2000);  // ~1 in 32
    }
  }
  EXPECT_EQ(tools::random_e4m3(10, 3, tools::E4m3Values::kGeneral), tools::random_e4m3(10, 3, tools::E4m3Values::kGeneral));
}

// ---- the FP8 tolerance ----------------------------------------------------------------------------

// The accumulation model of gemm_reference.hpp, simulated: per k32 step the products are aligned
// to the largest one's leading bit and truncated (toward -inf, an arithmetic shift) to 14 bits,
// sign included; the sum is added to the accumulator, which is truncated to 13 mantissa bits.
double truncate_to(double x, double ulp) { return std::floor(x / ulp) * ulp; }
double lead(double x) {
  int e = 0;
  std::frexp(x, &e);
  return std::ldexp(1.0, e - 1);
}
double simulate_fp8_dot(const std::vector<double>& p) {
  double acc = 0.0;
  for (size_t k0 = 0; k0 < p.size(); k0 += 32) {
    const size_t k1 = std::min(p.size(), k0 + 32);
    double largest = 0.0;
    for (size_t i = k0; i < k1; ++i) largest = std::max(largest, std::fabs(p[i]));
    double step = 0.0;
    for (size_t i = k0; i < k1; ++i) step += truncate_to(p[i], lead(largest) * std::ldexp(1.0, -12));
    acc += step;
    if (acc != 0.0) acc = truncate_to(acc, lead(std::fabs(acc)) * std::ldexp(1.0, -13));
  }
  return acc;
}

std::vector<double> random_products(int64_t k, uint64_t seed, tools::E4m3Values kind) {
  const std::vector<uint8_t> a = tools::random_e4m3(k, seed, kind), b = tools::random_e4m3(k, seed + 1, kind);
  std::vector<double> p(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) p[size_t(i)] = double(e4m3_to_float(a[size_t(i)])) * e4m3_to_float(b[size_t(i)]);
  return p;
}

TEST(Fp8Tolerance, BoundHoldsForTheSimulatedAccumulation) {
  for (int64_t k : {16, 32, 100, 1000, 4096, 16384})
    for (uint64_t seed = 1; seed <= 50; ++seed) {
      const std::vector<double> p = random_products(k, seed * 2, tools::E4m3Values::kGeneral);
      double exact = 0.0;
      for (double x : p) exact += x;
      const double err = std::fabs(simulate_fp8_dot(p) - exact);
      const double bound = tools::fp8_accumulation_bound(p.data(), k);
      EXPECT_LE(err, bound / tools::kFp8ModelMargin) << "K = " << k << " seed " << seed;
    }
}

TEST(Fp8Tolerance, SmallIntegersAreExact) {
  for (int64_t k : {16, 1000, 4096}) {
    const std::vector<double> p = random_products(k, 99, tools::E4m3Values::kSmallIntegers);
    double exact = 0.0;
    for (double x : p) exact += x;
    EXPECT_EQ(tools::fp8_accumulation_bound(p.data(), k), 0.0) << "K = " << k;
    EXPECT_EQ(simulate_fp8_dot(p), exact) << "K = " << k;
  }
}

tools::HostMatrix decoded(int64_t rows, int64_t cols, uint64_t seed, tools::E4m3Values kind) {
  tools::HostMatrix h;
  h.rows = rows, h.cols = cols;
  for (uint8_t c : tools::random_e4m3(rows * cols, seed, kind)) h.v.push_back(e4m3_to_float(c));
  return h;
}

// The comparison must fail on broken results, not only pass on good ones: a K-tile missing, one
// k32 step missing, a scale not applied, an element not written.
TEST(Fp8Tolerance, RejectsBrokenResults) {
  const int64_t m = 24, n = 20, k = 1024;
  for (tools::E4m3Values kind : {tools::E4m3Values::kGeneral, tools::E4m3Values::kSmallIntegers}) {
    const tools::HostMatrix a = decoded(m, k, 5, kind), b = decoded(k, n, 6, kind);
    const double alpha = 1.5;  // alpha·scale_a·scale_b = 1·0.5·3
    const tools::Fp8Reference ref = tools::reference_gemm_e4m3(a, b, nullptr, alpha, 0.0f);
    auto result = [&](int64_t k_begin, int64_t k_end, double scale) {  // D with K restricted
      tools::HostMatrix d;
      d.rows = m, d.cols = n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          std::vector<double> p;
          for (int64_t x = 0; x < k; ++x)
            if (x < k_begin || x >= k_end) p.push_back(double(a.at(i, x)) * b.at(x, j));
          d.v.push_back(float(scale * simulate_fp8_dot(p)));
        }
      return d;
    };
    const tools::HostMatrix good = result(0, 0, alpha);
    EXPECT_EQ(tools::compare_with_e4m3_reference(good, ref, HOPATTN_DTYPE_FP32), "");
    EXPECT_NE(tools::compare_with_e4m3_reference(result(128, 256, alpha), ref, HOPATTN_DTYPE_FP32), "")
        << "a missing k-tile passed";
    EXPECT_NE(tools::compare_with_e4m3_reference(result(992, 1024, alpha), ref, HOPATTN_DTYPE_FP32), "")
        << "a missing k32 step passed";
    EXPECT_NE(tools::compare_with_e4m3_reference(result(0, 0, 1.0), ref, HOPATTN_DTYPE_FP32), "")
        << "a missing scale passed";
    tools::HostMatrix unwritten = good;
    unwritten.v[37] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_NE(tools::compare_with_e4m3_reference(unwritten, ref, HOPATTN_DTYPE_FP32).find("D(1, 17)"), std::string::npos);
  }
}

}  // namespace
}  // namespace hopattn::gemm
