// The mma.sync int8 decode kernel (kernel/sm90_decode_int8_mma.hpp: kv8_mma_*) on the host: its
// channel, key and V-scale maps give Q·Kᵀ and P·V exactly, its swizzle formula is CuTe's (the
// TMA's) layout, and its 16-byte shared loads of K and V meet no bank conflict in any quarter warp.
// Compiled by nvcc for the types and maps (collective/sm90_decode_int8_mma_traits.hpp) and the
// packed K pairs (collective/sm90_decode_int8_mma_dequant.hpp); nothing runs on a GPU.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "attention/collective/sm90_decode_int8_mma_dequant.hpp"
#include "attention/collective/sm90_decode_int8_mma_traits.hpp"
#include "mma_sync_model.hpp"

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
  check_swizzle<DecodeInt8MmaTraits<cutlass::bfloat16_t, 128, 8, Int8MmaMath::kFmaKFoldV>>();     // 24 slots
  check_swizzle<DecodeInt8MmaTraits<cutlass::bfloat16_t, 128, 4, Int8MmaMath::kFmaKFoldV, 3>>();  // 8 slots
  check_swizzle<DecodeInt8MmaTraits<cutlass::bfloat16_t, 128, 8, Int8MmaMath::kSwapPackedK>>();
  check_swizzle<DecodeInt8MmaTraits<cutlass::bfloat16_t, 128, 4, Int8MmaMath::kSwapPackedK, 3>>();
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
  for (int c = 0; c < 4; ++c)
    for (int sp = 0; sp < 4; ++sp)
      for (int e = 0; e < 4; ++e)
        EXPECT_EQ(int8_mma_vscale_slot(int8_mma_key(2 * sp + e / 2, 2 * c + e % 2)), 16 * c + 4 * sp + e);
}

// The swap rows (kv8_mma_swap_*, keys as the mma's M): the warp's fragments rebuilt lane by lane as the kernel
// builds them, multiplied by a host model of mma.sync m16n8k16 and of movmatrix.trans (both from
// the PTX ISA's fragment layouts), give Sᵀ = K·Qᵀ and Oᵀ = Vᵀ·Pᵀ at the registers the maps name.
namespace swap_model = hopattn::test::mma_sync_model;

TEST(DecodeInt8Mma, SwappedFragmentsGiveTheProducts) {
  using namespace swap_model;
  std::mt19937 rng(18);
  std::vector<long> q(8 * 128), k(64 * 128), v(64 * 128), p(8 * 64);
  for (long& x : q) x = long(rng() % 21) - 10;
  for (long& x : k) x = long(rng() % 255) - 127;
  for (long& x : v) x = long(rng() % 255) - 127;
  for (long& x : p) x = long(rng() % 11);
  // Q's B fragment (publish_q_swap): load_q's uint4 kq = 2(s/4) + (s%4)/2 of row g holds channels
  // 64(kq/2) + 16c + 8(kq%2) + 0..7; words (x, y) for even s, (z, w) for odd: channel pairs 2·word.
  // With packed K (kv8_mma_swap_* at bf16) the two words' halves are exchanged: (0, 2) and (1, 3).
  auto q_pair = [&](int lane, int s, int reg, bool packed) {
    const int g = lane / 4, c = lane % 4, kq = 2 * (s / 4) + (s % 4) / 2, word = 2 * (s % 2);
    const int ch = 64 * (kq / 2) + 16 * c + 8 * (kq % 2) + 2 * word;  // the first of the four
    return packed ? Pair{q[g * 128 + ch + reg], q[g * 128 + ch + 2 + reg]}
                  : Pair{q[g * 128 + ch + 2 * reg], q[g * 128 + ch + 2 * reg + 1]};
  };
  // K's rows (tile_scores_swap): m-tile mt reads key rows int8_mma_key(2mt, g) (wa) and (2mt+1, g)
  // (wb), chunk c (half 0) or c + 4 (half 1), word q: channels 64·half + 16c + 4q + 0..3; a0/a1
  // take bytes 0, 1 of wa/wb, a2/a3 bytes 2, 3 (packed K: bytes 0, 2 and 1, 3).
  for (int packed = 0; packed < 2; ++packed)
  for (int mt = 0; mt < 4; ++mt) {
    std::array<std::array<long, 4>, 32> d{};
    for (int s = 0; s < 8; ++s) {
      std::array<std::array<Pair, 4>, 32> a;
      std::array<std::array<Pair, 2>, 32> b;
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, c = lane % 4, ch = 64 * (s / 4) + 16 * c + 4 * (s % 4);
        const long* ka = &k[int8_mma_key(2 * mt, g) * 128 + ch];
        const long* kb = &k[int8_mma_key(2 * mt + 1, g) * 128 + ch];
        if (packed)
          a[lane] = {Pair{ka[0], ka[2]}, Pair{kb[0], kb[2]}, Pair{ka[1], ka[3]}, Pair{kb[1], kb[3]}};
        else
          a[lane] = {Pair{ka[0], ka[1]}, Pair{kb[0], kb[1]}, Pair{ka[2], ka[3]}, Pair{kb[2], kb[3]}};
        b[lane] = {q_pair(lane, s, 0, packed != 0), q_pair(lane, s, 1, packed != 0)};
      }
      mma(a, b, d);
    }
    for (int lane = 0; lane < 32; ++lane)
      for (int e = 0; e < 4; ++e) {
        const int row = int8_swap_row(e, lane % 4), key = int8_swap_s_key(mt, e, lane / 4);
        long ref = 0;
        for (int ch = 0; ch < 128; ++ch) ref += q[row * 128 + ch] * k[key * 128 + ch];
        ASSERT_EQ(d[lane][e], ref) << "m-tile " << mt << " lane " << lane << " register " << e << " packed " << packed;
      }
  }
  // Oᵀ = Vᵀ·Pᵀ (tile_pv_swap): Pᵀ's B fragment of step sp is movmatrix of Sᵀ's m-tile sp (registers
  // 0, 1 and 2, 3); V's keys 0..3 are rows int8_mma_key(2sp, 2c), (2sp, 2c+1), (2sp+1, 2c),
  // (2sp+1, 2c+1), chunk g; m-tile mt takes bytes tt = 2mt + h (channel 16g + tt).
  std::array<std::array<long, 4>, 32> o[8] = {};
  for (int sp = 0; sp < 4; ++sp) {
    std::array<Pair, 32> x0, x1;
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane / 4, c = lane % 4;
      auto held = [&](int e) { return p[int8_swap_row(e, c) * 64 + int8_swap_s_key(sp, e, g)]; };
      x0[lane] = {held(0), held(1)}, x1[lane] = {held(2), held(3)};
    }
    const std::array<Pair, 32> b0 = movmatrix_trans(x0), b1 = movmatrix_trans(x1);
    for (int mt = 0; mt < 8; ++mt) {
      std::array<std::array<Pair, 4>, 32> a;
      std::array<std::array<Pair, 2>, 32> b;
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, c = lane % 4;
        const int keys[4] = {int8_mma_key(2 * sp, 2 * c), int8_mma_key(2 * sp, 2 * c + 1),
                             int8_mma_key(2 * sp + 1, 2 * c), int8_mma_key(2 * sp + 1, 2 * c + 1)};
        Pair lo[2], hi[2];
        for (int h = 0; h < 2; ++h) {
          const int ch = 16 * g + 2 * mt + h;
          lo[h] = {v[keys[0] * 128 + ch], v[keys[1] * 128 + ch]};
          hi[h] = {v[keys[2] * 128 + ch], v[keys[3] * 128 + ch]};
        }
        a[lane] = {lo[0], lo[1], hi[0], hi[1]};
        b[lane] = {b0[lane], b1[lane]};
      }
      mma(a, b, o[mt]);
    }
  }
  for (int mt = 0; mt < 8; ++mt)
    for (int lane = 0; lane < 32; ++lane)
      for (int e = 0; e < 4; ++e) {
        const int row = int8_swap_row(e, lane % 4), ch = int8_swap_o_channel(mt, e, lane / 4);
        long ref = 0;
        for (int key = 0; key < 64; ++key) ref += p[row * 64 + key] * v[key * 128 + ch];
        ASSERT_EQ(o[mt][lane][e], ref) << "m-tile " << mt << " lane " << lane << " register " << e;
      }
  // V's scales: thread g reads slots 8g + j, the scale of key int8_mma_key(j, g) (its Sᵀ keys), and
  // the slots are a permutation of the tile's 64.
  std::set<int> slots;
  for (int key = 0; key < 64; ++key) slots.insert(int8_swap_vscale_slot(key));
  EXPECT_EQ(slots.size(), 64u);
  EXPECT_EQ(*slots.rbegin(), 63);
  for (int g = 0; g < 8; ++g)
    for (int j = 0; j < 8; ++j) EXPECT_EQ(int8_swap_vscale_slot(int8_mma_key(j, g)), 8 * g + j);
  // Every Oᵀ channel of a row appears once over the lanes g and the registers.
  std::set<int> chans;
  for (int g = 0; g < 8; ++g)
    for (int mt = 0; mt < 8; ++mt)
      for (int e = 0; e < 4; e += 2) chans.insert(int8_swap_o_channel(mt, e, g));
  EXPECT_EQ(chans.size(), 128u);
}

// k_pair_bf16's bit trick: for every int8 byte in either half of a word, the bf16 0x4300 | (x &
// 0x7F) minus the bf16 0x4300 | (x & 0x80) is x (both exact: 128 + m and 128 or 256).
TEST(DecodeInt8Mma, PackedKPairsHoldTheInt8Values) {
  auto bf16 = [](uint32_t half) {
    const uint32_t bits = (half & 0xFFFFu) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  for (int x = -128; x < 128; ++x)
    for (int pos = 0; pos < 2; ++pos) {
      const uint32_t w = (uint32_t(uint8_t(int8_t(x))) << (16 * pos)) | (pos ? 0x5Au : 0xA5u << 16);
      const uint32_t v = int8_mma_detail::k_pair_value_bits(w) >> (16 * pos);
      const uint32_t o = int8_mma_detail::k_pair_offset_bits(w) >> (16 * pos);
      EXPECT_EQ(bf16(v) - bf16(o), float(x)) << "byte " << x << " in half " << pos;
      EXPECT_GE(bf16(v), 128.0f);
      EXPECT_LT(bf16(v), 256.0f);
    }
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
