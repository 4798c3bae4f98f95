// The kernel registries and their defaults tables (no GPU): every default names a kernel this
// build compiled, the tables cover every call (head dim, mask, dtype, lengths, GQA group, cache
// type), and every compiled kernel but the ablation's is some call's default (no loser compiled).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "attention/device/compiled_set.hpp"
#include "attention/device/decode_registry.hpp"
#include "attention/device/fwd_registry.hpp"
#include "attention/experimental.hpp"
#include "attention/kernel/sm90_fwd_config.hpp"

namespace hopattn::attention {
namespace {

const int64_t kLengths[] = {1, 2, 16, 17, 64, 77, 113, 127, 128, 129, 1000, 2047, 2048, 4096,
                            8191, 8192, 12288, 12289, 16384, 100000, 1 << 20, INT32_MAX};
const int64_t kGroups[] = {1, 2, 4, 5, 7, 8, 16, 64};

TEST(FwdRegistry, EveryDefaultNamesACompiledKernel) {
  int count = 0;
  const FwdDefaultRule* rules = fwd_default_rules(&count);
  ASSERT_GT(count, 0);
  for (int i = 0; i < count; ++i) {
    bool dim_compiled = false;  // e4m3 rules: the FP8 head dims (HOPATTN_FP8_HEAD_DIMS)
    for (int d : rules[i].dtype == HOPATTN_DTYPE_E4M3 ? compiled_fp8_head_dims() : compiled_head_dims())
      dim_compiled |= d == rules[i].hdim;
    if (!dim_compiled) continue;  // a build of fewer head dims
    EXPECT_GE(fwd_kernel_index(rules[i].kernel, rules[i].hdim), 0)
        << "rule " << i << " (hdim " << rules[i].hdim << ") names '" << rules[i].kernel << "', not compiled";
    EXPECT_FALSE(kFwdKernels[fwd_kernel_index(rules[i].kernel, rules[i].hdim)].ablation)
        << "rule " << i << ": a default must not need -DHOPATTN_BUILD_ABLATIONS";
    EXPECT_LE(rules[i].seqlen_q_min, rules[i].seqlen_q_max) << "rule " << i;
    EXPECT_LE(rules[i].seqlen_k_min, rules[i].seqlen_k_max) << "rule " << i;
    EXPECT_NE(std::string(rules[i].evidence), "") << "rule " << i << " cites no measurement";
  }
}

// The (head dim, dtype) pairs this build compiled forward kernels for: the 16-bit types at
// HOPATTN_HEAD_DIMS, e4m3 at HOPATTN_FP8_HEAD_DIMS.
std::vector<std::pair<int, hopattn_dtype_t>> compiled_configs() {
  std::vector<std::pair<int, hopattn_dtype_t>> out;
  for (int hdim : compiled_head_dims())
    for (hopattn_dtype_t dtype : compiled_dtypes()) out.push_back({hdim, dtype});
  for (int hdim : compiled_fp8_head_dims()) out.push_back({hdim, HOPATTN_DTYPE_E4M3});
  return out;
}

TEST(FwdRegistry, DefaultsCoverEveryCall) {
  std::set<std::string> used;
  for (const auto& [hdim, dtype] : compiled_configs())
    for (int causal = 0; causal < 2; ++causal)
      for (int64_t sq : kLengths)
        for (int64_t sk : kLengths)
          for (int64_t group : kGroups) {
            const FwdDefaultRule* r = fwd_default_rule(hdim, causal != 0, dtype, sq, sk, group);
            ASSERT_NE(r, nullptr) << "no default for hdim " << hdim << " " << hopattn_dtype_name(dtype)
                                  << " causal " << causal << " sq " << sq << " sk " << sk << " group " << group;
            const int index = fwd_kernel_index(r->kernel, hdim);
            ASSERT_GE(index, 0) << r->kernel;
            ASSERT_EQ(kFwdKernels[index].fp8, dtype == HOPATTN_DTYPE_E4M3)
                << r->kernel << " is the default of a " << hopattn_dtype_name(dtype) << " call at hdim " << hdim;
            ASSERT_TRUE(fwd_kernel_compiled(index, hdim, causal != 0))
                << r->kernel << " at hdim " << hdim << " is the default of a " << (causal ? "causal" : "non-causal")
                << " call but is not compiled for that mask";
            used.insert(std::to_string(hdim) + ":" + r->kernel + ":" + std::to_string(causal));
          }
  // Every kernel compiled for a mask (but the ablation's) is the default of some call with it:
  // no instance is compiled for nothing.
  for (int hdim : {64, 128, 256})
    for (int i = 0; i < kFwdKernelCount; ++i)
      for (int causal = 0; causal < 2; ++causal)
        if (fwd_kernel_index(kFwdKernels[i].name, hdim) == i && fwd_kernel_compiled(i, hdim, causal != 0) &&
            !kFwdKernels[i].ablation && !kFwdBuildAblations &&
            !kFwdKernels[i].options) {  // the options row runs every call with options (pick_forward_kernel)
          EXPECT_TRUE(used.count(std::to_string(hdim) + ":" + kFwdKernels[i].name + ":" + std::to_string(causal)))
              << kFwdKernels[i].name << " at hdim " << hdim << " is compiled for " << (causal ? "causal" : "non-causal")
              << " calls but no default runs it";
        }
}

// One row per compiled head dim takes the options (window, softcap, sinks), compiled for the band
// (causal) mask only: attention_forward runs every call with options there.
TEST(FwdRegistry, OneOptionsRowPerHeadDim) {
  for (int hdim : compiled_head_dims()) {
    int rows = 0;
    for (int i = 0; i < kFwdKernelCount; ++i)
      if (kFwdKernels[i].options && fwd_kernel_compiled(i, hdim)) {
        ++rows;
        EXPECT_TRUE(fwd_kernel_compiled(i, hdim, true)) << kFwdKernels[i].name;
        EXPECT_EQ(kFwdKernels[i].kernel, FwdKernel::kPersistentPingPong) << kFwdKernels[i].name;
      }
    EXPECT_EQ(rows, 1) << "hdim " << hdim;
  }
}

// The e4m3 rows (FwdKernelSpec::fp8): the persistent ws kernel (O staged apart from Q's e4m3 tile),
// no options (padded batches without window, softcap or sinks), tiles the V transpose takes.
// The e4m3 defaults by length (fwd_defaults.cpp, H100 s10): the wider tiles from 4096 keys at hdim
// 128 and hdim 64 causal, from 1024 at hdim 64 non-causal; the 128 x 128 row below; hdim 256's one row.
TEST(FwdRegistry, Fp8DefaultsByLength) {
  struct Case {
    int hdim;
    bool causal;
    int64_t seqlen_k;
    const char* kernel;
  };
  const Case cases[] = {
      {128, false, 4096, "ws_pingpong_persistent_128x192x2_e4m3"}, {128, true, 16384, "ws_pingpong_persistent_128x192x2_e4m3"},
      {128, false, 4095, "ws_pingpong_persistent_128x128x2_e4m3"}, {128, true, 1024, "ws_pingpong_persistent_128x128x2_e4m3"},
      {64, false, 1024, "ws_pingpong_persistent_192x128x2_e4m3"},  {64, false, 1023, "ws_pingpong_persistent_128x128x2_e4m3"},
      {64, true, 4096, "ws_pingpong_persistent_192x128x2_e4m3"},   {64, true, 4095, "ws_pingpong_persistent_128x128x2_e4m3"},
      {256, false, 16384, "ws_pingpong_persistent_128x64x3_e4m3_qregs"}, {256, true, 512, "ws_pingpong_persistent_128x64x3_e4m3_qregs"},
  };
  for (const Case& c : cases) {
    const FwdDefaultRule* r = fwd_default_rule(c.hdim, c.causal, HOPATTN_DTYPE_E4M3, 1000, c.seqlen_k, 4);
    ASSERT_NE(r, nullptr) << c.hdim << " " << c.seqlen_k;
    EXPECT_STREQ(r->kernel, c.kernel) << "hdim " << c.hdim << " causal " << c.causal << " seqlen_k " << c.seqlen_k;
  }
}

TEST(FwdRegistry, Fp8Rows) {
  int rows = 0, kept = 0;
  for (int i = 0; i < kFwdKernelCount; ++i) {
    const FwdKernelSpec& k = kFwdKernels[i];
    if (!k.fp8) continue;
    ++rows;
    EXPECT_EQ(k.kernel, FwdKernel::kPersistentPingPong) << k.name;
    EXPECT_FALSE(k.options) << k.name;
    if (!k.ablation) ++kept;  // an ablation row: a candidate compiled with -DHOPATTN_BUILD_ABLATIONS=ON
    EXPECT_EQ(k.tile.block_n % 64, 0) << k.name;  // V^T rows of 64 or 128 keys (64- or 128-byte swizzle)
    EXPECT_NE(std::string(k.name).find("_e4m3"), std::string::npos) << k.name;
  }
  EXPECT_GE(rows, 1);
  EXPECT_GE(kept, 1);
  // A 16-bit call at an e4m3 row's head dim never gets it, and the e4m3 call always does.
  for (int hdim : compiled_fp8_head_dims()) {
    const FwdDefaultRule* r = fwd_default_rule(hdim, true, HOPATTN_DTYPE_E4M3, 1000, 1000, 4);
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(kFwdKernels[fwd_kernel_index(r->kernel, hdim)].fp8) << r->kernel;
    EXPECT_TRUE(fwd_config_compiled(hdim, HOPATTN_DTYPE_E4M3));
  }
  EXPECT_FALSE(fwd_config_compiled(96, HOPATTN_DTYPE_E4M3));
}

TEST(FwdRegistry, NamesAreUniquePerHeadDim) {
  for (int i = 0; i < kFwdKernelCount; ++i)
    for (int j = i + 1; j < kFwdKernelCount; ++j)
      EXPECT_FALSE(kFwdKernels[i].hdim == kFwdKernels[j].hdim && std::string(kFwdKernels[i].name) == kFwdKernels[j].name)
          << kFwdKernels[i].name << " twice at hdim " << kFwdKernels[i].hdim;
  EXPECT_EQ(fwd_kernel_index("no_such_kernel", 128), -1);
  EXPECT_EQ(fwd_kernel_index("ws_pingpong_128x192x2", 64), -1);  // a row of another head dim
}

// The chunk path's rules (decode_defaults.cpp, kChunkRules): each names head dims whose 16-bit
// forward options row (the kernel the chunk path runs, with split-KV) exists in the registry and,
// where the head dim is compiled, in this build; rows take at least 64 queries (half a 128-row tile).
TEST(DecodeChunkRules, EveryRuleHasAForwardOptionsRow) {
  int count = 0;
  const attention::DecodeChunkRule* rules = attention::decode_chunk_rules(&count);
  ASSERT_GT(count, 0);
  for (int r = 0; r < count; ++r) {
    // q_len 32 at least (a packed rule; an unpacked one from 64: below, the decode kernels win).
    EXPECT_GE(rules[r].seqlen_q_min, rules[r].packed_only ? 32 : 64) << "chunk rule " << r;
    EXPECT_NE(std::string(rules[r].evidence), "") << "chunk rule " << r << ": no evidence column";
    for (int hdim : {64, 128, 256}) {
      if ((rules[r].hdims & attention::decode_hdim_bit(hdim)) == 0) continue;
      bool in_registry = false, compiled = false;
      for (int i = 0; i < attention::kFwdKernelCount; ++i) {
        const attention::FwdKernelSpec& k = attention::kFwdKernels[i];
        if (!k.options || k.fp8 || k.hdim != hdim) continue;
        in_registry = true;
        compiled |= attention::fwd_kernel_compiled(i, hdim, true);
      }
      EXPECT_TRUE(in_registry) << "chunk rule " << r << ": no options row at hdim " << hdim;
      bool hdim_built = false;
      for (int d : attention::compiled_head_dims()) hdim_built |= d == hdim;
      if (hdim_built) EXPECT_TRUE(compiled) << "chunk rule " << r << ": the options row of hdim " << hdim << " is not compiled";
    }
  }
  for (bool packed : {false, true}) {
    EXPECT_EQ(attention::decode_chunk_rule(128, packed ? 31 : 63, 1 << 20, packed, false), nullptr);
    EXPECT_NE(attention::decode_chunk_rule(128, 64, 16384, packed, false), nullptr);
    EXPECT_NE(attention::decode_chunk_rule(128, 128, 2048, packed, false), nullptr);
    EXPECT_EQ(attention::decode_chunk_rule(128, 128, 2047, packed, false), nullptr);
    EXPECT_EQ(attention::decode_chunk_rule(64, 4096, 32768, packed, false), nullptr);  // hdim 64 / 256: the decode kernels
    EXPECT_EQ(attention::decode_chunk_rule(256, 4096, 32768, packed, false), nullptr);
  }
  // q_len 96 from 4096 positions, packed or not (unpacked: the packed rule comes after it).
  EXPECT_NE(attention::decode_chunk_rule(128, 96, 4096, false, false), nullptr);
  EXPECT_EQ(attention::decode_chunk_rule(128, 95, 8191, false, false), nullptr);
  EXPECT_EQ(attention::decode_chunk_rule(128, 96, 4095, false, false), nullptr);
  EXPECT_FALSE(attention::decode_chunk_rule(128, 96, 8192, true, false)->packed_only);
  // q_len 32-95 from 8192 positions when the chunk path packs the call's GQA groups (a packed_only
  // rule); q_len 64 from 16384 when not.
  EXPECT_EQ(attention::decode_chunk_rule(128, 64, 16383, false, false), nullptr);
  EXPECT_EQ(attention::decode_chunk_rule(128, 63, 1 << 20, false, false), nullptr);
  EXPECT_TRUE(attention::decode_chunk_rule(128, 32, 8192, true, false)->packed_only);
  EXPECT_TRUE(attention::decode_chunk_rule(128, 95, 8192, true, false)->packed_only);
  EXPECT_NE(attention::decode_chunk_rule(128, 64, 8192, true, false), nullptr);
  EXPECT_EQ(attention::decode_chunk_rule(128, 64, 8191, true, false), nullptr);
  EXPECT_EQ(attention::decode_chunk_rule(128, 31, 8192, true, false), nullptr);
  // Paged caches: the rules whose margin over the decode kernels covers the paged view's cost
  // (q_len 96 and 128 unpacked; q_len 64-95 packed from 8192 positions); q_len 32-63 packed and the
  // thin unpacked q_len-64 rule keep the decode kernels.
  EXPECT_NE(attention::decode_chunk_rule(128, 128, 2048, false, true), nullptr);
  EXPECT_NE(attention::decode_chunk_rule(128, 96, 4096, false, true), nullptr);
  EXPECT_EQ(attention::decode_chunk_rule(128, 64, 1 << 20, false, true), nullptr);
  EXPECT_EQ(attention::decode_chunk_rule(128, 32, 1 << 20, true, true), nullptr);
  EXPECT_EQ(attention::decode_chunk_rule(128, 63, 1 << 20, true, true), nullptr);
  EXPECT_TRUE(attention::decode_chunk_rule(128, 64, 8192, true, true)->packed_only);
  EXPECT_TRUE(attention::decode_chunk_rule(128, 95, 1 << 20, true, true)->packed_only);
  EXPECT_EQ(attention::decode_chunk_rule(128, 64, 8191, true, true), nullptr);
  // A packed paged rule starts at q_len 64 (q_len 32 packed over pages: 0.96-1.05x the decode kernels).
  for (int r = 0; r < count; ++r)
    if (rules[r].paged && rules[r].packed_only)
      EXPECT_GE(rules[r].seqlen_q_min, 64) << "chunk rule " << r << ": paged packed q_len 32 ran 0.96-1.05x the decode kernels";
}

TEST(DecodeRegistry, EveryDefaultNamesAKernelOfItsCacheAndHeadDims) {
  int count = 0;
  const DecodeDefaultRule* rules = decode_default_rules(&count);
  ASSERT_GT(count, 0);
  for (int i = 0; i < count; ++i)
    for (int hdim : {64, 128, 256})
      if (rules[i].hdims & decode_hdim_bit(hdim)) {
        EXPECT_GE(decode_kernel_index(rules[i].kernel, rules[i].cache, hdim), 0)
            << "rule " << i << " names '" << rules[i].kernel << "', which does not exist at hdim " << hdim;
      }
}

TEST(DecodeRegistry, DefaultsCoverEveryCall) {
  std::set<std::string> used;
  for (DecodeCache cache : {DecodeCache::k16Bit, DecodeCache::kInt8})
    for (int hdim : {64, 128, 256})
      for (int sms : {1, 78, 114, 132})
        for (int64_t rows : {1, 2, 8, 9, 16, 17, 64, 65, 128, 1000, 100000})
          for (int64_t tiles : {1, 2, 32, 33, 77, 131, 132, 197, 198, 199, 395, 396, 397, 10000, 1 << 30})
            for (int page : {0, 16, 32, 64, 128, 256})  // 0: a contiguous cache
              for (bool options : {false, true}) {
                const DecodeDefaultRule* r = decode_default_rule(cache, hdim, rows, tiles, sms, page, options);
                ASSERT_NE(r, nullptr) << "no default for cache " << int(cache) << " hdim " << hdim << " rows " << rows
                                      << " tiles " << tiles << " sms " << sms << " page " << page << " options "
                                      << options;
                const int k = decode_kernel_index(r->kernel, cache, hdim);
                ASSERT_GE(k, 0) << r->kernel << " at hdim " << hdim;
                // The row takes what its rule sends it (the plan would refuse it otherwise).
                const DecodeKernelSpec& spec = kDecodeKernels[k];
                EXPECT_TRUE(spec.max_rows == 0 || rows <= spec.max_rows) << r->kernel << " rows " << rows;
                EXPECT_FALSE((spec.limits & kDecodeNoPages) && page > 0) << r->kernel << " page " << page;
                EXPECT_FALSE((spec.limits & kDecodeNoOptions) && options) << r->kernel << " with options";
                used.insert(std::string(r->kernel) + ":" + std::to_string(hdim));
              }
  // Every (kernel, head dim) compiled is the default of some call: no instance for nothing (the
  // int8 options row: of every int8 call with options, KvCacheOptionsChecks.Int8CachesRunTheOptionsRow;
  // an experiment, kDecodeNamedOnly: of the calls forced onto it, DefaultsStayWithinTheirRowsLimits).
  used.insert(std::string(kInt8OptionsKernel) + ":64");
  used.insert(std::string(kInt8OptionsKernel) + ":128");
  used.insert(std::string(kInt8OptionsKernel) + ":256");
  for (int i = 0; i < kDecodeKernelCount; ++i)
    for (int hdim : {64, 128, 256})
      if ((kDecodeKernels[i].hdims & decode_hdim_bit(hdim)) && !(kDecodeKernels[i].limits & kDecodeNamedOnly)) {
        EXPECT_TRUE(used.count(std::string(kDecodeKernels[i].name) + ":" + std::to_string(hdim)))
            << kDecodeKernels[i].name << " is compiled at hdim " << hdim << " but no default runs it there";
      }
}

// A page-size row applies to paged caches with smaller pages only: contiguous caches and pages of
// at least its bound get the rows below it.
TEST(DecodeRegistry, SmallPagesOfA16BitCacheTakeTheKernelWhoseTileFitsAPage) {
  for (int64_t tiles : {8, 64, 128}) {
    for (int page : {16, 32, 64})
      EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 128, 128, tiles, 132, page)->kernel, "kv16_split_2cta")
          << "page " << page << " tiles " << tiles;
    for (int page : {0, 128, 256})
      EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 128, 128, tiles, 132, page)->kernel, "kv16_split_1cta")
          << "page " << page << " tiles " << tiles;
  }
  // hdim 64 and 256: no kernel with a smaller key tile than the one-CTA kernel's; the row is not theirs.
  EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 64, 128, 8, 132, 16)->kernel, "kv16_split_1cta");
  EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 256, 128, 8, 132, 16)->kernel, "kv16_split_1cta");
}

// A defaults row names a row with limits only within them: rows_max at most the row's max_rows,
// contiguous_only for a row that takes no pages, no_options for one that takes no options, and
// never an experiment (kDecodeNamedOnly), whose detail says it is one.
TEST(DecodeRegistry, DefaultsStayWithinTheirRowsLimits) {
  int count = 0;
  const DecodeDefaultRule* rules = decode_default_rules(&count);
  int limited = 0;
  for (int i = 0; i < count; ++i)
    for (const DecodeKernelSpec& k : kDecodeKernels) {
      if (std::string(rules[i].kernel) != k.name || k.cache != rules[i].cache) continue;
      EXPECT_FALSE(k.limits & kDecodeNamedOnly) << "rule " << i << " names the experiment '" << k.name << "'";
      if (k.max_rows > 0) EXPECT_LE(rules[i].rows_max, k.max_rows) << "rule " << i << " names '" << k.name << "'";
      if (k.limits & kDecodeNoPages)
        EXPECT_TRUE(rules[i].contiguous_only) << "rule " << i << " names '" << k.name << "', which takes no pages";
      if (k.limits & kDecodeNoOptions)
        EXPECT_TRUE(rules[i].no_options) << "rule " << i << " names '" << k.name << "', which takes no options";
      limited += (k.max_rows > 0 || k.limits != 0) ? 1 : 0;
    }
  EXPECT_GE(limited, 1);  // kv16_mma_swap_8w_1cta's rule
  for (const DecodeKernelSpec& k : kDecodeKernels)
    if (k.limits & kDecodeNamedOnly) {
      EXPECT_NE(k.hdims, 0u) << k.name;
      EXPECT_NE(std::string(k.detail).find("experimental"), std::string::npos) << k.name << ": " << k.detail;
    }
}

// A 16-bit hdim-128 call of at most 8 packed rows under 1.5 waves of tiles and without options
// runs the mma.sync row, contiguous or paged (any page size); one with options, one of 9 rows,
// hdim 64 or 256 keep kv16_split_1cta (kv16_split_2cta for pages under 128 tokens at hdim 128),
// and 1.5 waves of tiles kv16_split_2cta.
TEST(DecodeRegistry, FewPlainRowsTakeTheMmaSyncRow) {
  constexpr const char* kMma = "kv16_mma_swap_8w_1cta";
  for (int64_t rows : {1, 2, 5, 8})
    for (int64_t tiles : {1, 8, 64, 197}) {
      EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 128, rows, tiles, 132, 0, false)->kernel, kMma)
          << rows << " rows, " << tiles << " tiles";
      for (int page : {16, 32, 64, 128, 256}) {
        EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 128, rows, tiles, 132, page, false)->kernel, kMma)
            << "page " << page;
        EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 128, rows, tiles, 132, page, true)->kernel,
                     page < 128 ? "kv16_split_2cta" : "kv16_split_1cta")
            << "page " << page << " with options";
      }
      EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 128, rows, tiles, 132, 0, true)->kernel, "kv16_split_1cta");
      for (int hdim : {64, 256})
        EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, hdim, rows, tiles, 132, 0, false)->kernel, "kv16_split_1cta");
    }
  EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 128, 9, 8, 132, 0, false)->kernel, "kv16_split_1cta");
  EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 128, 8, 198, 132, 0, false)->kernel, "kv16_split_2cta");
  EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 128, 8, 198, 132, 16, false)->kernel, "kv16_split_2cta");
  EXPECT_STREQ(decode_default_rule(DecodeCache::k16Bit, 128, 9, 8, 132, 16, false)->kernel, "kv16_split_2cta");
  EXPECT_STREQ(decode_default_rule(DecodeCache::kInt8, 128, 8, 8, 132, 0, false)->kernel, "kv8_mma_swap_8w_1cta");
  // The row takes paged caches (its limits: no options only), and its rule sends it them.
  const int k = decode_kernel_index(kMma, DecodeCache::k16Bit, 128);
  ASSERT_GE(k, 0);
  EXPECT_EQ(kDecodeKernels[k].limits, kDecodeNoOptions);
  int count = 0;
  const DecodeDefaultRule* rules = decode_default_rules(&count);
  for (int i = 0; i < count; ++i)
    if (std::string(rules[i].kernel) == kMma) EXPECT_TRUE(!rules[i].contiguous_only && rules[i].no_options) << "rule " << i;
  EXPECT_EQ(kDecodeKernels[k].split_keys, 512);
}

TEST(DecodeRegistry, IdsAreUniquePerCacheType) {
  for (int i = 0; i < kDecodeKernelCount; ++i)
    for (int j = i + 1; j < kDecodeKernelCount; ++j) {
      EXPECT_FALSE(kDecodeKernels[i].cache == kDecodeKernels[j].cache && kDecodeKernels[i].id == kDecodeKernels[j].id)
          << kDecodeKernels[i].name << " and " << kDecodeKernels[j].name;
      EXPECT_NE(std::string(kDecodeKernels[i].name), kDecodeKernels[j].name);
    }
}

TEST(KernelInfo, ListsEveryCompiledKernelByName) {
  const std::vector<experimental::KernelInfo> all = experimental::compiled_kernels();
  int fwd = 0, decode = 0;
  for (const experimental::KernelInfo& k : all) {
    EXPECT_FALSE(k.name.empty());
    EXPECT_FALSE(k.detail.empty()) << k.name;
    (k.op == "fwd" ? fwd : decode) += 1;
  }
  int expected_fwd = 0, expected_decode = 0;
  for (int hdim : compiled_head_dims()) {
    for (int i = 0; i < kFwdKernelCount; ++i) expected_fwd += fwd_kernel_compiled(i, hdim) && !kFwdKernels[i].fp8;
    for (int i = 0; i < kDecodeKernelCount; ++i) expected_decode += (kDecodeKernels[i].hdims & decode_hdim_bit(hdim)) != 0;
  }
  for (int hdim : compiled_fp8_head_dims())
    for (int i = 0; i < kFwdKernelCount; ++i) expected_fwd += fwd_kernel_compiled(i, hdim) && kFwdKernels[i].fp8;
  EXPECT_EQ(fwd, expected_fwd);
  EXPECT_EQ(decode, expected_decode);
}

}  // namespace
}  // namespace hopattn::attention
