// The forward defaults table: which registry row runs a call, from the head dim, the mask, the
// dtype, the query and key lengths and the GQA group. Same-run measurements on the H200 chose
// every row (the evidence column; the runs and the rows they beat are in docs/attention-ws.md
// and docs/decisions.md). Kept out of the kernel headers so that a change here recompiles one
// file. tests/host/test_kernel_registry.cpp checks that every row names a compiled kernel and that
// the table covers every call.
#include "attention/device/fwd_registry.hpp"

#include <iterator>

namespace hopattn::attention {
namespace {

constexpr int64_t kMax = kAnyLength;

// clang-format off
constexpr FwdDefaultRule kRules[] = {
  // FP8 (e4m3) first (the rows below take any dtype). hdim 128 and 64: the wider tiles from 4k keys
  // (hdim 64 non-causal from 1k), the 128 x 128 row below (H100 s10, 2026-12-07, one binary, 2
  // rounds: 192-key hdim 128 1.02-1.14x at 4k/16k, 0.82-0.99x at 1k; 192-row hdim 64 1.06-1.14x
  // non-causal 1k-16k, 1.08-1.11x causal 4k/16k, 0.95x causal 1k; sm90_fwd_config.hpp).
  {128, kAny, HOPATTN_DTYPE_E4M3, 1, kMax, 4096, kMax, 1, kAny, "ws_pingpong_persistent_128x192x2_e4m3", "s10 H100: 1.02-1.14x the 128-key row at 4k/16k"},
  {128, kAny, HOPATTN_DTYPE_E4M3, 1, kMax, 0, kMax, 1, kAny, "ws_pingpong_persistent_128x128x2_e4m3", "s10 H100: 1.01-1.22x the 192-key row at 1k"},
  {64, 0, HOPATTN_DTYPE_E4M3, 1, kMax, 1024, kMax, 1, kAny, "ws_pingpong_persistent_192x128x2_e4m3", "s10 H100: 1.06-1.14x the 128-row tile at 1k-16k"},
  {64, 1, HOPATTN_DTYPE_E4M3, 1, kMax, 4096, kMax, 1, kAny, "ws_pingpong_persistent_192x128x2_e4m3", "s10 H100: 1.08-1.11x at 4k/16k"},
  {64, kAny, HOPATTN_DTYPE_E4M3, 1, kMax, 0, kMax, 1, kAny, "ws_pingpong_persistent_128x128x2_e4m3", "s10 H100: 1.05x the 192-row tile causal at 1k"},
  {256, kAny, HOPATTN_DTYPE_E4M3, 1, kMax, 0, kMax, 1, kAny, "ws_pingpong_persistent_128x64x3_e4m3_qregs", "s12 H100: 1.05-1.075x the 2-stage row non-causal, 0.98-1.02x causal"},
  // Causal chunks of <= 128 queries (chunked prefill, speculative decoding through the forward
  // call): a few tiles per head, so the persistent grid idles most SMs; one CTA per tile with
  // ping-pong (r140, GQA 32:8, one round, ms against the previous default: hdim 64 1:77:4096
  // 0.0434 vs the FA2 kernel's 0.0518, 4:64:8192 0.0843 vs the persistent kernel's 0.1971; hdim
  // 128 1:77:4096 0.0525 vs 0.1002, 4:64:8192 0.1089 vs 0.2004; hdim 256 1:77:4096 0.0820 vs
  // 0.1656, 4:64:8192 0.1909 vs 0.3523). bench/records/retire-sweep-2026-12-03-r140.csv.
  {64,  1, kAny, 1, 128, 0, kMax,      1, kAny, "ws_pingpong_128x128x2",            "r140: 1.2-2.4x the previous default"},
  {128, 1, kAny, 1, 128, 0, kMax,      1, kAny, "ws_pingpong_128x192x2",            "r140: 1.84-1.93x the previous default"},
  {256, 1, kAny, 1, 128, 0, kMax,      1, kAny, "ws_pingpong_128x64x2",             "r140: 1.99-2.04x the previous default"},
  // hdim 64: the FA2-style kernel up to 8k causal / 2k non-causal keys; above, three consumer
  // warpgroups on the persistent grid (r68, r74, r75, r78). Causal with fewer than 2k queries
  // against >= 8k keys the FA2 kernel too (r140: 2:512:8192 0.1464 ms vs 0.1906 persistent).
  {64,  0, kAny, 1, 128, 0, kMax,      1, kAny, "ws_pingpong_128x128x2",            "r144: 1-128 q vs 4k 0.040 vs 0.049 ms"},
  {64,  0, kAny, 129, 2047, 0, kMax,   1, kAny, "fa2_128x128x2",                    "r144: 2:512:8192 0.147 vs 0.192 ms"},
  {128, 0, kAny, 1, 2047, 0, kMax,     1, kAny, "ws_pingpong_persistent_128x128x2", "r144: 4:64:8192 0.105 vs 0.113 ms"},
  {64,  1, kAny, 129, 2047, 8192, kMax, 1, kAny, "fa2_128x128x2",                   "r140: 2:512:8192 1.30x"},
  {64,  1, kAny, 1, kMax, 8192, kMax, 1, kAny, "ws_pingpong_persistent_192x128x2", "r78: 8k 1.140, 16k 1.150 x cuDNN"},
  {64,  1, kAny, 1, kMax, 0, 8191,    1, kAny, "fa2_128x128x2",                    "r68: lazy rescale, 1k-4k"},
  {64,  0, kAny, 1, kMax, 2048, kMax, 1, kAny, "ws_pingpong_persistent_192x128x2", "r75: 2k 1.025, 16k 1.065 x cuDNN"},
  {64,  0, kAny, 1, kMax, 0, 2047,    1, kAny, "fa2_128x128x2",                    "r75: 1k 0.990 vs 0.953"},
  // hdim 128: the persistent ping-pong kernel up to 12k causal / 8k non-causal keys, the
  // ping-pong kernel on 192-key tiles above (r68, r78).
  {128, 1, kAny, 1, kMax, 12289, kMax, 1, kAny, "ws_pingpong_128x192x2",            "r77: 16k 1.121 x cuDNN"},
  {128, 1, kAny, 1, kMax, 0, 12288,    1, kAny, "ws_pingpong_persistent_128x128x2", "r78: 4k 1.112, 8k 1.111 x cuDNN"},
  {128, 0, kAny, 1, kMax, 8192, kMax,  1, kAny, "ws_pingpong_128x192x2",            "r68"},
  {128, 0, kAny, 1, kMax, 0, 8191,     1, kAny, "ws_pingpong_persistent_128x128x2", "r68: 512 0.86 vs 0.76"},
  // hdim 256: the persistent kernel, except causal above 12k keys (r78, r116).
  {256, 1, kAny, 1, kMax, 12289, kMax, 1, kAny, "ws_pingpong_128x64x2",             "r78: 16k 1.177-1.209 x cuDNN"},
  {256, kAny, kAny, 1, kMax, 0, kMax,  1, kAny, "ws_pingpong_persistent_128x64x2",  "r78, r116"},
};
// clang-format on

bool in(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }
bool matches(int rule, int value) { return rule == kAny || rule == value; }

}  // namespace

const FwdDefaultRule* fwd_default_rules(int* count) {
  *count = int(std::size(kRules));
  return kRules;
}

const FwdDefaultRule* fwd_default_rule(int hdim, bool causal, hopattn_dtype_t dtype, int64_t seqlen_q,
                                       int64_t seqlen_k, int64_t group) {
  for (const FwdDefaultRule& r : kRules)
    if (r.hdim == hdim && matches(r.causal, causal ? 1 : 0) && matches(r.dtype, int(dtype)) &&
        in(seqlen_q, r.seqlen_q_min, r.seqlen_q_max) && in(seqlen_k, r.seqlen_k_min, r.seqlen_k_max) &&
        in(group, r.group_min, r.group_max == kAny ? kMax : r.group_max))
      return &r;
  return nullptr;
}

}  // namespace hopattn::attention
