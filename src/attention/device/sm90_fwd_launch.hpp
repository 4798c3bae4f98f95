// Host side of the forward kernels (fa2 and warp-specialized): TMA descriptors, grid, shared
// memory, launch, and the schedule switch. Included only by the generated instance files (one
// per dtype and head dim).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "attention/device/compiled_set.hpp"
#include "attention/fwd_params.hpp"
#include "attention/fwd_tile_order.hpp"
#include "attention/kernel/sm90_fwd_config.hpp"
#include "attention/kernel/sm90_fwd_fa2.hpp"
#include "attention/kernel/sm90_fwd_ws.hpp"
#include "common/cluster_occupancy.hpp"
#include "common/cuda_check.hpp"

namespace hopattn::attention {

// The value of an ablation switch of the environment, or nullptr when it is unset or empty.
inline const char* fwd_env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// How far a row's softmax maximum may lag in the FA2 and warp-specialized kernels before O is rescaled
// (log2 units; weights stay ≤ 2^this): 8 (FlashAttention-4's choice) unless
// HOPATTN_FWD_STALE_MAX_LOG2 says otherwise (clamped to [0, 16]; read once).
inline float fwd_stale_max_log2() {
  static const float v = [] {
    const char* e = fwd_env("HOPATTN_FWD_STALE_MAX_LOG2");
    return e != nullptr ? std::clamp(float(std::atof(e)), 0.0f, 16.0f) : 8.0f;
  }();
  return v;
}

// Whether the warp-specialized causal kernels narrow a warpgroup's last P·V to the keys its rows
// see (on unless HOPATTN_FWD_NARROW_PV=0; read once; for same-run ablations, scripts/ab-env.sh).
inline int fwd_narrow_pv() {
  static const int on = [] {
    const char* v = fwd_env("HOPATTN_FWD_NARROW_PV");
    return v != nullptr && std::atoi(v) == 0 ? 0 : 1;
  }();
  return on;
}

// Whether a warp-specialized causal kernel's warpgroup skips a tile's last KV block when none of
// its rows see it (on unless HOPATTN_FWD_SKIP_UNSEEN=0; read once; for same-run ablations).
inline int fwd_skip_unseen() {
  static const int on = [] {
    const char* v = fwd_env("HOPATTN_FWD_SKIP_UNSEEN");
    return v != nullptr && std::atoi(v) == 0 ? 0 : 1;
  }();
  return on;
}

// How the persistent kernels stage O where O has no tiles of its own (hdim 256, and hdim 128 on
// 176-key tiles; WsOStaging): HOPATTN_FWD_O_STAGING=0 (the default) the best that fits, 1 each
// warpgroup in its half of Q's space (the default of 2026-12-01 to 2026-12-02), 2 the CTA-wide
// staging in Q's space (before 2026-12-01). HOPATTN_FWD_Q_HALVES=0, the older switch, still means
// 2. Read once; for same-run ablations (scripts/ab-env.sh).
inline WsOStaging fwd_o_staging() {
  static const WsOStaging v = [] {
    if (const char* e = fwd_env("HOPATTN_FWD_O_STAGING")) return WsOStaging(std::clamp(std::atoi(e), 0, 2));
    const char* q = fwd_env("HOPATTN_FWD_Q_HALVES");
    return q != nullptr && std::atoi(q) == 0 ? WsOStaging::kCtaWide : WsOStaging::kBest;
  }();
  return v;
}

// A (seqlen, hdim, heads, batch) tensor as the TMA unit sees it (Traits::GmemLayout).
template <class Traits, class T>
auto fwd_gmem(T* ptr, int seqlen, int heads, int batch, int64_t seq_stride, int64_t head_stride, int64_t batch_stride) {
  using namespace cute;
  return make_tensor(make_gmem_ptr(ptr), make_layout(make_shape(seqlen, Traits::kHeadDim, heads, batch),
                                                     make_stride(seq_stride, _1{}, head_stride, batch_stride)));
}

template <class Traits>
typename Traits::Params make_fwd_params(const FwdParams& fp) {
  using namespace cute;
  using Element = typename Traits::Element;
  auto gmem = [&](auto* ptr, int seqlen, int heads, int64_t seq_stride, int64_t head_stride, int64_t batch_stride) {
    return fwd_gmem<Traits>(ptr, seqlen, heads, fp.batch, seq_stride, head_stride, batch_stride);
  };
  auto q = gmem(static_cast<Element const*>(fp.q), fp.seqlen_q, fp.heads_q, fp.q_seq_stride, fp.q_head_stride, fp.q_batch_stride);
  auto k = gmem(static_cast<Element const*>(fp.k), fp.seqlen_k, fp.heads_kv, fp.k_seq_stride, fp.k_head_stride, fp.k_batch_stride);
  auto v = gmem(static_cast<Element const*>(fp.v), fp.seqlen_k, fp.heads_kv, fp.v_seq_stride, fp.v_head_stride, fp.v_batch_stride);
  auto o = gmem(static_cast<Element*>(fp.o), fp.seqlen_q, fp.heads_q, fp.o_seq_stride, fp.o_head_stride, fp.o_batch_stride);
  typename Traits::Params p{
      make_tma_copy(SM90_TMA_LOAD{}, q, typename Traits::SmemLayoutQ{}),
      make_tma_copy(SM90_TMA_LOAD{}, k, take<0, 2>(typename Traits::SmemLayoutKV{})),
      make_tma_copy(SM90_TMA_LOAD{}, v, take<0, 2>(typename Traits::SmemLayoutKV{})),
      make_tma_copy(SM90_TMA_STORE{}, o, typename Traits::SmemLayoutQ{}),
      make_tma_copy(SM90_TMA_STORE{}, o, typename Traits::SmemLayoutOWarpgroup{}),
      make_tma_copy(SM90_TMA_LOAD{}, q, typename Traits::SmemLayoutOWarpgroup{}),
      fp.seqlen_q, fp.seqlen_k, fp.heads_q, fp.heads_kv, fp.batch,
      fp.softmax_scale, fp.lse, fp.lse_batch_stride, fp.lse_head_stride, fp.lse_seq_stride, fwd_narrow_pv(),
      fwd_stale_max_log2()};
  p.skip_unseen_blocks = fwd_skip_unseen();
  return p;
}

// Schedule 12's parameters: K and V also as multicast TMA copies, each CTA of a cluster loading
// half of a tile for both (WsClusterParams).
template <class Traits>
WsClusterParams<Traits> make_ws_cluster_params(const FwdParams& fp) {
  using namespace cute;
  using Element = typename Traits::Element;
  auto multicast = [&](const void* ptr, int64_t seq_stride, int64_t head_stride, int64_t batch_stride) {
    return make_tma_copy(SM90_TMA_LOAD_MULTICAST{},
                         fwd_gmem<Traits>(static_cast<Element const*>(ptr), fp.seqlen_k, fp.heads_kv, fp.batch,
                                          seq_stride, head_stride, batch_stride),
                         take<0, 2>(typename Traits::SmemLayoutKV{}), Int<2>{});
  };
  return {make_fwd_params<Traits>(fp), multicast(fp.k, fp.k_seq_stride, fp.k_head_stride, fp.k_batch_stride),
          multicast(fp.v, fp.v_seq_stride, fp.v_head_stride, fp.v_batch_stride)};
}

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
// HOPATTN_FWD_CAUSAL_GROUP=N forces at most N pairs per group at every length; 1 (or 0) is
// the per-pair order (for ablations; read once).
inline int fwd_causal_group(const FwdParams& fp, int element_bytes) {
  static const int forced = [] {
    const char* v = fwd_env("HOPATTN_FWD_CAUSAL_GROUP");
    return v != nullptr ? std::max(1, std::atoi(v)) : 0;
  }();
  if (forced > 0) return forced;
  if (fp.seqlen_k < 1024 || fp.seqlen_k > 4096) return 1;
  const int64_t kv_bytes = std::max<int64_t>(int64_t(fp.seqlen_k) * fp.hdim * 2 * element_bytes, 1);
  return int(std::clamp<int64_t>((int64_t(24) << 20) / kv_bytes, 1, 1 << 20));
}

// The persistent causal tile order (fwd_tile_order.hpp) as Params::causal_group: -1 the folded
// order (the default since 2026-12-01, twelfth session); N >= 0 the grouped zig-zag order with N
// pairs per group (0: one group of every pair, the order before 2026-12-01 r68).
// HOPATTN_FWD_PERSISTENT_ORDER=zigzag selects the grouped order with its exactly balanced group
// size, the largest that keeps a group's K and V within ~24 MB of L2; HOPATTN_FWD_PERSISTENT_GROUP=N
// the grouped order with N pairs per group (for ablations; read once).
inline int fwd_persistent_group(const FwdParams& fp, int m_blocks, int ctas, int element_bytes) {
  static const int forced = [] {
    const char* v = fwd_env("HOPATTN_FWD_PERSISTENT_GROUP");
    return v != nullptr ? std::max(0, std::atoi(v)) : -1;
  }();
  static const bool zigzag = [] {
    const char* v = fwd_env("HOPATTN_FWD_PERSISTENT_ORDER");
    return v != nullptr && std::string(v) == "zigzag";
  }();
  if (forced >= 0) return forced;
  if (!zigzag) return -1;
  const int64_t kv_bytes = int64_t(fp.seqlen_k) * fp.hdim * 2 * element_bytes;
  return fwd_persistent_causal_group(m_blocks, int64_t(fp.heads_q) * fp.batch, ctas, kv_bytes, int64_t(24) << 20);
}

// Launches `kernel` with one CTA per (Q tile, q-head, batch), or (persistent) one per SM up to
// the number of tiles.
// grouped_causal: a warp-specialized non-persistent kernel with a causal mask, whose scheduler
// takes the (group, m_blocks, groups) grid of fwd_causal_group's order.
template <class Traits, class Kernel>
Status launch_fwd(Kernel kernel, int threads, int shared_bytes, bool persistent, bool grouped_causal,
                  const FwdParams& fp, Stream stream) {
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
  if (persistent) {
    int device = 0, sms = 0;
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device));
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const int64_t tiles = int64_t(m_blocks) * fp.heads_q * fp.batch;
    if (tiles > INT32_MAX) return Status::unsupported("attention forward: more than 2^31 tiles");
    grid = dim3(unsigned(std::min<int64_t>(tiles, sms)), 1, 1);
    if (fp.causal) {
      params.causal_group = fwd_persistent_group(fp, m_blocks, int(grid.x), int(sizeof(typename Traits::Element)));
      if (params.causal_group < 0) {  // folded: a CTA per unit at most; positions must fit an int
        const int64_t pairs = int64_t(fp.heads_q) * fp.batch;
        if (folded_positions(m_blocks, pairs) + 2 * int64_t(sms) > INT32_MAX)
          return Status::unsupported("attention forward: more than 2^31 tiles");
        grid.x = unsigned(std::min<int64_t>(folded_units(m_blocks, pairs), sms));
      }
    }
  }
  kernel<<<grid, threads, shared_bytes, stream>>>(params);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status();
}

// Launches `kernel` (schedule 12) on clusters of two CTAs: one cluster per unit of two Q tiles
// (ws::FwdTileScheduler), at most as many as fit on the device at once (GPCs need not hold a whole
// number of clusters; queried once per device).
template <class Traits, class Kernel>
Status launch_fwd_cluster(Kernel kernel, int threads, int shared_bytes, const FwdParams& fp, Stream stream) {
  if (Status s = fwd_can_implement(fp, shared_bytes); !s.ok()) return s;
  const WsClusterParams<Traits> params = make_ws_cluster_params<Traits>(fp);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
  const int64_t m_pairs = ((fp.seqlen_q + Traits::kBlockM - 1) / Traits::kBlockM + 1) / 2;
  const int64_t units = m_pairs * fp.heads_q * fp.batch;
  if (units > INT32_MAX) return Status::unsupported("attention forward: more than 2^31 tiles");
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = 2, attribute[0].val.clusterDim.y = 1, attribute[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(2, 1, 1);
  config.blockDim = dim3(unsigned(threads), 1, 1);
  config.dynamicSmemBytes = size_t(shared_bytes);
  config.stream = static_cast<cudaStream_t>(stream);
  config.attrs = attribute;
  config.numAttrs = 1;
  const int clusters = max_active_clusters(reinterpret_cast<const void*>(kernel), 2, config);
  if (clusters < 0) return Status::cuda("attention forward: cudaOccupancyMaxActiveClusters failed for schedule 12");
  if (clusters == 0)
    return Status::unsupported("attention forward: schedule 12 needs clusters of two CTAs, and none fits this device");
  config.gridDim = dim3(unsigned(2 * std::min<int64_t>(units, clusters)), 1, 1);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaLaunchKernelEx(&config, kernel, params));
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status();
}

template <class Element, int kHeadDim, int kSchedule, class Mask>
Status run_fwd_schedule_mask(const FwdParams& fp, Stream stream) {
  constexpr FwdSchedule s = fwd_schedule(kHeadDim, kSchedule);
  using Traits = Fa2Traits<Element, kHeadDim, s.tile.block_m, s.tile.block_n, s.tile.stages>;
  if constexpr (s.kernel == FwdKernel::kFa2) {
    return launch_fwd<Traits>(&fa2_forward_kernel<Traits, Mask>, Traits::kThreads, Traits::kSharedBytes, false, false,
                              fp, stream);
  } else {
    constexpr bool kPersistent =
        s.kernel == FwdKernel::kPersistentPingPong || s.kernel == FwdKernel::kPersistentPingPongCluster;
    constexpr bool kPingPong = s.kernel != FwdKernel::kWarpSpecialized && s.kernel != FwdKernel::kWarpSpecializedSerial;
    constexpr bool kOverlap =
        s.kernel != FwdKernel::kWarpSpecializedSerial && s.kernel != FwdKernel::kWarpSpecializedPingPongSerial;
    if constexpr (s.kernel == FwdKernel::kPersistentPingPongCluster && !Mask::kCausal) {  // schedule 12
      using Storage = WsStorageOf<Traits, true>;
      return launch_fwd_cluster<Traits>(&ws_forward_kernel<Traits, Mask, true, true, WsOStaging::kBest, 2>,
                                        kWsThreads<Traits>, int(sizeof(Storage)), fp, stream);
    }
    auto launch = [&](auto staging) {
      constexpr WsOStaging kStaging = decltype(staging)::value;
      return launch_fwd<Traits>(&ws_forward_kernel<Traits, Mask, kPingPong, kPersistent, kStaging, 1, kOverlap>,
                                kWsThreads<Traits>,
                                int(sizeof(WsStorageOf<Traits, kPersistent, kStaging>)), kPersistent,
                                !kPersistent && Mask::kCausal, fp, stream);
    };
    using Best = std::integral_constant<WsOStaging, WsOStaging::kBest>;
    if constexpr (ws_q_halves<Traits, kPersistent>()) {  // the older stagings, for ablations
      const WsOStaging staging = fwd_o_staging();
      if (staging == WsOStaging::kCtaWide)
        return launch(std::integral_constant<WsOStaging, WsOStaging::kCtaWide>{});
      if constexpr (ws_shared_o<Traits, kPersistent>())
        if (staging == WsOStaging::kQHalves) return launch(std::integral_constant<WsOStaging, WsOStaging::kQHalves>{});
    }
    return launch(Best{});
  }
}

template <class Element, int kHeadDim, int kSchedule>
Status run_fwd_schedule(const FwdParams& fp, Stream stream) {
  return fp.causal ? run_fwd_schedule_mask<Element, kHeadDim, kSchedule, CausalMask>(fp, stream)
                   : run_fwd_schedule_mask<Element, kHeadDim, kSchedule, NoCausalMask>(fp, stream);
}

// Every schedule of one (dtype, head dim): the body of one instance translation unit. Schedule
// 0 is resolved to an explicit one for this call's mask and KV length.
template <class Element, int kHeadDim>
Status run_forward_schedules(const FwdParams& fp, Stream stream) {
  static_assert(kFwdSchedules == 15 && kScheduleCount == kFwdSchedules, "add the new schedule below");
  switch (fp.schedule) {
    case 0: {
      FwdParams resolved = fp;
      resolved.schedule = fwd_default_schedule(kHeadDim, fp.causal, fp.seqlen_k);
      return run_forward_schedules<Element, kHeadDim>(resolved, stream);
    }
    case 1: return run_fwd_schedule<Element, kHeadDim, 1>(fp, stream);
    case 2: return run_fwd_schedule<Element, kHeadDim, 2>(fp, stream);
    case 3: return run_fwd_schedule<Element, kHeadDim, 3>(fp, stream);
    case 4: return run_fwd_schedule<Element, kHeadDim, 4>(fp, stream);
    case 5: return run_fwd_schedule<Element, kHeadDim, 5>(fp, stream);
    case 6: return run_fwd_schedule<Element, kHeadDim, 6>(fp, stream);
    case 7: return run_fwd_schedule<Element, kHeadDim, 7>(fp, stream);
    case 8: return run_fwd_schedule<Element, kHeadDim, 8>(fp, stream);
    case 9: return run_fwd_schedule<Element, kHeadDim, 9>(fp, stream);
    case 10: return run_fwd_schedule<Element, kHeadDim, 10>(fp, stream);
    case 11: return run_fwd_schedule<Element, kHeadDim, 11>(fp, stream);
    case 12: return run_fwd_schedule<Element, kHeadDim, 12>(fp, stream);
    case 13: return run_fwd_schedule<Element, kHeadDim, 13>(fp, stream);
    case 14: return run_fwd_schedule<Element, kHeadDim, 14>(fp, stream);
  }
  return Status::invalid("schedule: " + std::to_string(fp.schedule) + " is out of range");
}

}  // namespace hopattn::attention
