// The forward epilogue shared by every schedule: LSE straight from registers, O converted to the
// output type, staged in shared memory and written by one TMA store (the TMA unit clips rows past
// seqlen_q, so partial Q tiles need no predication).
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>

#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/collective/sm90_wgmma.hpp"

namespace hopattn::attention {

// thread_idx: the thread's index among the consumer threads (those holding accumulators).
// sync(): a barrier over exactly those threads (__syncthreads or a named barrier).
// smem_o: kBlockM x kHeadDim elements laid out as Traits::SmemLayoutQ, free to overwrite once
// sync() returns (the caller's last reads of it must precede the call).
template <class Traits, class TiledMmaPV, class TensorO, class TensorC, int kRows, class Sync>
CUTE_DEVICE void store_o_and_lse(typename Traits::Params const& p, typename Traits::Element* smem_o,
                                 TiledMmaPV const& mma_pv, TensorO const& tOrO, TensorC const& tScS,
                                 float const (&lse)[kRows], int m_block, int h, int b, int thread_idx,
                                 Sync&& sync, bool defer_store_wait = false) {
  using namespace cute;
  using Element = typename Traits::Element;
  if (p.lse != nullptr && thread_idx % 4 == 0) {  // one thread of each quad holds the row's LSE
    auto c = acc_rowcol(tScS);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const int row = m_block * Traits::kBlockM + get<0>(c(r, 0));
      if (row < p.seqlen_q) p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + row * p.lse_seq_stride] = lse[r];
    }
  }
  Tensor rO = make_tensor_like<Element>(tOrO);
  convert_fragment<Element>(tOrO, rO);
  Tensor sO = make_tensor(make_smem_ptr(smem_o), typename Traits::SmemLayoutQ{});  // (BLK_M, D)
  auto copy_o = make_tiled_copy_C(Copy_Atom<DefaultCopy, Element>{}, mma_pv).get_thread_slice(thread_idx);
  Tensor tOrO_copy = copy_o.retile_S(rO);
  Tensor tOsO = copy_o.partition_D(sO);
  // defer_store_wait: the previous tile's O store (issued by thread 0, not waited for then) must
  // have read smem_o before it is overwritten; the caller waits for the last one before exit.
  if (defer_store_wait && thread_idx == 0) tma_store_wait<0>();
  sync();  // every consumer is done reading what smem_o held before
  copy(Copy_Atom<DefaultCopy, Element>{}, tOrO_copy, tOsO);
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
    if (!defer_store_wait) tma_store_wait<0>();
  }
}

}  // namespace hopattn::attention
