// Named tile configurations, one per kernel variant. Plain constexpr data (no CUTLASS): the
// kernels derive their CuTe shapes from it, and the host side reads the tile for its heuristics.
#pragma once

#include "hopattn/gemm.h"

namespace hopattn::gemm {

struct TileConfig {
  int kBlockM = 128;           // rows of D per tile
  int kBlockN = 128;           // columns of D per tile
  int kBlockK = 64;            // K per pipeline stage: one 128-byte swizzle row (64 16-bit or
                               // 128 8-bit elements; tile_config sets it from the element size)
  int kStages = 1;             // shared-memory stages of the A/B pipeline
  int kMmaWarpgroups = 1;      // warpgroups that share one tile's MMAs (split along M)
  int kConsumerWarpgroups = 1; // warpgroups that issue WGMMA
  bool kProducerWarpgroup = false;  // a separate warpgroup issues the TMA loads
  int kProducerRegisters = 0;  // setmaxnreg budgets (0: no reconfiguration)
  int kConsumerRegisters = 0;
  bool kPersistent = false;    // grid = min(tiles, SMs); each CTA loops over tiles
  int kRasterGroup = 1;        // tile scheduler: tile-rows (or -columns) per raster group
  bool kTmaStoreD = false;     // epilogue through shared memory and TMA store: D needs a
                               // 16-byte aligned pointer and leading dimension
  int kEpilogueN = 0;          // columns of one epilogue chunk (shared memory, one TMA store)
  int kEpilogueBuffers = 2;    // epilogue chunk buffers per consumer warpgroup, in 64 x kEpilogueN fp32
                               // units (16-bit outputs: 64 x 2·kEpilogueN row-major chunks)
  int kClusterM = 1;           // CTAs of a cluster along M; they share B's tile by TMA multicast
  int kClusterN = 1;           // CTAs of a cluster along N; they share A's tile by TMA multicast
  bool kSplitKCluster = false; // the CTAs of a cluster split K of one tile (cluster size chosen at
                               // launch) and sum their partials through distributed shared memory
};

// Shared memory per stage: (128 + 128) x 128 B = 32 KiB for 128x128 tiles, 48 KiB for 128x256
// (a stage's K is always 128 bytes: BLK_K = 64 16-bit or 128 8-bit elements, so FP8 stages are
// the same size and the same stage counts fit). Stage counts keep every variant within ~192 KiB
// so that the kernels fit on any Hopper part (227 KiB opt-in on H100/H200; the launch checks the
// device's real limit).
namespace detail {
// A producer warpgroup (40 registers) feeding consumer warpgroups (232): 128·40 + 256·232 ≤ 65536.
constexpr void warp_specialize(TileConfig& c, int consumers, int mma_warpgroups) {
  c.kConsumerWarpgroups = consumers, c.kMmaWarpgroups = mma_warpgroups;
  c.kProducerWarpgroup = true;
  c.kProducerRegisters = 40, c.kConsumerRegisters = 232;
}
// The cooperative tile: 128x256, each of two consumer warpgroups owns 64 rows and issues
// m64n256k16, WGMMA's widest (B read once per 64x256 product, the least shared-memory traffic per
// FLOP); 4 stages of 48 KiB.
constexpr void cooperative_tile(TileConfig& c) {
  c.kBlockN = 256;
  c.kStages = 4;
  warp_specialize(c, 2, 2);
}
// Persistent: grid = min(tiles, SMs), tiles in raster groups of `group` tile-rows (or cluster
// rows), epilogue through shared memory (2 buffers of 8 KiB per consumer warpgroup = 32 KiB beside
// the 192 KiB ring: 224 KiB, within the 227 KiB opt-in; the persistent variant trades a stage for
// 4 buffers) and TMA stores.
constexpr void persistent_tma_store(TileConfig& c, int group) {
  c.kPersistent = true;
  c.kRasterGroup = group;
  c.kTmaStoreD = true;
  c.kEpilogueN = 32;
}
}  // namespace detail

constexpr TileConfig tile_config(hopattn_gemm_variant_t v, int element_bytes = 2) {
  TileConfig c{};
  c.kBlockK = 128 / element_bytes;  // one 128-byte swizzle row of the operand's elements
  switch (v) {
    case HOPATTN_GEMM_TMA_WGMMA:  // the tutorial's first step: load, wait, multiply, wait
      c.kStages = 1;
      break;
    case HOPATTN_GEMM_PIPELINED:  // the same warpgroup, loads run kStages - 1 tiles ahead
      c.kStages = 4;
      break;
    case HOPATTN_GEMM_WARP_SPECIALIZED:
      // 128x128 fp32 accumulators = 128 registers per consumer thread; one consumer warpgroup
      // cannot hold a 128x256 tile (256 accumulator registers) below the 255-register limit.
      c.kStages = 6;
      detail::warp_specialize(c, 1, 1);
      break;
    case HOPATTN_GEMM_COOPERATIVE:
      detail::cooperative_tile(c);
      break;
    case HOPATTN_GEMM_PERSISTENT:
      // The cooperative tile and warp roles, looping over tiles. Groups of 8 tile-rows: 132
      // resident CTAs cover 8 A panels and ~17 B panels per wave. 3 stages (144 KiB) and 4
      // epilogue buffers per warpgroup (64 KiB): with 16-bit outputs in 64-column chunks, two
      // chunk stores stay in flight while the next chunk is written (r25: 4096^3 0.93 -> 0.97x
      // cuBLAS against 4 stages and 2 buffers; docs/gemm.md).
      detail::cooperative_tile(c);
      detail::persistent_tma_store(c, 8);
      c.kStages = 3;
      c.kEpilogueBuffers = 4;
      break;
    case HOPATTN_GEMM_CLUSTER_2X1:
      // The persistent kernel on 2x1 clusters: two CTAs compute vertically adjacent 128x256
      // tiles, and each loads half of their common B tile, multicast to both. L2 -> SM traffic
      // per k-tile drops from 48 KiB to 32 KiB per CTA. Raster groups of 4 cluster rows (8 tile
      // rows, as persistent).
      detail::cooperative_tile(c);
      detail::persistent_tma_store(c, 4);
      c.kClusterM = 2;
      break;
    case HOPATTN_GEMM_CLUSTER_1X2:
      // The same on 1x2 clusters: two CTAs compute horizontally adjacent 128x256 tiles, and each
      // loads half of their common A tile (64 of its 128 rows), multicast to both. L2 -> SM
      // traffic per k-tile drops from 48 KiB to 40 KiB per CTA (A is the smaller operand tile).
      // Raster groups of 8 tile rows, as persistent.
      detail::cooperative_tile(c);
      detail::persistent_tma_store(c, 8);
      c.kClusterN = 2;
      break;
    case HOPATTN_GEMM_SPLIT_K:
      // The cooperative tile; K split over a cluster of 2 or 4 CTAs when the tiles alone leave
      // SMs idle. 4 stages (192 KiB), reused for the 132 KiB fp32 partial tile.
      detail::cooperative_tile(c);
      c.kSplitKCluster = true;
      break;
    case HOPATTN_GEMM_PINGPONG:
      // Each consumer warpgroup owns a whole 128x128 tile; the two alternate on the tensor cores.
      c.kStages = 6;
      detail::warp_specialize(c, 2, 1);
      break;
    default:
      break;
  }
  return c;
}

constexpr int threads_of(const TileConfig& c) {
  return 128 * (c.kConsumerWarpgroups + (c.kProducerWarpgroup ? 1 : 0));
}

}  // namespace hopattn::gemm
