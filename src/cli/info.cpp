#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "attention/device/compiled_set.hpp"
#include "attention/experimental.hpp"
#include "cli/commands.hpp"
#include "common/cuda_check.hpp"

namespace hopattn::cli {

int run_info() {
  std::printf("hopattn %s\n", hopattn_version());
  std::string dims, types;
  for (int d : attention::compiled_head_dims()) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  for (hopattn_dtype_t t : attention::compiled_dtypes()) types += (types.empty() ? "" : ", ") + std::string(hopattn_dtype_name(t));
  const std::vector<experimental::KernelInfo> kernels = experimental::compiled_kernels();
  std::printf("compiled attention set: head dims {%s}, dtypes {%s}, %zu kernels, sm_90a (ABI %d)\n", dims.c_str(),
              types.c_str(), kernels.size(), int(hopattn_abi_version()));
  for (const experimental::KernelInfo& k : kernels)
    std::printf("  %-6s hdim %-3d %-34s %s\n", k.op.c_str(), k.hdim, k.name.c_str(), k.detail.c_str());
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("CUDA driver %d.%d, runtime %d.%d\n", driver / 1000, driver % 1000 / 10, runtime / 1000,
              runtime % 1000 / 10);
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::fprintf(stderr, "no CUDA device: %s\n", err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    return 2;
  }
  bool any_sm90 = false;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    HOPATTN_CUDA_CHECK(cudaGetDeviceProperties(&p, d));
    auto attr = [&](cudaDeviceAttr a) {
      int v = 0;
      cudaDeviceGetAttribute(&v, a, d);
      return v;
    };
    any_sm90 |= p.major == 9;
    std::printf("device %d: %s, sm_%d%d, %d SMs, SM clock %.0f MHz, memory clock %.0f MHz, bus %d bits\n", d,
                p.name, p.major, p.minor, p.multiProcessorCount, attr(cudaDevAttrClockRate) / 1e3,
                attr(cudaDevAttrMemoryClockRate) / 1e3, attr(cudaDevAttrGlobalMemoryBusWidth));
    std::printf("          memory %.1f GiB, L2 %.1f MiB, shared memory per block (opt-in) %d KiB\n",
                double(p.totalGlobalMem) / (1 << 30), attr(cudaDevAttrL2CacheSize) / double(1 << 20),
                attr(cudaDevAttrMaxSharedMemoryPerBlockOptin) / 1024);
  }
  if (!any_sm90) std::fprintf(stderr, "no sm_90 (Hopper) GPU: the kernels of this build cannot run here\n");
  return any_sm90 ? 0 : 2;
}

}  // namespace hopattn::cli
