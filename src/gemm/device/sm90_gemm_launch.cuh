// The only place GEMM kernels are launched: the __global__ entry, the shared-memory attribute,
// and the GemmInstance description of one kernel type. Included by the generated instance files.
#pragma once

#include <string>

#include <cuda_runtime.h>

#include "common/cluster_occupancy.hpp"
#include "common/cuda_check.hpp"
#include "gemm/device/gemm_registry.hpp"
#include "gemm/kernel/sm90_gemm_config.hpp"

namespace hopattn::gemm {

// minBlocks = 1 gives the kernel a register cap at entry (65536 / threads), which setmaxnreg
// needs to take effect.
template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads, 1) sm90_gemm_kernel(const __grid_constant__ typename Kernel::Params params) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
  extern __shared__ __align__(1024) char smem[];  // 1024: the 128-byte swizzle's period
  Kernel{}(params, smem);
#endif
}

template <class Kernel>
Status launch_gemm(const GemmProblem& problem, Stream stream) {
  typename Kernel::Params params = Kernel::to_params(problem);
  constexpr int kSmem = int(sizeof(typename Kernel::SharedStorage));
  constexpr int kCluster = Kernel::kCfg.kClusterM * Kernel::kCfg.kClusterN;
  // Per device and cheap: set on every launch so that a second GPU works too.
  HOPATTN_RETURN_IF_CUDA_ERROR(
      cudaFuncSetAttribute(sm90_gemm_kernel<Kernel>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  if constexpr (Kernel::kCfg.kSplitKCluster) {  // cluster size chosen per problem (1 to 4)
    cudaLaunchConfig_t config{};
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.y = 1, attribute[0].val.clusterDim.z = 1;
    config.blockDim = dim3(Kernel::kThreads, 1, 1);
    config.dynamicSmemBytes = kSmem;
    config.stream = static_cast<cudaStream_t>(stream);
    config.attrs = attribute;
    config.numAttrs = 1;
    // The largest split whose clusters are all resident at once (per device, cached).
    int splits = 1;
    for (int s = Kernel::kMaxSplits; s > 1; --s) {
      if (!Kernel::splits_fit(params, s)) continue;
      const int max_clusters =
          max_active_clusters(reinterpret_cast<const void*>(&sm90_gemm_kernel<Kernel>), s, config);
      if (max_clusters < 0) return Status::cuda("split_k: cudaOccupancyMaxActiveClusters failed for a cluster of " + std::to_string(s));
      if (Kernel::tiles(params) <= max_clusters) {
        splits = s;
        break;
      }
    }
    Kernel::set_splits(params, splits);
    attribute[0].val.clusterDim.x = unsigned(splits);
    config.gridDim = Kernel::grid(params);
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaLaunchKernelEx(&config, sm90_gemm_kernel<Kernel>, params));
  } else if constexpr (kCluster == 1) {
    sm90_gemm_kernel<Kernel><<<Kernel::grid(params), Kernel::kThreads, kSmem, stream>>>(params);
  } else {
    cudaLaunchConfig_t config{};
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = kCluster, attribute[0].val.clusterDim.y = 1, attribute[0].val.clusterDim.z = 1;
    config.blockDim = dim3(Kernel::kThreads, 1, 1);
    config.dynamicSmemBytes = kSmem;
    config.stream = static_cast<cudaStream_t>(stream);
    config.attrs = attribute;
    config.numAttrs = 1;
    // A persistent grid should not exceed the clusters that fit at once (GPCs need not hold a
    // whole number of clusters, so this can be fewer than SMs / kCluster).
    const int max_clusters = max_active_clusters(reinterpret_cast<const void*>(&sm90_gemm_kernel<Kernel>), kCluster, config);
    if (max_clusters < 0) return Status::cuda("gemm: cudaOccupancyMaxActiveClusters failed for a cluster of " + std::to_string(kCluster));
    Kernel::limit_clusters(params, max_clusters);
    config.gridDim = Kernel::grid(params);
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaLaunchKernelEx(&config, sm90_gemm_kernel<Kernel>, params));
  }
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status();
}

template <class Kernel>
GemmInstance describe_instance(hopattn_gemm_variant_t variant, hopattn_dtype_t dtype, Major major_a, Major major_b,
                               const char* name) {
  constexpr TileConfig cfg = Kernel::kCfg;
  const int tiles_per_cta = cfg.kConsumerWarpgroups / cfg.kMmaWarpgroups;
  return GemmInstance{variant, dtype, major_a, major_b, name, int(sizeof(typename Kernel::SharedStorage)),
                      cfg.kBlockM, cfg.kBlockN, tiles_per_cta, cfg.kTmaStoreD, &launch_gemm<Kernel>};
}

}  // namespace hopattn::gemm
