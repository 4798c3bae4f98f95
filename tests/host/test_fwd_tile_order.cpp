// The persistent forward kernels' causal tile order (src/attention/fwd_tile_order.hpp), checked on
// the host: every tile exactly once, longest first inside a group, and the zig-zag dealing of the
// chosen group sizes balanced. The kernel calls the same functions (ws::FwdTileScheduler).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "attention/fwd_tile_order.hpp"
#include "attention/fwd_varlen.hpp"

namespace hopattn::attention {
namespace {

// Each (m, pair) exactly once over t in [0, m_blocks * pairs); inside a group m never grows.
void expect_permutation(int m_blocks, int pairs, int group) {
  SCOPED_TRACE("m_blocks " + std::to_string(m_blocks) + " pairs " + std::to_string(pairs) + " group " +
               std::to_string(group));
  std::vector<int> seen(size_t(m_blocks) * pairs, 0);
  const int per_group = group > 0 && group < pairs ? group : pairs;
  const int groups = pairs / per_group;  // the last one takes the remainder
  int prev_group = -1, prev_m = 0;
  for (int t = 0; t < m_blocks * pairs; ++t) {
    const FwdTileIndex x = persistent_causal_tile(t, m_blocks, pairs, group);
    ASSERT_GE(x.m_block, 0);
    ASSERT_LT(x.m_block, m_blocks);
    ASSERT_GE(x.hb, 0);
    ASSERT_LT(x.hb, pairs);
    ++seen[size_t(x.hb) * m_blocks + x.m_block];
    const int g = std::min(x.hb / per_group, groups - 1);
    ASSERT_GE(g, prev_group) << "groups come one after another (t " << t << ")";
    if (g == prev_group) {
      ASSERT_LE(x.m_block, prev_m) << "longest first inside a group (t " << t << ")";
    }
    prev_group = g;
    prev_m = x.m_block;
  }
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "tile " << i;
}

TEST(FwdTileOrder, EveryTileOnceLongestFirstInsideGroups) {
  for (int m_blocks : {1, 2, 3, 4, 8, 17})
    for (int pairs : {1, 5, 33, 64, 100})
      for (int group : {0, 1, 7, 33, 64, 1000}) expect_permutation(m_blocks, pairs, group);
}

// Work per CTA of the zig-zag dealing: a tile of Q-tile index m costs m + 1 KV blocks (square
// causal, block_m = block_n) plus `overhead` (its prologue and epilogue).
std::vector<double> dealt_work(int m_blocks, int pairs, int group, int ctas, double overhead) {
  std::vector<double> work(size_t(ctas), 0.0);
  const int count = m_blocks * pairs;
  for (int i = 0; i < ctas; ++i)
    for (int k = 0;; ++k) {
      const int t = zigzag_position(k, i, ctas);
      if (t >= count) break;
      work[size_t(i)] += persistent_causal_tile(t, m_blocks, pairs, group).m_block + 1 + overhead;
    }
  return work;
}

TEST(FwdTileOrder, ChosenGroupsDealExactlyBalancedWork) {
  // A whole number of groups of G / c pairs: every CTA gets the same work.
  for (int m_blocks : {4, 8, 16, 32})
    for (int c : {1, 2, 4}) {
      if (m_blocks % (2 * c) != 0) continue;
      const int ctas = 132, group = ctas / c;
      const std::vector<double> w = dealt_work(m_blocks, 3 * group, group, ctas, 1.0);
      EXPECT_EQ(*std::max_element(w.begin(), w.end()), *std::min_element(w.begin(), w.end()))
          << "m_blocks " << m_blocks << " group " << group;
    }
}

TEST(FwdTileOrder, BenchGridGroupsFitL2AndBalance) {
  // The FlashAttention-3 grid (16k tokens, hidden 2048, block_m 128) on an H200's 132 SMs and an
  // H100 PCIe's 114: the chosen group keeps K/V within the budget where a qualifying size does;
  // the busiest CTA has at most 1 % more work than the mean where the pairs make whole groups, and
  // at most 3.5 % otherwise (one group of every pair, the order before: up to 5 %).
  const int64_t budget = int64_t(24) << 20;
  for (int sms : {132, 114})
    for (int hdim : {64, 128, 256})
      for (int seqlen = 512; seqlen <= 16384; seqlen *= 2) {
        const int m_blocks = seqlen / 128, pairs = (2048 / hdim) * (16384 / seqlen);
        const int grid = std::min(sms, m_blocks * pairs);  // as launch_fwd
        const int64_t kv_bytes = int64_t(seqlen) * hdim * 2 * 2;
        const int group = fwd_persistent_causal_group(m_blocks, pairs, grid, kv_bytes, budget);
        SCOPED_TRACE("ctas " + std::to_string(grid) + " hdim " + std::to_string(hdim) + " seqlen " +
                     std::to_string(seqlen) + " group " + std::to_string(group));
        EXPECT_TRUE(group == 0 || (grid % group == 0 && m_blocks % (2 * (grid / group)) == 0));
        if (group > 0 && group * kv_bytes > budget) {  // only when no smaller balanced size exists
          EXPECT_EQ(fwd_persistent_causal_group(m_blocks, pairs, grid, kv_bytes, 0), group);
        }
        const std::vector<double> w = dealt_work(m_blocks, pairs, group, grid, 1.0);
        double sum = 0;
        for (double x : w) sum += x;
        const bool whole = group > 0 && pairs % group == 0;
        EXPECT_LE(*std::max_element(w.begin(), w.end()) / (sum / double(w.size())), whole ? 1.01 : 1.035);
      }
}

TEST(FwdTileOrder, GroupChoice) {
  // seqlen 1k, hdim 128 (512 KB of K/V per pair), 256 pairs, 132 CTAs: 132 and 66 pairs exceed
  // 24 MB, 33 fits.
  EXPECT_EQ(fwd_persistent_causal_group(8, 256, 132, 512 << 10, int64_t(24) << 20), 33);
  // A budget that holds 66 pairs but not 132.
  EXPECT_EQ(fwd_persistent_causal_group(8, 256, 132, 512 << 10, int64_t(40) << 20), 66);
  // m_blocks 4: c = 4 does not divide into 2c; 66 is the smallest balanced group.
  EXPECT_EQ(fwd_persistent_causal_group(4, 512, 132, 16 << 20, int64_t(24) << 20), 66);
  // Odd m_blocks: no balanced size; one group of every pair.
  EXPECT_EQ(fwd_persistent_causal_group(5, 512, 132, 1 << 20, int64_t(24) << 20), 0);
  // Every pair already fits in one group.
  EXPECT_EQ(fwd_persistent_causal_group(8, 20, 132, 1 << 20, int64_t(24) << 20), 0);
  // 6 CTAs (a tiny problem): c in {1, 2, 3} with m_blocks 12; 1 MB per pair, budget 2 MB -> 2.
  EXPECT_EQ(fwd_persistent_causal_group(12, 100, 6, 1 << 20, int64_t(2) << 20), 2);
}

// The folded order: over every CTA's positions (monotone in k), each (m, pair) exactly once; a
// unit's first tile never shorter than its second; positions that name no tile only where the
// order says (an odd m_blocks with an odd pair count: the last block's units past the last pair).
TEST(FwdTileOrder, FoldedOrderEveryTileOnce) {
  for (int m_blocks : {1, 2, 3, 4, 5, 8, 9, 17, 43, 128})
    for (int pairs : {1, 2, 3, 16, 33, 100, 512})
      for (int ctas : {1, 7, 132}) {
        SCOPED_TRACE("m_blocks " + std::to_string(m_blocks) + " pairs " + std::to_string(pairs) + " ctas " +
                     std::to_string(ctas));
        const int64_t end = folded_positions(m_blocks, pairs);
        ASSERT_EQ(end % 2, 0);
        std::vector<int> seen(size_t(m_blocks) * pairs, 0);
        int64_t invalid = 0;
        for (int i = 0; i < ctas; ++i) {
          int prev = -1;
          for (int k = 0;; ++k) {
            const int t = folded_position(k, i, ctas);
            if (t >= end) break;
            ASSERT_GT(t, prev) << "monotone in k";
            prev = t;
            const FwdFoldedTile x = folded_causal_tile(t, m_blocks, pairs);
            if (!x.valid) {
              ++invalid;
              continue;
            }
            ASSERT_GE(x.m_block, 0);
            ASSERT_LT(x.m_block, m_blocks);
            ASSERT_GE(x.hb, 0);
            ASSERT_LT(x.hb, pairs);
            ++seen[size_t(x.hb) * m_blocks + x.m_block];
            if ((t & 1) == 0) {
              const FwdFoldedTile y = folded_causal_tile(t + 1, m_blocks, pairs);
              if (y.valid) {
                ASSERT_GE(x.m_block, y.m_block) << "the unit's longer tile first (t " << t << ")";
              }
            }
          }
        }
        for (size_t j = 0; j < seen.size(); ++j) ASSERT_EQ(seen[j], 1) << "tile " << j;
        EXPECT_EQ(invalid, end - int64_t(m_blocks) * pairs);
        if (m_blocks % 2 == 0 || pairs % 2 == 0) {
          EXPECT_EQ(invalid, 0);
        }
      }
}

// Work per CTA of the folded dealing, in the model of dealt_work: the busiest CTA has at most about
// one unit (M + 1 blocks plus two tiles' overhead) more than the least busy, for even and odd M.
TEST(FwdTileOrder, FoldedOrderBalancedUpToOneUnit) {
  for (int m_blocks : {2, 4, 5, 8, 9, 16, 32, 43, 64, 128})
    for (int pairs : {16, 32, 64, 100, 256, 512}) {
      const int ctas = 132;
      std::vector<double> work(ctas, 0.0);
      const int64_t end = folded_positions(m_blocks, pairs);
      for (int i = 0; i < ctas; ++i)
        for (int k = 0;; ++k) {
          const int t = folded_position(k, i, ctas);
          if (t >= end) break;
          const FwdFoldedTile x = folded_causal_tile(t, m_blocks, pairs);
          if (x.valid) work[size_t(i)] += x.m_block + 1 + 1.0;
        }
      const double spread = *std::max_element(work.begin(), work.end()) - *std::min_element(work.begin(), work.end());
      EXPECT_LE(spread, m_blocks + 1 + 2.0) << "m_blocks " << m_blocks << " pairs " << pairs;
    }
}

// The variable-length list (fwd_varlen_prepare.cu): sequence b writes folded_positions(m_b, heads)
// entries, m_b = ceil(len_q[b] / BM); the workspace holds varlen_tile_capacity() of them for every
// row's BM (64 .. 192). Odd head counts with odd m_b round up (one pairless middle tile): the first
// capacity formula missed that (heads 3 and ten sequences of 1 query: 40 entries in room for 30).
TEST(FwdTileOrder, VarlenListFitsItsCapacity) {
  const std::vector<std::vector<int>> batches = {
      {1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {63, 64, 65, 127, 128, 129, 191, 192, 193}, {7984, 2500, 1300, 900, 700, 500,
      450, 400, 350, 300, 250, 200, 150, 120, 100, 180}, {0, 0, 5, 0}, {1000, 1, 17, 113}, {2048, 2048, 2048, 2048}};
  for (const std::vector<int>& lens : batches)
    for (int heads : {1, 2, 3, 5, 6, 7, 8, 32, 33})
      for (int block_m : {64, 128, 192}) {
        int64_t total = 0, entries = 0;
        for (int len : lens) {
          total += len;
          const int m = (len + block_m - 1) / block_m;
          entries += m > 0 ? folded_positions(m, heads) : 0;
        }
        EXPECT_LE(entries, varlen_tile_capacity(total, int64_t(lens.size()), heads))
            << "heads " << heads << " block_m " << block_m << " sequences " << lens.size() << " total " << total;
      }
}

// A sliding window's group (windowed_persistent_group) on the cells it was measured on (H100,
// 132 SMs, 16-bit): one group where every pair's window fits 24 MB of L2 (hdim 64, 4k window; GQA
// 32:8 with 1k and 2k windows), else the L2 bound (hdim 128, 4k: 11 pairs of 2.2 MB), else enough
// pairs for 8 tiles per SM (hdim 128 and 256 at 16k, where one pair's window alone is 8-17 MB).
TEST(FwdTileOrder, WindowedGroupFollowsL2AndBalance) {
  constexpr int kSms = 132;
  // (pairs, m_blocks, span keys, hdim, gqa) -> group
  EXPECT_EQ(windowed_persistent_group(16, 171, 4095 + 192, 64, 2, 1, kSms), 0);       // 1.1 MB a pair: all 16
  EXPECT_EQ(windowed_persistent_group(16, 256, 4095 + 128, 128, 2, 1, kSms), 11);     // 2.16 MB: 24 MB / it
  EXPECT_EQ(windowed_persistent_group(16, 256, 16383 + 128, 128, 2, 1, kSms), 5);     // 8.5 MB: 2 < 8 x 132 / 256
  EXPECT_EQ(windowed_persistent_group(16, 256, 16383 + 128, 256, 2, 1, kSms), 5);     // 17 MB: 1 < 5
  EXPECT_EQ(windowed_persistent_group(128, 64, 1023 + 128, 128, 2, 4, kSms), 0);      // GQA 4 x 32:8, 1k window
  EXPECT_EQ(windowed_persistent_group(64, 64, 4095 + 128, 128, 2, 4, kSms), 46);      // GQA 2 x 32:8: 540 KB a pair
  // Never below one pair, whatever the window and tile count.
  EXPECT_EQ(windowed_persistent_group(1000, 100000, int64_t(1) << 30, 256, 2, 1, kSms), 1);
  for (int64_t pairs : {1, 2, 7, 64, 1000})
    for (int m_blocks : {1, 3, 64, 4096})
      for (int64_t span : {int64_t(1), int64_t(200), int64_t(5000), int64_t(1) << 20}) {
        const int g = windowed_persistent_group(pairs, m_blocks, span, 128, 2, 1, kSms);
        EXPECT_TRUE(g == 0 || (g >= 1 && g < pairs)) << pairs << " " << m_blocks << " " << span << ": " << g;
      }
}

}  // namespace
}  // namespace hopattn::attention
