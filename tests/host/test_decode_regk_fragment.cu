// Variant 5 of the int8 decode kernel (sm90_decode.hpp, decode_int8_regk_kernel) on the host:
// the consumer's hand-written A fragment of Sᵀ = K·Qᵀ and Q's channel permutation give K·Qᵀ,
// and its 32-bit loads of the swizzled raw K tile hit 32 different banks per warp. Compiled by
// nvcc for the kernel header's types; nothing runs on a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "attention/kernel/sm90_decode.hpp"

namespace hopattn::attention {
namespace {

template <int kHeadDim>
void check_fragment_and_permutation() {
  constexpr int kN = 16;
  std::mt19937 rng(kHeadDim);
  std::vector<int> k(64 * kHeadDim), q(kN * kHeadDim);
  for (int& x : k) x = int(rng() % 255) - 127;  // int8 values (the scales are a per-channel factor: left out)
  for (int& x : q) x = int(rng() % 21) - 10;
  // The A operand as the tensor core sees it: value v of k-block j of thread t sits at (m, k) =
  // CuTe's ALayout_64x16(t, v) (index m + 64 k). Values as load_k_fragment writes them: registers
  // (row g, channels 16j + c, +1), (g + 8, same), (g, 16j + c + 2, +3), (g + 8, same).
  std::vector<long> a(64 * kHeadDim, 0);
  std::vector<int> seen(64 * kHeadDim, 0);
  for (int t = 0; t < 128; ++t) {
    const int warp = t / 32, lane = t % 32, g = 16 * warp + lane / 4, c = 4 * (lane % 4);
    for (int j = 0; j < kHeadDim / 16; ++j) {
      const int rows[4] = {g, g + 8, g, g + 8}, offs[4] = {0, 0, 2, 2};
      for (int r = 0; r < 4; ++r)
        for (int h = 0; h < 2; ++h) {
          const int idx = int(cute::GMMA::ALayout_64x16{}(t, 2 * r + h)), m = idx % 64, kk = idx / 64 + 16 * j;
          a[m * kHeadDim + kk] = k[rows[r] * kHeadDim + 16 * j + c + offs[r] + h];
          ++seen[m * kHeadDim + kk];
        }
    }
  }
  for (int i = 0; i < 64 * kHeadDim; ++i) ASSERT_EQ(seen[i], 1) << "hd" << kHeadDim << ": (row, k) = " << i / kHeadDim << ", " << i % kHeadDim;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < kN; ++n) {
      long s = 0, ref = 0;
      for (int kk = 0; kk < kHeadDim; ++kk) s += a[m * kHeadDim + kk] * q[n * kHeadDim + regk_physical_channel(kk)];
      for (int ch = 0; ch < kHeadDim; ++ch) ref += long(k[m * kHeadDim + ch]) * q[n * kHeadDim + ch];
      ASSERT_EQ(s, ref) << "hd" << kHeadDim << ": S(" << m << ", " << n << ")";
    }
  // gather_q_permuted: 8 logical columns = 4 physical channel pairs, 4 channels apart.
  for (int c = 0; c < kHeadDim; c += 8)
    for (int e = 0; e < 8; ++e)
      EXPECT_EQ(regk_physical_channel(c + e), regk_physical_channel(c) + 4 * (e / 2) + e % 2) << "column " << c + e;
}

template <int kHeadDim>
void check_banks() {
  using Traits = DecodeInt8Traits<cutlass::bfloat16_t, kHeadDim, 1, 2, true, true>;
  const typename Traits::SmemLayoutRawK layout{};  // what load_k_fragment indexes
  for (int stage = 0; stage < Traits::kRawStages; ++stage)
    for (int warp = 0; warp < 4; ++warp)
      for (int j = 0; j < kHeadDim / 16; ++j)
        for (int half = 0; half < 2; ++half) {
          std::set<int> banks;
          for (int lane = 0; lane < 32; ++lane) {
            const int off = int(layout(16 * warp + lane / 4 + 8 * half, 16 * j + 4 * (lane % 4), stage));
            ASSERT_EQ(off % 4, 0);
            banks.insert((off / 4) % 32);
          }
          EXPECT_EQ(banks.size(), 32u) << "hd" << kHeadDim << " stage " << stage << " warp " << warp << " k-step " << j
                                       << " rows +" << 8 * half;
        }
}

TEST(DecodeRegK, FragmentAndQPermutationGiveKQt) {
  check_fragment_and_permutation<64>();
  check_fragment_and_permutation<128>();
}

TEST(DecodeRegK, RawKLoadsAreFreeOfBankConflicts) {
  check_banks<64>();
  check_banks<128>();
}

TEST(DecodeRegK, TwoCtasPerSm) {  // <= ~113 KB each, so two fit an H100/H200 SM's 228 KB
  EXPECT_LE((DecodeInt8Traits<cutlass::bfloat16_t, 128, 1, 2, true, true>::kSharedBytes), 113 * 1024);
  EXPECT_LE((DecodeInt8Traits<cutlass::half_t, 64, 1, 2, true, true>::kSharedBytes), 113 * 1024);
}

}  // namespace
}  // namespace hopattn::attention
