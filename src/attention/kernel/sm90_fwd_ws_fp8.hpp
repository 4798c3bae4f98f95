// The e4m3 (FP8) kernels' own pieces of the warp-specialized forward kernel (sm90_fwd_ws.hpp,
// Traits::kFp8): where the TMA unit loads V, the producer warps' V transpose into the K-major tile
// the second WGMMA reads, P as that WGMMA's A operand, and the descales. Each helper takes the
// 16-bit path too (if constexpr), so the kernel has one body for both.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cutlass/arch/barrier.h>

#include "attention/collective/sm90_fwd_fp8.hpp"
#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/collective/sm90_wgmma.hpp"
#include "attention/kernel/sm90_fwd_ws_dealing.hpp"
#include "attention/kernel/sm90_fwd_ws_schedule.hpp"
#include "attention/kernel/sm90_fwd_ws_storage.hpp"

namespace hopattn::attention::ws {

// Where the TMA unit loads V: the ring the consumers read, or (e4m3) the staging ring transpose_v reads.
template <class Storage>
CUTE_DEVICE auto* v_load_ring(Storage& ss) {
  if constexpr (Storage::kTransposeV) return ss.v_raw.data();
  else return ss.v.data();
}

// e4m3 kernels: warps 1-3 of the producer warpgroup (worker = warp - 1 of kWorkers = 3) transpose every V
// tile the TMA unit loads, in the producer's order (the same tiles and KV blocks; kv_iter counts
// the same ring positions): wait v_raw_full[s] (the TMA's bytes) and v_empty[s] (the consumers'
// last P·V read the stage), transpose (Fp8VTranspose), fence the generic-proxy writes for the
// WGMMA's async-proxy reads, then arrive on v_full[s] and v_raw_empty[s].
template <class Traits, int kWorkers, class Mask, bool kPersistent, class Storage>
CUTE_DEVICE void transpose_v(typename Traits::Params const& p, Storage& ss, FwdTileScheduler<Mask, kPersistent, false> const& sched,
                             int worker) {
  using namespace cute;
  constexpr int kStages = Traits::kStages;
  using Transpose = Fp8VTranspose<Traits::kBlockN, Traits::kHeadDim>;
  using LayoutRaw = decltype(take<0, 2>(typename Traits::SmemLayoutKV{}));  // (BLK_N, D) of one stage
  using LayoutVt = decltype(take<0, 2>(typename Traits::SmemLayoutVt{}));   // (D, BLK_N) of one stage
  constexpr int kStageBytes = Traits::kBlockN * Traits::kHeadDim;         // V's staging tile (keys, hdim)
  constexpr int kVtStageBytes = Traits::kBlockN * Traits::kPvN;           // V's transposed tile (+ the rows of ones)
  static_assert(cosize_v<typename Traits::SmemLayoutKV> == kStages * kStageBytes &&
                cosize_v<typename Traits::SmemLayoutVt> == kStages * kVtStageBytes, "stages of one tile's bytes each");
  static_assert(kStageBytes % 1024 == 0, "stages keep the rings' 1024-byte alignment (Fp8VTranspose::run: 128 bytes)");
  // Vᵀ's stages start on its swizzle's period (1024 bytes for 128-byte rows, 512 for 64-byte rows):
  // the WGMMA descriptors and the transposer's add/XOR addresses assume it.
  static_assert(kVtStageBytes % (Traits::kBlockN % 128 == 0 ? 1024 : 512) == 0, "V^T stages on the swizzle's period");
  const int lane = int(threadIdx.x) % 32;
  if constexpr (Traits::kSumRows > 0) {
    // Row sums by the MMA: Vᵀ's rows HeadDim .. kPvN - 1 hold e4m3 1.0 (0x38) in every stage, for
    // good (the transposes write rows below HeadDim only); the first v_full arrival of each stage
    // comes after a proxy fence below.
    constexpr int kOnes = Traits::kSumRows * Traits::kBlockN * kStages;
    uint8_t* vt = reinterpret_cast<uint8_t*>(ss.v.data());
    for (int i = worker * 32 + lane; i < kOnes; i += 32 * kWorkers) {
      const int row = Traits::kHeadDim + i % Traits::kSumRows, rest = i / Traits::kSumRows;
      vt[typename Traits::SmemLayoutVt{}(row, rest % Traits::kBlockN, rest / Traits::kBlockN)] = 0x38;
    }
  }
  // The lane's row addresses in block 0 of stage 0 (each block's: one XOR and an immediate from these).
  const uint32_t load_lane = cast_smem_ptr_to_uint(ss.v_raw.data()) + Transpose::template load_offset<LayoutRaw>(0, lane);
  const uint32_t store_lane = cast_smem_ptr_to_uint(ss.v.data()) + Transpose::template store_offset<LayoutVt>(0, lane);
  const Mask mask = kernel_mask<Mask, false>(p);
  int kv_iter = 0;
  TileCursor cursor;
  for (int t = cursor_next<true, false>(cursor, p, ss, sched, true); t < sched.end();
       t = cursor_next<true, false>(cursor, p, ss, sched, false)) {
    const TileCoord c = sched.coord(t);
    if (!c.valid) continue;
    const int n_blocks = kv_block_count<Traits, false>(mask, c.m_block);
    for (int n = 0; n < n_blocks; ++n, ++kv_iter) {
      const int stage = kv_iter % kStages;
      const uint32_t phase = (kv_iter / kStages) & 1;
      FullBarrier::wait(&ss.v_raw_full[stage], phase);
      EmptyBarrier::wait(&ss.v_empty[stage], phase ^ 1u);
      Transpose::template run<LayoutRaw, LayoutVt, kWorkers>(load_lane + stage * kStageBytes, store_lane + stage * kVtStageBytes,
                                                             worker);
      cutlass::arch::fence_view_async_shared();  // the stores, visible to the P·V WGMMA (async proxy)
      EmptyBarrier::arrive(&ss.v_full[stage]);
      EmptyBarrier::arrive(&ss.v_raw_empty[stage]);
    }
  }
}

// P, the A operand of O += P·V, in registers: the S accumulator's layout in the input type, seen
// as the A operand by regrouping modes (16-bit, sm90_fwd_fragment_layouts.hpp); or (e4m3) the A
// operand's own layout, filled in the slot order of fp8_pv_key (convert_p_e4m3).
template <class Traits, class TensorS>
CUTE_DEVICE auto make_p_fragment(TensorS const& tSrS) {
  if constexpr (Traits::kFp8) return cute::make_tensor<typename Traits::Element>(Fp8PFragmentLayout<Traits::kBlockN>{});
  else return cute::make_tensor_like<typename Traits::Element>(tSrS);
}
template <class Traits, class TensorP>
CUTE_DEVICE auto p_as_a_operand(TensorP& tOrP) {  // (MMA, MMA_M, MMA_K)
  if constexpr (Traits::kFp8) return cute::make_tensor(tOrP.data(), tOrP.layout());
  else return cute::make_tensor(tOrP.data(), acc_to_a_operand_layout(tOrP.layout()));
}
template <class Traits, class TensorS, class TensorP>
CUTE_DEVICE void convert_p(TensorS const& tSrS, TensorP& tOrP) {
  if constexpr (Traits::kFp8) convert_p_e4m3(tSrS, tOrP);
  else convert_fragment<typename Traits::Element>(tSrS, tOrP);
}

// The exponent's scale of tile c: the call's, times q_descale · k_descale of the tile's (batch,
// kv-head) for e4m3 inputs with descales (all three or none: FwdParams).
template <class Traits, class Params>
CUTE_DEVICE float tile_softmax_scale(Params const& p, TileCoord const& c) {
  if constexpr (Traits::kFp8) {
    if (p.q_descale != nullptr) {
      const int h_kv = c.h / (p.heads_q / p.heads_kv);
      return p.softmax_scale * p.q_descale[c.b * p.q_descale_batch_stride + h_kv * p.q_descale_head_stride] *
             p.k_descale[c.b * p.k_descale_batch_stride + h_kv * p.k_descale_head_stride];
    }
  }
  return p.softmax_scale;
}
// O *= v_descale of the tile's (batch, kv-head), after the normalisation (e4m3 inputs).
template <class Params, class TensorO>
CUTE_DEVICE void apply_v_descale(Params const& p, TileCoord const& c, TensorO& tOrO) {
  if (p.v_descale == nullptr) return;
  const int h_kv = c.h / (p.heads_q / p.heads_kv);
  const float v = p.v_descale[c.b * p.v_descale_batch_stride + h_kv * p.v_descale_head_stride];
  CUTE_UNROLL
  for (int i = 0; i < cute::size(tOrO); ++i) tOrO(i) *= v;
}

}  // namespace hopattn::attention::ws
