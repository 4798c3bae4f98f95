// Named tile configurations of the forward kernels. One entry per (head dim, schedule); the
// instance list (src/attention/instances/) compiles each entry for bf16 and fp16.
#pragma once

namespace hopattn::attention {

struct FwdTileConfig {
  int block_m;     // query rows per CTA: 64 per consumer warpgroup
  int block_n;     // keys per KV tile (the N of S = Q·Kᵀ, the K of O = P·V)
  int stages;      // K/V shared-memory ring depth
  int warpgroups;  // consumer warpgroups (each owns 64 rows of the Q tile)
};

// Register budget per consumer thread (64 rows per warpgroup, fp32): S = block_n/2, P (16-bit)
// = block_n/4, O = hdim/2. Shared memory: Q + O staging (block_m·hdim) and K, V rings
// (2·stages·block_n·hdim), 16-bit elements. See docs/attention-fa2.md for the measured table.
constexpr FwdTileConfig fa2_tile_config(int hdim, int schedule) {
  if (hdim == 64) {
    if (schedule == 1) return {128, 128, 3, 2};
    if (schedule == 2) return {128, 192, 2, 2};
    return {128, 128, 2, 2};
  }
  if (hdim == 128) {
    if (schedule == 1) return {128, 64, 3, 2};
    if (schedule == 2) return {128, 176, 2, 2};
    return {128, 128, 2, 2};
  }
  // hdim 256: O alone is 128 registers per thread, so S stays narrow; three stages of 64 keys
  // would not fit in shared memory next to the 64 KB Q tile.
  if (schedule == 1) return {128, 48, 3, 2};
  if (schedule == 2) return {128, 80, 2, 2};
  return {128, 64, 2, 2};
}

constexpr int kFa2Schedules = 3;

}  // namespace hopattn::attention
