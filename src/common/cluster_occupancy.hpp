// Clusters of a kernel that fit on the current device at once (cudaOccupancyMaxActiveClusters),
// queried once per (kernel, device, cluster size) and cached: the GEMM's cluster launches size
// their persistent grids with it.
#pragma once

#include <cuda_runtime.h>

#include <mutex>
#include <vector>

namespace hopattn {

// `config` gives the block size, dynamic shared memory and stream of the launch (its grid and
// attributes are replaced); returns -1 (and clears the CUDA error) if the query fails.
inline int max_active_clusters(const void* kernel, int cluster_size, cudaLaunchConfig_t config) {
  struct Entry {
    const void* kernel;
    int device, size, clusters;
  };
  static std::mutex mutex;
  static std::vector<Entry> cache;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const Entry& e : cache)
      if (e.kernel == kernel && e.device == device && e.size == cluster_size) return e.clusters;
  }
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = unsigned(cluster_size), attribute[0].val.clusterDim.y = 1;
  attribute[0].val.clusterDim.z = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  config.gridDim = dim3(unsigned(cluster_size), 1, 1);
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  std::lock_guard<std::mutex> lock(mutex);
  cache.push_back({kernel, device, cluster_size, clusters});
  return clusters;
}

}  // namespace hopattn
