// Variant 9 of the int8 decode kernel (kernel/sm90_decode_int8_mma.hpp) on the host: its channel,
// key and V-scale maps give Q·Kᵀ and P·V exactly, its swizzle formula is CuTe's (the TMA's)
// layout, and its 16-byte shared loads of K and V meet no bank conflict in any quarter warp.
// Compiled by nvcc for the kernel header's types; nothing runs on a GPU.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "attention/kernel/sm90_decode_int8_mma.hpp"

namespace hopattn::attention {
namespace {

template <class Traits>
void check_swizzle() {
  const auto layout = typename Traits::SmemLayoutRaw{};
  for (int stage = 0; stage < Traits::kStages; ++stage)
    for (int row = 0; row < Traits::kBlockN; ++row)
      for (int ch = 0; ch < 128; ++ch)
        ASSERT_EQ(int(layout(row, ch, stage)), stage * Traits::kTileBytes + int8_mma_sw128(row, ch / 16) + ch % 16)
            << "row " << row << " channel " << ch << " stage " << stage << " (" << Traits::kBlockN << "-key stages)";
}

TEST(DecodeInt8Mma, SwizzleFormulaIsTheTmaLayout) {
  check_swizzle<DecodeInt8MmaTraits<cutlass::bfloat16_t, 128, 64>>();
  check_swizzle<DecodeInt8MmaTraits<cutlass::bfloat16_t, 128, 64, 8, Int8MmaLoads::kWarpRings>>();  // 24 slots
  check_swizzle<DecodeInt8MmaTraits<cutlass::bfloat16_t, 128, 64, 4, Int8MmaLoads::kWarpRings>>();  // 12 slots
}

// The kernel addresses row 8j + perm(n) as 1024 j + int8_mma_sw128(perm(n), chunk).
TEST(DecodeInt8Mma, RowOffsetsSplitIntoTileAndRow) {
  for (int j = 0; j < 8; ++j)
    for (int n = 0; n < 8; ++n)
      for (int chunk = 0; chunk < 8; ++chunk)
        EXPECT_EQ(int8_mma_sw128(int8_mma_key(j, n), chunk), 1024 * j + int8_mma_sw128(int8_mma_key_perm(n), chunk));
}

TEST(DecodeInt8Mma, ChannelAndKeyMapsArePermutations) {
  for (int s = 0; s < 8; ++s) {
    std::set<int> ch;
    for (int kk = 0; kk < 16; ++kk) ch.insert(int8_mma_channel(s, kk));
    EXPECT_EQ(ch.size(), 16u);
  }
  std::set<int> all, keys, slots;
  for (int s = 0; s < 8; ++s)
    for (int kk = 0; kk < 16; ++kk) all.insert(int8_mma_channel(s, kk));
  EXPECT_EQ(all.size(), 128u);
  EXPECT_EQ(*all.rbegin(), 127);
  for (int j = 0; j < 8; ++j)
    for (int n = 0; n < 8; ++n) keys.insert(int8_mma_key(j, n));
  EXPECT_EQ(keys.size(), 64u);
  for (int key = 0; key < 64; ++key) slots.insert(int8_mma_vscale_slot(key));
  EXPECT_EQ(slots.size(), 64u);
  EXPECT_EQ(*slots.rbegin(), 63);
  std::set<int> slots32;
  for (int key = 0; key < 32; ++key) slots32.insert(int8_mma_vscale_slot(key, 32));
  EXPECT_EQ(slots32.size(), 32u);
  EXPECT_EQ(*slots32.rbegin(), 31);
}

// The kernel's fragments, rebuilt element by element from the m16n8k16 layouts of the PTX ISA
// (A: a0..a7 at (g, 2c + i), (g + 8, 2c + i), (g, 2c + 8 + i), (g + 8, 2c + 8 + i); B: b0..b3 at
// (k 2c + i, n g), (2c + 8 + i, g); C: (g, 2c + i), (g + 8, 2c + i)), give S = Q·Kᵀ and O = P·V.
TEST(DecodeInt8Mma, FragmentsGiveTheProducts) {
  std::mt19937 rng(9);
  std::vector<int> q(16 * 128), k(64 * 128), v(64 * 128), p(16 * 64);
  for (int& x : q) x = int(rng() % 21) - 10;
  for (int& x : k) x = int(rng() % 255) - 127;
  for (int& x : v) x = int(rng() % 255) - 127;
  for (int& x : p) x = int(rng() % 11);
  // S: per n8 tile j, k16 step s: A from Q row (g, g+8) at channel int8_mma_channel(s, kk),
  // B from K row int8_mma_key(j, g) at the same channel: C(r, n) is S(r, key(j, n)).
  for (int j = 0; j < 8; ++j)
    for (int r = 0; r < 16; ++r)
      for (int n = 0; n < 8; ++n) {
        long acc = 0, ref = 0;
        for (int s = 0; s < 8; ++s)
          for (int kk = 0; kk < 16; ++kk) {
            // A(r, kk) is what thread (r % 8, (kk % 8) / 2) holds; B(kk, n) is what thread (n, same c) loads.
            acc += long(q[r * 128 + int8_mma_channel(s, kk)]) * k[int8_mma_key(j, n) * 128 + int8_mma_channel(s, kk)];
          }
        for (int ch = 0; ch < 128; ++ch) ref += long(q[r * 128 + ch]) * k[int8_mma_key(j, n) * 128 + ch];
        ASSERT_EQ(acc, ref);
      }
  // The loads behind those fragments: thread (g, c) reads channels [16c, 16c+16) and [64+16c, ...)
  // of its key row; step s takes bytes 4(s%4) + {0, 1} (k = 2c + i) and + {2, 3} (k = 2c + 8 + i).
  for (int c = 0; c < 4; ++c)
    for (int s = 0; s < 8; ++s)
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(int8_mma_channel(s, 2 * c + i), 64 * (s / 4) + 16 * c + 4 * (s % 4) + i);
        EXPECT_EQ(int8_mma_channel(s, 2 * c + 8 + i), 64 * (s / 4) + 16 * c + 4 * (s % 4) + 2 + i);
      }
  // O = P·V: k16 step sp's k = kk is key int8_mma_key(2sp + kk / 8, kk % 8) (P's A fragment is S's
  // C fragment of tiles 2sp, 2sp+1); n8 tile t's column n is channel 16n + t.
  for (int r = 0; r < 16; ++r)
    for (int t = 0; t < 16; ++t)
      for (int n = 0; n < 8; ++n) {
        long acc = 0, ref = 0;
        for (int sp = 0; sp < 4; ++sp)
          for (int kk = 0; kk < 16; ++kk) {
            const int key = int8_mma_key(2 * sp + kk / 8, kk % 8);
            acc += long(p[r * 64 + key]) * v[key * 128 + 16 * n + t];
          }
        for (int key = 0; key < 64; ++key) ref += long(p[r * 64 + key]) * v[key * 128 + 16 * n + t];
        ASSERT_EQ(acc, ref);
      }
  // V scale slots: thread c, step sp reads slots 16c + 4sp + {0..3} for keys (2sp, 2c), (2sp, 2c+1),
  // (2sp+1, 2c), (2sp+1, 2c+1).
  for (int block_n : {32, 64})
    for (int c = 0; c < 4; ++c)
      for (int sp = 0; sp < block_n / 16; ++sp)
        for (int e = 0; e < 4; ++e)
          EXPECT_EQ(int8_mma_vscale_slot(int8_mma_key(2 * sp + e / 2, 2 * c + e % 2), block_n), block_n / 4 * c + 4 * sp + e);
}

// A 16-byte shared load is served per quarter warp (8 lanes); those 8 lanes hit 8 different
// 16-byte bank groups when their offsets differ modulo 128 bytes.
void expect_conflict_free(const std::vector<int>& offsets, const char* what) {
  for (int q = 0; q < 4; ++q) {
    std::set<int> groups;
    for (int l = 8 * q; l < 8 * q + 8; ++l) groups.insert((offsets[l] % 128) / 16);
    EXPECT_EQ(groups.size(), 8u) << what << ", quarter " << q;
  }
}

TEST(DecodeInt8Mma, SharedLoadsAreConflictFree) {
  for (int j = 0; j < 8; ++j)
    for (int half = 0; half < 2; ++half) {
      std::vector<int> off(32);
      for (int lane = 0; lane < 32; ++lane) off[lane] = int8_mma_sw128(int8_mma_key(j, lane / 4), lane % 4 + 4 * half);
      expect_conflict_free(off, "K");
    }
  for (int sp = 0; sp < 4; ++sp)
    for (int k = 0; k < 4; ++k) {
      std::vector<int> off(32);
      for (int lane = 0; lane < 32; ++lane)
        off[lane] = int8_mma_sw128(int8_mma_key(2 * sp + k / 2, 2 * (lane % 4) + k % 2), lane / 4);
      expect_conflict_free(off, "V");
    }
}

}  // namespace
}  // namespace hopattn::attention
