// Host side of the decode kernels (sm90_decode.hpp): TMA descriptors over the cache, grid,
// launch of the split kernel and of the combine step. Included only by the generated decode
// instance files (one per dtype and head dim).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "attention/decode_params.hpp"
#include "attention/kernel/sm90_decode.hpp"
#include "common/cuda_check.hpp"

namespace hopattn::attention {

template <class Element, int kHeadDim>
Status run_decode_kernels(const DecodeParams& dp, Stream stream) {
  using namespace cute;
  using Traits = DecodeTraits<Element, kHeadDim>;
  const int64_t rows_total = int64_t(dp.batch) * dp.heads_q * dp.seqlen_q;
  const int group = dp.pack_gqa ? dp.heads_q / dp.heads_kv : 1;
  const int rows = dp.seqlen_q * group;
  const int m_blocks = (rows + Traits::kBlockM - 1) / Traits::kBlockM;
  const int row_groups = dp.pack_gqa ? dp.heads_kv : dp.heads_q;
  const int64_t grid_x = int64_t(m_blocks) * dp.num_splits;
  if (grid_x > INT32_MAX || row_groups > 65535 || dp.batch > 65535)
    return Status::unsupported("kvcache attention: the grid (" + std::to_string(grid_x) + ", " +
                               std::to_string(row_groups) + ", " + std::to_string(dp.batch) + ") exceeds CUDA's limits");

  // The TMA sees the whole cache, (max_len, hdim, heads_kv, batch); keys past a sequence's own
  // length are masked in the kernel. A zero-length cache gets a 1-key box it never loads.
  auto cache = [&](const void* ptr, int64_t seq_stride, int64_t head_stride, int64_t batch_stride) {
    return make_tensor(make_gmem_ptr(static_cast<Element const*>(ptr)),
                       make_layout(make_shape(std::max(dp.max_len, 1), kHeadDim, dp.heads_kv, dp.batch),
                                   make_stride(seq_stride, _1{}, head_stride, batch_stride)));
  };
  const auto kv_box = take<0, 2>(typename Traits::SmemLayoutKV{});
  typename Traits::Params p{
      make_tma_copy(SM90_TMA_LOAD{}, cache(dp.k, dp.k_seq_stride, dp.k_head_stride, dp.k_batch_stride), kv_box),
      make_tma_copy(SM90_TMA_LOAD{}, cache(dp.v, dp.v_seq_stride, dp.v_head_stride, dp.v_batch_stride), kv_box),
      static_cast<const Element*>(dp.q), dp.q_batch_stride, dp.q_seq_stride, dp.q_head_stride,
      static_cast<Element*>(dp.o), dp.o_batch_stride, dp.o_seq_stride, dp.o_head_stride,
      dp.lse, dp.lse_batch_stride, dp.lse_head_stride, dp.lse_seq_stride,
      dp.cache_seqlens,
      dp.num_splits > 1 ? dp.workspace : nullptr,
      dp.num_splits > 1 ? dp.workspace + rows_total * kHeadDim * dp.num_splits : nullptr,
      dp.error,
      dp.batch, dp.seqlen_q, dp.heads_q, dp.heads_kv, dp.max_len,
      group, rows, dp.num_splits, dp.softmax_scale, dp.causal};

  auto kernel = &decode_kernel<Traits>;
  HOPATTN_RETURN_IF_CUDA_ERROR(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Traits::kSharedBytes));
  kernel<<<dim3(unsigned(grid_x), unsigned(row_groups), unsigned(dp.batch)), Traits::kThreads, Traits::kSharedBytes,
           stream>>>(p);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  if (dp.num_splits == 1) return Status();

  CombineParams<Element, kHeadDim> c{p.o_part, p.lse_part, dp.cache_seqlens,
                                     static_cast<Element*>(dp.o), dp.o_batch_stride, dp.o_seq_stride, dp.o_head_stride,
                                     dp.lse, dp.lse_batch_stride, dp.lse_head_stride, dp.lse_seq_stride,
                                     dp.batch, dp.seqlen_q, dp.heads_q, dp.max_len, dp.num_splits, dp.causal};
  const int64_t blocks = (rows_total + kCombineWarps - 1) / kCombineWarps;
  if (blocks > INT32_MAX) return Status::unsupported("kvcache attention: too many rows for the combine grid");
  decode_combine_kernel<Element, kHeadDim><<<unsigned(blocks), 32 * kCombineWarps, 0, stream>>>(c);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status();
}

}  // namespace hopattn::attention
