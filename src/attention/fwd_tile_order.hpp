// The persistent forward kernels' causal tile orders, shared by the kernel (ws::FwdTileScheduler)
// and the host (the group size, and the host tests that check the order is a permutation and
// balanced). No CUDA or CuTe header: compiled by nvcc and by the host compiler alike.
//
// Two orders. The default since 2026-12-01 (twelfth session) is the FOLDED order (below, after
// the grouped one); the GROUPED zig-zag order is kept for ablations (FwdParams::persistent_group
// = N >= 0, sm90_fwd_launch.hpp).
//
// --- The grouped zig-zag order ---
//
// Tiles are (Q tile m, head h, batch b); a "pair" is (h, b), hb = h + heads · b. The (head, batch)
// pairs are cut into groups of `group` pairs (the last group also takes the pairs that do not
// fill a group of their own). The groups' tiles come one group after another; inside a group the
// tiles go longest first (the Q-tile index m from m_blocks − 1 down to 0, slowest), the pair fastest. The CTAs of the grid
// deal the positions out in a zig-zag: round k covers positions [k·G, (k+1)·G); CTA i takes
// position i of the round when k is even and G − 1 − i when k is odd.
//
// Why groups: the tiles in flight at one time are a window of ~G consecutive positions. With one
// group of every pair (the order before 2026-12-01) that window swept every head once per Q-tile
// length, so each head's K/V came from HBM once per Q tile (at seqlen 1k, hdim 128: ~590 MB of K/V
// reads for 128 MB of K/V). A group keeps the window on a set of pairs whose K/V fits in L2.
//
// Why these group sizes (fwd_persistent_causal_group): with group = G / c, where c divides G and
// m_blocks is a multiple of 2c, a round holds exactly c whole Q-tile lengths of one group and a
// group a whole, even number of rounds. In rounds 2j and 2j+1 CTA i then gets lengths
// L − f and L − 2c + 1 + f (L the round pair's longest, f = i / group), the same sum for every CTA:
// the dealing is exactly balanced when the pairs make whole groups.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define HOPATTN_FWD_HD __host__ __device__ inline
#else
#define HOPATTN_FWD_HD inline
#endif

namespace hopattn::attention {

struct FwdTileIndex {
  int m_block, hb;  // Q-tile index, pair (h + heads · b)
};

// Position t < m_blocks · pairs of the persistent causal order. group <= 0 or >= pairs: one group.
// The pairs that do not fill a group join the last one (a partial group of their own, dealt after
// the whole ones, measured up to 9 % imbalance in the host test's model; joined, at most ~3 %, the
// one-group order's figure).
HOPATTN_FWD_HD FwdTileIndex persistent_causal_tile(int t, int m_blocks, int pairs, int group) {
  const int per_group = group > 0 && group < pairs ? group : pairs;
  const int groups = pairs / per_group;  // >= 1; the last takes the remainder
  int g = t / (per_group * m_blocks);
  g = g < groups - 1 ? g : groups - 1;
  const int r = t - g * per_group * m_blocks;
  const int in_group = g == groups - 1 ? pairs - g * per_group : per_group;
  const int m = r / in_group;
  return {m_blocks - 1 - m, g * per_group + (r - m * in_group)};
}

// The zig-zag: CTA i's k-th position among G CTAs (may be >= the tile count: no more tiles).
HOPATTN_FWD_HD int zigzag_position(int k, int i, int ctas) { return k * ctas + ((k & 1) ? ctas - 1 - i : i); }

// Pairs per group for the persistent causal order on `ctas` CTAs: the largest G / c (c | G,
// m_blocks a multiple of 2c) whose K/V (kv_bytes_per_pair each) fits in l2_budget bytes, else the
// smallest such G / c; 0 (one group of every pair) when no c qualifies (odd m_blocks) or when every
// pair fits in one group anyway.
inline int fwd_persistent_causal_group(int m_blocks, int64_t pairs, int ctas, int64_t kv_bytes_per_pair,
                                       int64_t l2_budget) {
  int chosen = 0;
  for (int c = 1; c <= m_blocks / 2 && c <= ctas; ++c) {
    if (ctas % c != 0 || m_blocks % (2 * c) != 0) continue;
    const int group = ctas / c;
    chosen = group;  // c grows: groups shrink; stop at the first that fits
    if (int64_t(group) * kv_bytes_per_pair <= l2_budget) break;
  }
  return int64_t(chosen) >= pairs ? 0 : chosen;
}

// --- The folded order ---
//
// A work unit is two Q tiles: under a causal mask tile m visits about m + 1 KV blocks, so a
// pair's longest left and shortest left, m = M − 1 − r and m = r (M = m_blocks), hold about
// M + 1 blocks together, and every unit holds about the same work. With M odd each pair's middle
// tile (m = M / 2, about (M + 1) / 2 blocks) has no partner in its pair: the middle tiles of pairs
// 2q and 2q + 1 make a unit instead. Dealing units round-robin (CTA i takes units i, i + G,
// i + 2G, ..., each unit's first tile, the longer, then its second) balances the CTAs up to the
// last round's tail, whatever M and the pair count are. Units go pair-major, so the ~G units in
// flight span only ~G / (M / 2) pairs, whose K/V stays in L2 — the grouped order's balanced group
// sizes could not get below 33 pairs on 132 SMs at 4k-16k keys (66-128 MB of K/V at hdim 128).
//
//   M even: U = M / 2 units per pair; unit j: pair j / U, r = j % U, tiles (M − 1 − r, r).
//   M odd:  blocks of M units per two pairs (2q, 2q + 1): h = M / 2 units of pair 2q, h of pair
//           2q + 1 (as above), then (middle of 2q, middle of 2q + 1). With an odd pair count the
//           last block's units that name pair `pairs` are not tiles.
// Positions: unit j's tiles are positions 2j and 2j + 1; a position that names no tile has
// valid = false (the kernel skips it).
struct FwdFoldedTile {
  int m_block, hb;
  bool valid;
};

// The grouped order's group for a sliding window bounded on both sides (the library's choice,
// FwdParams::persistent_group -2; sm90_fwd_launch.hpp, fwd_persistent_group). The folded order balances a causal mask's tiles, whose
// work grows with m from 1 block, by pairing the longest with the shortest; under a window the
// work stops growing at the window's width, so those pairs are unequal, and longest-first zig-zag
// dealing balances them instead (H100, 2026-12-07, windows of 1k-16k on 8k-32k, hdim 64/128/256,
// MHA and GQA: 1.01-1.17x the folded order at this rule's groups, 0.88-1.05x at fixed ones:
// docs/decisions.md, thirteenth session). The group: as many (head, batch) pairs as keep the K and V
// one Q tile reads (span_keys keys, shared by a GQA group's heads) within 24 MB of L2, but at least
// as many as give the group 8 tiles per SM (the zig-zag's balance: smaller groups left CTAs idle at
// each group's end, 0.88x at 4 pairs of 64 tiles); 0 (one group of every pair) when that covers them all.
HOPATTN_FWD_HD int windowed_persistent_group(int64_t pairs, int m_blocks, int64_t span_keys, int hdim, int element_bytes,
                                            int gqa_group, int sms) {
  const int64_t kv_bytes = span_keys * hdim * 2 * element_bytes / (gqa_group > 0 ? gqa_group : 1);
  const int64_t l2_pairs = (int64_t(24) << 20) / (kv_bytes > 0 ? kv_bytes : 1);
  const int64_t balance_pairs = (int64_t(8) * sms + m_blocks - 1) / (m_blocks > 0 ? m_blocks : 1);
  int64_t group = l2_pairs > balance_pairs ? l2_pairs : balance_pairs;
  if (group < 1) group = 1;
  return group >= pairs ? 0 : int(group);
}

HOPATTN_FWD_HD int64_t folded_units(int m_blocks, int64_t pairs) {
  return m_blocks % 2 == 0 ? pairs * (m_blocks / 2) : (pairs + 1) / 2 * int64_t(m_blocks);
}
// Positions in all: two per unit (int64: the host checks that the grid's positions fit an int).
HOPATTN_FWD_HD int64_t folded_positions(int m_blocks, int64_t pairs) { return 2 * folded_units(m_blocks, pairs); }
// CTA i's k-th position among G CTAs: unit (k / 2)·G + i, its first tile (k even), then its second.
HOPATTN_FWD_HD int folded_position(int k, int i, int ctas) { return 2 * ((k >> 1) * ctas + i) + (k & 1); }
HOPATTN_FWD_HD FwdFoldedTile folded_causal_tile(int t, int m_blocks, int pairs) {
  const int j = t >> 1;
  const bool second = (t & 1) != 0;
  if (m_blocks % 2 == 0) {
    const int units = m_blocks / 2, hb = j / units, r = j - hb * units;
    return {second ? r : m_blocks - 1 - r, hb, hb < pairs};
  }
  const int h = m_blocks / 2, q = j / m_blocks, r = j - q * m_blocks;
  if (r == 2 * h) {  // the two pairs' middle tiles
    const int hb = 2 * q + (second ? 1 : 0);
    return {h, hb, hb < pairs};
  }
  const int hb = 2 * q + r / h, rr = r % h;  // h > 0 here: r < 2h
  return {second ? rr : m_blocks - 1 - rr, hb, hb < pairs};
}

}  // namespace hopattn::attention
