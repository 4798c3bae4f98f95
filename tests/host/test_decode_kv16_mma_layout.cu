// The 16-bit mma.sync decode kernel (kernel/sm90_decode_kv16_mma.hpp: kv16_mma_swap_8w_1cta) on
// the host: its slots are CuTe's (the TMA's) layout, its lanes' ldmatrix addresses and Q words,
// fed through a model of ldmatrix (.trans), movmatrix.trans and mma.sync m16n8k16 built from the
// PTX ISA's fragment layouts, give Sᵀ = K·Qᵀ and Oᵀ = Vᵀ·Pᵀ at the registers the maps name, and
// every 8-lane phase of its ldmatrix meets no bank conflict. Compiled by nvcc for the types and maps
// (collective/sm90_decode_kv16_mma_traits.hpp); nothing runs on a GPU.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <set>
#include <vector>

#include "attention/collective/sm90_decode_kv16_mma_traits.hpp"
#include "mma_sync_model.hpp"

namespace hopattn::attention {
namespace {

using Bf16Traits = DecodeKv16MmaTraits<cutlass::bfloat16_t>;
using Fp16Traits = DecodeKv16MmaTraits<cutlass::half_t>;

// Byte offset of (key, channel) in slot `slot` as the kernel addresses it: 128-byte rows, the
// 16-byte chunk ch / 8 swizzled (int8_mma_sw128).
int slot_byte(int slot, int key, int ch) { return slot * Bf16Traits::kSlotBytes + int8_mma_sw128(key, ch / 8) + 2 * (ch % 8); }

// Byte offset of (key, channel, slot) where CuTe puts it: the swizzle of a 16-bit composed layout
// acts on the byte address of the shared-memory pointer it is made a tensor with (not on the
// element offset that evaluating the layout alone gives), so the offset is read from a tensor over
// a 1 KB-aligned buffer.
template <class Traits>
struct CuteSlots {
  alignas(1024) static inline typename Traits::Element buf[cute::cosize_v<typename Traits::SmemLayoutKV>];
  static int byte(int key, int ch, int slot) {
    auto t = cute::make_tensor(cute::make_smem_ptr(buf), typename Traits::SmemLayoutKV{});  // (BLK_N, 64, SLOT)
    return int(reinterpret_cast<const char*>(&t(key, ch, slot)) - reinterpret_cast<const char*>(buf));
  }
};

template <class Traits>
void check_slot_layout() {
  for (int slot = 0; slot < Traits::kStages; ++slot)
    for (int key = 0; key < Traits::kBlockN; ++key)
      for (int ch = 0; ch < Traits::kSlotChannels; ++ch)
        ASSERT_EQ(CuteSlots<Traits>::byte(key, ch, slot), slot_byte(slot, key, ch))
            << "key " << key << " channel " << ch << " slot " << slot;
}

TEST(DecodeKv16Mma, SlotSwizzleIsTheTmaLayout) {
  check_slot_layout<Bf16Traits>();
  check_slot_layout<Fp16Traits>();
  EXPECT_EQ(Bf16Traits::kSlotBytes, 8192);
  EXPECT_LE(Bf16Traits::kSharedBytes, 227 * 1024);
}

// The kernel adds 2 KB for K's m-tile mt and V's k16 step sp (16 rows: the swizzle's phase
// repeats every 8), so it holds one offset per k16 step (K) or m-tile (V) a lane.
TEST(DecodeKv16Mma, LdmatrixOffsetsSplitIntoTileAndStep) {
  for (int lane = 0; lane < 32; ++lane)
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) {
        EXPECT_EQ(kv16_k_ldsm_offset(lane, a, b), 2048 * a + kv16_k_ldsm_offset(lane, 0, b));
        EXPECT_EQ(kv16_v_ldsm_offset(lane, a, b), 2048 * b + kv16_v_ldsm_offset(lane, a, 0));
      }
}

TEST(DecodeKv16Mma, RegisterMapsArePermutations) {
  std::set<int> keys, chans;
  for (int mt = 0; mt < 4; ++mt)
    for (int e = 0; e < 4; e += 2)
      for (int g = 0; g < 8; ++g) keys.insert(kv16_swap_s_key(mt, e, g));
  for (int mt = 0; mt < 8; ++mt)
    for (int e = 0; e < 4; e += 2)
      for (int g = 0; g < 8; ++g) chans.insert(kv16_swap_o_channel(mt, e, g));
  EXPECT_EQ(keys.size(), 64u);
  EXPECT_EQ(*keys.rbegin(), 63);
  EXPECT_EQ(chans.size(), 128u);
  EXPECT_EQ(*chans.rbegin(), 127);
  std::set<int> words;  // Q: each thread's 16 words over the 8 steps, all 64 over the 4 threads c
  for (int s = 0; s < 8; ++s)
    for (int i = 0; i < 2; ++i)
      for (int c = 0; c < 4; ++c) words.insert(kv16_q_word(s, i, c));
  EXPECT_EQ(words.size(), 64u);
  EXPECT_EQ(*words.rbegin(), 63);
}

// ---- a warp, per the PTX ISA's layouts -------------------------------------------------------
using namespace hopattn::test::mma_sync_model;

// ldmatrix.sync.aligned.m8n8.x4(.trans).b16: lanes 8i .. 8i + 7 give the byte addresses of rows
// 0..7 of matrix i (8 consecutive 16-bit values each); register i of lane (g, c) receives its
// elements (row g, columns 2c, 2c + 1), or with .trans (rows 2c, 2c + 1, column g).
Regs4 ldmatrix(const std::vector<long>& smem, const std::array<int, 32>& addr, bool trans) {
  Regs4 out;
  for (int i = 0; i < 4; ++i) {
    long m[8][8];
    for (int r = 0; r < 8; ++r)
      for (int col = 0; col < 8; ++col) m[r][col] = smem[size_t(addr[8 * i + r] / 2 + col)];
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane / 4, c = lane % 4;
      out[lane][i] = trans ? Pair{m[2 * c][g], m[2 * c + 1][g]} : Pair{m[g][2 * c], m[g][2 * c + 1]};
    }
  }
  return out;
}


// One warp's tile: K and V (64 keys × 128 channels) written into four slots (K_lo, K_hi, V_lo,
// V_hi, each a ring slot the TMA filled through CuTe's layout), Q (8 rows) and P (8 rows × 64 keys)
// small integers; the kernel's fragments rebuilt lane by lane from the maps, multiplied by the
// model, against K·Qᵀ and Vᵀ·Pᵀ.
TEST(DecodeKv16Mma, FragmentsGiveTheProducts) {
  std::mt19937 rng(25);
  std::vector<long> q(8 * 128), k(64 * 128), v(64 * 128), p(8 * 64);
  for (long& x : q) x = long(rng() % 21) - 10;
  for (long& x : k) x = long(rng() % 201) - 100;
  for (long& x : v) x = long(rng() % 201) - 100;
  for (long& x : p) x = long(rng() % 11);
  constexpr int kSlots = 4;  // the slots used here: 0 K_lo, 1 K_hi, 2 V_lo, 3 V_hi
  std::vector<long> smem(size_t(kSlots) * Bf16Traits::kSlotBytes / 2, -999999);  // by 16-bit element
  for (int slot = 0; slot < kSlots; ++slot)
    for (int key = 0; key < 64; ++key)
      for (int ch = 0; ch < 64; ++ch) {
        const std::vector<long>& src = slot < 2 ? k : v;
        smem[size_t(CuteSlots<Bf16Traits>::byte(key, ch, slot) / 2)] = src[size_t(key) * 128 + 64 * (slot % 2) + ch];
      }
  // Sᵀ: m-tile mt, k16 step S = 4h + s from slot h (K's A by ldmatrix, Q's B from its words).
  for (int mt = 0; mt < 4; ++mt) {
    Acc d{};
    for (int h = 0; h < 2; ++h)
      for (int s = 0; s < 4; ++s) {
        std::array<int, 32> addr;
        for (int lane = 0; lane < 32; ++lane) addr[lane] = h * Bf16Traits::kSlotBytes + kv16_k_ldsm_offset(lane, mt, s);
        const Regs4 a = ldmatrix(smem, addr, false);
        Regs2 b;
        for (int lane = 0; lane < 32; ++lane)
          for (int i = 0; i < 2; ++i) {
            const int w = kv16_q_word(4 * h + s, i, lane % 4);  // channels 2w (low half), 2w + 1
            b[lane][i] = Pair{q[size_t(lane / 4) * 128 + 2 * w], q[size_t(lane / 4) * 128 + 2 * w + 1]};
          }
        mma(a, b, d);
      }
    for (int lane = 0; lane < 32; ++lane)
      for (int e = 0; e < 4; ++e) {
        const int row = int8_swap_row(e, lane % 4), key = kv16_swap_s_key(mt, e, lane / 4);
        long ref = 0;
        for (int ch = 0; ch < 128; ++ch) ref += q[size_t(row) * 128 + ch] * k[size_t(key) * 128 + ch];
        ASSERT_EQ(d[lane][e], ref) << "S m-tile " << mt << " lane " << lane << " register " << e;
      }
  }
  // Oᵀ: m-tile 4h + mt from slot 2 + h (Vᵀ's A by ldmatrix.trans), k16 step sp's Pᵀ by movmatrix
  // of Sᵀ's m-tile sp (P in Sᵀ's registers: p_fragments_kv16).
  Acc o[8] = {};
  for (int sp = 0; sp < 4; ++sp) {
    std::array<Pair, 32> x0, x1;
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane / 4, c = lane % 4;
      auto held = [&](int e) { return p[size_t(int8_swap_row(e, c)) * 64 + kv16_swap_s_key(sp, e, g)]; };
      x0[lane] = {held(0), held(1)}, x1[lane] = {held(2), held(3)};
    }
    const std::array<Pair, 32> b0 = movmatrix_trans(x0), b1 = movmatrix_trans(x1);
    Regs2 b;
    for (int lane = 0; lane < 32; ++lane) b[lane] = {b0[lane], b1[lane]};
    for (int h = 0; h < 2; ++h)
      for (int mt = 0; mt < 4; ++mt) {
        std::array<int, 32> addr;
        for (int lane = 0; lane < 32; ++lane) addr[lane] = (2 + h) * Bf16Traits::kSlotBytes + kv16_v_ldsm_offset(lane, mt, sp);
        mma(ldmatrix(smem, addr, true), b, o[4 * h + mt]);
      }
  }
  for (int mt = 0; mt < 8; ++mt)
    for (int lane = 0; lane < 32; ++lane)
      for (int e = 0; e < 4; ++e) {
        const int row = int8_swap_row(e, lane % 4), ch = kv16_swap_o_channel(mt, e, lane / 4);
        long ref = 0;
        for (int key = 0; key < 64; ++key) ref += p[size_t(row) * 64 + key] * v[size_t(key) * 128 + ch];
        ASSERT_EQ(o[mt][lane][e], ref) << "O m-tile " << mt << " lane " << lane << " register " << e;
      }
}

// An ldmatrix phase reads one 8 × 16-byte matrix: its 8 rows' addresses must fall in 8 different
// 16-byte bank groups (offsets distinct modulo 128 bytes), and each is 16-byte aligned.
TEST(DecodeKv16Mma, LdmatrixPhasesAreConflictFree) {
  for (int trans = 0; trans < 2; ++trans)
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b)
        for (int i = 0; i < 4; ++i) {
          std::set<int> groups;
          for (int r = 0; r < 8; ++r) {
            const int off = trans ? kv16_v_ldsm_offset(8 * i + r, a, b) : kv16_k_ldsm_offset(8 * i + r, a, b);
            EXPECT_EQ(off % 16, 0);
            groups.insert((off % 128) / 16);
          }
          EXPECT_EQ(groups.size(), 8u) << (trans ? "V" : "K") << " (" << a << ", " << b << ") matrix " << i;
        }
}

// zero_v_rows clears bytes [128 · from, 8192) of a slot: exactly the rows from .. 63, every
// channel (the swizzle moves 16-byte chunks within a row, never out of it).
TEST(DecodeKv16Mma, ZeroedBytesAreWholeRows) {
  for (int from = 1; from <= 64; ++from)
    for (int key = 0; key < 64; ++key)
      for (int ch = 0; ch < 64; ++ch)
        ASSERT_EQ(slot_byte(0, key, ch) >= 128 * from, key >= from) << "from " << from << " key " << key << " channel " << ch;
}

}  // namespace
}  // namespace hopattn::attention
