// The FP8 forward kernel's register and shared-memory maps on the host (collective/sm90_fwd_fp8.hpp,
// kernel/sm90_fwd_ws.hpp's e4m3 rows): P's slot order feeds each k-index of the P·V WGMMA the
// accumulator value of the key whose V row the transpose puts there, with CuTe's own partitions of
// the kernel's MMAs; the V transpose, run on host memory, writes every byte of the stage once
// with the right value; and its shared loads and stores meet at most 2-way bank conflicts.
// Compiled by nvcc for the kernel's traits; nothing runs on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "attention/collective/sm90_fwd_fp8.hpp"
#include "attention/kernel/sm90_fwd_fa2.hpp"

namespace hopattn::attention {
namespace {

using Fp8Traits = Fa2Traits<cutlass::float_e4m3_t, 128, 128, 128, 2>;  // ws_pingpong_persistent_128x128x2_e4m3

TEST(FwdFp8, KeyOrderIsAPermutationWithinEach32Keys) {
  for (int base = 0; base < 256; base += 32) {
    std::set<int> keys;
    for (int s = base; s < base + 32; ++s) {
      const int key = fp8_pv_key(s);
      EXPECT_GE(key, base) << "slot " << s;
      EXPECT_LT(key, base + 32) << "slot " << s;
      keys.insert(key);
    }
    EXPECT_EQ(keys.size(), 32u) << "block at " << base;
  }
  // slot 16g + 4q + i holds key 16g + 8(i/2) + 2q + i%2
  EXPECT_EQ(fp8_pv_key(0), 0);
  EXPECT_EQ(fp8_pv_key(2), 8);
  EXPECT_EQ(fp8_pv_key(4), 2);
  EXPECT_EQ(fp8_pv_key(7), 11);
  EXPECT_EQ(fp8_pv_key(16 + 12 + 3), 16 + 8 + 6 + 1);
}

// For every consumer thread: value (i, h, g) of k-block kb of the P·V A operand (CuTe's partition
// of the kernel's TiledMmaPV) sits at (row m, slot k); convert_p_e4m3 fills it from S accumulator
// value (i % 2, h, 4 kb + 2 g + i / 2) (CuTe's partition of TiledMmaQK), which must be (row m,
// key fp8_pv_key(k)). The transpose stores V[fp8_pv_key(k)] as row k of the B operand, so the
// GEMM sums P[m][key] · V[key] over every key once.
TEST(FwdFp8, PSlotOrderMatchesTheAccumulator) {
  using namespace cute;
  using Traits = Fp8Traits;
  typename Traits::TiledMmaQK mma_qk;
  typename Traits::TiledMmaPV mma_pv;
  const auto cS = make_identity_tensor(Shape<typename Traits::BlockM, typename Traits::BlockN>{});  // (m, key)
  const auto cP = make_identity_tensor(Shape<typename Traits::BlockM, typename Traits::BlockN>{});  // (m, slot)
  for (int t = 0; t < Traits::kThreads; ++t) {
    const auto tScS = mma_qk.get_thread_slice(t).partition_C(cS);  // ((2, 2, N/8), 1, 1)
    const auto tPcP = mma_pv.get_thread_slice(t).partition_A(cP);  // ((4, 2, 2), 1, N/32)
    ASSERT_EQ(int(size(tPcP)), int(cosize(Fp8PFragmentLayout<Traits::kBlockN>{})));
    static_assert(decltype(size<0>(tPcP))::value == 16 && decltype(size<2>(tPcP))::value == Traits::kBlockN / 32);
    static_assert(decltype(size<1>(tPcP))::value == 1 && decltype(size<1>(tScS))::value == 1);
    for (int kb = 0; kb < Traits::kBlockN / 32; ++kb)
      for (int g = 0; g < 2; ++g)
        for (int h = 0; h < 2; ++h)
          for (int i = 0; i < 4; ++i) {
            const auto a = tPcP(make_coord(make_coord(i, h, g), 0, kb));
            const auto c = tScS(make_coord(make_coord(i % 2, h, 4 * kb + 2 * g + i / 2), 0, 0));
            ASSERT_EQ(int(get<0>(a)), int(get<0>(c))) << "thread " << t << " (i, h, g, kb) = " << i << h << g << kb;
            ASSERT_EQ(fp8_pv_key(int(get<1>(a))), int(get<1>(c)))
                << "thread " << t << " (i, h, g, kb) = " << i << h << g << kb << ": slot " << int(get<1>(a));
          }
    // The fragment layout's order is the partition's: value (i, h, g) of k-block kb at i + 4h + 8g + 16kb.
    for (int v = 0; v < 16; ++v)
      for (int kb = 0; kb < Traits::kBlockN / 32; ++kb)
        ASSERT_EQ(int(Fp8PFragmentLayout<Traits::kBlockN>{}(v, 0, kb)), v + 16 * kb);
  }
}

// ldmatrix.trans.x4 and stmatrix.x4 (m8n8, b16) on host memory, as the PTX ISA defines them:
// lanes 8i .. 8i + 7 give the 16-byte rows of matrix i; .trans gives lane t register i =
// (M_i[2(t%4)][t/4], M_i[2(t%4) + 1][t/4]); stmatrix takes from lane t register i =
// (M_i[t/4][2(t%4)], M_i[t/4][2(t%4) + 1]) (low, high 16 bits).
void ldsm_x4_trans_host(const uint8_t* smem, const int (&row_addr)[32], uint32_t (&r)[32][4]) {
  auto elem = [&](int m, int row, int col) {  // 16-bit element (row, col) of matrix m
    const uint8_t* p = smem + row_addr[8 * m + row] + 2 * col;
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8);
  };
  for (int t = 0; t < 32; ++t)
    for (int m = 0; m < 4; ++m) r[t][m] = elem(m, 2 * (t % 4), t / 4) | (elem(m, 2 * (t % 4) + 1, t / 4) << 16);
}
void stsm_x4_host(uint8_t* smem, const int (&row_addr)[32], const uint32_t (&r)[32][4], std::vector<int>& written) {
  for (int t = 0; t < 32; ++t)
    for (int m = 0; m < 4; ++m)
      for (int half = 0; half < 2; ++half) {
        const uint32_t v = r[t][m] >> (16 * half);
        const int off = row_addr[8 * m + t / 4] + 2 * (2 * (t % 4) + half);
        smem[off] = uint8_t(v), smem[off + 1] = uint8_t(v >> 8);
        written[size_t(off)] += 1, written[size_t(off + 1)] += 1;
      }
}

template <class Traits>
void check_transpose() {
  using namespace cute;
  using Transpose = Fp8VTranspose<Traits::kBlockN, Traits::kHeadDim>;
  using LayoutRaw = decltype(take<0, 2>(typename Traits::SmemLayoutKV{}));
  using LayoutVt = decltype(take<0, 2>(typename Traits::SmemLayoutVt{}));
  constexpr int kN = Traits::kBlockN, kD = Traits::kHeadDim, kBytes = kN * kD;
  // Both layouts are one stage of kBytes, 4-element runs contiguous and 4-byte aligned.
  std::set<int> raw_offsets, vt_offsets;
  for (int key = 0; key < kN; ++key)
    for (int n = 0; n < kD; ++n) {
      raw_offsets.insert(int(LayoutRaw{}(key, n)));
      vt_offsets.insert(int(LayoutVt{}(n, key)));
      if (n % 4 == 0) ASSERT_EQ(int(LayoutRaw{}(key, n)) % 4, 0);
      if (key % 4 == 0) ASSERT_EQ(int(LayoutVt{}(n, key)) % 4, 0);
      ASSERT_EQ(int(LayoutRaw{}(key, n)), int(LayoutRaw{}(key, n - n % 4)) + n % 4);
      ASSERT_EQ(int(LayoutVt{}(n, key)), int(LayoutVt{}(n, key - key % 4)) + key % 4);
    }
  ASSERT_EQ(int(raw_offsets.size()), kBytes);
  ASSERT_EQ(*raw_offsets.rbegin(), kBytes - 1);
  ASSERT_EQ(int(vt_offsets.size()), kBytes);
  ASSERT_EQ(*vt_offsets.rbegin(), kBytes - 1);
  // The kernel's addresses (Fp8VTranspose::run): the lane's row offset in block 0 once, then per
  // block one XOR and one constant add; for every (worker, block, lane), equal to the layouts'
  // offsets, from a 128-byte aligned base as well as from 0, and every block taken by one worker.
  constexpr int kWorkers = 3;  // transpose_v's warps 1-3
  for (int b = 0; b < Transpose::kBlocks; ++b)
    ASSERT_TRUE((Transpose::template block_separates<LayoutRaw, LayoutVt>(b))) << "block " << b;
  std::vector<int> taken(Transpose::kBlocks, 0);
  std::vector<int> order;  // the blocks in the order the workers take them (worker 0's, 1's, 2's)
  for (int w = 0; w < kWorkers; ++w)
    for (int i = 0; i < Transpose::worker_blocks(w, kWorkers); ++i) {
      const int b = w + i * kWorkers;
      ASSERT_LT(b, Transpose::kBlocks);
      ++taken[size_t(b)];
      order.push_back(b);
      for (uint32_t base : {0u, 128u, 0x6380u, 0x1fc00u})
        for (int lane = 0; lane < 32; ++lane) {
          const uint32_t load_lane = base + Transpose::template load_offset<LayoutRaw>(0, lane);
          const uint32_t store_lane = base + Transpose::template store_offset<LayoutVt>(0, lane);
          const uint32_t load = Transpose::block_address(load_lane, Transpose::template load_xor<LayoutRaw>(b),
                                                         Transpose::template load_add<LayoutRaw>(b));
          const uint32_t store = Transpose::block_address(store_lane, Transpose::template store_xor<LayoutVt>(b),
                                                          Transpose::template store_add<LayoutVt>(b));
          ASSERT_EQ(load, base + uint32_t(LayoutRaw{}(Transpose::load_key(b, lane), Transpose::load_channel(b, lane))))
              << "worker " << w << " block " << b << " lane " << lane << " base " << base;
          ASSERT_EQ(store, base + uint32_t(LayoutVt{}(Transpose::store_channel(b, lane), Transpose::store_slot(b))))
              << "worker " << w << " block " << b << " lane " << lane << " base " << base;
        }
    }
  for (int b = 0; b < Transpose::kBlocks; ++b) ASSERT_EQ(taken[size_t(b)], 1) << "block " << b;
  // The transpose on host memory: every block once, in the workers' order, through the kernel's
  // addresses and the emulated ldmatrix.trans / permute / stmatrix.
  std::mt19937 rng(11);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<uint8_t> raw(kBytes), vt(kBytes, 0);
    std::vector<int> written(kBytes, 0);
    for (uint8_t& b : raw) b = uint8_t(rng());
    for (const int b : order) {
      int load_addr[32], store_addr[32];
      for (int lane = 0; lane < 32; ++lane) {
        const int key = Transpose::load_key(b, lane), ch = Transpose::load_channel(b, lane);
        const int out_ch = Transpose::store_channel(b, lane), slot = Transpose::store_slot(b);
        load_addr[lane] = int(Transpose::block_address(Transpose::template load_offset<LayoutRaw>(0, lane),
                                                       Transpose::template load_xor<LayoutRaw>(b),
                                                       Transpose::template load_add<LayoutRaw>(b)));
        store_addr[lane] = int(Transpose::block_address(Transpose::template store_offset<LayoutVt>(0, lane),
                                                        Transpose::template store_xor<LayoutVt>(b),
                                                        Transpose::template store_add<LayoutVt>(b)));
        // ldmatrix / stmatrix rows: 16-byte aligned, 16 contiguous bytes
        ASSERT_EQ(load_addr[lane] % 16, 0);
        ASSERT_EQ(store_addr[lane] % 16, 0);
        ASSERT_EQ(int(LayoutRaw{}(key, ch + 15)), load_addr[lane] + 15);
        ASSERT_EQ(int(LayoutVt{}(out_ch, slot + 15)), store_addr[lane] + 15);
      }
      uint32_t r[32][4], out[32][4];
      ldsm_x4_trans_host(raw.data(), load_addr, r);
      for (int t = 0; t < 32; ++t) Transpose::permute(r[t], out[t]);
      stsm_x4_host(vt.data(), store_addr, out, written);
      if (trial == 0) {
        // Banks: each 8-lane phase of an ldmatrix / stmatrix moves 8 rows of 16 bytes; a phase
        // with k rows in one 16-byte bank group takes k wavefronts. Loads: none shared; stores: 2.
        for (int m = 0; m < 4; ++m) {
          std::vector<int> load_groups(8, 0), store_groups(8, 0);
          for (int row = 0; row < 8; ++row) {
            ++load_groups[size_t((load_addr[8 * m + row] / 16) % 8)];
            ++store_groups[size_t((store_addr[8 * m + row] / 16) % 8)];
          }
          EXPECT_EQ(*std::max_element(load_groups.begin(), load_groups.end()), 1) << "block " << b << " matrix " << m;
          EXPECT_LE(*std::max_element(store_groups.begin(), store_groups.end()), 2) << "block " << b << " matrix " << m;
        }
      }
    }
    for (int i = 0; i < kBytes; ++i) ASSERT_EQ(written[size_t(i)], 1) << "vt byte " << i;
    for (int n = 0; n < kD; ++n)
      for (int s = 0; s < kN; ++s)
        ASSERT_EQ(vt[LayoutVt{}(n, s)], raw[LayoutRaw{}(fp8_pv_key(s), n)]) << "channel " << n << " slot " << s;
  }
}

TEST(FwdFp8, VTransposeWritesEveryByteOnce) { check_transpose<Fp8Traits>(); }
// hdim 64 (Q, K and V's staging rows of 64 bytes: the 64-byte swizzle) and hdim 256 on 64-key
// tiles (V^T rows of 64 slots: the 64-byte swizzle), the other e4m3 rows of sm90_fwd_config.hpp.
TEST(FwdFp8, VTransposeWritesEveryByteOnceAtHdim64) { check_transpose<Fa2Traits<cutlass::float_e4m3_t, 64, 128, 128, 2>>(); }
TEST(FwdFp8, VTransposeWritesEveryByteOnceAtHdim256) { check_transpose<Fa2Traits<cutlass::float_e4m3_t, 256, 128, 64, 2>>(); }

// The layouts' offsets are the 128-byte swizzle of TMA and WGMMA (Swizzle<3, 4, 3>: byte bits 4-6
// ^= bits 7-9), with 128-byte rows: (key, channel) for the staging tile, (channel, slot) for V^T.
TEST(FwdFp8, StageLayoutsAreThe128ByteSwizzle) {
  using namespace cute;
  auto sw128 = [](int offset) { return offset ^ ((offset & 0x380) >> 3); };
  const auto raw = take<0, 2>(typename Fp8Traits::SmemLayoutKV{});
  const auto vt = take<0, 2>(typename Fp8Traits::SmemLayoutVt{});
  for (int row = 0; row < 128; ++row)
    for (int col = 0; col < 128; ++col) {
      ASSERT_EQ(int(raw(row, col)), sw128(row * 128 + col)) << "key " << row << " channel " << col;
      ASSERT_EQ(int(vt(row, col)), sw128(row * 128 + col)) << "channel " << row << " slot " << col;
    }
  // One stage after the other: stage s starts s * 16 KB in (a multiple of the swizzle's 1 KB period).
  EXPECT_EQ(int(typename Fp8Traits::SmemLayoutKV{}(0, 0, 1)), 128 * 128);
  EXPECT_EQ(int(typename Fp8Traits::SmemLayoutVt{}(0, 0, 1)), 128 * 128);
}

// The traits of the e4m3 row: bf16 O, K-major V for the second GEMM, 32-key k-blocks.
TEST(FwdFp8, Traits) {
  static_assert(Fp8Traits::kFp8 && Fp8Traits::kPvKeysPerKBlock == 32);
  static_assert(std::is_same_v<Fp8Traits::ElementOut, cutlass::bfloat16_t>);
  static_assert(Fp8Traits::kMajorV == cute::GMMA::Major::K);
  using Bf16Traits = Fa2Traits<cutlass::bfloat16_t, 128, 128, 128, 2>;
  static_assert(!Bf16Traits::kFp8 && std::is_same_v<Bf16Traits::ElementOut, cutlass::bfloat16_t>);
  static_assert(std::is_same_v<Bf16Traits::SmemLayoutO, Bf16Traits::SmemLayoutQ>);  // 16-bit: O in Q's layout, as before
  static_assert(std::is_same_v<Bf16Traits::SmemLayoutQWarpgroup, Bf16Traits::SmemLayoutOWarpgroup>);
  EXPECT_EQ(Fp8Traits::kTmaBytesKV, 128u * 128u);
}

}  // namespace
}  // namespace hopattn::attention
