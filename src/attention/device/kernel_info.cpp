// The compiled kernels of both registries, by name, for `hopattn info` and the bench.
#include <string>
#include <vector>

#include "attention/device/compiled_set.hpp"
#include "attention/device/decode_registry.hpp"
#include "attention/device/fwd_registry.hpp"
#include "attention/experimental.hpp"
#include "attention/kernel/sm90_fwd_config.hpp"

namespace hopattn::experimental {
namespace {

const char* family_name(attention::FwdKernel k) {
  switch (k) {
    case attention::FwdKernel::kFa2: return "FA2-style, every warpgroup computes";
    case attention::FwdKernel::kWarpSpecialized: return "warp-specialized (producer warp), no ping-pong";
    case attention::FwdKernel::kWarpSpecializedPingPong: return "warp-specialized, ping-pong";
    case attention::FwdKernel::kPersistentPingPong: return "warp-specialized, ping-pong, persistent";
    case attention::FwdKernel::kWarpSpecializedSerial: return "warp-specialized, no overlap (ablation)";
    case attention::FwdKernel::kWarpSpecializedPingPongSerial: return "warp-specialized, ping-pong, no overlap (ablation)";
  }
  return "";
}

}  // namespace

std::vector<KernelInfo> compiled_kernels() {
  std::vector<KernelInfo> out;
  for (int hdim : {64, 128, 256}) {
    for (int i = 0; i < attention::kFwdKernelCount; ++i) {
      const attention::FwdKernelSpec& k = attention::kFwdKernels[i];
      if (attention::fwd_kernel_index(k.name, hdim) != i) continue;  // the 16-bit or the e4m3 set of this build
      out.push_back({"fwd", k.name, hdim,
                     std::string(k.fp8 ? "e4m3 inputs, bf16 output: " : "") + family_name(k.kernel) + ", " +
                         std::to_string(k.tile.warpgroups) + " consumer warpgroups" +
                         (attention::fwd_kernel_compiled(i, hdim, false) ? "" : ", causal only") +
                         (attention::fwd_kernel_compiled(i, hdim, true) ? "" : ", non-causal only") +
                         (k.ablation ? " [ablation]" : ""),
                     k.fp8});
    }
    bool decode_dim = false;
    for (int d : attention::compiled_head_dims()) decode_dim |= d == hdim;
    if (!decode_dim) continue;
    for (int i = 0; i < attention::kDecodeKernelCount; ++i) {
      const attention::DecodeKernelSpec& k = attention::kDecodeKernels[i];
      if ((k.hdims & attention::decode_hdim_bit(hdim)) == 0) continue;
      out.push_back({"decode", k.name, hdim,
                     std::string(k.cache == attention::DecodeCache::kInt8 ? "int8 cache: " : "16-bit cache: ") + k.detail});
    }
  }
  return out;
}

}  // namespace hopattn::experimental
