// Host side of the forward kernels (fa2 and warp-specialized): TMA descriptors, grid, shared
// memory, launch, and the switch over the registry rows of one head dim. Included only by the generated instance files (one
// per dtype and head dim).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>

#include "attention/device/compiled_set.hpp"
#include "attention/fwd_params.hpp"
#include "attention/fwd_tile_order.hpp"
#include "attention/fwd_varlen.hpp"
#include "attention/kernel/sm90_fwd_config.hpp"
#include "attention/kernel/sm90_fwd_fa2.hpp"
#include "attention/kernel/sm90_fwd_ws.hpp"
// After the kernels: hopattn.hpp's hopattn::Tensor would hide cute::Tensor in them.
#include "attention/device/fwd_packed_q_encode.hpp"
#include "attention/device/fwd_varlen_prepare.hpp"
#include "common/cuda_check.hpp"

namespace hopattn::attention {

// A (seqlen, hdim, heads, batch) tensor as the TMA unit sees it (Traits::GmemLayout).
template <class Traits, class T>
auto fwd_gmem(T* ptr, int seqlen, int heads, int batch, int64_t seq_stride, int64_t head_stride, int64_t batch_stride) {
  using namespace cute;
  return make_tensor(make_gmem_ptr(ptr), make_layout(make_shape(seqlen, Traits::kHeadDim, heads, batch),
                                                     make_stride(seq_stride, _1{}, head_stride, batch_stride)));
}

// A variable-length batch's packed (total, heads, hdim) tensor as an end-aligned view (ws::q_origin):
// (max_len, hdim, heads, total + 1) over the base moved back by max_len rows, the row and the batch
// modes both one token apart, so that sequence s's row r is (max_len - len_s + r, ., h, off_s +
// len_s) and the TMA unit clips rows r >= len_s at the row mode's end: loads past a sequence's end
// read zeros, stores stop at it. Only coordinates that the prepare kernel checked reach it.
template <class Traits, class T>
auto fwd_gmem_end_aligned(T* ptr, int total, int max_len, int heads, int64_t seq_stride, int64_t head_stride) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(ptr) - uintptr_t(int64_t(max_len) * seq_stride * int64_t(sizeof(T)));
  return fwd_gmem<Traits>(reinterpret_cast<T*>(base), max_len, heads, total + 1, seq_stride, head_stride, seq_stride);
}

template <class Traits>
typename Traits::Params make_fwd_params(const FwdParams& fp) {
  using namespace cute;
  using Element = typename Traits::Element;
  using ElementOut = typename Traits::ElementOut;
  auto gmem = [&](auto* ptr, int seqlen, int heads, int64_t seq_stride, int64_t head_stride, int64_t batch_stride) {
    return fwd_gmem<Traits>(ptr, seqlen, heads, fp.batch, seq_stride, head_stride, batch_stride);
  };
  auto q = gmem(static_cast<Element const*>(fp.q), fp.seqlen_q, fp.heads_q, fp.q_seq_stride, fp.q_head_stride, fp.q_batch_stride);
  auto k = gmem(static_cast<Element const*>(fp.k), fp.seqlen_k, fp.heads_kv, fp.k_seq_stride, fp.k_head_stride, fp.k_batch_stride);
  auto v = gmem(static_cast<Element const*>(fp.v), fp.seqlen_k, fp.heads_kv, fp.v_seq_stride, fp.v_head_stride, fp.v_batch_stride);
  auto o = gmem(static_cast<ElementOut*>(fp.o), fp.seqlen_q, fp.heads_q, fp.o_seq_stride, fp.o_head_stride, fp.o_batch_stride);
  if (fp.varlen()) {
    // With no key at all (total_k 0) no K/V tile is ever loaded; q's rows stand in for a valid base.
    const bool no_keys = fp.total_k == 0;
    q = fwd_gmem_end_aligned<Traits>(static_cast<Element const*>(fp.q), fp.total_q, fp.seqlen_q, fp.heads_q,
                                     fp.q_seq_stride, fp.q_head_stride);
    k = no_keys ? q : fwd_gmem_end_aligned<Traits>(static_cast<Element const*>(fp.k), fp.total_k, fp.seqlen_k,
                                                   fp.heads_kv, fp.k_seq_stride, fp.k_head_stride);
    v = no_keys ? q : fwd_gmem_end_aligned<Traits>(static_cast<Element const*>(fp.v), fp.total_k, fp.seqlen_k,
                                                   fp.heads_kv, fp.v_seq_stride, fp.v_head_stride);
    o = fwd_gmem_end_aligned<Traits>(static_cast<ElementOut*>(fp.o), fp.total_q, fp.seqlen_q, fp.heads_q,
                                     fp.o_seq_stride, fp.o_head_stride);
  }
  if (fp.kvcache()) {
    // A KV-cache list: q and o stay padded (origin (0, b)); the contiguous cache is batch · max_len
    // tokens of which sequence b holds cache_seqlens[b] from token b · max_len, read through the
    // end-aligned view so that loads stop at each sequence's length (fwd_varlen.hpp, "KV-cache
    // lists"; the host checked k_batch_stride == max_len · k_seq_stride, the same for v).
    // A paged cache: the pools alike, each page a "sequence" of page_size rows (ws::paged_kv_origin;
    // the host checked k_batch_stride == page_size · k_seq_stride, the same for v).
    const bool paged = fp.page_table != nullptr;
    const int rows = paged ? fp.page_size : fp.seqlen_k;
    const int total_k = paged ? fp.num_pages * fp.page_size : fp.batch * fp.seqlen_k;
    const bool no_keys = total_k == 0;  // no K/V tile is ever loaded; q stands in for a valid base
    k = no_keys ? q : fwd_gmem_end_aligned<Traits>(static_cast<Element const*>(fp.k), total_k, rows, fp.heads_kv,
                                                   fp.k_seq_stride, fp.k_head_stride);
    v = no_keys ? q : fwd_gmem_end_aligned<Traits>(static_cast<Element const*>(fp.v), total_k, rows, fp.heads_kv,
                                                   fp.v_seq_stride, fp.v_head_stride);
  }
  typename Traits::Params p{
      make_tma_copy(SM90_TMA_LOAD{}, q, typename Traits::SmemLayoutQ{}),
      make_tma_copy(SM90_TMA_LOAD{}, k, take<0, 2>(typename Traits::SmemLayoutKV{})),
      make_tma_copy(SM90_TMA_LOAD{}, v, take<0, 2>(typename Traits::SmemLayoutKV{})),
      make_tma_copy(SM90_TMA_STORE{}, o, typename Traits::SmemLayoutO{}),
      make_tma_copy(SM90_TMA_STORE{}, o, typename Traits::SmemLayoutOWarpgroup{}),
      make_tma_copy(SM90_TMA_LOAD{}, q, typename Traits::SmemLayoutQWarpgroup{}),
      fp.seqlen_q, fp.seqlen_k, fp.heads_q, fp.heads_kv, fp.batch,
      fp.softmax_scale, fp.lse, fp.lse_batch_stride, fp.lse_head_stride, fp.lse_seq_stride, fp.narrow_pv ? 1 : 0,
      std::clamp(fp.stale_max_log2, 0.0f, 16.0f)};
  p.skip_unseen_blocks = fp.skip_unseen ? 1 : 0;
  p.window_left = fp.window_left;
  p.window_right = fp.window_right;
  p.softcap_scale = fp.softcap_scale;
  p.sinks = fp.sinks;
  p.q_descale = fp.q_descale, p.k_descale = fp.k_descale, p.v_descale = fp.v_descale;
  p.q_descale_batch_stride = fp.q_descale_batch_stride, p.q_descale_head_stride = fp.q_descale_head_stride;
  p.k_descale_batch_stride = fp.k_descale_batch_stride, p.k_descale_head_stride = fp.k_descale_head_stride;
  p.v_descale_batch_stride = fp.v_descale_batch_stride, p.v_descale_head_stride = fp.v_descale_head_stride;
  if (fp.varlen()) {
    const char* ws = static_cast<const char*>(fp.workspace);
    p.varlen_count = reinterpret_cast<const int*>(ws);
    p.varlen_tiles = reinterpret_cast<const FwdVarlenTile*>(ws + varlen_entries_offset(fp.batch));
    if (fp.varlen_dynamic) p.varlen_claim = reinterpret_cast<int*>(static_cast<char*>(fp.workspace) + kVarlenClaimOffset);
  }
  if (fp.kvcache()) {  // the list region of the KV-cache workspace (fwd_kvcache_prepare writes it)
    const char* ws = static_cast<const char*>(fp.workspace);
    p.varlen_count = reinterpret_cast<const int*>(ws);
    p.varlen_tiles = reinterpret_cast<const FwdVarlenTile*>(ws + kvcache_entries_offset(fp.batch));
    if (fp.varlen_dynamic) p.varlen_claim = reinterpret_cast<int*>(static_cast<char*>(fp.workspace) + kVarlenClaimOffset);
    p.padded_q_list = 1;
    // The list's shape (heads_q and ceil(seqlen_q / block_m) tiles, or packed kv heads and tiles
    // of 2P positions; fwd_varlen.hpp), as fwd_kvcache_prepare wrote it.
    const KvCacheListShape list = kvcache_list_shape(fp.seqlen_q, fp.heads_q, fp.heads_kv, Traits::kBlockM, fp.pack_group);
    p.varlen_ranges = reinterpret_cast<const int32_t*>(
        ws + kvcache_ranges_offset(fp.batch, list.m_blocks, list.heads, std::max(fp.num_splits, 1)));
    // Partials above one split; a packed list's at one split too (make_chunk_params sets them).
    if (fp.num_splits > 1 || fp.pack_group > 1) p.split_o = fp.split_o, p.split_lse = fp.split_lse;
  }
  return p;
}

// KvListParams<Traits> (sm90_fwd_ws_schedule.hpp): the parameters of the instance that reads
// KV-cache lists (ws::kKvCacheLists), with the packed Q load of a packed list.
using ws::KvListParams;

// Fills in the packed Q load of `kp` (built from the forward's Params: KvListParams<Traits>{params,
// {}, 0, 0, 0}) for fp.pack_group > 1; leaves it unpacked (zeros) otherwise.
template <class Traits>
Status set_kvlist_packed_q(const FwdParams& fp, KvListParams<Traits>* kp) {
  kp->packed_q_tx_bytes = 0;
  kp->pack_group = 0, kp->pack_positions = 0;
  if (fp.pack_group <= 1) return Status();
  PackedQLoad load;
  if (Status s = make_packed_q_load(fp.q, int(sizeof(typename Traits::Element)), Traits::kHeadDim, Traits::kBlockM,
                                    fp.batch, fp.seqlen_q, fp.heads_q, fp.pack_group, fp.q_batch_stride,
                                    fp.q_seq_stride, fp.q_head_stride, &load);
      !s.ok())
    return s;
  if (Status s = encode_packed_q_load(load, fp.dtype, &kp->packed_q); !s.ok()) return s;
  kp->packed_q_tx_bytes = load.expect_tx_bytes;
  kp->pack_group = load.group, kp->pack_positions = load.positions;
  return Status();
}

// A kernel's parameter type (Traits::Params, or KvListParams for ws_forward_kernel_kvlists).
template <class Kernel>
struct KernelParamOf;
template <class P>
struct KernelParamOf<void (*)(P)> {
  using type = P;
};

// can_implement: what the launch needs beyond the public checks.
inline Status fwd_can_implement(const FwdParams& fp, int shared_bytes) {
  int device = 0, smem_optin = 0;
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device));
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (shared_bytes > smem_optin)
    return Status::unsupported("attention forward: the tile configuration needs " + std::to_string(shared_bytes) +
                               " bytes of shared memory, the device allows " + std::to_string(smem_optin));
  if (fp.heads_q > 65535 || fp.batch > 65535)
    return Status::unsupported("attention forward: heads_q and batch must be <= 65535 (grid limits)");
  return Status();
}

// The non-persistent causal launch order (ws::FwdTileScheduler): (head, batch) pairs per
// longest-first group, as many as keep the group's K and V within ~24 MB of the 50-60 MB L2,
// for KV lengths of 1k-4k; one pair per group (the per-pair order of before) otherwise.
// Measured (H200 r51, bf16, causal, A/B interleaved twice, docs/perf-log.md): grouped is 2-4 %
// faster at hdim 128 2k/4k and hdim 256 1k/2k, neutral at hdim 128 1k/8k, 2 % slower at hdim
// 256 512 and 3.6 % slower at hdim 128 16k.
// FwdParams::causal_group > 0 forces at most that many pairs per group at every length; 1 is the
// per-pair order (for ablations).
inline int fwd_causal_group(const FwdParams& fp, int element_bytes) {
  if (fp.causal_group > 0) return fp.causal_group;
  if (fp.seqlen_k < 1024 || fp.seqlen_k > 4096) return 1;
  const int64_t kv_bytes = std::max<int64_t>(int64_t(fp.seqlen_k) * fp.hdim * 2 * element_bytes, 1);
  return int(std::clamp<int64_t>((int64_t(24) << 20) / kv_bytes, 1, 1 << 20));
}

// The persistent band tile order (fwd_tile_order.hpp) as Params::causal_group: -1 the folded
// order (the default since 2026-12-01, twelfth session); N >= 0 the grouped zig-zag order with N
// pairs per group (0: one group of every pair, the order before 2026-12-01 r68). FwdParams::
// persistent_group -2 or below (the library's choice): folded, but for a window bounded on both
// sides (a left side short of seqlen_k, and causal or a right side short of seqlen_q, past which
// every tile's keys would run to seqlen_k and the work fall with m, which the folded pairs
// balance) the grouped order at windowed_persistent_group's group; -1 or N >= 0: that order.
inline int fwd_persistent_group(const FwdParams& fp, int block_m, int sms) {
  if (fp.persistent_group >= -1) return fp.persistent_group;
  if (fp.window_left >= fp.seqlen_k || fp.window_right >= fp.seqlen_q) return -1;  // folded
  const int m_blocks = (fp.seqlen_q + block_m - 1) / block_m;
  const int64_t span = std::min<int64_t>(fp.seqlen_k, int64_t(fp.window_left) + block_m + fp.window_right);
  return windowed_persistent_group(int64_t(fp.heads_q) * fp.batch, m_blocks, span, fp.hdim, 2,
                                   fp.heads_kv > 0 ? fp.heads_q / fp.heads_kv : 1, sms);
}

// Launches `kernel` with one CTA per (Q tile, q-head, batch), or (persistent) one per SM up to
// the number of tiles.
// grouped_causal: a warp-specialized non-persistent kernel with a causal mask, whose scheduler
// takes the (group, m_blocks, groups) grid of fwd_causal_group's order.
// kernel_reads_kvcache_lists: ws::kKvCacheLists of the kernel (a KV-cache call, FwdParams::
// cache_seqlens, is refused by any other).
template <class Traits, class Kernel>
Status launch_fwd(Kernel kernel, int threads, int shared_bytes, bool persistent, bool grouped_causal,
                  const FwdParams& fp, Stream stream, bool kernel_reads_kvcache_lists = false) {
  if (Status s = fwd_can_implement(fp, shared_bytes); !s.ok()) return s;
  typename Traits::Params params = make_fwd_params<Traits>(fp);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
  const int m_blocks = (fp.seqlen_q + Traits::kBlockM - 1) / Traits::kBlockM;
  dim3 grid(m_blocks, fp.heads_q, fp.batch);
  if (grouped_causal) {  // (pair in group, m rank, group); pairs spread evenly over the groups
    if (m_blocks > 65535)
      return Status::unsupported("attention forward: causal seqlen_q of " + std::to_string(fp.seqlen_q) +
                                 " needs more than 65535 Q tiles (grid limit)");
    const int64_t pairs = int64_t(fp.heads_q) * fp.batch;
    const int64_t max_group = std::max<int64_t>(fwd_causal_group(fp, int(sizeof(typename Traits::Element))),
                                                (pairs + 65534) / 65535);  // groups <= 65535
    const int64_t groups = (pairs + max_group - 1) / max_group, group = (pairs + groups - 1) / groups;
    grid = dim3(unsigned(group), unsigned(m_blocks), unsigned(groups));
  }
  int sms = 0;  // persistent grids: one CTA per SM at most
  if (persistent) {
    int device = 0;
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device));
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  }
  // The packed Q load of a KV-cache list (set_kvlist_packed_q below; only its packed fields are read).
  KvListParams<Traits> kvlist{params, CUtensorMap{}, 0u, 0, 0};
  if (fp.kvcache()) {  // a KV-cache list (fwd_kvcache_prepare), dealt as a variable-length batch's
    if (!persistent || !params.varlen_tiles || !fp.band || !kernel_reads_kvcache_lists)
      return Status(StatusCode::kInternal, "kvcache attention: a chunk call reached a kernel that does not read KV-cache lists");
    if (fp.page_table != nullptr && fp.page_size < Traits::kBlockN)  // each KV tile in one page (kvcache_chunk_plan.cpp)
      return Status(StatusCode::kInternal, "kvcache attention: a paged chunk call with pages smaller than the KV tile");
    const KvCacheListShape list = kvcache_list_shape(fp.seqlen_q, fp.heads_q, fp.heads_kv, Traits::kBlockM, fp.pack_group);
    const int64_t units = kvcache_list_entries(fp.batch, list.m_blocks, list.heads, std::max(fp.num_splits, 1)) / 2;
    if (2 * units + 2 * int64_t(sms) > INT32_MAX) return Status::unsupported("kvcache attention: more than 2^31 tiles");
    // A packed list's Q load (zeros when unpacked), encoded once, before the prepare kernel is
    // launched (a failed encode launches nothing); the kernel's parameters below reuse it.
    if (Status s = set_kvlist_packed_q<Traits>(fp, &kvlist); !s.ok()) return s;
    if (Status s = launch_fwd_kvcache_prepare(fp, Traits::kBlockM, Traits::kBlockN, stream); !s.ok()) return s;
    grid = dim3(unsigned(std::max<int64_t>(1, std::min<int64_t>(units, sms))), 1, 1);
  } else if (fp.varlen()) {  // the prepare kernel's list, dealt over one CTA per SM (two entries per unit)
    if (!persistent || !params.varlen_tiles)
      return Status(StatusCode::kInternal, "attention forward: a variable-length batch reached a kernel without a tile list");
    const int64_t units = (varlen_tile_capacity(fp.total_q, fp.batch, fp.heads_q) + 1) / 2;
    if (2 * units + 2 * int64_t(sms) > INT32_MAX) return Status::unsupported("attention forward: more than 2^31 tiles");
    if (Status s = launch_fwd_varlen_prepare(fp, Traits::kBlockM, Traits::kBlockN, stream); !s.ok()) return s;
    grid = dim3(unsigned(std::max<int64_t>(1, std::min<int64_t>(units, sms))), 1, 1);
  } else if (persistent) {
    const int64_t tiles = int64_t(m_blocks) * fp.heads_q * fp.batch;
    if (tiles > INT32_MAX) return Status::unsupported("attention forward: more than 2^31 tiles");
    grid = dim3(unsigned(std::min<int64_t>(tiles, sms)), 1, 1);
    if (fp.band) {
      params.causal_group = fwd_persistent_group(fp, Traits::kBlockM, sms);
      if (params.causal_group < 0) {  // folded: a CTA per unit at most; positions must fit an int
        const int64_t pairs = int64_t(fp.heads_q) * fp.batch;
        if (folded_positions(m_blocks, pairs) + 2 * int64_t(sms) > INT32_MAX)
          return Status::unsupported("attention forward: more than 2^31 tiles");
        grid.x = unsigned(std::min<int64_t>(folded_units(m_blocks, pairs), sms));
      }
    }
  }
  // The kernel's parameters: Params, or (the instance that reads KV-cache lists) KvListParams with
  // a packed list's Q load, the one encoded above (unpacked or not a KV-cache call: zeros,
  // pack_group 0).
  using KernelParams = typename KernelParamOf<Kernel>::type;
  KernelParams kparams = [&]() -> KernelParams {
    if constexpr (std::is_same_v<KernelParams, KvListParams<Traits>>) {
      KvListParams<Traits> kp{params, kvlist.packed_q, kvlist.packed_q_tx_bytes, kvlist.pack_group, kvlist.pack_positions};
      if (fp.kvcache() && fp.page_table != nullptr) {  // a paged cache (FwdParams::page_table)
        kp.page_table = fp.page_table;
        kp.pt_batch_stride = int(fp.pt_batch_stride);  // batch · stride < 2^31 (kvcache_chunk_plan.cpp)
        while ((1 << kp.page_shift) < fp.page_size) ++kp.page_shift;
        kp.num_pages = fp.num_pages;
      }
      return kp;
    } else {
      return params;
    }
  }();
  if ((fp.varlen() || fp.kvcache()) && fp.varlen_pdl) {
    // A programmatic dependent of the prepare kernel (which triggers at its start): the CTAs
    // launch and run their prologue while the list is being written, and wait for it with
    // griddepcontrol.wait (ws_forward_kernel) before reading it.
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = dim3(unsigned(threads), 1, 1);
    config.dynamicSmemBytes = size_t(shared_bytes);
    config.stream = static_cast<cudaStream_t>(stream);
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaLaunchKernelEx(&config, kernel, kparams));
    return Status();
  }
  kernel<<<grid, threads, shared_bytes, stream>>>(kparams);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status();
}

// One registry row (kFwdKernels[kIndex]) for one mask.
template <class Element, int kHeadDim, int kIndex, class Mask>
Status run_fwd_kernel_mask(const FwdParams& fp, Stream stream) {
  constexpr FwdKernelSpec s = kFwdKernels[kIndex];
  static_assert(s.hdim == kHeadDim, "a row is compiled for its own head dim");
  using Traits =
      Fa2Traits<Element, kHeadDim, s.tile.block_m, s.tile.block_n, s.tile.stages, s.mma_row_sum, s.q_in_registers>;
  static_assert(!s.options || s.kernel == FwdKernel::kPersistentPingPong, "only the ws kernels' consume_tile has the options loop");
  static_assert(!s.fp8 || (s.kernel == FwdKernel::kPersistentPingPong && !s.options),
                "the e4m3 rows: the persistent ws kernel (O staged apart), padded batches without options");
  if constexpr (s.kernel == FwdKernel::kFa2) {
    return launch_fwd<Traits>(&fa2_forward_kernel<Traits, Mask>, Traits::kThreads, Traits::kSharedBytes, false, false,
                              fp, stream);
  } else {
    constexpr bool kPersistent = s.kernel == FwdKernel::kPersistentPingPong;
    constexpr bool kPingPong = s.kernel != FwdKernel::kWarpSpecialized && s.kernel != FwdKernel::kWarpSpecializedSerial;
    constexpr bool kOverlap =
        s.kernel != FwdKernel::kWarpSpecializedSerial && s.kernel != FwdKernel::kWarpSpecializedPingPongSerial;
    constexpr int kShared = int(sizeof(WsKernelStorage<Traits, kPersistent, s.options>));
    if constexpr (ws::kKvCacheLists<Traits, s.options>)  // KvListParams (a packed list's Q load)
      return launch_fwd<Traits>(&ws_forward_kernel_kvlists<Traits, Mask, kPingPong, kPersistent, kOverlap, s.options>,
                                kWsThreads<Traits>, kShared, kPersistent, !kPersistent && Mask::kCausal, fp, stream, true);
    else
      return launch_fwd<Traits>(&ws_forward_kernel<Traits, Mask, kPingPong, kPersistent, kOverlap, s.options>,
                                kWsThreads<Traits>, kShared, kPersistent, !kPersistent && Mask::kCausal, fp, stream, false);
  }
}

template <class Element, int kHeadDim, int kIndex>
Status run_fwd_kernel(const FwdParams& fp, Stream stream) {
  if (fp.band) {  // causal or a sliding window: the band mask
    if constexpr (fwd_kernel_compiled(kIndex, kHeadDim, true))
      return run_fwd_kernel_mask<Element, kHeadDim, kIndex, CausalMask>(fp, stream);
  } else {
    if constexpr (fwd_kernel_compiled(kIndex, kHeadDim, false))
      return run_fwd_kernel_mask<Element, kHeadDim, kIndex, NoCausalMask>(fp, stream);
  }
  return Status::unsupported(std::string("attention forward: kernel ") + kFwdKernels[kIndex].name + " is not compiled for " +
                             (fp.band ? "causal or windowed" : "non-causal") + " calls");
}

// The body of one instance translation unit (one dtype and head dim): the rows of kFwdKernels
// compiled for kHeadDim, dispatched on FwdParams::kernel.
// The e4m3 instances compile the fp8 rows only, the 16-bit instances the others (fwd_kernel_takes).
template <class Element, int kHeadDim, int... kIndex>
Status run_fwd_rows(const FwdParams& fp, Stream stream, std::integer_sequence<int, kIndex...>) {
  constexpr bool kFp8 = sizeof(Element) == 1;
  Status s = Status::unsupported("attention forward: kernel row " + std::to_string(fp.kernel) + " is not compiled for hdim " +
                                 std::to_string(kHeadDim) + (kFp8 ? " e4m3" : "") + " in this build");
  (void)((fwd_kernel_compiled(kIndex, kHeadDim) && fwd_kernel_takes(kIndex, kFp8) && fp.kernel == kIndex
              ? (s = [&] {
                   if constexpr (fwd_kernel_compiled(kIndex, kHeadDim) && fwd_kernel_takes(kIndex, kFp8))
                     return run_fwd_kernel<Element, kHeadDim, kIndex>(fp, stream);
                   else return Status();
                 }(),
                 true)
              : false) ||
         ...);
  return s;
}

template <class Element, int kHeadDim>
Status run_forward_kernels(const FwdParams& fp, Stream stream) {
  return run_fwd_rows<Element, kHeadDim>(fp, stream, std::make_integer_sequence<int, kFwdKernelCount>{});
}

}  // namespace hopattn::attention
