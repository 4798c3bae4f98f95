// Host side of the decode kernels (kernel/sm90_decode*.hpp): TMA descriptors over the cache, grid,
// launch of the split kernel (bf16/fp16 or int8 cache) and of the combine step. Included only by
// the generated decode instance files (one per dtype and head dim).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "attention/decode_params.hpp"
#include "attention/device/decode_registry.hpp"
#include "attention/kernel/sm90_decode.hpp"
#include "attention/kernel/sm90_decode_combine.hpp"
#include "attention/kernel/sm90_decode_int8.hpp"
#include "attention/kernel/sm90_decode_int8_mma.hpp"
#include "attention/kernel/sm90_decode_kv16_mma.hpp"
#include "common/cuda_check.hpp"

namespace hopattn::attention {

struct DecodeGrid {
  int group, rows;
  dim3 grid;
};

inline Status decode_grid(const DecodeParams& dp, int block_m, DecodeGrid* g) {
  g->group = dp.pack_gqa ? dp.heads_q / dp.heads_kv : 1;
  g->rows = dp.seqlen_q * g->group;
  const int m_blocks = (g->rows + block_m - 1) / block_m;
  const int row_groups = dp.pack_gqa ? dp.heads_kv : dp.heads_q;
  const int64_t grid_x = int64_t(m_blocks) * dp.num_splits;
  if (grid_x > INT32_MAX || row_groups > 65535 || dp.batch > 65535)
    return Status::unsupported("kvcache attention: the grid (" + std::to_string(grid_x) + ", " +
                               std::to_string(row_groups) + ", " + std::to_string(dp.batch) + ") exceeds CUDA's limits");
  g->grid = dim3(unsigned(grid_x), unsigned(row_groups), unsigned(dp.batch));
  return Status();
}

// Rows of the cache tensors the TMA sees.
inline int decode_cache_rows(const DecodeParams& dp) {
  if (dp.page_table != nullptr) return dp.page_size;
  return dp.cache_rows > 0 ? dp.cache_rows : dp.max_len;
}

// DecodeSplitParams's fields (collective/sm90_decode_tile.hpp), the same for every split kernel.
template <class Params, class Element>
void fill_common_params(Params& p, const DecodeParams& dp, const DecodeGrid& g, int hdim) {
  const int64_t rows_total = int64_t(dp.batch) * dp.heads_q * dp.seqlen_q;
  const int slots = decode_partial_slots(dp);
  p.q = static_cast<const Element*>(dp.q);
  p.q_batch_stride = dp.q_batch_stride, p.q_seq_stride = dp.q_seq_stride, p.q_head_stride = dp.q_head_stride;
  p.o = static_cast<Element*>(dp.o);
  p.o_batch_stride = dp.o_batch_stride, p.o_seq_stride = dp.o_seq_stride, p.o_head_stride = dp.o_head_stride;
  p.lse = dp.lse;
  p.lse_batch_stride = dp.lse_batch_stride, p.lse_head_stride = dp.lse_head_stride;
  p.lse_seq_stride = dp.lse_seq_stride;
  p.cache_seqlens = dp.cache_seqlens;
  p.o_part = slots > 1 ? dp.workspace : nullptr;
  p.lse_part = slots > 1 ? dp.workspace + rows_total * hdim * slots : nullptr;
  p.error = dp.error;
  p.batch = dp.batch, p.seqlen_q = dp.seqlen_q, p.heads_q = dp.heads_q, p.heads_kv = dp.heads_kv;
  p.max_len = dp.max_len;
  p.group = g.group, p.rows = g.rows, p.num_splits = dp.num_splits;
  p.softmax_scale = dp.softmax_scale;
  p.causal = dp.causal;
  p.key_block = dp.quant_block, p.key_range = dp.key_range, p.split_base = dp.split_base;
  p.cache_rows = decode_cache_rows(dp);
  p.page_table = dp.page_table;
  p.pt_batch_stride = dp.pt_batch_stride;
  p.page_shift = 0;
  while (dp.page_table != nullptr && (1 << p.page_shift) < dp.page_size) ++p.page_shift;
  p.num_pages = dp.num_pages;
  p.window_left = dp.window_left, p.window_right = dp.window_right;
  p.softcap_scale = dp.softcap_scale;
  p.sinks = dp.sinks;
}

// The TMA sees the whole cache, (max_len, hdim, heads_kv, batch); keys past a sequence's own
// length are masked in the kernel. A zero-length cache gets a 1-key box it never loads. A paged
// cache: the pool, (page_size, hdim, heads_kv, num_pages), batch_stride stepping a page.
template <class T, int kHeadDim, class Box>
auto make_cache_tma(const DecodeParams& dp, const void* ptr, int64_t seq_stride, int64_t head_stride,
                    int64_t batch_stride, Box box) {
  using namespace cute;
  const int outer = dp.page_table != nullptr ? std::max(dp.num_pages, 1) : dp.batch;
  auto cache = make_tensor(make_gmem_ptr(static_cast<T const*>(ptr)),
                           make_layout(make_shape(std::max(decode_cache_rows(dp), 1), kHeadDim, dp.heads_kv, outer),
                                       make_stride(seq_stride, _1{}, head_stride, batch_stride)));
  return make_tma_copy(SM90_TMA_LOAD{}, cache, box);
}

template <class Element, int kHeadDim>
Status launch_decode_combine(const DecodeParams& dp, Stream stream) {
  const int slots = decode_partial_slots(dp);
  if (!decode_runs_combine(dp)) return Status();  // one slot: the kernel wrote O (not a packed chunk plan)
  const int64_t rows_total = int64_t(dp.batch) * dp.heads_q * dp.seqlen_q;
  const float* o_part = dp.workspace;
  CombineParams<Element, kHeadDim> c{o_part, o_part + rows_total * kHeadDim * slots, dp.cache_seqlens,
                                     static_cast<Element*>(dp.o), dp.o_batch_stride, dp.o_seq_stride, dp.o_head_stride,
                                     dp.lse, dp.lse_batch_stride, dp.lse_head_stride, dp.lse_seq_stride,
                                     dp.batch, dp.seqlen_q, dp.heads_q, dp.max_len, slots, dp.causal, dp.sinks};
  const int64_t blocks = (rows_total + kCombineWarps - 1) / kCombineWarps;
  if (blocks > INT32_MAX) return Status::unsupported("kvcache attention: too many rows for the combine grid");
  // Few slots (a packed chunk plan's one, an int8 call's tail at one split, or 2-4 splits): a
  // batch of that many, so that more warps stay resident (decode_combine_kernel).
  auto kernel = slots <= 2   ? &decode_combine_kernel<Element, kHeadDim, 2>
                : slots <= 4 ? &decode_combine_kernel<Element, kHeadDim, 4>
                             : &decode_combine_kernel<Element, kHeadDim>;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(blocks));
  config.blockDim = dim3(32 * kCombineWarps);
  config.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  if (dp.combine_pdl) config.attrs = &attribute, config.numAttrs = 1;
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaLaunchKernelEx(&config, kernel, c));
  return Status();
}

template <class Traits, class Kernel>
Status launch_decode_kernel(Kernel kernel, const typename Traits::Params& p, const DecodeGrid& g, Stream stream,
                            bool pdl = false) {
  int device = 0, smem_optin = 0;
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device));
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (Traits::kSharedBytes > smem_optin)
    return Status::unsupported("kvcache attention: the decode tile needs " + std::to_string(Traits::kSharedBytes) +
                               " bytes of shared memory, the device allows " + std::to_string(smem_optin));
  HOPATTN_RETURN_IF_CUDA_ERROR(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Traits::kSharedBytes));
  // All of the SM's shared memory carve-out: two kv16_split_2cta CTAs need all of it on an H100/H200.
  HOPATTN_RETURN_IF_CUDA_ERROR(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  // pdl: a programmatic dependent of the kernel before it on the stream (the kernel must execute
  // griddepcontrol.wait before it reads or writes global memory; decode_kernel does).
  cudaLaunchConfig_t config{};
  config.gridDim = g.grid;
  config.blockDim = dim3(Traits::kThreads);
  config.dynamicSmemBytes = Traits::kSharedBytes;
  config.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  if (pdl) config.attrs = &attribute, config.numAttrs = 1;
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaLaunchKernelEx(&config, kernel, p));
  return Status();
}

// One split kernel: DecodeTraits (16-bit cache, TMA boxes of Element) or DecodeInt8Traits (raw
// int8 boxes, plus the scales).
template <class Traits>
Status run_decode_split(const DecodeParams& dp, Stream stream) {
  using namespace cute;
  using Element = typename Traits::Element;
  constexpr int kHeadDim = Traits::kHeadDim;
  constexpr bool kInt8 = Traits::kInt8Cache;
  using CacheElement = std::conditional_t<kInt8, int8_t, Element>;
  DecodeGrid g;
  if (Status s = decode_grid(dp, Traits::kTileRows, &g); !s.ok()) return s;
  // A paged cache reaches every kernel, 16-bit and int8: one TMA box per tile from pages of at
  // least its key tile, 16-key boxes from smaller ones; the host check refuses pages under 16
  // tokens, this keeps it so.
  if (dp.page_table != nullptr && dp.page_size < 16)
    return Status(StatusCode::kInternal, "kvcache attention: a paged cache reached a kernel that cannot read it");
  typename Traits::Params p{};
  const auto box = [] {
    if constexpr (kInt8) return take<0, 2>(typename Traits::SmemLayoutRaw{});
    else return take<0, 2>(typename Traits::SmemLayoutKV{});
  }();
  p.tma_k = make_cache_tma<CacheElement, kHeadDim>(dp, dp.k, dp.k_seq_stride, dp.k_head_stride, dp.k_batch_stride, box);
  p.tma_v = make_cache_tma<CacheElement, kHeadDim>(dp, dp.v, dp.v_seq_stride, dp.v_head_stride, dp.v_batch_stride, box);
  fill_common_params<typename Traits::Params, Element>(p, dp, g, kHeadDim);
  if (dp.page_table != nullptr && dp.page_size < Traits::kBlockN) {
    const auto page_box = typename Traits::SmemLayoutPageBox{};
    p.tma_k_box = make_cache_tma<CacheElement, kHeadDim>(dp, dp.k, dp.k_seq_stride, dp.k_head_stride, dp.k_batch_stride, page_box);
    p.tma_v_box = make_cache_tma<CacheElement, kHeadDim>(dp, dp.v, dp.v_seq_stride, dp.v_head_stride, dp.v_batch_stride, page_box);
  }
  if constexpr (kInt8) {
    p.k_scale = dp.k_scale;
    p.ks_batch_stride = dp.ks_batch_stride, p.ks_block_stride = dp.ks_block_stride, p.ks_head_stride = dp.ks_head_stride;
    p.v_scale = dp.v_scale;
    p.vs_batch_stride = dp.vs_batch_stride, p.vs_seq_stride = dp.vs_seq_stride, p.vs_head_stride = dp.vs_head_stride;
    p.quant_block = dp.quant_block;
    if constexpr (IsDecodeInt8Mma<Traits>::value)
      return launch_decode_kernel<Traits>(&decode_int8_mma_warp_rings_kernel<Traits>, p, g, stream);
    else
      return launch_decode_kernel<Traits>(&decode_int8_kernel<Traits>, p, g, stream);
  } else {
    return launch_decode_kernel<Traits>(&decode_kernel<Traits>, p, g, stream, dp.split_pdl);
  }
}

// The 16-bit mma.sync kernel (kernel/sm90_decode_kv16_mma.hpp): TMA boxes of 64 keys × 64
// channels over the cache or the pool (16-key boxes from pages smaller than the tile), no options
// (its registry row's limits: the plan refuses them, this keeps it so). A paged cache runs the
// kernel's kPaged instance, so that the contiguous one carries nothing of the pages.
template <class Traits>
Status run_decode_kv16_mma(const DecodeParams& dp, Stream stream) {
  using Element = typename Traits::Element;
  constexpr int kHeadDim = Traits::kHeadDim;
  DecodeGrid g;
  if (Status s = decode_grid(dp, Traits::kTileRows, &g); !s.ok()) return s;
  if (dp.key_range != kDecodeAllKeys || dp.window_left >= 0 || dp.window_right >= 0 || dp.softcap_scale != 0.0f ||
      dp.sinks != nullptr)
    return Status(StatusCode::kInternal,
                  "kvcache attention: a tail or an option reached kv16_mma_swap_8w_1cta, which takes none");
  const bool paged = dp.page_table != nullptr;
  if (paged && dp.page_size < Traits::kPageBoxRows)  // the host check refuses pages under 16 tokens
    return Status(StatusCode::kInternal, "kvcache attention: a paged cache reached a kernel that cannot read it");
  typename Traits::Params p{};
  const auto box = cute::take<0, 2>(typename Traits::SmemLayoutKV{});
  p.tma_k = make_cache_tma<Element, kHeadDim>(dp, dp.k, dp.k_seq_stride, dp.k_head_stride, dp.k_batch_stride, box);
  p.tma_v = make_cache_tma<Element, kHeadDim>(dp, dp.v, dp.v_seq_stride, dp.v_head_stride, dp.v_batch_stride, box);
  if (paged && dp.page_size < Traits::kBlockN) {
    const auto page_box = typename Traits::SmemLayoutPageBox{};
    p.tma_k_box = make_cache_tma<Element, kHeadDim>(dp, dp.k, dp.k_seq_stride, dp.k_head_stride, dp.k_batch_stride, page_box);
    p.tma_v_box = make_cache_tma<Element, kHeadDim>(dp, dp.v, dp.v_seq_stride, dp.v_head_stride, dp.v_batch_stride, page_box);
  }
  fill_common_params<typename Traits::Params, Element>(p, dp, g, kHeadDim);
  if (paged) return launch_decode_kernel<Traits>(&decode_kv16_mma_warp_rings_kernel<Traits, true>, p, g, stream, dp.split_pdl);
  return launch_decode_kernel<Traits>(&decode_kv16_mma_warp_rings_kernel<Traits, false>, p, g, stream, dp.split_pdl);
}

// The mma.sync int8 kernels (kernel/sm90_decode_int8_mma.hpp): hdim 128, 64-key tiles, each warp's own ring.
template <class Element, int kWarps, Int8MmaMath kMath, int kCtasPerSm = 1>
using WarpRings = DecodeInt8MmaTraits<Element, 128, kWarps, kMath, kCtasPerSm>;

// An int8 call's 16-bit tail block: the 16-bit split kernel (its own small tile, one split) over the tail
// tensors, its keys the sequences' last len % quant_block, its partial in the slot after the
// int8 splits'. The sequence bound (max_len) stays the int8 cache's.
inline DecodeParams decode_tail_params(const DecodeParams& dp) {
  DecodeParams t = dp;
  t.cache_dtype = dp.dtype;
  t.k = dp.k_tail, t.v = dp.v_tail;
  t.k_batch_stride = dp.kt_batch_stride, t.k_seq_stride = dp.kt_seq_stride, t.k_head_stride = dp.kt_head_stride;
  t.v_batch_stride = dp.vt_batch_stride, t.v_seq_stride = dp.vt_seq_stride, t.v_head_stride = dp.vt_head_stride;
  t.cache_rows = dp.quant_block;
  t.page_table = nullptr;  // the tails are per sequence, never paged
  t.key_range = kDecodeTailBlock;
  t.num_splits = 1;
  t.split_base = dp.num_splits;
  t.partial_slots = decode_partial_slots(dp);
  return t;
}

// The split kernel of a registry row (device/decode_registry.hpp: DecodeParams::variant is the
// row's id; the ids are unique per cache type), then the tail kernel and the combine.
template <class Element, int kHeadDim>
Status run_decode_int8_split(const DecodeParams& dp, Stream stream) {
  constexpr auto kInt8 = DecodeCache::kInt8;
  switch (dp.variant) {
    case 2:
      if constexpr (decode_kernel_compiled(kInt8, 2, kHeadDim)) return run_decode_split<DecodeInt8Traits<Element, kHeadDim>>(dp, stream);
      break;
    case 3:
      if constexpr (decode_kernel_compiled(kInt8, 3, kHeadDim)) return run_decode_split<DecodeInt8Traits<Element, kHeadDim, 2>>(dp, stream);
      break;
    case 4:
      if constexpr (decode_kernel_compiled(kInt8, 4, kHeadDim))
        return run_decode_split<DecodeInt8Traits<Element, kHeadDim, 2, true>>(dp, stream);
      break;
    case 24:
      if constexpr (decode_kernel_compiled(kInt8, 24, kHeadDim))
        return run_decode_split<DecodeInt8Traits<Element, kHeadDim, 1, false, true>>(dp, stream);
      break;
    case 16:
      if constexpr (decode_kernel_compiled(kInt8, 16, kHeadDim))
        return run_decode_split<WarpRings<Element, 8, Int8MmaMath::kFmaKFoldV>>(dp, stream);
      break;
    case 17:
      if constexpr (decode_kernel_compiled(kInt8, 17, kHeadDim))
        return run_decode_split<WarpRings<Element, 4, Int8MmaMath::kFmaKFoldV, 3>>(dp, stream);
      break;
    case 20:
      if constexpr (decode_kernel_compiled(kInt8, 20, kHeadDim))
        return run_decode_split<WarpRings<Element, 8, Int8MmaMath::kSwapPackedK>>(dp, stream);
      break;
    case 21:
      if constexpr (decode_kernel_compiled(kInt8, 21, kHeadDim))
        return run_decode_split<WarpRings<Element, 4, Int8MmaMath::kSwapPackedK, 3>>(dp, stream);
      break;
    default: break;
  }
  return Status::unsupported("kvcache attention: int8 kernel id " + std::to_string(dp.variant) + " is not compiled for hdim " +
                             std::to_string(kHeadDim));
}

// The 16-bit split kernel of a registry row: kv16_split_2cta (id 2; not at hdim 256),
// kv16_mma_swap_8w_1cta (id 25, hdim 128), else kv16_split_1cta (id 1).
template <class Element, int kHeadDim>
Status run_decode_16bit_split(const DecodeParams& dp, Stream stream) {
  constexpr auto k16 = DecodeCache::k16Bit;
  switch (dp.variant) {
    case 2:
      if constexpr (decode_kernel_compiled(k16, 2, kHeadDim)) return run_decode_split<DecodeTraits<Element, kHeadDim, 2>>(dp, stream);
      break;
    case 25:
      if constexpr (decode_kernel_compiled(k16, 25, kHeadDim)) return run_decode_kv16_mma<DecodeKv16MmaTraits<Element, kHeadDim>>(dp, stream);
      break;
    default: break;
  }
  return run_decode_split<DecodeTraits<Element, kHeadDim, 1>>(dp, stream);
}

template <class Element, int kHeadDim>
Status run_decode_kernels(const DecodeParams& dp, Stream stream) {
  Status s;
  if (dp.cache_dtype == HOPATTN_DTYPE_INT8) {
    s = run_decode_int8_split<Element, kHeadDim>(dp, stream);
    if (!s.ok()) return s;
    if (dp.k_tail != nullptr) {
      s = run_decode_split<DecodeTraits<Element, kHeadDim, kDecodeTailTile>>(decode_tail_params(dp), stream);
      if (!s.ok()) return s;
    }
  } else {
    s = run_decode_16bit_split<Element, kHeadDim>(dp, stream);
    if (!s.ok()) return s;
  }
  return launch_decode_combine<Element, kHeadDim>(dp, stream);
}

}  // namespace hopattn::attention
