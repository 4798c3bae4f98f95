// The decode kernel variants a caller may force (KvCacheArgs::variant, `hopattn bench --op decode
// --variants`): 0 lets plan_kvcache_attention choose, 1 .. kDecodeVariantMax name the compiled
// kernels (src/attention/kernel/sm90_decode.hpp, docs/decode.md). The one place for the range.
#pragma once

#include <string>

namespace hopattn::attention {

constexpr int kDecodeVariantMax = 22;

// "1, 2, ..., 21 or 22": the variants that can be forced, for argument errors.
inline std::string decode_variant_list() {
  std::string s;
  for (int v = 1; v <= kDecodeVariantMax; ++v) s += (v == 1 ? "" : v == kDecodeVariantMax ? " or " : ", ") + std::to_string(v);
  return s;
}

}  // namespace hopattn::attention
