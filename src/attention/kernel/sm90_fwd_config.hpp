// The forward schedules: which kernel and which tile configuration, per head dim. Schedule 0 is
// the default (the fastest measured, see docs/perf-log.md); schedules 1.. name every compiled
// variant so ablations stay reproducible (`hopattn bench --schedules 1,2,3,4,5,6,7,8,9,10`). The instance
// list (src/attention/instances/) compiles all of them for each dtype and head dim.
//
// block_n is one of CuTe's standard WGMMA N sizes (256, 192, 128, 96, 64, 32) or 176 / 80, whose
// S = Q·Kᵀ atoms the project defines itself (collective/sm90_wgmma_wide.hpp): CuTe keeps them
// behind CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED, whose header multiplied the compile time of an
// instance file several times over (measured: ~1 min -> ~5 min on a 2-core machine).
#pragma once

namespace hopattn::attention {

struct FwdTileConfig {
  int block_m;     // query rows per CTA: 64 per consumer warpgroup
  int block_n;     // keys per KV tile (the N of S = Q·Kᵀ, the K of O = P·V)
  int stages;      // K/V shared-memory ring depth
  int warpgroups;  // consumer warpgroups (each owns 64 rows of the Q tile)
};

enum class FwdKernel {
  kFa2,                      // sm90_fwd_fa2.hpp: every warpgroup computes, CTA-wide sync per tile
  kWarpSpecialized,          // sm90_fwd_ws.hpp: producer warp + 2 consumers, intra-warpgroup overlap
  kWarpSpecializedPingPong,  // the same, consumers alternating on the tensor cores
  kPersistentPingPong,       // the same, one CTA per SM looping over the tiles
};

struct FwdSchedule {
  FwdKernel kernel;
  FwdTileConfig tile;
};

constexpr int kFwdSchedules = 11;  // 0 (default) and 1..10

// Registers per consumer thread (64 rows per warpgroup, fp32): S = block_n/2, P (16-bit) =
// block_n/4, O = hdim/2. Shared memory: Q (also the O staging tile, block_m·hdim; the persistent
// schedule 6 stages O in a tile of its own where it fits, hdim 64/128) and K, V rings
// (2·stages·block_n·hdim), 16-bit elements.
// Schedule >= 1 (schedule 0 is resolved per call by fwd_default_schedule first).
constexpr FwdSchedule fwd_schedule(int hdim, int schedule) {
  const FwdTileConfig ws_tile = hdim == 256 ? FwdTileConfig{128, 64, 2, 2} : FwdTileConfig{128, 128, 2, 2};
  switch (schedule) {
    case 4: return {FwdKernel::kWarpSpecialized, ws_tile};
    case 5: return {FwdKernel::kWarpSpecializedPingPong, ws_tile};
    case 6: return {FwdKernel::kPersistentPingPong, ws_tile};
    // Wider KV tiles: S 96 + P 48 registers per thread, shared memory 224 KB at hdim 128. At hdim
    // 256 nothing wider fits (Q alone is 64 KB), so 7 is the same kernel as 5 there.
    case 7: return {FwdKernel::kWarpSpecializedPingPong, hdim == 256 ? ws_tile : FwdTileConfig{128, 192, 2, 2}};
    // FlashAttention-3's non-causal KV widths (its hopper/tile_size.h): 176 keys at hdim 128 (S 88
    // + P 44 + O 64 registers; Q 32 KB + K/V 2 x 2 x 44 KB = 208 KB), 80 at hdim 256 (S 40 + P 20 +
    // O 128; Q 64 KB + 2 x 2 x 40 KB = 224 KB of the 227 KB). hdim 64 (FA3: 192 x 192 on three
    // consumer warpgroups, not built): 192 keys with three stages (Q 16 KB + 3 x 2 x 24 KB =
    // 160 KB), the "3 vs 2 stages". 9 is the persistent kernel on the same tile (O staged
    // in Q's space where a tile of its own does not fit: hdim 128 and 256).
    case 8:
    case 9: {
      const FwdTileConfig fa3_tile = hdim == 64    ? FwdTileConfig{128, 192, 3, 2}
                                     : hdim == 128 ? FwdTileConfig{128, 176, 2, 2}
                                                   : FwdTileConfig{128, 80, 2, 2};
      return {schedule == 8 ? FwdKernel::kWarpSpecializedPingPong : FwdKernel::kPersistentPingPong, fa3_tile};
    }
    // Three consumer warpgroups taking turns (192 query rows; FA3's hdim 64 tile height): 160
    // registers per consumer thread, S 64 + P 32 + O 32 at 128 keys; shared memory Q 24 KB + K/V
    // 2 x 2 x 16 KB = 88 KB. At hdim 128 and 256 the O accumulators alone leave no room for a
    // 128-key S in 160 registers, so 10 is schedule 5 there (the same kernel instance).
    case 10:
      return hdim == 64 ? FwdSchedule{FwdKernel::kWarpSpecializedPingPong, {192, 128, 2, 3}}
                        : FwdSchedule{FwdKernel::kWarpSpecializedPingPong, ws_tile};
    default: break;
  }
  if (hdim == 64) {
    if (schedule == 2) return {FwdKernel::kFa2, {128, 128, 3, 2}};
    if (schedule == 3) return {FwdKernel::kFa2, {128, 192, 2, 2}};
    return {FwdKernel::kFa2, {128, 128, 2, 2}};
  }
  if (hdim == 128) {
    if (schedule == 2) return {FwdKernel::kFa2, {128, 64, 3, 2}};
    if (schedule == 3) return {FwdKernel::kFa2, {128, 96, 2, 2}};
    return {FwdKernel::kFa2, {128, 128, 2, 2}};
  }
  // hdim 256: O alone is 128 registers per thread, so S stays narrow; three stages of 64 keys
  // would not fit in shared memory next to the 64 KB Q tile.
  if (schedule == 2) return {FwdKernel::kFa2, {128, 32, 3, 2}};
  if (schedule == 3) return {FwdKernel::kFa2, {64, 64, 2, 1}};
  return {FwdKernel::kFa2, {128, 64, 2, 2}};
}

// The default (schedule 0), chosen per call from the head dim, the mask and the KV length; the
// fastest in the same-run ablation on the FlashAttention-3 grid (H200, 2026-11-30 r10,
// bench/results/2026-11-30-r10-fwd-defaults.csv, docs/perf-log.md), where batch·seqlen = 16k:
//  * hdim 64: the FA2-style kernel (1), whose two short GEMMs per tile the producer warp and the
//    turn-taking do not pay back; non-causal from 4k keys schedule 10 (below). Causal at every
//    length since 2026-12-01 r68 (before: 7 from 8k keys): with its lazy rescale
//    (r67) the FA2 kernel ran 8k/16k at 1.068/1.079 of cuDNN against schedule 7's 0.960/1.009
//    (bench/results/2026-12-01-r68-*).
//  * hdim 128: short non-causal sequences (<= 4k keys) the persistent ping-pong kernel (6): the
//    next tile's Q and first K/V load during the current tile's last GEMMs and epilogue, which a
//    one-tile CTA pays in full (0.86 vs 0.76 of cuDNN at 512). Causal up to 2k keys, 6 too since
//    its tile order keeps K/V in L2 (2026-12-01 r68, fwd_tile_order.hpp: 1k 1.004 vs schedule 5's
//    0.91 of cuDNN, 512 0.99, 2k 0.98 vs 0.975); 5 at 4k. Longer: the ping-pong kernel, 192-key
//    tiles (7) from 8k keys.
//  * hdim 256: the persistent ping-pong kernel on 80-key tiles (9) non-causal from 1k keys and
//    causal from 4k (2026-11-30 r33, bench/results/2026-11-30-r33-fwd-fa3-widths.csv: 0.954-0.999
//    vs 0.909-0.953 of cuDNN non-causal, 1.030-1.098 vs 0.997-1.055 causal); the ping-pong kernel
//    on 64-key tiles (5) below that, except non-causal below 1k keys: the persistent kernel on
//    64-key tiles (6) since its O is staged per warpgroup in Q's space (2026-12-01 r70, 512: 0.994
//    vs 0.942 of cuDNN in both arms of an A/B, bench/results/2026-12-01-r70-*).
//  * hdim 64 non-causal from 4k keys: three consumer warpgroups (10), 2026-11-30 r36 with both
//    row orders (bench/results/2026-11-30-r36-fwd-hd64-3wg*.csv): 4k 0.884-0.902 vs 0.874-0.880,
//    8k 0.936-0.942 vs 0.897-0.899, 16k 0.940 vs 0.900-0.907 of cuDNN; below 4k and causal it
//    loses (0.64-0.89 at <= 2k).
constexpr int fwd_default_schedule(int hdim, bool causal, long long seqlen_k) {
  if (hdim == 64) {
    return !causal && seqlen_k >= 4096 ? 10 : 1;
  }
  if (hdim == 128) {
    if (seqlen_k >= 8192) return 7;
    if (!causal) return 6;
    return seqlen_k <= 2048 ? 6 : 5;
  }
  if (causal) return seqlen_k >= 4096 ? 9 : 5;
  return seqlen_k >= 1024 ? 9 : 6;
}

}  // namespace hopattn::attention
