// The forward kernels a build compiles: their families, tiles and the registry rows (name, head
// dim). The instance file of each (dtype, head dim) (src/attention/instances/) compiles the rows
// of its head dim; device/fwd_registry.cpp lists them by name and device/fwd_defaults.cpp picks
// one per call.
//
// block_n is one of CuTe's standard WGMMA N sizes (256, 192, 128, 96, 64, 32).
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
  kWarpSpecializedSerial,      // kWarpSpecialized without the intra-warpgroup overlap (ablation)
  kWarpSpecializedPingPongSerial,  // kWarpSpecializedPingPong without it (ablation)
};

// The masks a row is compiled for (each mask is a kernel of its own): only those some default
// runs, so that no instance is compiled for nothing (both with -DHOPATTN_BUILD_ABLATIONS=ON).
inline constexpr unsigned kCausalOnly = 1, kNonCausalOnly = 2, kBothMasks = 3;

// One compiled forward kernel: a row of the registry (device/fwd_registry.hpp lists the rows a
// build compiled; device/fwd_defaults.cpp picks one per call). The name says the family and the
// tile, block_m x block_n x stages; block_m / 64 consumer warpgroups.
struct FwdKernelSpec {
  const char* name;  // e.g. "ws_pingpong_persistent_128x128x2"
  FwdKernel kernel;
  FwdTileConfig tile;
  int hdim;          // the head dim this row is compiled for
  bool ablation;     // compiled only with -DHOPATTN_BUILD_ABLATIONS=ON (the FA3 paper's ablation)
  unsigned masks = kBothMasks;  // kCausalOnly, kNonCausalOnly or kBothMasks
  // Whether the row is the one (per head dim) that takes a sliding window, a softcap and sinks
  // (attention_forward.cpp, has_options): its mainloop has them; calls with options run it at every length, and
  // the other rows are compiled without them.
  bool options = false;
  // Whether the row is an FP8 kernel: e4m3 Q, K, V and bf16 O (HOPATTN_FP8_HEAD_DIMS; the e4m3
  // instance files compile these rows only, the 16-bit ones every other row). Its consumers take
  // P as e4m3 into the second WGMMA, and its producer warpgroup transposes V in shared memory
  // (collective/sm90_fwd_fp8.hpp); padded batches without options only.
  bool fp8 = false;
  // Whether the row sums come from the P·V WGMMA (e4m3 rows, hdim 64 and 128: Fa2Traits::kMmaRowSum):
  // no FADD per score, at the LSE of the e4m3-rounded weights.
  bool mma_row_sum = false;
  // Whether S = Q·Kᵀ takes Q from registers (an RS WGMMA; e4m3 rows: Fa2Traits::kQInRegisters):
  // each consumer warpgroup loads its 64 rows of Q from shared memory once per tile (ldmatrix)
  // instead of the WGMMA re-reading them for every KV tile.
  bool q_in_registers = false;
};

// Registers per consumer thread (64 rows per warpgroup, fp32): S = block_n/2, P (16-bit) =
// block_n/4, O = hdim/2. Shared memory: Q (also the O staging tile, block_m·hdim; the persistent
// kernels stage O in a tile of their own where it fits) and the K, V rings
// (2·stages·block_n·hdim), 16-bit elements. Every row here is used by the defaults table or by
// the ablation; the kernels and tiles tried and retired are listed in docs/attention-ws.md
// ("Tried and retired", tag lab-final).
inline constexpr FwdKernelSpec kFwdKernels[] = {
    // hdim 64: the FA2-style kernel (no producer warp: its two short GEMMs per tile do not pay
    // for one) below 8k causal / 2k non-causal keys, and three consumer warpgroups taking turns on
    // the persistent grid (192 query rows, FA3's hdim-64 tile height: 160 registers per consumer
    // thread, S 64 + P 32 + O 32; Q 24 KB + K/V 64 KB + O 24 KB of shared memory) above.
    {"fa2_128x128x2", FwdKernel::kFa2, {128, 128, 2, 2}, 64, false},
    {"ws_pingpong_persistent_192x128x2", FwdKernel::kPersistentPingPong, {192, 128, 2, 3}, 64, false},
    // hdim 128: the persistent ping-pong kernel up to 8k keys, the non-persistent one on 192-key
    // tiles (S 96 + P 48 registers, 224 KB of shared memory) above.
    // hdim 64, causal chunks of <= 128 queries: one CTA per tile, ping-pong (r140: 1.2-2.4x the
    // FA2-style and persistent kernels there; persistent kernels idle most SMs on so few tiles).
    {"ws_pingpong_128x128x2", FwdKernel::kWarpSpecializedPingPong, {128, 128, 2, 2}, 64, false},
    {"ws_pingpong_persistent_128x128x2", FwdKernel::kPersistentPingPong, {128, 128, 2, 2}, 128, false},
    {"ws_pingpong_128x192x2", FwdKernel::kWarpSpecializedPingPong, {128, 192, 2, 2}, 128, false},
    // hdim 256: O alone is 128 registers per thread, so S stays 64 keys wide.
    {"ws_pingpong_persistent_128x64x2", FwdKernel::kPersistentPingPong, {128, 64, 2, 2}, 256, false},
    // Causal only: non-causal calls at hdim 256 run the persistent kernel at every length (r144:
    // the two within noise on chunks of 1-128 queries against 4k-8k keys).
    {"ws_pingpong_128x64x2", FwdKernel::kWarpSpecializedPingPong, {128, 64, 2, 2}, 256, false, kCausalOnly},
    // The calls with a window, a softcap or sinks (has_options): the persistent rows again,
    // with the options mainloop (consume_tile<kOptions>), causal (band) mask only: a call without
    // a window runs the band with both sides unbounded. Instances of their own, so that the plain
    // rows keep the loop they had (with a second loop beside it they ran up to 1.08x slower, r9).
    {"ws_pingpong_persistent_192x128x2_options", FwdKernel::kPersistentPingPong, {192, 128, 2, 3}, 64, false, kCausalOnly, true},
    {"ws_pingpong_persistent_128x128x2_options", FwdKernel::kPersistentPingPong, {128, 128, 2, 2}, 128, false, kCausalOnly, true},
    {"ws_pingpong_persistent_128x64x2_options", FwdKernel::kPersistentPingPong, {128, 64, 2, 2}, 256, false, kCausalOnly, true},
    // FP8 (e4m3): the persistent ping-pong kernel on the tile of the 16-bit one (not yet measured
    // against other tiles; FA3 runs hdim 128 e4m3 on 128 x 224/256-key tiles). Shared memory: Q
    // 16 KB + K, V and V's TMA staging 3 x 32 KB + O (bf16) 32 KB = 144 KB.
    {"ws_pingpong_persistent_128x128x2_e4m3", FwdKernel::kPersistentPingPong, {128, 128, 2, 2}, 128, false, kBothMasks, false, true},
    // hdim 64: the same tile (Q and K rows of 64 bytes take the 64-byte swizzle): Q 8 KB + 3 x 16 KB
    // + O 16 KB. hdim 256: 64-key tiles as the 16-bit kernel's (O is 128 registers per thread;
    // 128 keys would need 288 KB of shared memory): Q 32 KB + 3 x 32 KB + O 64 KB = 192 KB; the
    // default until 2026-12-07 (twelfth session), now the ablation baseline of the 3-stage row below.
    {"ws_pingpong_persistent_128x128x2_e4m3", FwdKernel::kPersistentPingPong, {128, 128, 2, 2}, 64, false, kBothMasks, false, true},
    {"ws_pingpong_persistent_128x64x2_e4m3", FwdKernel::kPersistentPingPong, {128, 64, 2, 2}, 256, true, kBothMasks, false, true},
    // Wider e4m3 tiles, re-timed after the V transpose's address fix (H100, 2026-12-07, one binary,
    // 2 rounds; bench/records/fp8-tiles-2026-12-07-h100-s10.csv): hdim 128 on 192-key tiles (FA3
    // runs 224) 1.045 / 1.02x the 128-key row non-causal at 4k / 16k and 1.09 / 1.14x causal, 0.99
    // / 0.82x at 1k; Q 16 KB + 3 x 2 x 24 KB + O 32 KB = 192 KB; causal spills 36 bytes (ptxas),
    // non-causal none. hdim 64 on 192-row tiles (three consumer warpgroups, FA3's e4m3 tile
    // height; 152 registers each): 1.14 / 1.06 / 1.14x non-causal at 1k / 4k / 16k, 1.08 / 1.11x
    // causal at 4k / 16k, 0.95x at 1k; Q 12 KB + 3 x 2 x 16 KB + O 24 KB; causal spills 4 bytes,
    // as the 16-bit hdim-64 row does. (A 3-stage 128x128x3 e4m3 row ran 0.81-1.04x the 2-stage
    // one in the same run and is retired again; a 224-key row needs V's transpose for 32-byte
    // swizzle rows, not written.)
    {"ws_pingpong_persistent_128x192x2_e4m3", FwdKernel::kPersistentPingPong, {128, 192, 2, 2}, 128, false, kBothMasks, false, true},
    {"ws_pingpong_persistent_192x128x2_e4m3", FwdKernel::kPersistentPingPong, {192, 128, 2, 3}, 64, false, kBothMasks, false, true},
    // Candidate (ablation row): hdim 64's default tile with the row sums from the P·V WGMMA and a
    // maximum that may lag by 0.8 (mma_row_sum; docs/perf-diagnosis-fa3.md §9d: no FADD per score,
    // at N = hdim + 8 and ~0.5 LOP3 per score for the softmax pin). H100, one binary
    // (bench/records/fp8-rowsum-2026-12-07-h100-s11.csv): 1.00-1.01x the default non-causal, 1.04-1.045x
    // causal at 4k / 16k, at an LSE of the rounded weights (1.4e-2 from fp64 on the host yardstick
    // against 3.6e-4): not a default. The hdim-128 rows ran 0.96-0.98x the 192-key default (4k, 16k)
    // and 0.99-1.04x the 128-key row, and are retired (the extra 8 columns of P·V and the pin cost
    // about what the FADDs saved).
    {"ws_pingpong_persistent_192x128x2_e4m3_rowsum", FwdKernel::kPersistentPingPong, {192, 128, 2, 3}, 64, true, kBothMasks, false, true, true},
    // hdim 256 with Q in registers (q_in_registers): on 64-key tiles each consumer warpgroup's S
    // WGMMAs re-read its 16 KB of Q from shared memory per KV tile (as many bytes as K's 64 x 256
    // tile), which the RS WGMMA saves, for 32 more registers per consumer thread (64 x 256 e4m3
    // over 128 threads) beside O's 128: causal spills 16 bytes (ptxas; per tile, outside the KV
    // loop), non-causal none. H100 (2026-12-07, twelfth session; fp8-cand-2026-12-07-h100-s12.csv):
    // 1.00-1.05x the 2-stage row (non-causal 4k / 16k 1.04x), causal 0.99-1.00x. Ablation row.
    {"ws_pingpong_persistent_128x64x2_e4m3_qregs", FwdKernel::kPersistentPingPong, {128, 64, 2, 2}, 256, true, kBothMasks, false, true, false, true},
    // hdim 256 with three K/V stages: the H100 profile of the default row (ncu, 16k non-causal,
    // 2026-12-07) has the consumers' largest stall on k_full (a 2-stage ring of 16 KB K tiles runs
    // dry); three stages fit only with O staged in one (64, 256) tile the two consumer warpgroups
    // take in turn, beside Q's halves (WsSharedStorageQHalvesSharedO, as 16-bit hdim 256): Q 32 KB +
    // K, Vᵀ and V's staging 3 x 3 x 16 KB + O 32 KB = 208 KB. Alone it ran 0.93-1.01x the 2-stage
    // row (H100, twelfth session) and is retired; with Q in registers (Q's registers loaded from its
    // per-warpgroup half, q_full_wg) it is hdim 256's e4m3 default since that run: non-causal
    // 1.050 / 1.075 / 1.075x the 2-stage row at 1k / 4k / 16k, causal 0.98 / 1.01 / 1.02x
    // (fp8-cand-2026-12-07-h100-s12.csv; its GPU tests passed, EveryFp8KernelMatchesFloat64 by name).
    // (Retired the same run: the split steady-state loop, split_mask_loop, 0.86-1.05x at hdim 128
    // and 1.00-1.01x at hdim 256. Retired in the thirteenth session: hdim 256 on FA3's 128-key e4m3
    // tile, 2 stages, Q in shared memory, O stored from the registers for want of room (Q 32 KB +
    // K, Vᵀ, V's staging 3 x 2 x 32 KB = 224 KB); ptxas spilled 48 / 60 bytes (non-causal / causal,
    // ~6 STL and 4 LDL per KV tile in the loop); it passed EveryFp8KernelMatchesFloat64 and ran
    // 0.89 / 0.94 / 0.89x this row non-causal, 0.89 / 0.99 / 1.00x causal at 1k / 4k / 16k, H100;
    // bench/records/fp8-hd256-128key-2026-12-07-h100-s13.csv.)
    {"ws_pingpong_persistent_128x64x3_e4m3_qregs", FwdKernel::kPersistentPingPong, {128, 64, 3, 2}, 256, false, kBothMasks, false, true, false, true},
    // The FlashAttention-3 paper's ablation at every head dim, on the ws tile: no warp
    // specialization (fa2), warp specialization alone (ws), + ping-pong without the
    // intra-warpgroup overlap (ws_pingpong_serial), the full non-persistent schedule (ws_pingpong),
    // and warp specialization with neither (ws_serial).
    {"fa2_128x128x2", FwdKernel::kFa2, {128, 128, 2, 2}, 128, true},
    {"fa2_128x64x2", FwdKernel::kFa2, {128, 64, 2, 2}, 256, true},
    {"ws_128x128x2", FwdKernel::kWarpSpecialized, {128, 128, 2, 2}, 64, true},
    {"ws_128x128x2", FwdKernel::kWarpSpecialized, {128, 128, 2, 2}, 128, true},
    {"ws_128x64x2", FwdKernel::kWarpSpecialized, {128, 64, 2, 2}, 256, true},
    {"ws_serial_128x128x2", FwdKernel::kWarpSpecializedSerial, {128, 128, 2, 2}, 64, true},
    {"ws_serial_128x128x2", FwdKernel::kWarpSpecializedSerial, {128, 128, 2, 2}, 128, true},
    {"ws_serial_128x64x2", FwdKernel::kWarpSpecializedSerial, {128, 64, 2, 2}, 256, true},
    {"ws_pingpong_serial_128x128x2", FwdKernel::kWarpSpecializedPingPongSerial, {128, 128, 2, 2}, 64, true},
    {"ws_pingpong_serial_128x128x2", FwdKernel::kWarpSpecializedPingPongSerial, {128, 128, 2, 2}, 128, true},
    {"ws_pingpong_serial_128x64x2", FwdKernel::kWarpSpecializedPingPongSerial, {128, 64, 2, 2}, 256, true},
    {"ws_pingpong_128x128x2", FwdKernel::kWarpSpecializedPingPong, {128, 128, 2, 2}, 128, true},
};
inline constexpr int kFwdKernelCount = int(sizeof(kFwdKernels) / sizeof(kFwdKernels[0]));

#if defined(HOPATTN_BUILD_ABLATIONS)
inline constexpr bool kFwdBuildAblations = true;
#else
inline constexpr bool kFwdBuildAblations = false;
#endif

// Whether row i is compiled into a build of head dim `hdim` (the dtypes: every compiled one).
constexpr bool fwd_kernel_compiled(int i, int hdim) {
  return kFwdKernels[i].hdim == hdim && (!kFwdKernels[i].ablation || kFwdBuildAblations);
}

// Whether row i is compiled for the instance of an element type: e4m3 (fp8) or a 16-bit type.
constexpr bool fwd_kernel_takes(int i, bool fp8) { return kFwdKernels[i].fp8 == fp8; }

// Whether row i is compiled for that mask too.
constexpr bool fwd_kernel_compiled(int i, int hdim, bool causal) {
  return fwd_kernel_compiled(i, hdim) &&
         (kFwdBuildAblations || (kFwdKernels[i].masks & (causal ? kCausalOnly : kNonCausalOnly)) != 0);
}

}  // namespace hopattn::attention
