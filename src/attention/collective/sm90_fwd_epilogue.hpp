// The forward epilogue shared by every schedule: LSE straight from registers, O converted to the
// output type (Traits::ElementOut: the inputs' type, bf16 for e4m3 inputs), staged in shared memory and written by one TMA store (the TMA unit clips rows past
// seqlen_q, so partial Q tiles need no predication).
#pragma once

#include <cute/tensor.hpp>
#include <cute/arch/copy_sm90.hpp>
#include <cutlass/arch/barrier.h>

#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/collective/sm90_wgmma.hpp"
#include "attention/fwd_varlen.hpp"  // packed_row

namespace hopattn::attention {

// Where a Q tile's output rows go. Padded calls: {seqlen_q, 0, b, b·lse_batch_stride +
// h·lse_head_stride}. Variable-length batches: the sequence's length, its row 0 in the end-aligned
// O view (ws::q_origin) and its LSE row 0 (h·lse_head_stride + offset·lse_seq_stride).
struct FwdOutTile {
  int len_q;         // rows of the sequence: the tile's rows at or past it are not stored
  int o_row, o_batch;  // the TMA coordinates of the sequence's row 0 (rows, batch)
  int64_t lse_base;  // the LSE offset of the sequence's row 0 for the tile's head
};

// LSE straight from registers: one thread of each quad holds its rows' values.
template <class Traits, class TensorC, int kRows>
CUTE_DEVICE void store_lse(typename Traits::Params const& p, TensorC const& tScS, float const (&lse)[kRows],
                           int m_block, FwdOutTile const& out, int thread_idx) {
  using namespace cute;
  if (p.lse == nullptr || thread_idx % 4 != 0) return;
  auto c = acc_rowcol(tScS);
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const int row = m_block * Traits::kBlockM + get<0>(c(r, 0));
    if (row < out.len_q) p.lse[out.lse_base + row * p.lse_seq_stride] = lse[r];
  }
}
template <class Traits, class TensorC, int kRows>
CUTE_DEVICE void store_lse(typename Traits::Params const& p, TensorC const& tScS, float const (&lse)[kRows],
                           int m_block, int h, int b, int thread_idx) {
  using namespace cute;
  if (p.lse == nullptr || thread_idx % 4 != 0) return;
  auto c = acc_rowcol(tScS);
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const int row = m_block * Traits::kBlockM + get<0>(c(r, 0));
    if (row < p.seqlen_q) p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + row * p.lse_seq_stride] = lse[r];
  }
}

// A KV-cache list's split entry (Params::split_o; the options kernels): its O (fp32, normalised
// over the split's keys) and LSE straight from the accumulator registers into split slot `split`
// of the decode combine's workspace (decode_params.hpp: O (slots, batch, heads_q, seqlen_q, hdim),
// LSE (slots, batch, heads_q, seqlen_q)). `slot_row(tile_row)` maps a row of the tile to its row
// of the slot, or -1 for a row that holds nothing to store. A split with no key for a row writes
// O = 0 and LSE = -inf there (finalize), which the combine weighs 0. Pairs (j, j + 1) of the
// row/column view are adjacent columns (the WGMMA accumulator's layout; the decode epilogue,
// store_decode_output, stores them the same way).
template <class Traits, class Params, class TiledMmaPV, class TensorO, int kRows, class SlotRow>
CUTE_DEVICE void store_split_rows(Params const& p, TiledMmaPV const& mma_pv, TensorO const& tOrO,
                                  float const (&lse)[kRows], int thread_idx, SlotRow&& slot_row) {
  using namespace cute;
  constexpr int kHeadDim = Traits::kHeadDim;
  Tensor cO = mma_pv.get_thread_slice(thread_idx).partition_C(
      make_identity_tensor(Shape<typename Traits::BlockM, typename Traits::HeadDim>{}));  // (MMA, MMA_M, MMA_N)
  auto o = acc_rowcol(tOrO);
  auto co = acc_rowcol(cO);
  static_assert(decltype(size<0>(o))::value == kRows, "one LSE per fragment row");
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const int64_t row = slot_row(int(get<0>(co(r, 0))));
    if (row < 0) continue;
    if (thread_idx % 4 == 0) p.split_lse[row] = lse[r];  // one thread of each quad holds a row's LSE
    float* dst = p.split_o + row * kHeadDim;
    CUTE_UNROLL
    for (int j = 0; j < size<1>(o); j += 2)
      *reinterpret_cast<float2*>(dst + get<1>(co(r, j))) = make_float2(o(r, j), o(r, j + 1));
  }
}

// An unpacked tile's rows: position m_block · kBlockM + tile_row of head h; rows at or past
// seqlen_q are not stored. Row (b, h, position) of slot `split`: ((split · batch + b) · heads_q +
// h) · seqlen_q + position.
template <class Traits, class TiledMmaPV, class TensorO, int kRows>
CUTE_DEVICE void store_split_partial(typename Traits::Params const& p, TiledMmaPV const& mma_pv, TensorO const& tOrO,
                                     float const (&lse)[kRows], int m_block, int h, int b, int split, int thread_idx) {
  const int64_t slot_row0 = ((int64_t(split) * p.batch + b) * p.heads_q + h) * p.seqlen_q;
  store_split_rows<Traits>(p, mma_pv, tOrO, lse, thread_idx, [&](int tile_row) -> int64_t {
    const int row = m_block * Traits::kBlockM + tile_row;
    return row < p.seqlen_q ? slot_row0 + row : -1;
  });
}

// A packed KV-cache list's tile (docs/chunk-packgqa-plan.md §2; KvListParams: pack_group g > 1,
// pack_positions P): tile row r holds position p0 + packed_row(r).position (p0 = m_block ·
// (kBlockM / 64) · P) of head h0 + packed_row(r).head, h0 = the entry's h_kv · g; rows that hold
// nothing (l >= g · P) or a position at or past seqlen_q are not stored. Packed calls write
// partials at one split too (the combine reads slot 0 of every row), and for an entry with no KV
// tile (O = 0, LSE = -inf from finalize), as unpacked ones do.
template <class Traits, class Params, class TiledMmaPV, class TensorO, int kRows>
CUTE_DEVICE void store_split_partial_packed(Params const& p, TiledMmaPV const& mma_pv, TensorO const& tOrO,
                                            float const (&lse)[kRows], int m_block, int h0, int b, int split,
                                            int thread_idx) {
  const int first = m_block * (Traits::kBlockM / kPackRowsPerWarpgroup) * p.pack_positions;  // p0
  // Row (b, h0, position 0) of slot `split`; head h0 + j is j · seqlen_q rows on.
  const int64_t slot_row0 = ((int64_t(split) * p.batch + b) * p.heads_q + h0) * p.seqlen_q;
  store_split_rows<Traits>(p, mma_pv, tOrO, lse, thread_idx, [&](int tile_row) -> int64_t {
    const PackedRow pr = packed_row(tile_row, p.pack_group, p.pack_positions);
    const int pos = first + pr.position;
    if (!pr.used || pos >= p.seqlen_q) return -1;
    return slot_row0 + int64_t(pr.head) * p.seqlen_q + pos;
  });
}

// thread_idx: the thread's index among the consumer threads (those holding accumulators).
// sync(): a barrier over exactly those threads (__syncthreads or a named barrier).
// smem_o: kBlockM x kHeadDim elements laid out as Traits::SmemLayoutQ, free to overwrite once
// sync() returns (the caller's last reads of it must precede the call).
template <class Traits, class TiledMmaPV, class TensorO, class TensorC, int kRows, class Sync>
CUTE_DEVICE void store_o_and_lse(typename Traits::Params const& p, typename Traits::Element* smem_o,
                                 TiledMmaPV const& mma_pv, TensorO const& tOrO, TensorC const& tScS,
                                 float const (&lse)[kRows], int m_block, int h, int b, int thread_idx,
                                 Sync&& sync) {
  using namespace cute;
  using Element = typename Traits::Element;
  static_assert(!Traits::kFp8, "O staged in Q's space: 16-bit inputs only (O is bf16, Q e4m3)");
  store_lse<Traits>(p, tScS, lse, m_block, h, b, thread_idx);
  Tensor rO = make_tensor_like<Element>(tOrO);
  convert_fragment<Element>(tOrO, rO);
  Tensor sO = make_tensor(make_smem_ptr(smem_o), typename Traits::SmemLayoutO{});  // (BLK_M, D)
  // stmatrix (x4: four 8x8 blocks of 16-bit pairs per instruction, the accumulator's own
  // fragment layout) instead of one shared store per element with its swizzled address: a 64x128
  // warpgroup tile is 8 instructions per thread, not 64 stores (r17: per-element address
  // arithmetic made the GEMM's equivalent epilogue cost ~6 us per tile).
  auto tiled_copy_o = make_tiled_copy_C(Copy_Atom<SM90_U32x4_STSM_N, Element>{}, mma_pv);
  auto copy_o = tiled_copy_o.get_thread_slice(thread_idx);
  Tensor tOrO_copy = copy_o.retile_S(rO);
  Tensor tOsO = copy_o.partition_D(sO);
  sync();  // every consumer is done reading what smem_o held before
  copy(tiled_copy_o, tOrO_copy, tOsO);
  // Generic-proxy writes become visible to the TMA unit (async proxy) only after this fence.
  cutlass::arch::fence_view_async_shared();
  sync();
  if (thread_idx == 0) {
    Tensor mO = p.tma_o.get_tma_tensor(make_shape(p.seqlen_q, int(Traits::kHeadDim), p.heads_q, p.batch));
    Tensor gO = local_tile(mO(_, _, h, b), Shape<typename Traits::BlockM, typename Traits::HeadDim>{},
                           make_coord(m_block, _0{}));  // (BLK_M, D)
    auto parts = tma_partition(p.tma_o, _0{}, Layout<_1>{}, group_modes<0, 2>(sO), group_modes<0, 2>(gO));
    copy(p.tma_o, get<1>(parts), get<0>(parts));
    tma_store_arrive();
    tma_store_wait<0>();
  }
}

// The persistent schedule's epilogue: each consumer warpgroup stages its own rows of O in a
// (64, hdim) tile (Traits::SmemLayoutOWarpgroup) and stores them with its own TMA store,
// synchronising only its 128 threads (named barrier `barrier_id`), so the two ping-pong warpgroups
// stay staggered from one tile to the next (the CTA-wide version above lines them up at every
// tile's end).
//  * kSharedTile = false: kWarpgroups tiles stacked at smem_o, one per warpgroup.
//  * kSharedTile = true: one tile at smem_o, which the warpgroups take in turn.
// The leader (thread 0 of the warpgroup) calls acquire() before its warpgroup writes the tile: it
// returns once the tile's previous store has read it (the caller's protocol: this warpgroup's own
// previous store, or with a shared tile the other warpgroup's too). The store is not waited for
// here; the caller reports it (and waits for it before the CTA exits).
// kSequenceOffset: out.o_row may be nonzero (variable-length batches; the options kernels).
template <class Traits, bool kSharedTile, bool kSequenceOffset, class TiledMmaPV, class TensorO, class TensorC, int kRows,
          class Acquire>
CUTE_DEVICE void store_o_and_lse_warpgroup(typename Traits::Params const& p, typename Traits::ElementOut* smem_o,
                                           TiledMmaPV const& mma_pv, TensorO const& tOrO, TensorC const& tScS,
                                           float const (&lse)[kRows], int m_block, int h, FwdOutTile const& out,
                                           int thread_idx, uint32_t barrier_id, Acquire&& acquire) {
  using namespace cute;
  using Element = typename Traits::ElementOut;  // O's type (bf16 for e4m3 inputs)
  constexpr int kWgRows = Traits::kWarpgroupRows, kWarpgroups = Traits::kWarpgroups, kHeadDim = Traits::kHeadDim;
  const int warpgroup = thread_idx / 128;
  const bool leader = thread_idx % 128 == 0;
  if constexpr (kSequenceOffset)
    store_lse<Traits>(p, tScS, lse, m_block, out, thread_idx);
  else
    store_lse<Traits>(p, tScS, lse, m_block, h, out.o_batch, thread_idx);
  Tensor rO = make_tensor_like<Element>(tOrO);
  convert_fragment<Element>(tOrO, rO);
  Tensor sO = make_tensor(make_smem_ptr(smem_o), typename Traits::SmemLayoutRowsOfWarpgroups{});  // (BLK_M, D)
  auto tiled_copy_o = make_tiled_copy_C(Copy_Atom<SM90_U32x4_STSM_N, Element>{}, mma_pv);  // as store_o_and_lse
  // Shared tile: every warpgroup partitions as warpgroup 0 does (the fragments have the same
  // layout in each), so its rows land in rows [0, 64), the one tile.
  auto copy_o = tiled_copy_o.get_thread_slice(kSharedTile ? thread_idx % 128 : thread_idx);
  Tensor tOrO_copy = copy_o.retile_S(rO);
  Tensor tOsO = copy_o.partition_D(sO);
  if (leader) acquire();
  cutlass::arch::NamedBarrier::sync(128, barrier_id);
  copy(tiled_copy_o, tOrO_copy, tOsO);
  cutlass::arch::fence_view_async_shared();  // generic-proxy writes, visible to the TMA unit
  cutlass::arch::NamedBarrier::sync(128, barrier_id);
  const int row0 = m_block * Traits::kBlockM + warpgroup * kWgRows;
  if (leader && row0 < out.len_q) {  // a tile wholly past the sequence's end has nothing to store
    Element* tile = smem_o + (kSharedTile ? 0 : warpgroup * cosize_v<typename Traits::SmemLayoutOWarpgroup>);
    Tensor sOw = make_tensor(make_smem_ptr(tile), typename Traits::SmemLayoutOWarpgroup{});  // (WG_M, D)
    Tensor mO = p.tma_o_warpgroup.get_tma_tensor(make_shape(p.seqlen_q, kHeadDim, p.heads_q, p.batch));
    auto seq_view = [&] {  // (seqlen, D) of head h: offset only where a sequence may start past row 0
      if constexpr (kSequenceOffset) return domain_offset(make_coord(out.o_row, _0{}), mO(_, _, h, out.o_batch));
      else return mO(_, _, h, out.o_batch);
    };
    Tensor gO = local_tile(seq_view(), Shape<Int<kWgRows>, Int<kHeadDim>>{},
                           make_coord(m_block * kWarpgroups + warpgroup, _0{}));  // (WG_M, D)
    auto parts = tma_partition(p.tma_o_warpgroup, _0{}, Layout<_1>{}, group_modes<0, 2>(sOw), group_modes<0, 2>(gO));
    copy(p.tma_o_warpgroup, get<1>(parts), get<0>(parts));
    tma_store_arrive();
  }
}

}  // namespace hopattn::attention
