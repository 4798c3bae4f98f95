// One consumer warpgroup's mainloop over a tile's KV blocks in the warp-specialized forward kernel
// (sm90_fwd_ws.hpp, whose header describes the pipelines and turns): S = Q·Kᵀ, the mask, the online
// softmax and O += P·V per block, with the intra-warpgroup overlap (consume_tile) or without
// (consume_tile_serial, the ablation's), a block none of the warpgroup's rows see (skip_block), and
// the operands' views those take: Q's descriptors or registers, O's stored columns, P·V's width on
// the tile's last block.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cutlass/arch/barrier.h>

#include "attention/collective/sm90_fwd_fp8.hpp"
#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/collective/sm90_fwd_mask.hpp"
#include "attention/collective/sm90_fwd_softmax.hpp"
#include "attention/collective/sm90_wgmma.hpp"
#include "attention/kernel/sm90_fwd_ws_fp8.hpp"
#include "attention/kernel/sm90_fwd_ws_packed.hpp"
#include "attention/kernel/sm90_fwd_ws_storage.hpp"
#include "attention/kernel/sm90_fwd_ws_turns.hpp"

namespace hopattn::attention::ws {

// A shared-memory operand's WGMMA descriptors (one per k-block: the base plus the k-block's
// offset), recomputed at each use from a base that ptxas cannot prove loop-invariant (it comes out
// of a shuffle). Without it ptxas computed the 16 Q descriptors of hdim 256 (64-bit each) once,
// before the KV loop, and kept them in 32 registers through it: nvdisasm --print-life-ranges of
// the persistent causal kernel (bf16, 64-key tiles) gave 228-230 registers live in the main loop,
// 199 with this (2026-12-02). The cost is one SHFL per S GEMM and one IADD per k-block.
template <class TensorA>
CUTE_DEVICE auto opaque_descriptors(TensorA const& tA) {
  static_assert(cute::is_same_v<typename TensorA::value_type, cute::GMMA::DescriptorIterator::value_type>,
                "shared-memory (descriptor) operands only");
  cute::GMMA::DescriptorIterator it = tA.data();
  it.desc_.reg32_[0] = __shfl_sync(0xffffffffu, it.desc_.reg32_[0], 0);
  return cute::make_tensor(it, tA.layout());
}

// Q in registers (Traits::kQInRegisters): the warpgroup's rows of the tile's Q (sQ, after q_full)
// into tSrQ, the A fragment of S = Q·Kᵀ (MMA, MMA_M, MMA_K), by ldmatrix: one x4 per warp and
// k-block (the warp's 16 rows x 32 e4m3). Its b16 fragment is CuTe's 8-bit A layout
// (GMMA::ALayout_64x32: rows r and r + 8, bytes 4 (t % 4) .. + 3 and + 16 of the k-block), so the
// bytes land where the RS WGMMA reads them, unshuffled (the tiled copy is built from the MMA's A
// layout). The WGMMA waits on the loads' registers; wgmma_issue's fence of the fragment keeps
// them ahead of its arrive.
template <class Traits, class TiledMma, class TensorS, class TensorQ>
CUTE_DEVICE void load_q_registers(TiledMma const& mma_qk, TensorS const& sQ, TensorQ& tSrQ, int thread_idx) {
  using namespace cute;
  static_assert(Traits::kQInRegisters && sizeof(typename Traits::Element) == 1, "e4m3 Q into an RS WGMMA's A fragment");
  auto q_copy = make_tiled_copy_A(Copy_Atom<SM75_U32x4_LDSM_N, typename Traits::Element>{}, mma_qk);
  auto thr_copy = q_copy.get_thread_slice(thread_idx);
  Tensor tQsQ = thr_copy.partition_S(sQ);  // (CPY, CPY_M, CPY_K)
  Tensor tQrQ = thr_copy.retile_D(tSrQ);   // (CPY, CPY_M, CPY_K)
  copy(q_copy, tQsQ, tQrQ);
}

// S = Q·Kᵀ's A operand: Q's descriptors (opaque_descriptors), or the register fragment that
// load_q_registers filled (Traits::kQInRegisters).
template <class Traits, class TensorQ>
CUTE_DEVICE decltype(auto) q_operand(TensorQ const& tSrQ) {
  if constexpr (Traits::kQInRegisters) return (tSrQ);
  else return opaque_descriptors(tSrQ);
}

// How many of the keys of a tile's last KV block a consumer warpgroup's P·V GEMM covers.
enum class PvWidth : int { kNone = 0, kHalf = 1, kFull = 2 };

// Whether P·V over a KV block's first half is a whole number of k-blocks (16 keys of 16-bit P,
// 32 of e4m3 P: Traits::kPvKeysPerKBlock).
template <int kBlockN, int kKeysPerKBlock = 16>
constexpr bool pv_half_width_ok() {
  return (kBlockN / 2) % kKeysPerKBlock == 0;
}
// Whether a kernel narrows P·V at all: causal masks only, and not on 192-key blocks, whose kernel
// (ws_pingpong_128x192x2) already spills 8 bytes and spilled 16 with the extra branch (ptxas).
template <class Mask, int kBlockN>
constexpr bool pv_narrows() {
  return Mask::kCausal && kBlockN != 192;
}

// The P·V width of a warpgroup's last KV block (n_last, counted from tile 0): the keys its rows
// (the tile's rows before row_end) can see, rounded up to none, half or all of the block.
template <int kBlockM, int kBlockN, int kKeysPerKBlock = 16, class Mask>
CUTE_DEVICE PvWidth pv_width_of_last_block(Mask const& mask, int m_block, int n_last, int row_end) {
  if constexpr (!pv_narrows<Mask, kBlockN>()) {
    return PvWidth::kFull;
  } else {
    const int visible = mask.template visible_cols<kBlockM, kBlockN>(m_block, n_last, row_end);
    if (visible <= 0) return PvWidth::kNone;
    if (pv_half_width_ok<kBlockN, kKeysPerKBlock>() && visible <= kBlockN / 2) return PvWidth::kHalf;
    return PvWidth::kFull;
  }
}

// O's first HeadDim columns, what the epilogue stores: tOrO itself, or (row sums by the MMA,
// Traits::kMmaRowSum) Traits::TiledMmaO's fragment over a prefix of tOrO's registers (the 8-column
// groups 0 .. HeadDim / 8 - 1; group HeadDim / 8 holds the sums).
template <class Traits, class TensorO>
CUTE_DEVICE decltype(auto) o_columns(TensorO& tOrO) {
  using namespace cute;
  if constexpr (Traits::kMmaRowSum) {
    auto out_layout =
        partition_fragment_C(typename Traits::TiledMmaO{}, Shape<typename Traits::BlockM, typename Traits::HeadDim>{}).layout();
    static_assert(rank(out_layout) == 3 && decltype(size<1>(out_layout))::value == 1 && decltype(size<2>(out_layout))::value == 1,
                  "one WGMMA per warpgroup covers O's rows and columns");
    static_assert(decltype(cosize(out_layout))::value == Traits::kHeadDim / 2 && decltype(size(tOrO))::value == Traits::kPvN / 2,
                  "O's columns are the prefix of the fragment");
    return make_tensor(tOrO.data(), out_layout);
  } else {
    return (tOrO);
  }
}

// One tile's mainloop: S, softmax and O for the tile's KV range; kv_iter runs on across tiles.
// Fragments come in as separate tensors (force-inlined), so they stay in registers.
//
// last_width: how many keys of the tile's last KV block this warpgroup's P·V covers. Its rows see
// none past them (the causal diagonal), so their weights in P are 0 and the GEMM may leave them
// out: above the diagonal a warpgroup's last P·V is half as long (128-key blocks) or absent
// (64-key blocks), and in ping-pong the other warpgroup gets the tensor cores sooner. S = Q·Kᵀ
// stays whole: narrowing it (a WGMMA of half the width, or none, writing S on one path) made ptxas
// serialise every WGMMA of the kernel (C7511/C7515), even with the last block peeled out of the
// loop and the width a template parameter (measured in the build, 2026-11-30).
//
// kOptions: the options mainloop (FwdKernelSpec::options): the softcap on S and the window's left
// edge. Without, the loop is the plain one, as it was before the options existed.
template <class Traits, bool kOptions, class Mask, bool kPingPong, class MmaQK, class MmaPV, class TQ, class TK, class TV,
          class TS, class TO, class TC, class TP, class TPa, class Softmax, int kRows, class Storage, class Params>
CUTE_DEVICE void consume_tile(Params const& p, Storage& ss, Mask const& mask, Turns<kPingPong, Traits::kWarpgroups> const& turns,
                              MmaQK& mma_qk, MmaPV& mma_pv, TQ const& tSrQ, TK const& tSrK, TV const& tOrV, TS& tSrS,
                              TO& tOrO, TC const& tScS, TP& tOrP, TPa& tOrP_a, Softmax& softmax,
                              float (&alpha)[kRows], int m_block, int n_first, int n_blocks, PvWidth last_width,
                              bool last_work, int& kv_iter) {
  using namespace cute;
  using Element = typename Traits::Element;
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN, kStages = Traits::kStages;
  auto stage_of = [](int i) { return i % kStages; };
  auto phase_of = [](int i) { return uint32_t((i / kStages) & 1); };
  // KV blocks n_first .. n_end - 1, counted from tile 0 (what the mask takes); block n sits at
  // position kv_base + n of the K/V rings (n_first itself need not stay live through the loop).
  const int n_end = n_first + n_blocks;
  const int kv_base = kv_iter - n_first;
  turns.wait();
  FullBarrier::wait(&ss.k_full[stage_of(kv_iter)], phase_of(kv_iter));
  wgmma_issue<true>(mma_qk, q_operand<Traits>(tSrQ), tSrK(_, _, _, stage_of(kv_iter)), tSrS);
  turns.pass();
  warpgroup_wait<0>();
  EmptyBarrier::arrive(&ss.k_empty[stage_of(kv_iter)]);
  if (n_blocks == 1) release_q_after_last_s(ss, turns.warpgroup);  // the tile's last S has read Q
  if constexpr (kOptions) softmax.apply_softcap(tSrS);
  mask_block<Traits, kOptions>(p, mask, tSrS, tScS, m_block, n_first);
  if constexpr (kOptions)
    if (mask.template needs_left_mask<kBlockM, kBlockN>(m_block, n_first))
      mask.template apply_left<kBlockM, kBlockN>(tSrS, tScS, m_block, n_first);
  softmax.template online_exp<true>(tSrS, alpha);
  convert_p<Traits>(tSrS, tOrP);
  CUTE_NO_UNROLL
  for (int n = n_first + 1; n < n_end; ++n) {
    const int cur = kv_base + n, prev = cur - 1;
    turns.wait();
    FullBarrier::wait(&ss.k_full[stage_of(cur)], phase_of(cur));
    wgmma_issue<true>(mma_qk, q_operand<Traits>(tSrQ), tSrK(_, _, _, stage_of(cur)), tSrS);
    FullBarrier::wait(&ss.v_full[stage_of(prev)], phase_of(prev));
    wgmma_issue<false>(mma_pv, tOrP_a, tOrV(_, _, _, stage_of(prev)), tOrO);
    turns.pass();
    warpgroup_wait<1>();  // S(n) is ready; O += P(n-1)·V(n-1) may still run
    EmptyBarrier::arrive(&ss.k_empty[stage_of(cur)]);
    if (n == n_end - 1) release_q_after_last_s(ss, turns.warpgroup);  // the tile's last S has read Q
    if constexpr (kOptions) softmax.apply_softcap(tSrS);
    mask_block<Traits, kOptions>(p, mask, tSrS, tScS, m_block, n);
    if constexpr (kOptions)
      if (mask.template needs_left_mask<kBlockM, kBlockN>(m_block, n))
        mask.template apply_left<kBlockM, kBlockN>(tSrS, tScS, m_block, n);
    softmax.template online_exp<false, kOptions>(tSrS, alpha);
#ifndef HOPATTN_FWD_NO_SOFTMAX_PIN  // the ablation build (CMake HOPATTN_FWD_SOFTMAX_PIN=OFF) drops it
    {  // the exponentials overlap P·V only if they stay ahead of the wait (keep_before_wgmma_wait)
      float sums = 0.0f;
      if constexpr (Softmax::kSumsByMma) {
        // No row sums here (the MMA takes them): the pin reads every exponential's bits instead
        // (an OR, ~1 LOP3 per 2 scores; the weights are >= 0, so its sign stays clear).
        uint32_t bits = 0;
        CUTE_UNROLL
        for (int i = 0; i < size(tSrS); ++i) bits |= __float_as_uint(tSrS(i));
        sums = __uint_as_float(bits);
      } else {
        CUTE_UNROLL
        for (int r = 0; r < kRows; ++r) sums += softmax.row_sum[r];
      }
      keep_before_wgmma_wait(sums, &ss.v_empty[stage_of(prev)]);
    }
#endif
    warpgroup_wait<0>();
    EmptyBarrier::arrive(&ss.v_empty[stage_of(prev)]);
    softmax.rescale_if_needed(tOrO, alpha);
    convert_p<Traits>(tSrS, tOrP);
  }
  const int last = kv_base + n_end - 1;
  turns.wait();
  FullBarrier::wait(&ss.v_full[stage_of(last)], phase_of(last));
  if (!pv_narrows<Mask, kBlockN>() || last_width == PvWidth::kFull) {
    wgmma_issue<false>(mma_pv, tOrP_a, tOrV(_, _, _, stage_of(last)), tOrO);
  } else if constexpr (pv_narrows<Mask, kBlockN>() && pv_half_width_ok<kBlockN, Traits::kPvKeysPerKBlock>()) {
    // P's first kBlockN / 2 columns (e4m3: slots, which hold the same keys: fp8_pv_key)
    constexpr int kHalfKBlocks = kBlockN / 2 / Traits::kPvKeysPerKBlock;
    if (last_width == PvWidth::kHalf) wgmma_issue<false, kHalfKBlocks>(mma_pv, tOrP_a, tOrV(_, _, _, stage_of(last)), tOrO);
  }  // PvWidth::kNone: no P·V for this block (every weight of the warpgroup's rows is 0)
  if (!turns.last() || !last_work) turns.pass();  // the last warpgroup's very last pass has no taker
  warpgroup_wait<0>();
  EmptyBarrier::arrive(&ss.v_empty[stage_of(last)]);
  kv_iter = last + 1;
}

// consume_tile without the intra-warpgroup overlap (the ws_serial_* and ws_pingpong_serial_*
// ablation rows: the ablation's steps before it): per KV block, [turn] S = Q·Kᵀ [pass], wait,
// mask, softmax, O *= α, P = 16-bit(S), [turn] O += P·V [pass], wait. Two turns per block; the
// last warpgroup skips its very last pass as in consume_tile. P·V always covers the whole block
// (P's weights past the diagonal are 0).
template <class Traits, class Mask, bool kPingPong, class MmaQK, class MmaPV, class TQ, class TK, class TV, class TS,
          class TO, class TC, class TP, class TPa, class Softmax, int kRows, class Storage>
CUTE_DEVICE void consume_tile_serial(Storage& ss, Mask const& mask, Turns<kPingPong, Traits::kWarpgroups> const& turns,
                                     MmaQK& mma_qk, MmaPV& mma_pv, TQ const& tSrQ,
                                     TK const& tSrK, TV const& tOrV, TS& tSrS, TO& tOrO, TC const& tScS, TP& tOrP,
                                     TPa& tOrP_a, Softmax& softmax, float (&alpha)[kRows], int m_block, int n_first,
                                     int n_blocks, bool last_work, int& kv_iter) {
  using namespace cute;
  using Element = typename Traits::Element;
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN, kStages = Traits::kStages;
  CUTE_NO_UNROLL
  for (int n = 0; n < n_blocks; ++n) {
    const int it = kv_iter + n, stage = it % kStages;
    const uint32_t phase = uint32_t((it / kStages) & 1);
    turns.wait();
    FullBarrier::wait(&ss.k_full[stage], phase);
    wgmma_issue<true>(mma_qk, q_operand<Traits>(tSrQ), tSrK(_, _, _, stage), tSrS);
    turns.pass();
    warpgroup_wait<0>();
    EmptyBarrier::arrive(&ss.k_empty[stage]);
    if (n == n_blocks - 1) release_q_after_last_s(ss, turns.warpgroup);  // the tile's last S has read Q
    if (mask.template needs_mask<kBlockM, kBlockN>(m_block, n_first + n))
      mask.template apply<kBlockM, kBlockN>(tSrS, tScS, m_block, n_first + n);
    if (n == 0) {
      softmax.template online_exp<true>(tSrS, alpha);
    } else {
      softmax.template online_exp<false>(tSrS, alpha);
      softmax.rescale_if_needed(tOrO, alpha);
    }
    convert_p<Traits>(tSrS, tOrP);
    turns.wait();
    FullBarrier::wait(&ss.v_full[stage], phase);
    wgmma_issue<false>(mma_pv, tOrP_a, tOrV(_, _, _, stage), tOrO);
    if (n < n_blocks - 1 || !turns.last() || !last_work) turns.pass();  // the last warpgroup's very last pass has no taker
    warpgroup_wait<0>();
    EmptyBarrier::arrive(&ss.v_empty[stage]);
  }
  kv_iter += n_blocks;
}

// A KV block of the tile that none of the warpgroup's rows see (consume(): at most the tile's last
// one, since a warpgroup's rows end at most kBlockM - 64 rows, <= kBlockN keys, before the
// tile's): no GEMM, no softmax, but its stages are released as if read (after its loads have
// landed, so the arrivals count toward its phases) and the turn taken, so that the pipelines'
// arrival counts and the turn ring stay those of a whole tile.
template <class Traits, class Storage, class TurnsT>
CUTE_DEVICE void skip_block(Storage& ss, TurnsT const& turns, bool last_work, int& kv_iter) {
  static_assert(Traits::kBlockM - Traits::kWarpgroupRows <= Traits::kBlockN, "a warpgroup could skip two blocks");
  const int stage = kv_iter % Traits::kStages;
  const uint32_t phase = uint32_t((kv_iter / Traits::kStages) & 1);
  turns.wait();
  FullBarrier::wait(&ss.k_full[stage], phase);
  EmptyBarrier::arrive(&ss.k_empty[stage]);
  FullBarrier::wait(&ss.v_full[stage], phase);
  EmptyBarrier::arrive(&ss.v_empty[stage]);
  if (!turns.last() || !last_work) turns.pass();  // the last warpgroup's very last pass has no taker
  ++kv_iter;
}

}  // namespace hopattn::attention::ws
