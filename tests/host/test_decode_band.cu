// The 16-bit decode kernel's band (collective/sm90_decode_tile.hpp: DecodeTile) on the host, where
// its tile ranges and mask decisions can be enumerated: for every CTA (m-block and split) of many
// problems (cache lengths, query counts, packed query heads, causal, sliding windows at their
// edges, split counts, 64- and 128-key tiles), against kvcache.h's rule (query row i at position
// p = len - seqlen_q + i sees key j iff 0 <= j < len, j <= p with causal, and p - left <= j <=
// p + right with a window):
//   - the splits' tile ranges are disjoint and adjacent, hold every key any row of the CTA sees,
//     and no tile without such a key (a window's decode reads the window: at most
//     ceil(span / kBlockN) + 1 tiles);
//   - a tile the uniform per-tile test leaves unmasked is visible to every row, and in a tile it
//     masks the element rule (mask_decode_scores's) is the visibility rule;
//   - the key rows the kernel zeroes in V (outside [key_lo, key_hi)) are seen by no row.
// Compiled by nvcc for the header's types; nothing runs on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "attention/collective/sm90_decode_tile.hpp"

namespace hopattn::attention {
namespace {

constexpr int kBlockM = 64;

// The fields of DecodeSplitParams that DecodeTile::set_length reads.
struct BandParams {
  int max_len = 0, seqlen_q = 1, rows = 1, num_splits = 1;
  bool causal = false;
  int key_range = kDecodeAllKeys, key_block = 0;
};

struct Problem {
  int len, seqlen_q, group, splits;
  bool causal;
  int window_left, window_right;  // the call's sides; -1 both: no window (as window = 0)
  std::string to_string() const {
    std::ostringstream os;
    os << "len " << len << " sq " << seqlen_q << " group " << group << " splits " << splits
       << (causal ? " causal" : "") << " window (" << window_left << ", " << window_right << ")";
    return os.str();
  }
};

// kvcache.h's rule.
bool visible(const Problem& pr, int pos, int j) {
  if (j < 0 || j >= pr.len) return false;
  if (pr.causal && j > pos) return false;
  if (pr.window_left >= 0 && j < pos - pr.window_left) return false;
  if (!pr.causal && pr.window_right >= 0 && j > pos + pr.window_right) return false;
  return true;
}

// The tile of CTA (m_block, split), as make_rows and set_length build it from the parameters the
// host makes (make_decode_params: a left side clamped to max_len, a right one to seqlen_q, causal
// reading it as 0).
DecodeTile tile_of(const Problem& pr, const BandParams& p, int m_block, int split, int block_n) {
  DecodeTile t{};
  t.m_block = m_block, t.split = split, t.slot = split;
  t.group_idx = 0, t.b = 0, t.h_kv = 0;
  t.group = pr.group, t.rows = p.rows, t.seqlen_q = pr.seqlen_q, t.heads_q = pr.group, t.causal = pr.causal;
  t.row0 = m_block * kBlockM;
  t.left = pr.window_left >= 0 ? std::min(pr.window_left, p.max_len) : -1;
  const int window_right = pr.window_right >= 0 ? (pr.causal ? 0 : std::min(pr.window_right, pr.seqlen_q)) : -1;
  t.right = pr.causal ? 0 : window_right;
  if (block_n == 64) t.set_length<BandParams, kBlockM, 64>(p, pr.len);
  else t.set_length<BandParams, kBlockM, 128>(p, pr.len);
  return t;
}

// Checks every CTA of one problem; returns the first failure ("" if none) and counts the tiles read.
std::string check_problem(const Problem& pr, int block_n, int max_len, long long* tiles_read) {
  BandParams p;
  p.max_len = max_len, p.seqlen_q = pr.seqlen_q, p.rows = pr.seqlen_q * pr.group, p.num_splits = pr.splits;
  p.causal = pr.causal;
  const int m_blocks = (p.rows + kBlockM - 1) / kBlockM;
  const int diag = pr.len - pr.seqlen_q;
  for (int m = 0; m < m_blocks; ++m) {
    const int row0 = m * kBlockM, row_end = std::min(p.rows, row0 + kBlockM);
    auto pos = [&](int r) { return diag + r / pr.group; };
    auto seen_by_any = [&](int j) {
      for (int r = row0; r < row_end; ++r)
        if (visible(pr, pos(r), j)) return true;
      return false;
    };
    const std::string where = pr.to_string() + " block_n " + std::to_string(block_n) + " m_block " + std::to_string(m);
    // The splits' ranges: adjacent, in order.
    int next = -1, first_tile = -1, last_tile = -1;
    for (int s = 0; s < pr.splits; ++s) {
      const DecodeTile t = tile_of(pr, p, m, s, block_n);
      if (t.bad) return where + ": a valid length read as bad";
      if (t.n_end < t.n_begin) return where + ": split " + std::to_string(s) + " has n_end < n_begin";
      if (next >= 0 && t.n_begin != next) return where + ": split " + std::to_string(s) + " does not start where the last ended";
      if (first_tile < 0) first_tile = t.n_begin;
      next = t.n_end;
      last_tile = t.n_end;
      for (int n = t.n_begin; n < t.n_end; ++n) {
        ++*tiles_read;
        bool any = false;
        const bool left = block_n == 64 ? t.left_edge<64>(n) : t.left_edge<128>(n);
        const bool right = block_n == 64 ? t.right_edge<64>(n) : t.right_edge<128>(n);
        for (int j = n * block_n; j < (n + 1) * block_n; ++j) {
          const bool zeroed = j < t.key_lo || j >= t.key_hi;  // V rows decode_tile_compute zeroes
          if (zeroed && seen_by_any(j))
            return where + ": key " + std::to_string(j) + " is seen by a row but its V row is zeroed";
          for (int r = row0; r < row_end; ++r) {
            const bool vis = visible(pr, pos(r), j);
            any |= vis;
            if (!left && !right) {
              if (!vis)
                return where + ": tile " + std::to_string(n) + " is not masked but row " + std::to_string(r) +
                       " must not see key " + std::to_string(j);
              continue;
            }
            const int first = left ? t.key_first(r) : 0;  // mask_decode_scores's element rule
            const bool kept = !(j >= t.key_limit(r) || j < first);
            if (kept != vis)
              return where + ": tile " + std::to_string(n) + " row " + std::to_string(r) + " key " + std::to_string(j) +
                     (vis ? " is masked but visible" : " is kept but not visible");
          }
        }
        if (!any) return where + ": tile " + std::to_string(n) + " holds no key any row sees, yet it is read";
      }
    }
    // Every key some row sees lies in the tiles read.
    for (int j = 0; j < pr.len; ++j)
      if (seen_by_any(j) && (j / block_n < first_tile || j / block_n >= last_tile))
        return where + ": key " + std::to_string(j) + " is seen by a row but its tile is not read";
    // A window's left side: the tiles read span at most the window's keys.
    if (pr.window_left >= 0) {
      const int right = pr.causal ? 0 : pr.window_right >= 0 ? pr.window_right : pr.seqlen_q;
      const int span = pr.window_left + right + (row_end - 1) / pr.group - row0 / pr.group + 1;
      const int bound = (span + block_n - 1) / block_n + 1;
      if (last_tile - first_tile > bound)
        return where + ": " + std::to_string(last_tile - first_tile) + " tiles read for a window of " +
               std::to_string(span) + " keys (at most " + std::to_string(bound) + ")";
    }
  }
  return "";
}

TEST(DecodeBand, TilesMasksAndZeroedRowsFollowTheRule) {
  const int max_len = 1030;
  const struct { int left, right; } windows[] = {{-1, -1}, {0, 0}, {5, 3}, {50, 0}, {63, 0},  {64, 0}, {129, 0},
                                                 {300, -1}, {-1, 7}, {2, 0},  {40, 7}, {1000, 2}, {0, 200}};
  long long problems = 0, tiles = 0;
  for (int block_n : {64, 128})
    for (int len : {0, 1, 5, 17, 113, 128, 129, 1000, 1030})
      for (int sq : {1, 4, 70})
        for (int group : {1, 4})
          for (int causal = 0; causal < 2; ++causal)
            for (auto w : windows)
              for (int splits : {1, 3, 8}) {
                if (causal && len < sq) continue;  // a bad length (the kernels write NaN rows)
                const Problem pr{len, sq, group, splits, causal != 0, w.left, w.right};
                const std::string failure = check_problem(pr, block_n, max_len, &tiles);
                ASSERT_EQ(failure, "");
                ++problems;
              }
  std::printf("%lld problems, %lld tiles read\n", problems, tiles);
}

// A window's decode reads the window: one query over a 1030-key cache with a window of 100 keys
// reads 1 or 2 tiles of 128, whatever the cache length, split or not.
TEST(DecodeBand, WindowDecodeReadsAboutTheWindow) {
  for (int len : {130, 500, 1030})
    for (int splits : {1, 4}) {
      BandParams p;
      p.max_len = 1030, p.seqlen_q = 1, p.rows = 8, p.num_splits = splits, p.causal = true;
      const Problem pr{len, 1, 8, splits, true, 100, 0};
      int read = 0;
      for (int s = 0; s < splits; ++s) {
        const DecodeTile t = tile_of(pr, p, 0, s, 128);
        read += t.n_end - t.n_begin;
        EXPECT_EQ(t.key_lo, len - 1 - 100) << pr.to_string();
        EXPECT_EQ(t.key_hi, len) << pr.to_string();
      }
      EXPECT_LE(read, 2) << pr.to_string();
      EXPECT_GE(read, 1) << pr.to_string();
    }
}

}  // namespace
}  // namespace hopattn::attention
