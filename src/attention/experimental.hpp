// Internal: what the benchmark and the tests may change that a user cannot. Not installed, not
// part of the C ABI; the library's own calls use the defaults (Overrides{}). Every experiment is a
// field here, passed explicitly per call: the library reads no environment variable.
#pragma once

#include <string>
#include <vector>

#include "hopattn/hopattn.hpp"
#include "hopattn/kvcache.hpp"

namespace hopattn::experimental {

struct Overrides {
  // Forward attention.
  std::string fwd_kernel;           // a registry name (`hopattn info`); empty: the defaults table
  float fwd_stale_max_log2 = 8.0f;  // how far a row maximum may lag before O is rescaled (log2)
  bool fwd_narrow_pv = true;        // causal ws kernels: the last P·V only over the keys a warpgroup sees
  bool fwd_skip_unseen = true;      // causal ws kernels: skip a KV block no row of a warpgroup sees
  int fwd_causal_group = 0;         // non-persistent causal: pairs per group (0: by L2 size, 1: per pair)
  // Persistent band calls' tile order: -2 (or below) the library's choice (folded; a window bounded
  // on both sides: grouped by windowed_persistent_group), -1 folded, N >= 0 grouped zig-zag of N pairs.
  int fwd_persistent_group = -2;
  bool fwd_varlen_dynamic = true;   // varlen: the list's units claimed dynamically (else dealt statically)
  bool fwd_varlen_pdl = true;       // varlen: the attention kernel a programmatic dependent of the prepare kernel

  // Attention over a KV cache.
  std::string decode_kernel;  // a registry name; empty: the defaults table
  // Which path runs a KV-cache call: "" the plan's choice (decode_defaults.cpp, kChunkRules),
  // "decode" the decode split kernels (decode_kernel picks one), "fwd" the chunk path (the
  // forward's options kernel with split-KV; a call it cannot take is refused with the reason).
  std::string decode_path;
  // The chunk path's PackGQA (docs/chunk-packgqa-plan.md): its plan may pack a GQA group into the
  // Q tiles' rows where the chunk rule that takes the call is a packed one (decode_defaults.cpp,
  // kChunkRules: q_len 32-95 from 8192 positions), or pack_gqa 1 asks (args.pack_gqa and the
  // row-fill rule, kvcache_chunk_plan.cpp chunk_pack_gqa, decide). On by default since the packed
  // path ran every configuration the public call sends it (ChunkPathPackedConfigurations: fp16,
  // groups 2-64, strided q, no LSE, -inf sinks, heuristic splits; H100, 2026-12-07); false: the
  // chunk path never packs (the A/B's unpacked arm).
  bool chunk_pack_gqa = true;
  // The chunk path over a paged cache of pages of at least its KV tile (128 tokens): on by default
  // since its GPU tests passed at every compiled dtype and head dim (ChunkPathPaged*, H100,
  // 2026-12-07; paged chunks 1.25-1.6x faster on the forward kernel than on the decode kernels);
  // false: paged chunks run the decode kernels (the A/B's other arm).
  bool chunk_paged = true;
  bool decode_combine_pdl = true;  // the split-KV combine a programmatic dependent of the kernel before it
  bool decode_split_pdl = true;    // the 16-bit split kernel a programmatic dependent of the kernel before it
};

// The public calls with overrides. With Overrides{} they are the public calls.
Status attention_forward(const AttentionForwardArgs& args, Stream stream, const Overrides& overrides);
Status kvcache_attention(const KvCacheArgs& args, Stream stream, const Overrides& overrides);
Status check_kvcache_attention(const KvCacheArgs& args, const DeviceContext& context, int sm_count,
                               const Overrides& overrides);
KvCachePlan plan_kvcache_attention(const KvCacheArgs& args, int sm_count, const Overrides& overrides);

// The kernel a forward call with these arguments runs (the defaults table, or overrides.fwd_kernel
// when set): its registry name, or an error naming what is not compiled.
Status forward_kernel_name(const AttentionForwardArgs& args, const Overrides& overrides, std::string* name);

// A registry row as `hopattn info` and `hopattn bench --kernels` show it.
struct KernelInfo {
  std::string op;    // "fwd" or "decode"
  std::string name;  // e.g. "ws_pingpong_persistent_128x128x2"
  int hdim;
  std::string detail;  // family, tile, cache type, CTAs per SM, ...
  bool fp8 = false;    // a forward kernel of e4m3 inputs (FwdKernelSpec::fp8)
};
// Every compiled row (both ops), in registry order.
std::vector<KernelInfo> compiled_kernels();

}  // namespace hopattn::experimental
