// The forward schedules: which kernel and which tile configuration, per head dim. Schedule 0 is
// the default (the fastest measured, see docs/perf-log.md); schedules 1.. name every compiled
// variant so ablations stay reproducible (`hopattn bench --schedules 1,2,...,14`). The instance
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
  kPersistentPingPongCluster,  // the same on clusters of two CTAs sharing each K/V tile by TMA
                               // multicast (no causal mask; with one it is kPersistentPingPong)
  kWarpSpecializedSerial,      // kWarpSpecialized without the intra-warpgroup overlap (ablation)
  kWarpSpecializedPingPongSerial,  // kWarpSpecializedPingPong without it (ablation)
};

struct FwdSchedule {
  FwdKernel kernel;
  FwdTileConfig tile;
};

constexpr int kFwdSchedules = 15;  // 0 (default) and 1..14

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
    // 10 on the persistent grid (one CTA per SM; O staged in a 24 KB tile of its own: Q 24 KB +
    // K/V 64 KB + O 24 KB = 112 KB). At hdim 128 and 256 it is schedule 6 (the same instance).
    case 11:
      return hdim == 64 ? FwdSchedule{FwdKernel::kPersistentPingPong, {192, 128, 2, 3}}
                        : FwdSchedule{FwdKernel::kPersistentPingPong, ws_tile};
    // 6 on clusters of two CTAs (Q tiles 2j and 2j + 1 of one head) that load each K/V tile once
    // for both: each CTA loads half and multicasts it to the pair (the "+cluster" step).
    // Without a causal mask only; with one, 12 runs schedule 6 (the same instance).
    case 12: return {FwdKernel::kPersistentPingPongCluster, ws_tile};
    // The ablation's steps in the order, on 4's tile: warp specialization alone (13: each
    // consumer warpgroup waits for S, computes the softmax, then issues and waits for P·V), then
    // ping-pong (14), then the intra-warpgroup overlap (5).
    case 13: return {FwdKernel::kWarpSpecializedSerial, ws_tile};
    case 14: return {FwdKernel::kWarpSpecializedPingPongSerial, ws_tile};
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

// The default (schedule 0) for a call: the fastest schedule measured for its head dim, mask and
// KV length (the table and its measurements: src/attention/device/fwd_defaults.cpp, kept out of
// this header so that a change of default does not recompile the kernel instances).
int fwd_default_schedule(int hdim, bool causal, long long seqlen_k);

}  // namespace hopattn::attention
