// KV-cache attention: each argument rule, the split/packing plan and the workspace check,
// without a GPU (fake, never dereferenced pointers; the SM count passed in).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "attention/decode_params.hpp"
#include "attention/device/compiled_set.hpp"
#include "attention/experimental.hpp"
#include "attention/fwd_packed_q.hpp"
#include "attention/fwd_varlen.hpp"
#include "hopattn/kvcache.hpp"

namespace hopattn {
namespace {

constexpr int kSms = 132;
void* fake(uintptr_t a) { return reinterpret_cast<void*>(a); }

// Decode with GQA 8:1: q (4, 1, 32, 128) bf16, cache (4, 8192, 4, 128) bf16.
KvCacheArgs valid_args() {
  KvCacheArgs a{};
  a.q = tensor_bshd(fake(0x10000000), HOPATTN_DTYPE_BF16, 4, 1, 32, 128);
  a.k_cache = tensor_bshd(fake(0x100000000), HOPATTN_DTYPE_BF16, 4, 8192, 4, 128);
  a.v_cache = tensor_bshd(fake(0x200000000), HOPATTN_DTYPE_BF16, 4, 8192, 4, 128);
  a.cache_seqlens = tensor_seqlens(static_cast<int32_t*>(fake(0x30000000)), 4);
  a.o = tensor_bshd(fake(0x40000000), HOPATTN_DTYPE_BF16, 4, 1, 32, 128);
  a.lse = tensor_lse(static_cast<float*>(fake(0x50000000)), 4, 32, 1);
  a.causal = 1;
  a.pack_gqa = -1;
  a.workspace = fake(0x1000000000);  // above every tensor of these fixtures (it must not overlap one)
  a.workspace_bytes = size_t(1) << 30;
  return a;
}

KvCacheArgs paged_args();  // below: the cache as pages of a pool

// The same cache quantized to int8 with its scales.
KvCacheArgs int8_args() {
  KvCacheArgs a = valid_args();
  a.k_cache.dtype = a.v_cache.dtype = HOPATTN_DTYPE_INT8;
  for (Tensor* t : {&a.k_cache, &a.v_cache}) *t = tensor_bshd(t->data, HOPATTN_DTYPE_INT8, 4, 8192, 4, 128);
  a.quant_block = 128;
  a.k_scale = tensor_bshd(fake(0x70000000), HOPATTN_DTYPE_FP32, 4, 64, 4, 128);  // (b, blocks, hkv, d)
  a.v_scale = tensor_v_scale(static_cast<float*>(fake(0x80000000)), 4, 8192, 4);
  return a;
}

void expect_error(const Status& s, const std::string& needle) {
  EXPECT_FALSE(s.ok()) << "expected an error mentioning '" << needle << "'";
  EXPECT_NE(s.message().find(needle), std::string::npos) << "message: " << s.message();
}

void expect_error(const Status& s, const std::string& needle, StatusCode code) {
  expect_error(s, needle);
  EXPECT_EQ(s.code(), code) << s.to_string();
}

DeviceContext ctx_on_device() { return DeviceContext{}; }

Status check(const KvCacheArgs& a, DeviceContext ctx = {}) { return check_kvcache_attention(a, ctx, kSms); }

TEST(KvCacheChecks, ValidCallsPass) {
  EXPECT_TRUE(check(valid_args()).ok()) << check(valid_args()).to_string();
  EXPECT_TRUE(check(int8_args()).ok()) << check(int8_args()).to_string();
}

// Issue 38's findings on the KV-cache path: misaligned lse and cache_seqlens, outputs whose
// strides overlap, a workspace that is the output's memory or misaligned.
TEST(KvCacheChecks, HostileAlignmentOverlapAndWorkspace) {
  KvCacheArgs a = valid_args();
  a.lse.data = static_cast<char*>(a.lse.data) + 2;
  expect_error(check(a), "lse: data pointer", StatusCode::kInvalidArgument);
  a = valid_args();
  a.cache_seqlens.data = static_cast<char*>(a.cache_seqlens.data) + 1;
  expect_error(check(a), "cache_seqlens: data pointer", StatusCode::kInvalidArgument);
  a = valid_args();
  a.o.stride[2] = 0;  // every head writes the same memory
  expect_error(check(a), "o.stride[2] = 0 makes elements overlap", StatusCode::kInvalidArgument);
  a = valid_args();
  a.lse.stride[1] = 0;
  expect_error(check(a), "lse.stride[1] = 0 makes elements overlap", StatusCode::kInvalidArgument);
  a = valid_args();
  a.workspace = a.o.data;  // the output's memory
  expect_error(check(a), "workspace: overlaps o in memory", StatusCode::kInvalidArgument);
  a = valid_args();
  a.workspace = static_cast<char*>(a.workspace) + 4;
  expect_error(check(a), "workspace: pointer", StatusCode::kInvalidArgument);
  a = valid_args();
  a.q.dtype = hopattn_dtype_t(77);  // out of the enum: no division by its element size
  expect_error(check(a), "q.dtype = 77 is not a hopattn_dtype_t value", StatusCode::kInvalidArgument);
}

TEST(KvCacheChecks, CacheSeqlens) {
  KvCacheArgs a = valid_args();
  a.cache_seqlens.data = nullptr;
  expect_error(check(a), "cache_seqlens: data pointer is null");
  a = valid_args();
  a.cache_seqlens.dtype = HOPATTN_DTYPE_FP32;
  expect_error(check(a), "cache_seqlens: dtype must be int32");
  a = valid_args();
  a.cache_seqlens.shape[0] = 3;
  expect_error(check(a), "cache_seqlens: shape (3) must be (batch) = (4)");
}

TEST(KvCacheChecks, DtypesAndHeads) {
  KvCacheArgs a = valid_args();
  a.k_cache.dtype = HOPATTN_DTYPE_FP16;
  expect_error(check(a), "k_cache: dtype fp16 must be q's (bf16) or int8");
  a = valid_args();
  a.v_cache.dtype = HOPATTN_DTYPE_FP16;
  expect_error(check(a), "v_cache: dtype fp16 does not match k_cache's bf16");
  a = valid_args();
  a.k_cache.shape[2] = a.v_cache.shape[2] = 5;
  expect_error(check(a), "heads_q = 32 is not a multiple of heads_kv = 5");
}

// FP8 is the forward call's only (since 0.5): an e4m3 query or cache, contiguous or paged, is
// refused as not supported, naming the tensor.
TEST(KvCacheChecks, E4m3IsNotSupported) {
  for (bool paged : {false, true}) {
    KvCacheArgs a = paged ? paged_args() : valid_args();
    a.q.dtype = a.o.dtype = HOPATTN_DTYPE_E4M3;
    expect_error(check(a), "q: dtype e4m3 is not supported by the KV-cache call (contiguous or paged)",
                 StatusCode::kNotSupported);
    a = paged ? paged_args() : valid_args();
    a.k_cache.dtype = a.v_cache.dtype = HOPATTN_DTYPE_E4M3;
    expect_error(check(a), "k_cache: dtype e4m3 is not supported by the KV-cache call (contiguous or paged)",
                 StatusCode::kNotSupported);
  }
}

TEST(KvCacheChecks, SoftmaxScale) {
  KvCacheArgs a = valid_args();
  a.softmax_scale = std::numeric_limits<float>::infinity();
  expect_error(check(a), "softmax_scale: must be finite");
  a = valid_args();
  a.softmax_scale = -0.5f;
  expect_error(check(a), "softmax_scale: must be positive (0 selects 1/sqrt(hdim)), got -0.5");
}

TEST(KvCacheChecks, ScalesWithTheWrongShape) {
  KvCacheArgs a = int8_args();
  a.k_scale.shape[1] = 63;
  expect_error(check(a), "k_scale: shape (4, 63, 4, 128) must be (batch, max_seqlen_k / quant_block, heads_kv, hdim)");
  a = int8_args();
  a.v_scale.shape[1] = 8191;
  expect_error(check(a), "v_scale: shape (4, 8191, 4) must be (batch, max_seqlen_k, heads_kv)");
  a = int8_args();
  a.quant_block = 96;
  expect_error(check(a), "quant_block: 96 is not 64 or 128");
  a = valid_args();
  a.k_scale = int8_args().k_scale;
  expect_error(check(a), "k_scale: given, but the cache is bf16, not int8");
}

TEST(KvCacheChecks, KScaleChannelsMustBeContiguous) {
  KvCacheArgs a = int8_args();
  a.k_scale.stride[3] = 2;
  expect_error(check(a), "k_scale: the last dimension (hdim) must be contiguous");
}

// Quantizing a (2, 256, 4, 128) bf16 staging tensor into an int8 cache with 128-token blocks.
KvCacheQuantizeArgs quantize_args() {
  KvCacheQuantizeArgs a{};
  a.k = tensor_bshd(fake(0x10000000), HOPATTN_DTYPE_BF16, 2, 256, 4, 128);
  a.v = tensor_bshd(fake(0x20000000), HOPATTN_DTYPE_BF16, 2, 256, 4, 128);
  a.k_int8 = tensor_bshd(fake(0x30000000), HOPATTN_DTYPE_INT8, 2, 256, 4, 128);
  a.v_int8 = tensor_bshd(fake(0x40000000), HOPATTN_DTYPE_INT8, 2, 256, 4, 128);
  a.k_scale = tensor_bshd(fake(0x50000000), HOPATTN_DTYPE_FP32, 2, 2, 4, 128);
  a.v_scale = tensor_v_scale(static_cast<float*>(fake(0x60000000)), 2, 256, 4);
  a.quant_block = 128;
  return a;
}

TEST(KvCacheQuantizeChecks, EachRuleNamesItsArgument) {
  const DeviceContext ctx{};
  EXPECT_TRUE(check_kvcache_quantize(quantize_args(), ctx).ok()) << check_kvcache_quantize(quantize_args(), ctx).to_string();
  KvCacheQuantizeArgs a = quantize_args();
  a.k.dtype = a.v.dtype = HOPATTN_DTYPE_FP32;
  expect_error(check_kvcache_quantize(a, ctx), "k: dtype fp32 is not supported");
  a = quantize_args();
  a.v_int8.dtype = HOPATTN_DTYPE_BF16;
  expect_error(check_kvcache_quantize(a, ctx), "v_int8: dtype must be int8");
  a = quantize_args();
  a.quant_block = 32;
  expect_error(check_kvcache_quantize(a, ctx), "quant_block: 32 is not 64 or 128");
  a = quantize_args();
  for (Tensor* t : {&a.k, &a.v, &a.k_int8, &a.v_int8}) t->shape[1] = 200;
  expect_error(check_kvcache_quantize(a, ctx), "k: seqlen 200 is not a multiple of quant_block = 128");
  a = quantize_args();
  a.k_scale.shape[1] = 3;
  expect_error(check_kvcache_quantize(a, ctx), "k_scale: shape must be (batch, seqlen / quant_block, heads_kv, hdim)");
  a = quantize_args();
  a.v_scale.shape[1] = 255;
  expect_error(check_kvcache_quantize(a, ctx), "v_scale: shape must be (batch, seqlen, heads_kv)");
  a = quantize_args();
  a.v_int8.shape[2] = 2;
  expect_error(check_kvcache_quantize(a, ctx), "v_int8: shape differs from k's");
  a = quantize_args();
  a.k_int8.data = fake(0x10000000 + 64);
  expect_error(check_kvcache_quantize(a, ctx), "k_int8: overlaps k in memory");
}

// The int8 cache with each sequence's partial last block in bf16 (k_tail, v_tail).
KvCacheArgs tail_args() {
  KvCacheArgs a = int8_args();
  a.k_tail = tensor_bshd(fake(0x90000000), HOPATTN_DTYPE_BF16, 4, 128, 4, 128);  // (b, quant_block, hkv, d)
  a.v_tail = tensor_bshd(fake(0xa0000000), HOPATTN_DTYPE_BF16, 4, 128, 4, 128);
  return a;
}

TEST(KvCacheChecks, TailBlocksEachRuleNamesItsArgument) {
  EXPECT_TRUE(check(tail_args()).ok()) << check(tail_args()).to_string();
  KvCacheArgs a = valid_args();  // a 16-bit cache holds every token itself
  a.k_tail = tail_args().k_tail, a.v_tail = tail_args().v_tail;
  expect_error(check(a), "k_tail: given, but the cache is bf16, not int8");
  a = tail_args();
  a.v_tail.data = nullptr;
  expect_error(check(a), "v_tail: null, but k_tail is given (both or neither)");
  a = tail_args();
  a.k_tail.data = nullptr;
  expect_error(check(a), "k_tail: null, but v_tail is given (both or neither)");
  a = tail_args();
  a.v_tail.shape[1] = 64;  // quant_block is 128
  expect_error(check(a), "v_tail: shape (4, 64, 4, 128) must be (batch, quant_block, heads_kv, hdim) = (4, 128, 4, 128)");
  a = tail_args();
  a.k_tail.shape[2] = 2;
  expect_error(check(a), "k_tail: shape (4, 128, 2, 128) must be (batch, quant_block, heads_kv, hdim)");
  a = tail_args();
  a.k_tail.dtype = HOPATTN_DTYPE_FP16;
  expect_error(check(a), "k_tail: dtype fp16 does not match q's bf16");
  a = tail_args();
  a.v_tail.stride[3] = 2;
  expect_error(check(a), "v_tail: the last dimension (hdim) must be contiguous");
  a = tail_args();
  a.k_tail.data = fake(0x90000000 + 8);
  expect_error(check(a), "k_tail: data pointer 0x90000008 is not 16-byte aligned");
  a = tail_args();
  a.o.data = fake(0xa0000000 + 256);
  expect_error(check(a), "o: overlaps input v_tail");
  a = tail_args();
  DeviceContext ctx;
  ctx.tensor_device[9] = kHostMemory;
  expect_error(check(a, ctx), "v_tail: points to host memory");
}

// The tail's partial takes one more workspace slot, so a call of one split needs a workspace too.
TEST(KvCachePlan, TailBlocksTakeOneMoreWorkspaceSlot) {
  KvCacheArgs a = int8_args();
  a.q.shape[0] = a.o.shape[0] = a.lse.shape[0] = a.cache_seqlens.shape[0] = 64;  // 64 · 4 packed tiles: no split
  for (Tensor* t : {&a.k_cache, &a.v_cache, &a.k_scale, &a.v_scale}) t->shape[0] = 64;
  const KvCachePlan plain = plan_kvcache_attention(a, kSms);
  ASSERT_EQ(plain.num_splits, 1);
  EXPECT_EQ(plain.workspace_bytes, 0u);
  EXPECT_FALSE(plain.tail);
  a.k_tail = tail_args().k_tail, a.v_tail = tail_args().v_tail;
  a.k_tail.shape[0] = a.v_tail.shape[0] = 64;
  const KvCachePlan tail = plan_kvcache_attention(a, kSms);
  EXPECT_TRUE(tail.tail);
  EXPECT_EQ(tail.num_splits, 1);
  EXPECT_STREQ(tail.kernel, plain.kernel);
  const size_t rows = size_t(64) * 32 * 1;
  EXPECT_EQ(tail.workspace_bytes, 2 * rows * (128 + 1) * sizeof(float));
  a.workspace = nullptr;
  expect_error(check(a), "workspace: " + std::to_string(tail.workspace_bytes) + " bytes needed for 1 KV splits and the tail block");
  KvCacheArgs s = tail_args();  // 16 packed tiles: split; one slot more than the splits
  const KvCachePlan split = plan_kvcache_attention(s, kSms);
  ASSERT_GT(split.num_splits, 1);
  EXPECT_EQ(split.workspace_bytes, size_t(split.num_splits + 1) * size_t(4 * 32) * (128 + 1) * sizeof(float));
}

TEST(KvCacheChecks, OutputAliasesTheCache) {
  KvCacheArgs a = valid_args();
  a.o.data = fake(0x100000000 + 4096);
  expect_error(check(a), "o: overlaps input k_cache");
}

TEST(KvCacheChecks, SplitsPackingAndWorkspace) {
  KvCacheArgs a = valid_args();
  a.num_splits = -2;
  expect_error(check(a), "num_splits: -2 is negative");
  a = valid_args();
  // A kernel is named only through the internal overrides (the bench, the tests): one that does
  // not exist for the cache type or head dim is refused with the names that do.
  experimental::Overrides o;
  o.decode_kernel = "kv8_mma_swap_8w_1cta";
  expect_error(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, o),
               "kernel 'kv8_mma_swap_8w_1cta' does not exist for a 16-bit cache at hdim 128; registered: "
               "kv16_split_1cta, kv16_split_2cta, kv16_mma_swap_8w_1cta",
               StatusCode::kNotSupported);
  o.decode_kernel = "kv16_split_2cta";
  EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, o).ok());
  {  // the mma.sync int8 kernels exist at hdim 128 only
    KvCacheArgs h64 = int8_args();
    for (Tensor* t : {&h64.q, &h64.o, &h64.k_cache, &h64.v_cache}) *t = tensor_bshd(t->data, t->dtype, t->shape[0], t->shape[1], t->shape[2], 64);
    h64.k_scale = tensor_bshd(h64.k_scale.data, HOPATTN_DTYPE_FP32, 4, 64, 4, 64);
    h64.lse.data = nullptr;
    const std::vector<int>& dims = attention::compiled_head_dims();
    if (std::find(dims.begin(), dims.end(), 64) == dims.end()) {  // a build without hdim 64 refuses it
      expect_error(check(h64), "head dim 64 is not supported", StatusCode::kNotSupported);
      return;
    }
    EXPECT_TRUE(check(h64).ok()) << check(h64).to_string();
    for (const char* name : {"kv8_mma_8w_1cta", "kv8_mma_4w_3cta", "kv8_mma_swap_8w_1cta", "kv8_mma_swap_4w_3cta"}) {
      o.decode_kernel = name;
      expect_error(experimental::check_kvcache_attention(h64, ctx_on_device(), kSms, o),
                   std::string("kernel '") + name + "' does not exist for an int8 cache at hdim 64", StatusCode::kNotSupported);
    }
    o.decode_kernel = "kv8_wgmma_swap_2cta";
    EXPECT_TRUE(experimental::check_kvcache_attention(h64, ctx_on_device(), kSms, o).ok());
  }
  a = int8_args();
  o.decode_kernel = "kv16_split_1cta";
  expect_error(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, o),
               "kernel 'kv16_split_1cta' does not exist for an int8 cache at hdim 128", StatusCode::kNotSupported);
  o.decode_kernel = "no_such_kernel";
  expect_error(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, o), "kernel 'no_such_kernel'",
               StatusCode::kNotSupported);
  for (const char* name : {"kv8_wgmma_1c_1cta", "kv8_wgmma_1c_2cta", "kv8_mma_8w_1cta"}) {
    o.decode_kernel = name;
    EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, o).ok()) << name;
  }
  o.decode_kernel = "kv8_wgmma_swap_2cta";  // hdim 64 only: no default ran it at 128
  expect_error(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, o),
               "kernel 'kv8_wgmma_swap_2cta' does not exist for an int8 cache at hdim 128", StatusCode::kNotSupported);
  a = valid_args();
  a.pack_gqa = 3;
  expect_error(check(a), "pack_gqa: 3 is not -1");
  a = valid_args();
  a.workspace = nullptr;
  expect_error(check(a), "workspace: ");
}

TEST(KvCachePlan, PacksSmallGroupsAndSplitsToFillTheSms) {
  KvCacheArgs a = valid_args();  // b=4, 8 q-heads per kv-head, 1 query: 4*4 = 16 packed tiles
  KvCachePlan p = plan_kvcache_attention(a, kSms);
  EXPECT_TRUE(p.pack_gqa);
  // 8 splits: 128 CTAs fill 97 % of one wave (9 would make 144 CTAs: a second, nearly empty wave)
  EXPECT_EQ(p.num_splits, 8);
  EXPECT_EQ(p.workspace_bytes, size_t(8) * 4 * 32 * 1 * (128 + 1) * 4);
  {
    experimental::Overrides two;  // two CTAs per SM: 264 slots; 16 splits make 256 CTAs (97 %, the fewest >= 95 %)
    two.decode_kernel = "kv16_split_2cta";
    EXPECT_EQ(experimental::plan_kvcache_attention(a, kSms, two).num_splits, 16);
  }
  a.k_cache.shape[2] = a.v_cache.shape[2] = 1;  // MQA, b = 4: 4 tiles -> 32 splits (128 CTAs, 97 %)
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 32);
  a.k_cache.shape[1] = a.v_cache.shape[1] = 1024;  // only 8 chunks of 128 keys: at most 8 splits
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 8);
  a = valid_args();
  a.pack_gqa = 0;  // 4*32 = 128 tiles: 97% of one wave already, no split
  p = plan_kvcache_attention(a, kSms);
  EXPECT_FALSE(p.pack_gqa);
  EXPECT_EQ(p.num_splits, 1);
  EXPECT_EQ(p.workspace_bytes, 0u);
  a.num_splits = 1000;  // forced, but never more splits than 128-key chunks (8192 / 128 = 64)
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 64);
  a = valid_args();  // large batch: enough tiles, no split, no workspace
  for (Tensor* t : {&a.q, &a.o}) t->shape[0] = 128;
  for (Tensor* t : {&a.k_cache, &a.v_cache}) t->shape[0] = 128;
  p = plan_kvcache_attention(a, kSms);
  EXPECT_EQ(p.num_splits, 1);
  EXPECT_EQ(p.workspace_bytes, 0u);
  EXPECT_STREQ(p.kernel, "kv16_split_2cta");  // 512 tiles: two CTAs per SM
  // 16 tiles of 8 packed rows, contiguous, no options: the mma.sync warps, one CTA per SM, splits.
  EXPECT_STREQ(plan_kvcache_attention(valid_args(), kSms).kernel, "kv16_mma_swap_8w_1cta");
  a = valid_args();
  a.pack_gqa = 0;  // one row a row group, 128 tiles: still under 1.5 waves
  EXPECT_STREQ(plan_kvcache_attention(a, kSms).kernel, "kv16_mma_swap_8w_1cta");
  EXPECT_STREQ(plan_kvcache_attention(paged_args(), kSms).kernel, "kv16_mma_swap_8w_1cta");  // pages of 128 too
  a = valid_args();
  a.softcap = 30.0f;
  EXPECT_STREQ(plan_kvcache_attention(a, kSms).kernel, "kv16_split_1cta");  // options: not the mma row's
  // INT8, hdim 128, q_len 1 (8 packed rows): the register-dequantizing mma.sync warps with their
  // own rings, V folded into P, the keys as the mma's M, K in packed bf16 pairs (20), and from
  // three waves of three CTAs per SM on the 4-warp CTAs (21); 9-16 rows: the rows as M (16, 17);
  // at hdim 64 the swapped-operand consumer (4).
  EXPECT_STREQ(plan_kvcache_attention(int8_args(), kSms).kernel, "kv8_mma_swap_8w_1cta");
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 16), 1);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 17), 3);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 20), 1);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 21), 3);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 3), 2);
  EXPECT_EQ(attention::decode_ctas_per_sm(256, true, 2), 1);
  {
    KvCacheArgs many = int8_args();  // 128 x 4 KV heads = 512 tiles >= 3 x 132: three CTAs per SM, one split
    for (Tensor* t : {&many.q, &many.o, &many.k_cache, &many.v_cache}) t->shape[0] = 128;
    many.k_scale.shape[0] = many.v_scale.shape[0] = 128;
    const KvCachePlan mp = plan_kvcache_attention(many, kSms);
    EXPECT_STREQ(mp.kernel, "kv8_mma_swap_4w_3cta");
    EXPECT_EQ(mp.num_splits, 1);
    for (Tensor* t : {&many.q, &many.o}) t->shape[1] = 2;  // q_len 2: 16 packed rows, the rows as M
    many.lse.data = nullptr;
    EXPECT_STREQ(plan_kvcache_attention(many, kSms).kernel, "kv8_mma_4w_3cta");
  }
  {
    KvCacheArgs h64 = int8_args();
    for (Tensor* t : {&h64.q, &h64.o}) t->shape[3] = 64;
    for (Tensor* t : {&h64.k_cache, &h64.v_cache}) t->shape[3] = 64;
    h64.k_scale.shape[3] = 64;
    EXPECT_STREQ(plan_kvcache_attention(h64, kSms).kernel, "kv8_wgmma_swap_2cta");
  }
  // q_len 4 (32 packed rows): one consumer; 16 tiles -> one CTA per SM (2), 64 tiles -> two (3).
  a = int8_args();
  for (Tensor* t : {&a.q, &a.o}) *t = tensor_bshd(t->data, t->dtype, t->shape[0], 4, t->shape[2], t->shape[3]);
  a.lse = tensor_lse(static_cast<float*>(a.lse.data), 4, 32, 4);
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  EXPECT_STREQ(plan_kvcache_attention(a, kSms).kernel, "kv8_wgmma_1c_1cta");
  for (Tensor* t : {&a.q, &a.o}) t->shape[0] = 16;
  for (Tensor* t : {&a.k_cache, &a.v_cache}) t->shape[0] = 16;
  a.k_scale.shape[0] = a.v_scale.shape[0] = 16;
  EXPECT_STREQ(plan_kvcache_attention(a, kSms).kernel, "kv8_wgmma_1c_2cta");
  for (Tensor* t : {&a.q, &a.o}) t->shape[1] = 1;  // back to q_len 1 at batch 16
  EXPECT_STREQ(plan_kvcache_attention(a, kSms).kernel, "kv8_mma_swap_8w_1cta");
  for (Tensor* t : {&a.q, &a.o}) t->shape[1] = 2;  // q_len 2: 16 packed rows
  EXPECT_STREQ(plan_kvcache_attention(a, kSms).kernel, "kv8_mma_8w_1cta");
}

// hopattn_kvcache_append: 17 new rows into the bf16 cache of valid_args (and its int8 form),
// with GPT-NeoX rotary tables over 64 channels and q rotated, lengths written in place.
KvCacheAppendArgs append_args() {
  KvCacheAppendArgs a{};
  a.k_new = tensor_bshd(fake(0x10000000), HOPATTN_DTYPE_BF16, 4, 17, 4, 128);
  a.v_new = tensor_bshd(fake(0x18000000), HOPATTN_DTYPE_BF16, 4, 17, 4, 128);
  a.k_cache = tensor_bshd(fake(0x100000000), HOPATTN_DTYPE_BF16, 4, 8192, 4, 128);
  a.v_cache = tensor_bshd(fake(0x200000000), HOPATTN_DTYPE_BF16, 4, 8192, 4, 128);
  a.cache_seqlens = tensor_seqlens(static_cast<int32_t*>(fake(0x30000000)), 4);
  a.seqlens_out = a.cache_seqlens;
  Tensor cos{};
  cos.data = fake(0x38000000), cos.dtype = HOPATTN_DTYPE_FP32, cos.rank = 2;
  cos.shape[0] = 8192, cos.shape[1] = 32, cos.stride[0] = 32, cos.stride[1] = 1;
  a.rotary_cos = cos;
  cos.data = fake(0x3c000000);
  a.rotary_sin = cos;
  a.q = tensor_bshd(fake(0x40000000), HOPATTN_DTYPE_BF16, 4, 17, 32, 128);
  a.q_rotated = tensor_bshd(fake(0x48000000), HOPATTN_DTYPE_BF16, 4, 17, 32, 128);
  return a;
}

KvCacheAppendArgs append_int8_args() {
  KvCacheAppendArgs a = append_args();
  const KvCacheArgs c = int8_args();
  a.k_cache = c.k_cache, a.v_cache = c.v_cache, a.k_scale = c.k_scale, a.v_scale = c.v_scale;
  a.quant_block = 128;
  a.k_tail = tensor_bshd(fake(0x90000000), HOPATTN_DTYPE_BF16, 4, 128, 4, 128);
  a.v_tail = tensor_bshd(fake(0x98000000), HOPATTN_DTYPE_BF16, 4, 128, 4, 128);
  return a;
}

TEST(KvCacheAppendChecks, ValidCallsPass) {
  EXPECT_TRUE(check_kvcache_append(append_args(), {}).ok()) << check_kvcache_append(append_args(), {}).to_string();
  EXPECT_TRUE(check_kvcache_append(append_int8_args(), {}).ok()) << check_kvcache_append(append_int8_args(), {}).to_string();
  KvCacheAppendArgs plain = append_args();  // no rotary, no q, no lengths out
  plain.rotary_cos = plain.rotary_sin = plain.q = plain.q_rotated = plain.seqlens_out = Tensor{};
  EXPECT_TRUE(check_kvcache_append(plain, {}).ok());
}

TEST(KvCacheAppendChecks, EachRuleNamesItsArgument) {
  KvCacheAppendArgs a = append_args();
  a.k_new.dtype = HOPATTN_DTYPE_FP32;
  expect_error(check_kvcache_append(a, {}), "k_new: dtype fp32 is not supported", StatusCode::kNotSupported);
  a = append_args();
  a.k_new.shape[2] = 8;
  expect_error(check_kvcache_append(a, {}), "v_new: shape differs from k_new's in heads");
  a = append_args();
  a.k_new.shape[1] = a.v_new.shape[1] = 9000;
  expect_error(check_kvcache_append(a, {}), "k_new: seqlen_new = 9000 is more than max_seqlen_k = 8192");
  a = append_args();
  a.rotary_sin = Tensor{};
  expect_error(check_kvcache_append(a, {}), "rotary_sin: give both rotary tables or neither");
  a = append_args();
  a.rotary_cos.shape[0] = a.rotary_sin.shape[0] = 100;
  expect_error(check_kvcache_append(a, {}), "rotary_cos: seqlen_ro = 100 is less than max_seqlen_k = 8192");
  a = append_args();
  a.rotary_cos.shape[1] = a.rotary_sin.shape[1] = 80;
  expect_error(check_kvcache_append(a, {}), "rotary_dim = 2 x 80 must be in [2, hdim = 128]");
  a = append_args();
  a.rotary_interleaved = 2;
  expect_error(check_kvcache_append(a, {}), "rotary_interleaved: 2 is not 0 or 1");
  a = append_args();
  a.q_rotated = Tensor{};
  expect_error(check_kvcache_append(a, {}), "q_rotated: give q and q_rotated both or neither");
  a = append_args();
  a.q.shape[1] = a.q_rotated.shape[1] = 18;
  expect_error(check_kvcache_append(a, {}), "q: seqlen_q = 18 is more than seqlen_new = 17");
  a = append_args();
  a.q_rotated.data = a.q.data;
  expect_error(check_kvcache_append(a, {}), "q_rotated: overlaps q in memory");
  a = append_args();
  a.k_cache.data = fake(0x10000000);  // over k_new
  expect_error(check_kvcache_append(a, {}), "k_cache: overlaps k_new in memory");
  a = append_args();
  a.seqlens_out.data = fake(0x30000004);  // partly over cache_seqlens, not the same tensor
  expect_error(check_kvcache_append(a, {}), "seqlens_out: overlaps cache_seqlens in memory");
  a = append_args();
  a.k_scale = int8_args().k_scale;
  expect_error(check_kvcache_append(a, {}), "k_scale: given, but the cache is not int8");
  a = append_int8_args();
  a.v_tail = Tensor{};
  expect_error(check_kvcache_append(a, {}), "v_tail: required with an int8 cache");
  a = append_int8_args();
  a.quant_block = 32;
  expect_error(check_kvcache_append(a, {}), "quant_block: 32 is not 64 or 128");
  a = append_int8_args();
  a.k_tail.shape[1] = 64;
  expect_error(check_kvcache_append(a, {}), "k_tail: shape must be (batch, quant_block, heads_kv, hdim)");
  a = append_args();
  a.reserved = 1;
  expect_error(check_kvcache_append(a, {}), "reserved");
  a = append_args();
  a.cache_seqlens.stride[0] = 0;  // an expanded view: the kernels read one entry per sequence
  a.seqlens_out = Tensor{};
  expect_error(check_kvcache_append(a, {}), "cache_seqlens: must be contiguous");
  a = append_args();
  a.seqlens_out = tensor_seqlens(static_cast<int32_t*>(fake(0x34000000)), 4);
  a.seqlens_out.stride[0] = 2;
  expect_error(check_kvcache_append(a, {}), "seqlens_out: must be contiguous");
  a = append_int8_args();
  a.k_scale.stride[3] = 2;
  a.k_scale.stride[2] = 256, a.k_scale.stride[1] = 1024, a.k_scale.stride[0] = 1 << 17;
  expect_error(check_kvcache_append(a, {}), "k_scale: the last dimension (hdim) must be contiguous");
  a = append_int8_args();
  a.k_scale = Tensor{};
  a.quant_block = 0;  // what the Python layer passes without k_scale
  expect_error(check_kvcache_append(a, {}), "k_scale: required with an int8 cache");
  a = append_args();
  a.k_new.shape[1] = a.v_new.shape[1] = 0;  // nothing appended: q rows are no appended positions
  expect_error(check_kvcache_append(a, {}), "q: seqlen_q = 17 is more than seqlen_new = 0");
}

// A paged cache: valid_args()'s calls with the cache as a pool of 300 pages of 128 tokens and a
// (4, 64) page table (max_seqlen_k 8192, as the contiguous cache).
KvCacheArgs paged_args() {
  KvCacheArgs a = valid_args();
  a.k_cache = tensor_bshd(fake(0x100000000), HOPATTN_DTYPE_BF16, 300, 128, 4, 128);
  a.v_cache = tensor_bshd(fake(0x200000000), HOPATTN_DTYPE_BF16, 300, 128, 4, 128);
  a.page_table = tensor_page_table(static_cast<int32_t*>(fake(0x60000000)), 4, 64);
  return a;
}

TEST(KvCachePagedChecks, ValidPagedCallsPassAndPlanAsContiguous) {
  KvCacheArgs a = paged_args();
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  // The plan sees max_seqlen_k = max_pages * page_size, as the contiguous cache of that length.
  const KvCachePlan paged = plan_kvcache_attention(a, kSms), flat = plan_kvcache_attention(valid_args(), kSms);
  EXPECT_EQ(paged.num_splits, flat.num_splits);
  EXPECT_EQ(paged.workspace_bytes, flat.workspace_bytes);
  a.k_cache.shape[1] = a.v_cache.shape[1] = 256;  // 256-token pages
  for (Tensor* t : {&a.k_cache, &a.v_cache}) *t = tensor_bshd(t->data, HOPATTN_DTYPE_BF16, 300, 256, 4, 128);
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
}

TEST(KvCachePagedChecks, EachRuleNamesItsArgument) {
  KvCacheArgs a = paged_args();
  a.page_table.dtype = HOPATTN_DTYPE_FP32;
  expect_error(check(a), "page_table: dtype must be int32", StatusCode::kInvalidArgument);
  a = paged_args();
  a.page_table.shape[0] = 3;
  expect_error(check(a), "page_table: shape (3, 64) must be (batch, max_pages)", StatusCode::kInvalidArgument);
  a = paged_args();
  a.page_table.stride[1] = 2, a.page_table.stride[0] = 128;
  expect_error(check(a), "page_table: rows must be contiguous", StatusCode::kInvalidArgument);
  a = paged_args();
  a.page_table.data = fake(0x60000002);
  expect_error(check(a), "page_table", StatusCode::kInvalidArgument);  // misaligned
  a = paged_args();
  a.page_table.rank = 1;
  expect_error(check(a), "page_table", StatusCode::kInvalidArgument);
  for (long long page : {8LL, 96LL, 512LL}) {
    a = paged_args();
    for (Tensor* t : {&a.k_cache, &a.v_cache}) *t = tensor_bshd(t->data, HOPATTN_DTYPE_BF16, 300, page, 4, 128);
    expect_error(check(a), "is not a power of two in [16, 256]", StatusCode::kInvalidArgument);
  }
  for (long long page : {16LL, 32LL, 64LL}) {  // smaller than the key tile: gathered as 16-key boxes
    a = paged_args();
    for (Tensor* t : {&a.k_cache, &a.v_cache}) *t = tensor_bshd(t->data, HOPATTN_DTYPE_BF16, 300, page, 4, 128);
    EXPECT_TRUE(check(a).ok()) << "page " << page << ": " << check(a).to_string();
  }
  a = paged_args();
  a.v_cache.shape[0] = 299;
  expect_error(check(a), "v_cache: 299 pages, k_cache 300", StatusCode::kInvalidArgument);
  a = paged_args();
  a.o.shape[0] = 5;  // o still follows the batch
  expect_error(check(a), "batch and hdim must match", StatusCode::kInvalidArgument);
  // int8 pools: pages of 16 to 256 tokens, the scales paged by the same ids (one K scale row per
  // page where the page is smaller than quant_block), the tails per sequence.
  auto int8_pool = [](long long page, int quant_block) {
    KvCacheArgs x = int8_args();
    for (Tensor* t : {&x.k_cache, &x.v_cache}) *t = tensor_bshd(t->data, HOPATTN_DTYPE_INT8, 300, page, 4, 128);
    x.quant_block = quant_block;
    x.k_scale = tensor_bshd(fake(0x70000000), HOPATTN_DTYPE_FP32, 300, std::max(1LL, page / quant_block), 4, 128);
    x.v_scale = tensor_v_scale(static_cast<float*>(fake(0x80000000)), 300, page, 4);
    x.page_table = tensor_page_table(static_cast<int32_t*>(fake(0x60000000)), 4, 8192 / page);
    return x;
  };
  for (long long page : {64LL, 128LL, 256LL}) {
    a = int8_pool(page, 64);
    EXPECT_TRUE(check(a).ok()) << "int8 page " << page << ": " << check(a).to_string();
  }
  a = int8_pool(256, 128);
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  // The kernel: the defaults table applies to pools as to contiguous caches, so the same call
  // paged (the same max_len, 8192) runs int8_args()'s contiguous default, an mma.sync kernel; every
  // int8 kernel of the head dim may be named for a pool.
  const KvCachePlan contiguous = plan_kvcache_attention(int8_args(), kSms), pooled = plan_kvcache_attention(a, kSms);
  EXPECT_EQ(std::string(contiguous.kernel).rfind("kv8_mma", 0), 0u) << contiguous.kernel;
  EXPECT_STREQ(pooled.kernel, contiguous.kernel);
  EXPECT_EQ(pooled.num_splits, contiguous.num_splits);
  for (const char* name : {"kv8_mma_8w_1cta", "kv8_mma_4w_3cta", "kv8_mma_swap_8w_1cta", "kv8_mma_swap_4w_3cta",
                           "kv8_wgmma_1c_1cta", "kv8_wgmma_1c_2cta"}) {
    experimental::Overrides o;
    o.decode_kernel = name;
    EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, o).ok()) << name;
    EXPECT_STREQ(experimental::plan_kvcache_attention(a, kSms, o).kernel, name);
  }
  for (auto [page, block] : {std::pair<long long, int>{16, 64}, {32, 64}, {16, 128}, {32, 128}, {64, 128}}) {
    a = int8_pool(page, block);
    const std::string what = "int8 page " + std::to_string(page) + " quant_block " + std::to_string(block);
    EXPECT_TRUE(check(a).ok()) << what << ": " << check(a).to_string();
    const KvCachePlan small = plan_kvcache_attention(a, kSms);
    EXPECT_STREQ(small.kernel, contiguous.kernel) << what;
    EXPECT_EQ(small.num_splits, contiguous.num_splits) << what;
    a.k_scale.shape[1] = 2;  // one K scale row per page, whatever the block
    expect_error(check_kvcache_attention(a, ctx_on_device(), 0),
                 "k_scale: shape (300, 2, 4, 128) must be (num_pages, 1, heads_kv, hdim) = (300, 1, 4, 128)",
                 StatusCode::kInvalidArgument);
  }
  a = int8_pool(128, 64);
  a.k_scale.shape[0] = 4;  // the scales of a pool are paged, not per sequence
  expect_error(check(a), "k_scale: shape (4, 2, 4, 128) must be (num_pages, page_size / quant_block, heads_kv, hdim) = (300, 2, 4, 128)",
               StatusCode::kInvalidArgument);
  a = int8_pool(128, 64);
  a.v_scale = tensor_v_scale(static_cast<float*>(fake(0x80000000)), 4, 8192, 4);
  expect_error(check(a), "v_scale: shape (4, 8192, 4) must be (num_pages, page_size, heads_kv) = (300, 128, 4)",
               StatusCode::kInvalidArgument);
  a = int8_pool(128, 64);  // tails per sequence: (batch, quant_block, heads_kv, hdim)
  a.k_tail = tensor_bshd(fake(0x90000000), HOPATTN_DTYPE_BF16, 4, 64, 4, 128);
  a.v_tail = tensor_bshd(fake(0xa0000000), HOPATTN_DTYPE_BF16, 4, 64, 4, 128);
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a.k_tail.shape[0] = 300;
  expect_error(check(a), "k_tail: shape (300, 64, 4, 128) must be (batch, quant_block, heads_kv, hdim) = (4, 64, 4, 128)",
               StatusCode::kInvalidArgument);
  a = int8_pool(128, 64);
  a.softcap = 5.0f;  // the options on a paged int8 cache: the int8 options row
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  EXPECT_STREQ(plan_kvcache_attention(a, kSms).kernel, "kv8_wgmma_options_1cta");
  // A table without a pointer is a mistake (unless it is empty), a pointer without a shape too.
  a = paged_args();
  a.page_table.data = nullptr;
  expect_error(check(a), "page_table: data pointer is null", StatusCode::kInvalidArgument);
  a = valid_args();
  a.page_table.data = fake(0x60000000);
  expect_error(check(a), "page_table: data pointer given with rank 0", StatusCode::kInvalidArgument);
  // The outputs must not overlap the table.
  a = paged_args();
  a.lse.data = a.page_table.data;
  expect_error(check(a), "lse: overlaps input page_table", StatusCode::kInvalidArgument);
}

// Batch 0 is a no-op for paged calls too: the empty table may have a null pointer (PyTorch's
// empty CUDA tensors do) and the pool's pages are not the batch.
TEST(KvCachePagedChecks, EmptyBatchPasses) {
  KvCacheArgs a = paged_args();
  a.q.shape[0] = a.o.shape[0] = a.lse.shape[0] = a.cache_seqlens.shape[0] = 0;
  a.page_table.shape[0] = 0, a.page_table.data = nullptr;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
}

TEST(KvCachePagedChecks, PlacementIsChecked) {
  DeviceContext ctx{};
  ctx.tensor_device[10] = kHostMemory;  // page_table
  expect_error(check(paged_args(), ctx), "page_table: points to host memory");
}

// Appending to a paged 16-bit cache: the pool (300 pages of 64 tokens: any page size of [16, 256]
// here, the append needs no TMA box) and a (4, 128) table, max_seqlen_k 8192 as append_args()'s.
TEST(KvCacheAppendChecks, PagedCaches) {
  KvCacheAppendArgs a = append_args();
  a.k_cache = tensor_bshd(fake(0x100000000), HOPATTN_DTYPE_BF16, 300, 64, 4, 128);
  a.v_cache = tensor_bshd(fake(0x200000000), HOPATTN_DTYPE_BF16, 300, 64, 4, 128);
  a.page_table = tensor_page_table(static_cast<int32_t*>(fake(0x60000000)), 4, 128);
  EXPECT_TRUE(check_kvcache_append(a, DeviceContext{}).ok()) << check_kvcache_append(a, DeviceContext{}).to_string();
  KvCacheAppendArgs b = a;
  b.page_table.dtype = HOPATTN_DTYPE_FP32;
  expect_error(check_kvcache_append(b, DeviceContext{}), "page_table: dtype must be int32", StatusCode::kInvalidArgument);
  b = a;
  b.page_table.shape[1] = 64;  // max_seqlen_k 4096: the rotary table (8192 rows) still covers it
  EXPECT_TRUE(check_kvcache_append(b, DeviceContext{}).ok());
  b = a;
  b.rotary_cos.shape[0] = b.rotary_sin.shape[0] = 4096;  // fewer rows than max_pages * page_size
  expect_error(check_kvcache_append(b, DeviceContext{}), "rotary_cos: seqlen_ro = 4096 is less than max_seqlen_k = 8192",
               StatusCode::kInvalidArgument);
  b = a;
  for (Tensor* t : {&b.k_cache, &b.v_cache}) *t = tensor_bshd(t->data, HOPATTN_DTYPE_BF16, 300, 48, 4, 128);
  expect_error(check_kvcache_append(b, DeviceContext{}), "is not a power of two in [16, 256]", StatusCode::kInvalidArgument);
  // An int8 pool: the scales paged alike (num_pages, page_size / quant_block, ...), (num_pages,
  // page_size, ...), the tails per sequence; a page holds whole scale blocks.
  b = append_int8_args();
  b.page_table = a.page_table;
  b.quant_block = 64;
  for (Tensor* t : {&b.k_cache, &b.v_cache}) *t = tensor_bshd(t->data, HOPATTN_DTYPE_INT8, 300, 64, 4, 128);
  b.k_scale = tensor_bshd(fake(0x70000000), HOPATTN_DTYPE_FP32, 300, 1, 4, 128);
  b.v_scale = tensor_v_scale(static_cast<float*>(fake(0x80000000)), 300, 64, 4);
  b.k_tail = tensor_bshd(fake(0x90000000), HOPATTN_DTYPE_BF16, 4, 64, 4, 128);
  b.v_tail = tensor_bshd(fake(0x98000000), HOPATTN_DTYPE_BF16, 4, 64, 4, 128);
  EXPECT_TRUE(check_kvcache_append(b, DeviceContext{}).ok()) << check_kvcache_append(b, DeviceContext{}).to_string();
  {
    KvCacheAppendArgs c = b;
    c.quant_block = 128;  // a block larger than the page: one K scale row per page
    c.k_tail = tensor_bshd(fake(0x90000000), HOPATTN_DTYPE_BF16, 4, 128, 4, 128);
    c.v_tail = tensor_bshd(fake(0x98000000), HOPATTN_DTYPE_BF16, 4, 128, 4, 128);
    EXPECT_TRUE(check_kvcache_append(c, DeviceContext{}).ok()) << check_kvcache_append(c, DeviceContext{}).to_string();
    c.k_scale.shape[1] = 2;
    expect_error(check_kvcache_append(c, DeviceContext{}),
                 "k_scale: shape must be (num_pages, 1, heads_kv, hdim) = (300, 1, 4, 128)", StatusCode::kInvalidArgument);
    c = b;
    c.v_scale = tensor_v_scale(static_cast<float*>(fake(0x80000000)), 4, 8192, 4);  // per sequence, not paged
    expect_error(check_kvcache_append(c, DeviceContext{}),
                 "v_scale: shape must be (num_pages, page_size, heads_kv) = (300, 64, 4)", StatusCode::kInvalidArgument);
    c = b;
    c.k_tail.shape[0] = 300;  // the tails are per sequence
    expect_error(check_kvcache_append(c, DeviceContext{}),
                 "k_tail: shape must be (batch, quant_block, heads_kv, hdim) = (4, 64, 4, 128)", StatusCode::kInvalidArgument);
  }
  b = a;
  b.seqlens_out.data = b.page_table.data;  // an output over the table
  b.seqlens_out.stride[0] = 1;
  expect_error(check_kvcache_append(b, DeviceContext{}), "overlaps page_table", StatusCode::kInvalidArgument);
  b = a;
  b.page_table.data = nullptr;  // a table's shape without its pointer
  expect_error(check_kvcache_append(b, DeviceContext{}), "page_table: data pointer is null", StatusCode::kInvalidArgument);
  DeviceContext ctx{};
  ctx.tensor_device[14] = kHostMemory;
  expect_error(check_kvcache_append(a, ctx), "page_table: points to host memory");
}

TEST(KvCacheAppendChecks, PlacementIsChecked) {
  DeviceContext ctx{};
  ctx.tensor_device[12] = kHostMemory;  // q_rotated
  expect_error(check_kvcache_append(append_args(), ctx), "q_rotated: points to host memory");
}

// ---- the options (kvcache.h, 0.4): sliding window, softcap, sinks -------------------------------

Tensor valid_sinks() { return tensor_sinks(static_cast<float*>(fake(0x90000000)), 32); }

TEST(KvCacheOptionsChecks, ValidOptionsPass) {
  KvCacheArgs a = valid_args();
  EXPECT_EQ(a.window, 0);
  EXPECT_EQ(a.sinks.data, nullptr);
  a.window = 1, a.window_left = 128, a.window_right = 0;  // causal with a window
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a.window_right = -1;  // with causal, read as 0
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a.causal = 0, a.window_left = 5, a.window_right = 3;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a.window_left = -1, a.window_right = -1;  // the switch with both sides unbounded
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a.window_left = 0, a.window_right = 0;  // the diagonal alone
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a.softcap = 30.0f;
  a.sinks = valid_sinks();
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a.sinks.data = nullptr;  // no data: no sinks, whatever the rest of the descriptor says
  a.sinks.dtype = HOPATTN_DTYPE_BF16;
  a.sinks.shape[0] = 3;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  KvCacheArgs p = paged_args();  // a paged cache takes them too
  p.window = 1, p.window_left = 300, p.window_right = 0, p.softcap = 20.0f, p.sinks = valid_sinks();
  EXPECT_TRUE(check(p).ok()) << check(p).to_string();
  p.q.shape[0] = p.o.shape[0] = p.lse.shape[0] = p.cache_seqlens.shape[0] = 0;  // an empty batch
  p.page_table.shape[0] = 0, p.page_table.data = nullptr;
  EXPECT_TRUE(check(p).ok()) << check(p).to_string();
}

TEST(KvCacheOptionsChecks, EachRuleNamesItsArgument) {
  const KvCacheArgs base = valid_args();
  KvCacheArgs a = base;
  a.window_left = 64;  // a side without the switch
  expect_error(check(a), "window_left: 64 is set but window is 0 (set window = 1 to use it)", StatusCode::kInvalidArgument);
  a = base;
  a.window_right = -1;
  expect_error(check(a), "window_right: -1 is set but window is 0", StatusCode::kInvalidArgument);
  a = base;
  a.window = 1, a.window_left = -2;
  expect_error(check(a), "window_left: must be >= 0, or -1 for unbounded, got -2", StatusCode::kInvalidArgument);
  a = base;
  a.window = 1, a.window_right = INT32_MIN;
  expect_error(check(a), "window_right: must be >= 0, or -1 for unbounded, got -2147483648", StatusCode::kInvalidArgument);
  a = base;
  a.window = 1, a.window_left = 16, a.window_right = 3;  // causal
  expect_error(check(a), "window_right: must be 0 or -1 with causal", StatusCode::kInvalidArgument);
  a.causal = 0;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a = base;  // the band's 32-bit arithmetic
  a.window = 1, a.window_left = 16;
  a.q.shape[1] = a.o.shape[1] = a.lse.shape[2] = 1 << 10;
  a.q.stride[0] = a.o.stride[0] = int64_t(1) << 22, a.lse.stride[1] = 1 << 10, a.lse.stride[0] = int64_t(1) << 15;
  a.workspace_bytes = size_t(1) << 40;
  for (Tensor* t : {&a.k_cache, &a.v_cache}) *t = tensor_bshd(t->data, HOPATTN_DTYPE_BF16, 4, (1 << 30) - 512, 1, 128);
  a.k_cache.stride[0] = a.v_cache.stride[0] = int64_t(1) << 37;
  a.v_cache.data = fake(0x20000000000);
  a.workspace = fake(0x40000000000);
  expect_error(check(a), "window: seqlen_q + max_seqlen_k = 1073742336 exceeds 2^30", StatusCode::kNotSupported);
  a.window = 0, a.window_left = 0;  // without a window that size is no concern of the options
  EXPECT_EQ(check(a).message().find("window"), std::string::npos) << check(a).to_string();

  for (float bad : {-1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    a = base;
    a.softcap = bad;
    expect_error(check(a), "softcap: must be finite and >= 0 (0: off)", StatusCode::kInvalidArgument);
  }
  a = base;
  a.sinks = valid_sinks();
  a.sinks.dtype = HOPATTN_DTYPE_BF16;
  expect_error(check(a), "sinks: dtype must be fp32, got bf16", StatusCode::kInvalidArgument);
  a.sinks = valid_sinks();
  a.sinks.shape[0] = 8;  // heads_kv's count, not heads_q's
  expect_error(check(a), "sinks: shape (8) must be (heads_q) = (32)", StatusCode::kInvalidArgument);
  a.sinks = valid_sinks();
  a.sinks.rank = 2;
  expect_error(check(a), "sinks", StatusCode::kInvalidArgument);
  a.sinks = valid_sinks();
  a.sinks.stride[0] = 2;
  expect_error(check(a), "sinks.stride[0] = 2: must be contiguous (stride 1)", StatusCode::kInvalidArgument);
  a.sinks = valid_sinks();
  a.sinks.data = fake(0x90000002);
  expect_error(check(a), "sinks: data pointer is not 4-byte aligned", StatusCode::kInvalidArgument);
  a.sinks = valid_sinks();
  a.sinks.data = a.o.data;  // an output over an input
  expect_error(check(a), "o: overlaps input sinks in memory", StatusCode::kInvalidArgument);
  a.sinks.data = a.lse.data;
  expect_error(check(a), "lse: overlaps input sinks in memory", StatusCode::kInvalidArgument);
  a.sinks.data = a.workspace;
  expect_error(check(a), "workspace: overlaps input sinks in memory", StatusCode::kInvalidArgument);
  a.sinks.data = a.q.data;  // two inputs may share memory
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
}

// An int8 cache takes each option on the one int8 row compiled with them (kv8_wgmma_options_1cta),
// whatever row the defaults table gives the same call without them; another int8 row named
// through the overrides is refused with the one that takes them. Bad values are still named.
TEST(KvCacheOptionsChecks, Int8CachesRunTheOptionsRow) {
  const std::string plain = plan_kvcache_attention(int8_args(), kSms).kernel;
  EXPECT_NE(plain, "kv8_wgmma_options_1cta") << "the case should show the switch";
  for (int option = 0; option < 4; ++option) {
    KvCacheArgs a = option == 3 ? tail_args() : int8_args();  // and with the 16-bit tails
    if (option == 0) a.window = 1, a.window_left = 64, a.window_right = 0;
    if (option == 1) a.softcap = 30.0f;
    if (option >= 2) a.sinks = valid_sinks();
    EXPECT_TRUE(check(a).ok()) << option << ": " << check(a).to_string();
    const KvCachePlan plan = plan_kvcache_attention(a, kSms);
    EXPECT_STREQ(plan.kernel, "kv8_wgmma_options_1cta") << option;
    EXPECT_EQ(plan.tail, option == 3);
    experimental::Overrides o;
    o.decode_kernel = plain;
    expect_error(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, o),
                 "kernel '" + plain + "' does not take a sliding window, softcap or sinks with an int8 cache; "
                 "kv8_wgmma_options_1cta does",
                 StatusCode::kNotSupported);
    o.decode_kernel = "kv8_wgmma_options_1cta";
    EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, o).ok()) << option;
  }
  KvCacheArgs a = int8_args();
  a.softcap = -1.0f;
  expect_error(check(a), "softcap: must be finite", StatusCode::kInvalidArgument);
}

TEST(KvCacheOptionsChecks, PlacementIsChecked) {
  DeviceContext ctx{};
  ctx.tensor_device[11] = kHostMemory;  // sinks
  KvCacheArgs a = valid_args();
  a.sinks = valid_sinks();
  expect_error(check(a, ctx), "sinks: points to host memory");
  ctx.tensor_device[11] = 3;
  expect_error(check(a, ctx), "sinks: lives on device 3");
}

// A window bounds the keys a tile's rows see, and the splits divide those: no split shorter than
// 128 keys of the window (the heuristic and a forced count alike), and the workspace follows.
TEST(KvCachePlan, AWindowBoundsTheSplits) {
  KvCacheArgs a = valid_args();  // 16 packed tiles over 8192 keys: 8 splits without a window
  ASSERT_EQ(plan_kvcache_attention(a, kSms).num_splits, 8);
  a.window = 1, a.window_left = 200, a.window_right = 0;  // 201 keys: 2 chunks of 128
  KvCachePlan p = plan_kvcache_attention(a, kSms);
  EXPECT_EQ(p.num_splits, 2);
  EXPECT_EQ(p.workspace_bytes, size_t(2) * 4 * 32 * 1 * (128 + 1) * 4);
  a.num_splits = 8;  // forced: capped the same way
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 2);
  a.window_left = 50;  // one chunk: no split, no workspace
  p = plan_kvcache_attention(a, kSms);
  EXPECT_EQ(p.num_splits, 1);
  EXPECT_EQ(p.workspace_bytes, 0u);
  a.num_splits = 0;
  a.window_left = 2000;  // 2001 keys: 16 chunks, the heuristic's 8
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 8);
  a.window_left = -1;  // no left side: the whole cache, as without a window
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 8);
  a.causal = 0, a.window_left = 100, a.window_right = 100;  // non-causal: right side clamped to seqlen_q
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 1);  // 100 + 1 + 1 keys
  a.softcap = 30.0f;  // softcap and sinks do not change the plan
  a.sinks = valid_sinks();
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 1);
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
}

// A caller built against the header before the options passes a smaller struct_size (down to the
// struct's first release, which ended at v_tail): the fields past it read as zero. Here they hold
// values that would be refused; hopattn_kvcache_workspace_size runs the argument rules first (then
// the device, absent here).
TEST(KvCacheOptionsChecks, OlderCallerStructSizes) {
  hopattn_kvcache_args_t old = valid_args();
  old.window = 1, old.window_left = -7;
  old.softcap = std::numeric_limits<float>::quiet_NaN();
  old.sinks = Tensor{fake(0x90000000), HOPATTN_DTYPE_BF16, 1, {8}, {1}};
  size_t bytes = 0;
  for (size_t size : {offsetof(hopattn_kvcache_args_t, page_table), offsetof(hopattn_kvcache_args_t, window)}) {
    old.struct_size = uint32_t(size);
    const hopattn_status_t s = hopattn_kvcache_workspace_size(&old, &bytes);
    for (const char* w : {"window", "softcap", "sinks", "struct"})
      EXPECT_EQ(std::string(s.message).find(w), std::string::npos) << size << " bytes: " << s.message;
  }
  old.struct_size = uint32_t(offsetof(hopattn_kvcache_args_t, softcap));  // the window's fields are read
  hopattn_status_t s = hopattn_kvcache_workspace_size(&old, &bytes);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT) << s.message;
  EXPECT_NE(std::string(s.message).find("window_left"), std::string::npos) << s.message;
  old.window_left = 16;  // now valid: the NaN softcap and bf16 sinks past the size stay unread
  s = hopattn_kvcache_workspace_size(&old, &bytes);
  for (const char* w : {"softcap", "sinks", "struct"}) EXPECT_EQ(std::string(s.message).find(w), std::string::npos) << s.message;
  old.struct_size = uint32_t(offsetof(hopattn_kvcache_args_t, sinks));  // the NaN softcap is read
  s = hopattn_kvcache_workspace_size(&old, &bytes);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT) << s.message;
  EXPECT_NE(std::string(s.message).find("softcap"), std::string::npos) << s.message;
  old.struct_size = uint32_t(sizeof(hopattn_kvcache_args_t));  // the bf16 sinks too
  old.softcap = 0.0f;
  s = hopattn_kvcache_workspace_size(&old, &bytes);
  EXPECT_NE(std::string(s.message).find("sinks: dtype must be fp32"), std::string::npos) << s.message;
}

// ---- the chunk path (docs/decode.md, "The chunk path") ---------------------------------------

// The chunk path forced (decode_path "fwd": shapes the rules of decode_defaults.cpp leave to the
// decode kernels, for the plan's other fields); the public plan otherwise.
experimental::Overrides forced() {
  experimental::Overrides o;
  o.decode_path = "fwd";
  return o;
}
Status check_default(const KvCacheArgs& a) { return experimental::check_kvcache_attention(a, {}, kSms, {}); }

// Issue 39's chunk: q (1, 128, 32, 128) bf16 against a cache (1, 32768, 8, 128), causal.
KvCacheArgs chunk_args(int64_t batch = 1, int64_t seqlen_q = 128, int64_t max_len = 32768) {
  KvCacheArgs a = valid_args();
  a.q = tensor_bshd(fake(0x10000000), HOPATTN_DTYPE_BF16, batch, seqlen_q, 32, 128);
  a.o = tensor_bshd(fake(0x40000000), HOPATTN_DTYPE_BF16, batch, seqlen_q, 32, 128);
  a.k_cache = tensor_bshd(fake(0x100000000), HOPATTN_DTYPE_BF16, batch, max_len, 8, 128);
  a.v_cache = tensor_bshd(fake(0x200000000), HOPATTN_DTYPE_BF16, batch, max_len, 8, 128);
  a.cache_seqlens = tensor_seqlens(static_cast<int32_t*>(fake(0x30000000)), batch);
  a.lse = tensor_lse(static_cast<float*>(fake(0x50000000)), batch, 32, seqlen_q);
  return a;
}

// The workspace of a chunk-path plan: the split partials (0 at one split), 256-byte aligned, then
// the list (header, the order, the entries and their KV ranges), as fwd_varlen.hpp documents it.
size_t chunk_workspace(int64_t batch, int64_t seqlen_q, int64_t heads_q, int64_t splits) {
  const int64_t rows = batch * heads_q * seqlen_q, m_blocks = (seqlen_q + 127) / 128;
  const size_t partials = splits > 1 ? size_t(splits * rows * (128 + 1) * 4) : 0;
  const size_t order_end = 64 + size_t(batch) * 4, entries = size_t(batch * m_blocks * heads_q * splits);
  return (partials + 255) / 256 * 256 + (order_end + 31) / 32 * 32 + 2 * entries * (32 + 16);  // an empty position after each entry
}

TEST(KvCacheChunkPlan, ChunksTakeTheForwardKernelWithSplits) {
  KvCacheArgs a = chunk_args();  // 32 Q tiles of 128 rows: 4 splits make 128 CTAs, 97 % of 132 SMs
  KvCachePlan p = plan_kvcache_attention(a, kSms);
  EXPECT_TRUE(p.fwd_path);
  EXPECT_STREQ(p.kernel, "ws_pingpong_persistent_128x128x2_options");
  EXPECT_FALSE(p.pack_gqa);
  EXPECT_EQ(p.num_splits, 4);
  EXPECT_EQ(p.workspace_bytes, chunk_workspace(1, 128, 32, 4));
  EXPECT_EQ(p.workspace_bytes, size_t(4) * 32 * 128 * 129 * 4 + 96 + 2 * 128 * (32 + 16));  // spelled out once
  EXPECT_TRUE(check_default(a).ok()) << check_default(a).to_string();
  a = chunk_args(1, 64, 4096);  // one Q tile per head too: the same 4 splits of 32 KV tiles (forced: the rules keep q_len 64 at 4k on the decode kernels)
  a.pack_gqa = 0;              // unpacked (KvCachePackGqa's tests take the packed plans)
  p = experimental::plan_kvcache_attention(a, kSms, forced());
  EXPECT_TRUE(p.fwd_path);
  EXPECT_EQ(p.num_splits, 4);
  EXPECT_EQ(p.workspace_bytes, chunk_workspace(1, 64, 32, 4));
  a = chunk_args(1, 200, 4096);  // two Q tiles per head: 64 tiles, 2 splits (128 CTAs)
  a.pack_gqa = 0;
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 2);
  a.pack_gqa = -1;  // the public plan does not pack: the rule that takes q_len 200 is an unpacked one
  EXPECT_FALSE(plan_kvcache_attention(a, kSms).pack_gqa);
  experimental::Overrides pack = forced();  // forced, the row-fill rule decides
  pack.chunk_pack_gqa = true;  // packed (fill 200/256 unpacked, 800/896 packed): 7 tiles of 32 positions per kv head, 56 tiles, 7 splits
  EXPECT_TRUE(experimental::plan_kvcache_attention(a, kSms, pack).pack_gqa);
  EXPECT_EQ(experimental::plan_kvcache_attention(a, kSms, pack).num_splits, 7);
  a = chunk_args(8, 128, 4096);  // 256 tiles: enough for the SMs, one split; the list alone
  p = plan_kvcache_attention(a, kSms);
  EXPECT_TRUE(p.fwd_path);
  EXPECT_EQ(p.num_splits, 1);
  EXPECT_EQ(p.workspace_bytes, chunk_workspace(8, 128, 32, 1));
  EXPECT_EQ(p.workspace_bytes, size_t(96 + 2 * 256 * (32 + 16)));
  a = chunk_args(1, 128, 1000);  // forced: never more splits than 128-key tiles (8)
  a.num_splits = 1000;
  EXPECT_EQ(experimental::plan_kvcache_attention(a, kSms, forced()).num_splits, 8);
  a = chunk_args(1, 128, 1 << 20);  // ... nor than 128
  a.num_splits = 1000;
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 128);
  a = chunk_args(1, 128, 32768);
  a.num_splits = 7;
  p = plan_kvcache_attention(a, kSms);
  EXPECT_EQ(p.num_splits, 7);
  EXPECT_EQ(p.workspace_bytes, chunk_workspace(1, 128, 32, 7));
  // Every entry is followed by an empty position (a dealt unit, two positions, is one entry).
  EXPECT_EQ(chunk_workspace(1, 128, 3, 1), size_t(96 + 6 * (32 + 16)));
}

// The list's KV ranges (kvcache_entry_range, what fwd_kvcache_prepare writes): the splits of a Q
// tile partition its range, and the range holds every key a real row of the tile sees (the band:
// bottom-right causal, or both sides unbounded as the chunk path passes a non-causal call), checked
// by brute force over q_len 1-300, cache lengths 0-1100, 1-9 splits, both tile sizes of hdim 128.
TEST(KvCacheChunkPlan, ListRangesCoverTheBandAndPartitionIt) {
  constexpr int kBlockM = 128, kBlockN = 128;
  int checked = 0;
  for (int len_q : {1, 63, 64, 65, 113, 128, 200, 300})
    for (int len_k : {0, 1, 17, 127, 128, 129, 300, 1000, 1100})
      for (int causal = 0; causal < 2; ++causal) {
        if (causal && len_k < len_q) continue;  // a bad length: no entry
        const int max_len = 1100;
        const int wl = max_len, wr = causal ? 0 : len_q;  // make_chunk_params's band
        for (int m = 0; m * kBlockM < len_q; ++m)
          for (int splits = 1; splits <= 9; ++splits) {
            const std::string what = "len_q " + std::to_string(len_q) + " len_k " + std::to_string(len_k) +
                                     (causal ? " causal" : "") + " m " + std::to_string(m) + " splits " +
                                     std::to_string(splits);
            int next = -1, total = 0, lo = 0;
            for (int s = 0; s < splits; ++s) {
              const attention::FwdKvRange r =
                  attention::kvcache_entry_range(m, kBlockM, kBlockN, len_q, len_k, wl, wr, s, splits);
              ASSERT_EQ(r.split, s) << what;
              ASSERT_GE(r.n_blocks, 0) << what;
              if (s == 0) lo = r.n_first;
              else ASSERT_EQ(r.n_first, next) << what << ": split " << s << " does not start where " << s - 1 << " ends";
              next = r.n_first + r.n_blocks;
              total += r.n_blocks;
            }
            ASSERT_LE(next * kBlockN, (len_k + kBlockN - 1) / kBlockN * kBlockN) << what << ": tiles past the keys";
            for (int i = m * kBlockM; i < std::min(len_q, (m + 1) * kBlockM); ++i) {
              const int p = i + len_k - len_q;
              for (int j = std::max(0, p - wl); j < len_k && j <= p + wr; ++j)
                ASSERT_TRUE(j / kBlockN >= lo && j / kBlockN < lo + total) << what << ": row " << i << " key " << j;
            }
            ++checked;
          }
      }
  EXPECT_GT(checked, 500);
}

// A whole KV-cache list as fwd_kvcache_prepare writes it (kvcache_list_position over every
// position, sequences in a given order, one bad): every (sequence, head, Q tile, split) of the good
// sequences exactly once at an even position, the odd positions and the bad sequence's empty; the
// origin fields give (0, b) for q and b · max_len for the cache; each tile's splits partition its
// range.
TEST(KvCacheChunkPlan, ListPositionsHoldEachEntryOnce) {
  const std::vector<int> lens = {1000, 5000, 200, -1, 4096};  // sequence 3 bad; 2 exactly seqlen_q
  const std::vector<int> order = {1, 4, 0, 2, 3};            // longest first, the bad one last
  attention::FwdKvCacheListParams lp{};
  lp.heads = 6, lp.seqlen_q = 200, lp.max_len = 5000, lp.m_blocks = 2, lp.splits = 3;
  lp.block_m = 128, lp.block_n = 128, lp.window_left = lp.max_len, lp.window_right = 0;  // causal
  const int64_t batch = int64_t(lens.size()), per_seq = int64_t(lp.m_blocks) * lp.heads * lp.splits;
  const int64_t count = attention::kvcache_list_entries(batch, lp.m_blocks, lp.heads, lp.splits);
  ASSERT_EQ(count, 2 * batch * per_seq);
  std::vector<int> seen(size_t(batch * per_seq), 0);
  std::vector<int> tiles_of(size_t(batch * lp.m_blocks * lp.heads), 0);
  for (int64_t pos = 0; pos < count; ++pos) {
    const int b = order[size_t(pos / 2 / per_seq)];
    const int len = lens[size_t(b)];
    attention::FwdVarlenTile t;
    attention::FwdKvRange r;
    attention::kvcache_list_position(lp, pos, b, len, len < 0 || len > lp.max_len || len < lp.seqlen_q, t, r);
    if (pos % 2 != 0 || b == 3) {
      EXPECT_EQ(t.m_block, -1) << "position " << pos;
      EXPECT_EQ(r.n_blocks, 0) << "position " << pos;
      continue;
    }
    ASSERT_GE(t.m_block, 0) << "position " << pos;
    ASSERT_LT(t.m_block, lp.m_blocks);
    ASSERT_LT(t.h, lp.heads);
    ASSERT_EQ(t.b, b);
    EXPECT_EQ(t.q_offset + t.len_q, b) << "q_origin's batch coordinate";
    EXPECT_EQ(t.len_q, lp.seqlen_q);
    EXPECT_EQ(t.k_offset, b * lp.max_len);
    EXPECT_EQ(t.len_k, len);
    EXPECT_EQ(t.n_blocks, r.n_blocks);
    const int64_t key = ((int64_t(b) * lp.m_blocks + t.m_block) * lp.heads + t.h) * lp.splits + r.split;
    ++seen[size_t(key)];
    tiles_of[size_t((int64_t(b) * lp.m_blocks + t.m_block) * lp.heads + t.h)] += r.n_blocks;
    // The split's range is the tile's range's share (kvcache_entry_range, checked against the band above).
    const attention::FwdKvRange whole = attention::kvcache_entry_range(t.m_block, 128, 128, lp.seqlen_q, len,
                                                                        lp.window_left, lp.window_right, 0, 1);
    EXPECT_GE(r.n_first, whole.n_first);
    EXPECT_LE(r.n_first + r.n_blocks, whole.n_first + whole.n_blocks);
  }
  for (int b = 0; b < int(batch); ++b)
    for (int m = 0; m < lp.m_blocks; ++m)
      for (int h = 0; h < lp.heads; ++h) {
        for (int sp = 0; sp < lp.splits; ++sp)
          EXPECT_EQ(seen[size_t(((int64_t(b) * lp.m_blocks + m) * lp.heads + h) * lp.splits + sp)], b == 3 ? 0 : 1)
              << "b " << b << " m " << m << " h " << h << " split " << sp;
        if (b == 3) continue;
        const attention::FwdKvRange whole = attention::kvcache_entry_range(m, 128, 128, lp.seqlen_q, lens[size_t(b)],
                                                                            lp.window_left, lp.window_right, 0, 1);
        EXPECT_EQ(tiles_of[size_t((int64_t(b) * lp.m_blocks + m) * lp.heads + h)], whole.n_blocks) << "b " << b << " m " << m;
      }
}

TEST(KvCacheChunkPlan, WhatKeepsTheDecodeKernels) {
  KvCacheArgs a = chunk_args(1, 63, 8191);  // below 8192 positions the table's rules start at 96 queries
  EXPECT_FALSE(plan_kvcache_attention(a, kSms).fwd_path);
  a = chunk_args(1, 31, 32768);  // the packed rule starts at 32 queries
  EXPECT_FALSE(plan_kvcache_attention(a, kSms).fwd_path);
  EXPECT_TRUE(plan_kvcache_attention(chunk_args(1, 32, 8192), kSms).pack_gqa);
  EXPECT_TRUE(plan_kvcache_attention(chunk_args(1, 32, 8192), kSms).fwd_path);
  a = chunk_args(1, 63, 32768);  // packing off (the override): q_len 32-63 keeps the decode kernels
  experimental::Overrides unpacked;
  unpacked.chunk_pack_gqa = false;
  EXPECT_FALSE(experimental::plan_kvcache_attention(a, kSms, unpacked).fwd_path);
  // The rules' cache lengths: q_len 128 from 2048 positions, q_len 64 from 16384 (r1's crossings).
  EXPECT_FALSE(plan_kvcache_attention(chunk_args(1, 128, 2047), kSms).fwd_path);
  EXPECT_TRUE(plan_kvcache_attention(chunk_args(1, 128, 2048), kSms).fwd_path);
  EXPECT_TRUE(plan_kvcache_attention(chunk_args(1, 127, 32768), kSms).fwd_path);  // the q_len 64 rule
  EXPECT_TRUE(experimental::plan_kvcache_attention(chunk_args(1, 64, 16384), kSms, unpacked).fwd_path);
  EXPECT_FALSE(experimental::plan_kvcache_attention(chunk_args(1, 64, 16383), kSms, unpacked).fwd_path);
  EXPECT_TRUE(plan_kvcache_attention(chunk_args(1, 64, 16383), kSms).pack_gqa);  // by default: the packed rule
  // q_len 64 whose chunk plan packs (32:8 heads, Overrides::chunk_pack_gqa): from 8192 positions.
  experimental::Overrides pack;
  pack.chunk_pack_gqa = true;
  EXPECT_TRUE(experimental::plan_kvcache_attention(chunk_args(1, 64, 8192), kSms, pack).fwd_path);
  EXPECT_FALSE(experimental::plan_kvcache_attention(chunk_args(1, 64, 8191), kSms, pack).fwd_path);
  a = chunk_args(1, 64, 16383);
  a.pack_gqa = 0;
  EXPECT_FALSE(experimental::plan_kvcache_attention(a, kSms, pack).fwd_path);
  EXPECT_FALSE(plan_kvcache_attention(chunk_args(1, 95, 8191), kSms).fwd_path);
  EXPECT_FALSE(plan_kvcache_attention(chunk_args(1, 100, 4095), kSms).fwd_path);
  EXPECT_TRUE(plan_kvcache_attention(chunk_args(1, 96, 4096), kSms).fwd_path);  // the q_len 96 rule
  a = chunk_args();
  a.window = 1, a.window_left = 1000, a.window_right = 0;  // a window: the decode kernels
  EXPECT_FALSE(plan_kvcache_attention(a, kSms).fwd_path);
  // A paged cache of pages holding whole 128-key tiles: the contiguous cache's plan (the chunk path,
  // Overrides::chunk_paged, on by default); smaller pages, or chunk_paged false: the decode kernels.
  // chunk_args(2, q_len, len) over a pool of pages (2 · len / page of them).
  const auto paged_chunk = [](int64_t q_len, int64_t len, int64_t page) {
    KvCacheArgs pa = chunk_args(2, q_len, len);
    for (Tensor* t : {&pa.k_cache, &pa.v_cache}) *t = tensor_bshd(t->data, HOPATTN_DTYPE_BF16, 2 * len / page, page, 8, 128);
    pa.page_table = tensor_page_table(static_cast<int32_t*>(fake(0x60000000)), 2, len / page);
    return pa;
  };
  for (long long page : {16LL, 64LL, 128LL, 256LL}) {
    const KvCacheArgs pa = paged_chunk(128, 32768, page);
    experimental::Overrides paged, unpaged;
    unpaged.chunk_paged = false;
    EXPECT_FALSE(experimental::plan_kvcache_attention(pa, kSms, unpaged).fwd_path) << "page " << page;
    const KvCachePlan p = plan_kvcache_attention(pa, kSms), flat = plan_kvcache_attention(chunk_args(2, 128, 32768), kSms);
    EXPECT_EQ(p.fwd_path, page >= 128) << "page " << page;
    if (page >= 128) {
      EXPECT_STREQ(p.kernel, flat.kernel);
      EXPECT_EQ(p.num_splits, flat.num_splits);
      EXPECT_EQ(p.workspace_bytes, flat.workspace_bytes);
    }
    paged.decode_path = "fwd";  // forced: the reason names the pages
    if (page < 128)
      expect_error(experimental::check_kvcache_attention(pa, ctx_on_device(), kSms, paged),
                   "the chunk path (decode_path \"fwd\") does not take a paged cache of " + std::to_string(page) + "-token pages",
                   StatusCode::kNotSupported);
  }
  // Paged (pages of 128), the q_len rules over pages (decode_defaults.cpp, s18): q_len 64-95 packed
  // from 8192 positions takes the chunk path, packed; q_len 63, or 64 below 8192 positions, or 64
  // unpacked (pack_gqa 0), keeps the decode kernels, whose contiguous calls would pack.
  for (int64_t q_len : {64, 95}) {
    const KvCachePlan p = plan_kvcache_attention(paged_chunk(q_len, 8192, 128), kSms);
    EXPECT_TRUE(p.fwd_path && p.pack_gqa) << "paged q_len " << q_len << " from 8192 positions: the packed chunk path";
  }
  EXPECT_FALSE(plan_kvcache_attention(paged_chunk(63, 32768, 128), kSms).fwd_path);
  EXPECT_TRUE(plan_kvcache_attention(chunk_args(2, 63, 32768), kSms).fwd_path);  // contiguous: packed from q_len 32
  EXPECT_FALSE(plan_kvcache_attention(paged_chunk(64, 8064, 128), kSms).fwd_path);
  {
    KvCacheArgs pa = paged_chunk(64, 32768, 128);
    pa.pack_gqa = 0;
    EXPECT_FALSE(plan_kvcache_attention(pa, kSms).fwd_path) << "paged q_len 64 unpacked";
  }
  a = chunk_args(2);
  EXPECT_TRUE(plan_kvcache_attention(a, kSms).fwd_path);
  a.k_cache.stride[0] += 8 * 128;  // sequences not max_len rows apart (an extra row each)
  a.v_cache.stride[0] += 8 * 128;
  EXPECT_FALSE(plan_kvcache_attention(a, kSms).fwd_path);
  a = chunk_args();
  a.softcap = 30.0f;  // softcap and sinks: the chunk path takes them
  a.sinks = tensor_sinks(static_cast<float*>(fake(0x60000000)), 32);
  EXPECT_TRUE(plan_kvcache_attention(a, kSms).fwd_path);
  {  // hdim 64: the decode kernels
    KvCacheArgs h = chunk_args();
    for (Tensor* t : {&h.q, &h.o, &h.k_cache, &h.v_cache})
      *t = tensor_bshd(t->data, t->dtype, t->shape[0], t->shape[1], t->shape[2], 64);
    EXPECT_FALSE(plan_kvcache_attention(h, kSms).fwd_path);
  }
  experimental::Overrides o;  // a decode kernel named: the decode kernels
  o.decode_kernel = "kv16_split_1cta";
  EXPECT_FALSE(experimental::plan_kvcache_attention(chunk_args(), kSms, o).fwd_path);
  o = {};
  o.decode_path = "decode";
  const KvCachePlan d = experimental::plan_kvcache_attention(chunk_args(), kSms, o);
  EXPECT_FALSE(d.fwd_path);
  EXPECT_STRNE(d.kernel, "");
}

TEST(KvCacheChunkPlan, OverridesAndTheWorkspace) {
  experimental::Overrides fwd;
  fwd.decode_path = "fwd";
  KvCacheArgs a = chunk_args(1, 16);  // forced below the table's rule
  EXPECT_TRUE(experimental::plan_kvcache_attention(a, kSms, fwd).fwd_path);
  EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, fwd).ok());
  a = chunk_args();
  a.window = 1, a.window_left = 10, a.window_right = 0;
  expect_error(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, fwd),
               "the chunk path (decode_path \"fwd\") does not take a sliding window", StatusCode::kNotSupported);
  EXPECT_TRUE(experimental::check_kvcache_attention(paged_args(), ctx_on_device(), kSms, fwd).ok());  // 128-token pages
  experimental::Overrides fwd_unpaged = fwd;
  fwd_unpaged.chunk_paged = false;
  expect_error(experimental::check_kvcache_attention(paged_args(), ctx_on_device(), kSms, fwd_unpaged),
               "does not take a paged cache", StatusCode::kNotSupported);
  expect_error(experimental::check_kvcache_attention(int8_args(), ctx_on_device(), kSms, fwd),
               "does not take an int8 cache", StatusCode::kNotSupported);
  experimental::Overrides both = fwd;  // a decode kernel with the forward path: refused, not ignored
  both.decode_kernel = "kv16_split_1cta";
  expect_error(experimental::check_kvcache_attention(chunk_args(), ctx_on_device(), kSms, both),
               "decode_path \"fwd\" and decode_kernel 'kv16_split_1cta' together", StatusCode::kNotSupported);
  experimental::Overrides bad;
  bad.decode_path = "split";
  expect_error(experimental::check_kvcache_attention(chunk_args(), ctx_on_device(), kSms, bad),
               "decode_path 'split' is not", StatusCode::kNotSupported);
  // The plan assumes the workspace it asks for; a call given less runs the decode kernels (here
  // at one forced split: no workspace at all), unless the chunk path is forced.
  a = chunk_args();
  a.num_splits = 1;
  a.workspace = nullptr, a.workspace_bytes = 0;
  EXPECT_TRUE(plan_kvcache_attention(a, kSms).fwd_path);
  EXPECT_TRUE(check_default(a).ok()) << check_default(a).to_string();
  expect_error(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, fwd),
               "bytes needed for 1 KV splits and the chunk path's tile list", StatusCode::kInvalidArgument);
  a.workspace = fake(0x1000000000);
  a.workspace_bytes = chunk_workspace(1, 128, 32, 1);
  EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, fwd).ok());
  a.workspace_bytes -= 1;
  expect_error(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, fwd), "workspace: ");
}

// The public call's plan is the rules' (the chunk path for issue 39's chunk, the decode kernels for
// q_len 1 on the same cache); decode_path "decode" keeps the decode kernels.
TEST(KvCacheChunkPlan, PublicCallTakesTheChunkPathByTheRules) {
  KvCacheArgs a = chunk_args();
  const KvCachePlan pub = plan_kvcache_attention(a, kSms);
  EXPECT_TRUE(pub.fwd_path);
  EXPECT_STREQ(pub.kernel, "ws_pingpong_persistent_128x128x2_options");
  EXPECT_FALSE(plan_kvcache_attention(chunk_args(1, 1), kSms).fwd_path);
  experimental::Overrides o;
  o.decode_path = "decode";
  EXPECT_FALSE(experimental::plan_kvcache_attention(a, kSms, o).fwd_path);
}


// ---- PackGQA on the chunk path: the list and the plan (host-side only so far) -----------------
// docs/chunk-packgqa-plan.md §2-4: a tile's rows hold a GQA group's g heads at P = floor(64 / g)
// positions per 64-row warpgroup.

// The row functions are constexpr (the kernel will use them): g = 5, P = 12, tile 1 starts at
// position 24; row 65 is warpgroup 1's second row (position 24 + 12 + 0, head + 1); rows 60-63 of a
// warpgroup hold nothing (5 · 12 = 60).
static_assert(attention::packed_row_position(1, 65, 128, 5) == 36, "");
static_assert(attention::packed_row_head(10, 65, 5) == 11, "");
static_assert(attention::packed_row_used(59, 5) && !attention::packed_row_used(60, 5) && !attention::packed_row_used(127, 5), "");
static_assert(attention::kvcache_tile_positions(128, 5) == 24 && attention::kvcache_tile_positions(128, 0) == 128, "");
static_assert(attention::packed_row_position(3, 77, 128, 1) == 3 * 128 + 77, "g = 1 is the unpacked tile");

// Every (position, head) of every group is in exactly one row of one tile, at the slot that the
// plan's layout gives it (built here from its parts: warpgroup w, its i-th position, head k at row
// w · 64 + i · g + k); the unused rows are exactly those past g · P, the invalid ones those or past
// seqlen_q. g 1 is the unpacked list (kvcache_list_shape's group 1).
TEST(KvCachePackGqa, RowsHoldEachPositionAndHeadOfAGroupOnce) {
  constexpr int kBlockM = 128, kHeadsKv = 3;
  int rows_checked = 0;
  for (int g : {1, 2, 3, 4, 5, 7, 8, 16})
    for (int sq : {1, 16, 31, 64, 65, 113, 200}) {
      const std::string what = "g " + std::to_string(g) + " seqlen_q " + std::to_string(sq);
      const int heads_q = g * kHeadsKv, p = 64 / g, per_tile = 2 * p;  // p: positions per warpgroup
      const attention::KvCacheListShape shape = attention::kvcache_list_shape(sq, heads_q, kHeadsKv, kBlockM, g);
      EXPECT_EQ(shape.heads, g > 1 ? kHeadsKv : heads_q) << what;
      EXPECT_EQ(shape.m_blocks, (sq + per_tile - 1) / per_tile) << what;
      EXPECT_EQ(shape.tile_positions, per_tile) << what;
      EXPECT_EQ(shape.head_step, g) << what;
      std::vector<int> seen(size_t(sq * heads_q), 0);
      for (int h = 0; h < int(shape.heads); ++h)
        for (int m = 0; m < int(shape.m_blocks); ++m) {
          std::vector<int> want_pos(kBlockM, -1), want_head(kBlockM, -1);
          for (int w = 0; w < 2; ++w)
            for (int i = 0; i < p; ++i)
              for (int k = 0; k < g; ++k) {
                want_pos[size_t(w * 64 + i * g + k)] = m * per_tile + w * p + i;
                want_head[size_t(w * 64 + i * g + k)] = h * g + k;
              }
          for (int row = 0; row < kBlockM; ++row) {
            const std::string at = what + " h_kv " + std::to_string(h) + " m " + std::to_string(m) + " row " +
                                   std::to_string(row);
            const bool used = attention::packed_row_used(row, g);
            ASSERT_EQ(used, want_pos[size_t(row)] >= 0) << at;
            ASSERT_EQ(used, row % 64 < g * p) << at;
            const bool valid = attention::packed_row_valid(m, row, kBlockM, g, sq);
            ASSERT_EQ(valid, used && want_pos[size_t(row)] < sq) << at;
            if (!used) continue;
            const int pos = attention::packed_row_position(m, row, kBlockM, g);
            const int head = attention::packed_row_head(h * shape.head_step, row, g);
            ASSERT_EQ(pos, want_pos[size_t(row)]) << at;
            ASSERT_EQ(head, want_head[size_t(row)]) << at;
            if (valid) ++seen[size_t(pos * heads_q + head)];
            ++rows_checked;
          }
        }
      for (int pos = 0; pos < sq; ++pos)
        for (int head = 0; head < heads_q; ++head)
          ASSERT_EQ(seen[size_t(pos * heads_q + head)], 1) << what << ": position " << pos << " head " << head;
    }
  EXPECT_GT(rows_checked, 10000);
}

// The kernel's row decoding (packed_row: apply_packed_mask, store_split_partial_packed) from g and
// P as KvListParams passes them: the same rows as packed_row_used / position / head; and the
// partial rows the epilogue writes for slot 0 of a (batch, kv head)'s tiles (slot row ((s · B + b)
// · Hq + h0 + head) · Sq + p0 + position for each valid row) cover that kv head's q heads'
// (head, position) rows exactly once (the combine reads slot 0 of every row at one split).
TEST(KvCachePackGqa, TheKernelsRowDecodingMatchesTheRowFunctions) {
  constexpr int kBlockM = 128, kHeadsKv = 2, kBatch = 2;
  for (int g = 2; g <= 64; ++g) {
    const int positions = attention::packed_warpgroup_positions(g), heads_q = g * kHeadsKv;
    for (int row = 0; row < kBlockM; ++row) {
      const attention::PackedRow pr = attention::packed_row(row, g, positions);
      const std::string at = "g " + std::to_string(g) + " row " + std::to_string(row);
      ASSERT_EQ(pr.used, attention::packed_row_used(row, g)) << at;
      if (!pr.used) continue;
      for (int m = 0; m < 3; ++m)
        ASSERT_EQ(m * (kBlockM / 64) * positions + pr.position, attention::packed_row_position(m, row, kBlockM, g)) << at;
      ASSERT_EQ(5 * g + pr.head, attention::packed_row_head(5 * g, row, g)) << at;
    }
    for (int sq : {1, 16, 31, 64, 65, 113, 200}) {
      const attention::KvCacheListShape shape = attention::kvcache_list_shape(sq, heads_q, kHeadsKv, kBlockM, g);
      std::vector<int> written(size_t(kBatch) * heads_q * sq, 0);
      for (int b = 0; b < kBatch; ++b)
        for (int hk = 0; hk < kHeadsKv; ++hk)
          for (int m = 0; m < int(shape.m_blocks); ++m) {
            const int first = m * (kBlockM / 64) * positions, h0 = hk * int(shape.head_step);
            const int64_t slot_row0 = ((int64_t(0) * kBatch + b) * heads_q + h0) * sq;
            for (int row = 0; row < kBlockM; ++row) {
              const attention::PackedRow pr = attention::packed_row(row, g, positions);
              const int pos = first + pr.position;
              if (!pr.used || pos >= sq) continue;
              const int64_t slot_row = slot_row0 + int64_t(pr.head) * sq + pos;
              ASSERT_GE(slot_row, 0);
              ASSERT_LT(slot_row, int64_t(written.size()));
              ++written[size_t(slot_row)];
            }
          }
      for (size_t i = 0; i < written.size(); ++i)
        ASSERT_EQ(written[i], 1) << "g " << g << " seqlen_q " << sq << " partial row " << i;
    }
  }
}

// A packed list's entries (kvcache_list_position with group g over every position of a sequence):
// each (kv head, tile, split) once, its head the group's first q head; the splits of a tile
// partition its range; the range holds every key a valid row of the tile sees (the band as
// make_chunk_params passes it), and no tile past the last key one of its rows sees (a range of
// the unpacked 128 positions would hold more under causal).
TEST(KvCachePackGqa, PackedListRangesCoverTheBandAndPartitionIt) {
  constexpr int kBlockM = 128, kBlockN = 128, kHeadsKv = 2, kMaxLen = 1100;
  int checked = 0;
  for (int g : {2, 4, 5, 7, 8})
    for (int len_q : {1, 16, 31, 64, 65, 113, 200})
      for (int len_k : {0, 1, 17, 127, 128, 129, 300, 1000, 1100})
        for (int causal = 0; causal < 2; ++causal) {
          if (causal && len_k < len_q) continue;  // a bad length: no entry
          for (int splits = 1; splits <= 5; ++splits) {
            const std::string what = "g " + std::to_string(g) + " len_q " + std::to_string(len_q) + " len_k " +
                                     std::to_string(len_k) + (causal ? " causal" : "") + " splits " +
                                     std::to_string(splits);
            const attention::KvCacheListShape shape =
                attention::kvcache_list_shape(len_q, g * kHeadsKv, kHeadsKv, kBlockM, g);
            attention::FwdKvCacheListParams lp{};
            lp.heads = int(shape.heads), lp.seqlen_q = len_q, lp.max_len = kMaxLen, lp.m_blocks = int(shape.m_blocks);
            lp.splits = splits, lp.block_m = kBlockM, lp.block_n = kBlockN, lp.group = g;
            lp.window_left = attention::kvcache_chunk_window_left(kMaxLen, kBlockM, g);  // make_chunk_params's band
            lp.window_right = causal ? 0 : len_q;
            const int64_t count = attention::kvcache_list_entries(1, lp.m_blocks, lp.heads, lp.splits);
            // Per (tile, kv head): its splits' ranges, by split.
            std::vector<attention::FwdKvRange> ranges(size_t(lp.m_blocks * lp.heads * splits));
            std::vector<int> seen(ranges.size(), 0);
            for (int64_t pos = 0; pos < count; pos += 2) {
              attention::FwdVarlenTile t;
              attention::FwdKvRange r;
              attention::kvcache_list_position(lp, pos, 0, len_k, false, t, r);
              ASSERT_GE(t.m_block, 0) << what;
              ASSERT_LT(t.m_block, lp.m_blocks) << what;
              ASSERT_EQ(t.h % g, 0) << what << ": an entry's head is its group's first";
              ASSERT_LT(t.h, g * kHeadsKv) << what;
              ASSERT_EQ(t.n_blocks, r.n_blocks) << what;
              const size_t at = size_t((t.m_block * lp.heads + t.h / g) * splits + r.split);
              ++seen[at];
              ranges[at] = r;
            }
            for (int m = 0; m < lp.m_blocks; ++m)
              for (int h = 0; h < lp.heads; ++h) {
                int next = -1, total = 0, lo = 0;
                for (int s = 0; s < splits; ++s) {
                  const size_t at = size_t((m * lp.heads + h) * splits + s);
                  ASSERT_EQ(seen[at], 1) << what << " m " << m << " h_kv " << h << " split " << s;
                  const attention::FwdKvRange& r = ranges[at];
                  ASSERT_GE(r.n_blocks, 0) << what;
                  if (s == 0) lo = r.n_first;
                  else ASSERT_EQ(r.n_first, next) << what << ": split " << s << " does not start where " << s - 1 << " ends";
                  next = r.n_first + r.n_blocks;
                  total += r.n_blocks;
                }
                int last_seen = -1;  // the last key a valid row sees
                for (int row = 0; row < kBlockM; ++row) {
                  if (!attention::packed_row_valid(m, row, kBlockM, g, len_q)) continue;
                  const int p = attention::packed_row_position(m, row, kBlockM, g) + len_k - len_q;
                  const int wl = lp.window_left, wr = lp.window_right;
                  for (int j = std::max(0, p - wl); j < len_k && j <= p + wr; ++j) {
                    ASSERT_TRUE(j / kBlockN >= lo && j / kBlockN < lo + total)
                        << what << ": m " << m << " row " << row << " key " << j;
                    last_seen = std::max(last_seen, j);
                  }
                }
                if (total > 0) ASSERT_EQ(lo + total - 1, last_seen / kBlockN) << what << " m " << m << ": tiles past the keys its rows see";
                else ASSERT_EQ(last_seen, -1) << what << " m " << m;
                ++checked;
              }
          }
        }
  EXPECT_GT(checked, 5000);
}

// kvcache_list_position as it was before PackGQA (main at df6f7c6), for the comparison below.
void list_position_before_packing(const attention::FwdKvCacheListParams& a, int64_t pos, int b, int len, bool bad,
                                  attention::FwdVarlenTile& t, attention::FwdKvRange& r) {
  t = attention::FwdVarlenTile{-1, 0, 0, 0, 0, a.seqlen_q, 0, 0};
  r = attention::FwdKvRange{0, 0, 0, 0};
  if (pos % 2 != 0 || bad) return;
  const int64_t per_seq = int64_t(a.m_blocks) * a.heads * a.splits;
  const int i = int((pos / 2) % per_seq);
  const int m = i % a.m_blocks, rest = i / a.m_blocks;
  t.m_block = a.m_blocks - 1 - m;
  t.h = rest % a.heads;
  t.b = b;
  t.q_offset = b - a.seqlen_q;
  t.k_offset = b * a.max_len;
  t.len_k = len;
  r = attention::kvcache_entry_range(t.m_block, a.block_m, a.block_n, a.seqlen_q, len, a.window_left, a.window_right,
                                     rest / a.heads, a.splits);
  t.n_blocks = r.n_blocks;
}

// The unpacked list (group 0, and 1) is the one before PackGQA: every field of every position, over
// heads, tile sizes, lengths, bands, splits and bad sequences; its workspace sizes too.
TEST(KvCachePackGqa, TheUnpackedListIsUnchanged) {
  int64_t compared = 0;
  for (int group : {0, 1})
    for (int heads : {1, 3, 8})
      for (int block_m : {64, 128})
        for (int seqlen_q : {1, 64, 65, 200})
          for (int splits : {1, 3})
            for (int band = 0; band < 3; ++band) {  // causal, unbounded, a window of 300 keys
              attention::FwdKvCacheListParams lp{};
              lp.heads = heads, lp.seqlen_q = seqlen_q, lp.max_len = 5000, lp.splits = splits;
              lp.m_blocks = (seqlen_q + block_m - 1) / block_m, lp.block_m = block_m, lp.block_n = 128;
              lp.window_left = band == 2 ? 300 : lp.max_len, lp.window_right = band == 0 ? 0 : band == 1 ? seqlen_q : 16;
              lp.group = group;
              const int64_t per_seq = int64_t(lp.m_blocks) * heads * splits;
              for (int len : {0, 100, 4096, 5000})
                for (int b : {0, 3})
                  for (int64_t pos = 0; pos < 2 * per_seq; ++pos) {
                    const bool bad = len < seqlen_q && band == 0;
                    attention::FwdVarlenTile t, t0;
                    attention::FwdKvRange r, r0;
                    attention::kvcache_list_position(lp, pos + 2 * per_seq * b, b, len, bad, t, r);
                    list_position_before_packing(lp, pos + 2 * per_seq * b, b, len, bad, t0, r0);
                    const std::string what = "group " + std::to_string(group) + " heads " + std::to_string(heads) +
                                             " block_m " + std::to_string(block_m) + " seqlen_q " +
                                             std::to_string(seqlen_q) + " band " + std::to_string(band) + " len " +
                                             std::to_string(len) + " pos " + std::to_string(pos);
                    ASSERT_EQ(std::memcmp(&t, &t0, sizeof(t)), 0) << what;
                    ASSERT_EQ(std::memcmp(&r, &r0, sizeof(r)), 0) << what;
                    ++compared;
                  }
            }
  EXPECT_GT(compared, 10000);
  for (int64_t splits : {0, 1, 2, 7})  // the partials: 0 at one split (and the list's offset)
    for (int64_t rows : {1, 4096, 1 << 20}) {
      const size_t before = splits > 1 ? size_t(splits) * size_t(rows) * 129 * 4 : 0;
      EXPECT_EQ(attention::kvcache_partial_bytes(rows, 128, splits), before);
      EXPECT_EQ(attention::kvcache_list_offset(rows, 128, splits), (before + 255) / 256 * 256);
    }
  EXPECT_EQ(attention::kvcache_partial_bytes(10, 128, 1, true), size_t(10 * 129 * 4));  // packed: one slot too
  EXPECT_EQ(attention::kvcache_partial_bytes(10, 128, 3, true), size_t(3 * 10 * 129 * 4));
}

experimental::Overrides packing() {
  experimental::Overrides o;
  o.chunk_pack_gqa = true;
  return o;
}

// The workspace of a packed chunk plan: the partials at every split count, then a list of batch ·
// heads_kv · ceil(seqlen_q / 2P) tiles (P = 64 / g) of `splits` entries.
size_t packed_chunk_workspace(int64_t batch, int64_t seqlen_q, int64_t heads_q, int64_t heads_kv, int64_t splits) {
  const int64_t g = heads_q / heads_kv, per_tile = 2 * (64 / g), m_blocks = (seqlen_q + per_tile - 1) / per_tile;
  const size_t partials = size_t(splits * batch * heads_q * seqlen_q * (128 + 1) * 4);
  const size_t order_end = 64 + size_t(batch) * 4, entries = size_t(batch * heads_kv * m_blocks * splits);
  return (partials + 255) / 256 * 256 + (order_end + 31) / 32 * 32 + 2 * entries * (32 + 16);
}

// 1 x 64 queries, 32:8 heads, a 32k cache (the plan's case): packed, 16 tiles of 2 x 16 positions
// of 4 heads take 8 splits (128 CTAs of 132 SMs); unpacked, 32 tiles take 4.
TEST(KvCachePackGqa, PackedChunkPlan) {
  KvCacheArgs a = chunk_args(1, 64, 32768);
  experimental::Overrides off;
  off.chunk_pack_gqa = false;
  const KvCachePlan unpacked = experimental::plan_kvcache_attention(a, kSms, off);
  ASSERT_TRUE(unpacked.fwd_path);
  EXPECT_FALSE(unpacked.pack_gqa);
  EXPECT_EQ(unpacked.num_splits, 4);
  EXPECT_EQ(unpacked.workspace_bytes, chunk_workspace(1, 64, 32, 4));
  const KvCachePlan packed = experimental::plan_kvcache_attention(a, kSms, packing());
  ASSERT_TRUE(packed.fwd_path);
  EXPECT_TRUE(packed.pack_gqa);
  EXPECT_STREQ(packed.kernel, unpacked.kernel);
  EXPECT_EQ(packed.num_splits, 8);
  EXPECT_EQ(packed.workspace_bytes, packed_chunk_workspace(1, 64, 32, 8, 8));
  EXPECT_EQ(packed.workspace_bytes, size_t(8) * 32 * 64 * 129 * 4 + 96 + 2 * 16 * 8 * (32 + 16));  // 16 tiles
  // The heuristic's rule: q_len 128 fills its unpacked tiles: not packed; pack_gqa 1 packs it (and
  // its partials are written at one split too); pack_gqa 0 never packs.
  a = chunk_args(1, 128, 32768);
  EXPECT_FALSE(experimental::plan_kvcache_attention(a, kSms, packing()).pack_gqa);
  a.pack_gqa = 1;
  a.num_splits = 1;
  KvCachePlan p = experimental::plan_kvcache_attention(a, kSms, packing());
  EXPECT_TRUE(p.pack_gqa);
  EXPECT_EQ(p.num_splits, 1);
  EXPECT_EQ(p.workspace_bytes, packed_chunk_workspace(1, 128, 32, 8, 1));
  a = chunk_args(1, 64, 32768);
  a.pack_gqa = 0;
  p = experimental::plan_kvcache_attention(a, kSms, packing());
  EXPECT_FALSE(p.pack_gqa);
  EXPECT_EQ(p.num_splits, 4);
  EXPECT_EQ(p.workspace_bytes, unpacked.workspace_bytes);
  // g = 5 (40:8 heads, P = 12): 3 tiles of 24 positions per kv head: 24 tiles, 11 splits (two whole
  // waves of 132 CTAs; 5 splits fill 91 %).
  a = chunk_args(1, 64, 32768);
  a.q = tensor_bshd(a.q.data, HOPATTN_DTYPE_BF16, 1, 64, 40, 128);
  a.o = tensor_bshd(a.o.data, HOPATTN_DTYPE_BF16, 1, 64, 40, 128);
  a.lse = tensor_lse(static_cast<float*>(a.lse.data), 1, 40, 64);
  p = experimental::plan_kvcache_attention(a, kSms, packing());
  EXPECT_TRUE(p.pack_gqa);
  EXPECT_EQ(p.num_splits, 11);
  EXPECT_EQ(p.workspace_bytes, packed_chunk_workspace(1, 64, 40, 8, 11));
  // No group (MHA, 32:32): nothing to pack, even with pack_gqa 1.
  a = chunk_args(1, 64, 32768);
  a.k_cache = tensor_bshd(a.k_cache.data, HOPATTN_DTYPE_BF16, 1, 32768, 32, 128);
  a.v_cache = tensor_bshd(a.v_cache.data, HOPATTN_DTYPE_BF16, 1, 32768, 32, 128);
  a.pack_gqa = 1;
  EXPECT_FALSE(experimental::plan_kvcache_attention(a, kSms, packing()).pack_gqa);
  // The public plan (packing on by default) packs q_len 64 at 32k as packing() does (the packed
  // rule takes it); pack_gqa 0 keeps it unpacked (the unpacked q_len-64 rule from 16384).
  a = chunk_args(1, 64, 32768);
  p = plan_kvcache_attention(a, kSms);
  EXPECT_TRUE(p.fwd_path);
  EXPECT_TRUE(p.pack_gqa);
  EXPECT_EQ(p.num_splits, 8);
  a.pack_gqa = 0;
  p = plan_kvcache_attention(a, kSms);
  EXPECT_TRUE(p.fwd_path);
  EXPECT_FALSE(p.pack_gqa);
  EXPECT_EQ(p.num_splits, 4);
  // q_len 96 at 32k: the unpacked rule takes it first (packed tiles ran 0.69-0.88x unpacked ones,
  // H200 a3), so the heuristic does not pack it although its row-fill rule would; pack_gqa 1 does.
  a = chunk_args(1, 96, 32768);
  p = plan_kvcache_attention(a, kSms);
  EXPECT_TRUE(p.fwd_path);
  EXPECT_FALSE(p.pack_gqa);
  a.pack_gqa = 1;
  EXPECT_TRUE(plan_kvcache_attention(a, kSms).pack_gqa);
}

// Step 3's plumbing with group 0 or 1 gives what the code before it gave (main at df6f7c6): the
// list's shape, units and ranges offset (make_fwd_params, launch_fwd, launch_fwd_kvcache_prepare
// sized them by heads_q and ceil(seqlen_q / block_m)); make_chunk_params' partials and list offset
// (partials only above one split) and its band's left side (max_len); the combine above one slot
// only (launch_decode_combine, kvcache_attention).
TEST(KvCachePackGqa, TheUnpackedLaunchValuesAreUnchanged) {
  int compared = 0;
  for (int group : {0, 1})
    for (int block_m : {64, 128})
      for (int64_t batch : {1, 3})
        for (int64_t seqlen_q : {1, 63, 64, 65, 128, 129, 1000})
          for (int64_t heads_kv : {1, 2, 8})
            for (int64_t g : {1, 4})
              for (int64_t splits : {0, 1, 2, 7}) {
                const int64_t heads_q = heads_kv * g, hdim = 128;
                const std::string what = "group " + std::to_string(group) + " block_m " + std::to_string(block_m) +
                                         " seqlen_q " + std::to_string(seqlen_q) + " heads " + std::to_string(heads_q) +
                                         ":" + std::to_string(heads_kv) + " splits " + std::to_string(splits);
                const attention::KvCacheListShape list =
                    attention::kvcache_list_shape(seqlen_q, heads_q, heads_kv, block_m, group);
                const int64_t m_blocks = (seqlen_q + block_m - 1) / block_m;
                ASSERT_EQ(list.heads, heads_q) << what;
                ASSERT_EQ(list.m_blocks, m_blocks) << what;
                const int64_t s1 = std::max<int64_t>(splits, 1);
                ASSERT_EQ(attention::kvcache_list_entries(batch, list.m_blocks, list.heads, s1) / 2,
                          2 * batch * m_blocks * heads_q * s1 / 2) << what;
                ASSERT_EQ(attention::kvcache_ranges_offset(batch, list.m_blocks, list.heads, s1),
                          attention::kvcache_ranges_offset(batch, m_blocks, heads_q, s1)) << what;
                const int64_t rows = batch * heads_q * seqlen_q;
                const attention::KvCacheChunkLayout layout = attention::kvcache_chunk_layout(rows, hdim, splits, false);
                ASSERT_EQ(layout.slots, splits > 1 ? splits : 0) << what;
                if (splits > 1) {
                  ASSERT_EQ(layout.lse_offset, rows * hdim * splits) << what;
                }
                const size_t before = splits > 1 ? size_t(splits) * size_t(rows) * size_t(hdim + 1) * 4 : 0;
                ASSERT_EQ(layout.list_offset, (before + 255) / 256 * 256) << what;
                ASSERT_EQ(attention::kvcache_chunk_window_left(int(seqlen_q) + 5000, block_m, group), int(seqlen_q) + 5000)
                    << what;
                ++compared;
              }
  EXPECT_GT(compared, 1000);
  for (int splits : {1, 2, 3, 16})
    for (int tail = 0; tail < 2; ++tail) {
      attention::DecodeParams p{};
      p.num_splits = splits, p.partial_slots = splits + tail;
      EXPECT_EQ(attention::decode_runs_combine(p), splits + tail > 1) << splits << " splits, tail " << tail;
    }
  attention::DecodeParams p{};
  p.num_splits = 1, p.partial_slots = 0;  // 0 is read as num_splits
  EXPECT_FALSE(attention::decode_runs_combine(p));
}

// A packed chunk plan's launch values: partials and the combine at one split too, the band's left
// side block_m wider (clamped to int), the list sized by kv heads and tiles of 2P positions.
TEST(KvCachePackGqa, PackedLaunchValues) {
  const int64_t rows = 2 * 32 * 64, hdim = 128;
  attention::KvCacheChunkLayout l = attention::kvcache_chunk_layout(rows, hdim, 1, true);
  EXPECT_EQ(l.slots, 1);
  EXPECT_EQ(l.lse_offset, rows * hdim);
  EXPECT_EQ(l.list_offset, (size_t(rows) * 129 * 4 + 255) / 256 * 256);
  EXPECT_EQ(l.list_offset, attention::kvcache_list_offset(rows, hdim, 1, true));
  l = attention::kvcache_chunk_layout(rows, hdim, 3, true);
  EXPECT_EQ(l.slots, 3);
  EXPECT_EQ(l.lse_offset, 3 * rows * hdim);
  EXPECT_EQ(l.list_offset, attention::kvcache_list_offset(rows, hdim, 3));
  EXPECT_EQ(attention::kvcache_chunk_window_left(32768, 128, 4), 32768 + 128);
  EXPECT_EQ(attention::kvcache_chunk_window_left(std::numeric_limits<int>::max() - 5, 128, 4),
            std::numeric_limits<int>::max());
  for (int splits : {1, 4}) {
    attention::DecodeParams p{};
    p.num_splits = splits, p.partial_slots = splits, p.partials_at_one_split = true;
    EXPECT_TRUE(attention::decode_runs_combine(p)) << splits;
  }
  // 1:32768:64:32:8 (g 4, P 16): 8 kv heads of 2 tiles of 32 positions; 1:64 q16 g 8: one tile.
  attention::KvCacheListShape s = attention::kvcache_list_shape(64, 32, 8, 128, 4);
  EXPECT_EQ(s.heads, 8);
  EXPECT_EQ(s.m_blocks, 2);
  EXPECT_EQ(attention::kvcache_list_entries(1, s.m_blocks, s.heads, 8) / 2, 2 * 8 * 8);
  s = attention::kvcache_list_shape(16, 64, 8, 128, 8);
  EXPECT_EQ(s.heads, 8);
  EXPECT_EQ(s.m_blocks, 1);
}

// The packed Q load's descriptor shape (fwd_packed_q.hpp; the encode itself needs the driver and is
// not called here): box (64, g, P, 1) over (hdim, heads_q, seqlen_q, batch) with q's byte strides,
// 4 boxes a 128 x 128 tile and 4 · g · P · 128 expect-tx bytes; box row i · g + k of warpgroup w's
// box at position p0 + w · P is the tile row the list's row mapping gives (position, head).
TEST(KvCachePackGqa, PackedQLoadShape) {
  const int64_t batch = 3, seqlen_q = 200, heads_kv = 2, hdim = 128;
  int checked = 0;
  for (int g : {2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 64}) {
    const int64_t heads_q = g * heads_kv;
    // Padded (batch, seqlen_q, heads_q, hdim), and with a padded head and sequence pitch.
    for (int64_t pad : {0, 64}) {
      const int64_t head_stride = hdim + pad, seq_stride = heads_q * head_stride + pad,
                    batch_stride = seqlen_q * seq_stride;
      attention::PackedQLoad l;
      const Status st = attention::make_packed_q_load(fake(0x10000000), 2, hdim, 128, batch, seqlen_q, heads_q, g,
                                                      batch_stride, seq_stride, head_stride, &l);
      ASSERT_TRUE(st.ok()) << g << ": " << st.to_string();
      const int p = 64 / g;
      EXPECT_EQ(l.positions, p) << g;
      EXPECT_EQ(l.group, g);
      EXPECT_EQ(l.box[0], 64u);
      EXPECT_EQ(l.box[1], uint32_t(g));
      EXPECT_EQ(l.box[2], uint32_t(p));
      EXPECT_EQ(l.box[3], 1u);
      EXPECT_LE(l.box[1] * l.box[2], 64u) << "a box fills at most a warpgroup's 64 rows";
      EXPECT_EQ(l.dims[0], uint64_t(hdim));
      EXPECT_EQ(l.dims[1], uint64_t(heads_q));
      EXPECT_EQ(l.dims[2], uint64_t(seqlen_q));
      EXPECT_EQ(l.dims[3], uint64_t(batch));
      EXPECT_EQ(l.strides[0], uint64_t(head_stride * 2));
      EXPECT_EQ(l.strides[1], uint64_t(seq_stride * 2));
      EXPECT_EQ(l.strides[2], uint64_t(batch_stride * 2));
      EXPECT_EQ(l.boxes_per_tile, 4);
      EXPECT_EQ(l.expect_tx_bytes, uint32_t(4 * g * p * 128)) << g;
      EXPECT_EQ(2 * l.positions, attention::kvcache_tile_positions(128, g));
      // The boxes' rows are the list's rows: tile m of kv head h, warpgroup w's box at (., h · g,
      // m · 2P + w · P, b) puts q[b, pos, head] at slot row i · g + k of warpgroup w.
      for (int m = 0; m < 3; ++m)
        for (int w = 0; w < 2; ++w)
          for (int i = 0; i < int(l.box[2]); ++i)
            for (int k = 0; k < int(l.box[1]); ++k) {
              const int row = w * 64 + i * g + k, h_kv = 1;
              const int pos = m * attention::kvcache_tile_positions(128, g) + w * l.positions + i;
              ASSERT_TRUE(attention::packed_row_used(row, g));
              ASSERT_EQ(attention::packed_row_position(m, row, 128, g), pos) << g << " row " << row;
              ASSERT_EQ(attention::packed_row_head(h_kv * g, row, g), h_kv * g + k) << g << " row " << row;
              ++checked;
            }
    }
  }
  EXPECT_GT(checked, 1000);
  // hdim 64 and 256: one and four 64-channel halves per warpgroup.
  attention::PackedQLoad l;
  ASSERT_TRUE(attention::make_packed_q_load(fake(0x10000000), 2, 64, 128, 1, 64, 8, 4, 64 * 8 * 64, 8 * 64, 64, &l).ok());
  EXPECT_EQ(l.boxes_per_tile, 2);
  EXPECT_EQ(l.expect_tx_bytes, uint32_t(2 * 4 * 16 * 128));
  ASSERT_TRUE(attention::make_packed_q_load(fake(0x10000000), 2, 256, 128, 1, 64, 8, 4, 256 * 8 * 64, 8 * 256, 256, &l).ok());
  EXPECT_EQ(l.boxes_per_tile, 8);
}

// What the encode would refuse, or the packed tile cannot hold, is refused by name before it.
TEST(KvCachePackGqa, PackedQLoadRefusals) {
  attention::PackedQLoad l;
  auto load = [&](uintptr_t base, int bytes, int64_t hdim, int block_m, int64_t heads_q, int g, int64_t head_stride) {
    return attention::make_packed_q_load(fake(base), bytes, hdim, block_m, 2, 64, heads_q, g, 64 * heads_q * head_stride,
                                         heads_q * head_stride, head_stride, &l);
  };
  ASSERT_TRUE(load(0x1000, 2, 128, 128, 32, 4, 128).ok());
  expect_error(load(0x1008, 2, 128, 128, 32, 4, 128), "base address is not 16-byte aligned", StatusCode::kInvalidArgument);
  expect_error(load(0x1000, 1, 128, 128, 32, 4, 128), "only 16-bit q packs", StatusCode::kInvalidArgument);
  expect_error(load(0x1000, 2, 96, 128, 32, 4, 96), "head dim 96", StatusCode::kInvalidArgument);
  expect_error(load(0x1000, 2, 128, 96, 32, 4, 128), "block_m 96", StatusCode::kInvalidArgument);
  expect_error(load(0x1000, 2, 128, 128, 32, 1, 128), "group 1 is outside 2..64", StatusCode::kInvalidArgument);
  expect_error(load(0x1000, 2, 128, 128, 130, 65, 128), "group 65", StatusCode::kInvalidArgument);
  expect_error(load(0x1000, 2, 128, 128, 30, 4, 128), "heads_q 30 is not a multiple of the group 4",
               StatusCode::kInvalidArgument);
  expect_error(load(0x1000, 2, 128, 128, 32, 4, 132), "q_head_stride 132", StatusCode::kInvalidArgument);
  expect_error(attention::make_packed_q_load(fake(0x1000), 2, 128, 128, 2, 64, 32, 4, 64 * 32 * 128, 32 * 128 + 4, 128, &l),
               "q_seq_stride", StatusCode::kInvalidArgument);
  expect_error(attention::make_packed_q_load(fake(0x1000), 2, 128, 128, 2, 64, 32, 4, int64_t(1) << 40, 32 * 128, 128, &l),
               "q_batch_stride", StatusCode::kInvalidArgument);
  expect_error(attention::make_packed_q_load(fake(0x1000), 2, 128, 128, 0, 64, 32, 4, 64 * 32 * 128, 32 * 128, 128, &l),
               "batch 0", StatusCode::kInvalidArgument);
}

// A call whose chunk plan packs (Overrides::chunk_pack_gqa) passes the check like an unpacked one
// (the packed path ran on an H200, 2026-12-06): q_len 64 against 32k, 32:8 heads; with packing off
// the call keeps the unpacked chunk path there and the decode kernels at 8k.
TEST(KvCachePackGqa, APackedPlanPassesTheCheck) {
  KvCacheArgs a = chunk_args(1, 64, 32768);
  const KvCachePlan p = experimental::plan_kvcache_attention(a, kSms, packing());
  EXPECT_TRUE(p.fwd_path);
  EXPECT_TRUE(p.pack_gqa);
  a.workspace_bytes = p.workspace_bytes;
  EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, packing()).ok())
      << experimental::check_kvcache_attention(a, ctx_on_device(), kSms, packing()).to_string();
  experimental::Overrides off;
  off.chunk_pack_gqa = false;
  const KvCachePlan u = experimental::plan_kvcache_attention(a, kSms, off);
  EXPECT_TRUE(u.fwd_path);
  EXPECT_FALSE(u.pack_gqa);
  a = chunk_args(1, 64, 8192);
  EXPECT_FALSE(experimental::plan_kvcache_attention(a, kSms, off).fwd_path);
  EXPECT_TRUE(experimental::plan_kvcache_attention(a, kSms, packing()).fwd_path);  // the packed_only rule
  a.pack_gqa = 0;  // pack_gqa 0 keeps the call unpacked: the decode kernels at 8k
  EXPECT_FALSE(experimental::plan_kvcache_attention(a, kSms, packing()).fwd_path);
  // A workspace that holds the unpacked chunk plan but not the packed one (review, 2026-12-06): the
  // call runs unpacked (make_plan tries the unpacked chunk plan where its own rule takes the call,
  // then the decode kernels; plan queries assume the workspace they report, so only the check sees
  // this) and passes, with pack_gqa -1 and 1.
  a = chunk_args(1, 64, 32768);
  a.workspace_bytes = u.workspace_bytes;
  ASSERT_LT(u.workspace_bytes, p.workspace_bytes);
  EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, packing()).ok());
  a.pack_gqa = 1;
  EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, packing()).ok());
  // Forced onto the chunk path with pack_gqa 1: packed, and it passes without a refusal.
  experimental::Overrides fwd = packing();
  fwd.decode_path = "fwd";
  a = chunk_args(1, 16, 4096);
  a.pack_gqa = 1;
  const KvCachePlan f = experimental::plan_kvcache_attention(a, kSms, fwd);
  EXPECT_TRUE(f.fwd_path && f.pack_gqa);
  a.workspace_bytes = f.workspace_bytes;
  EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, fwd).ok());
  // The decode kernels' packing is theirs: a decode call packs as before and passes.
  KvCacheArgs d = valid_args();
  const KvCachePlan dp = plan_kvcache_attention(d, kSms);
  EXPECT_FALSE(dp.fwd_path);
  EXPECT_TRUE(dp.pack_gqa);
  EXPECT_TRUE(check_kvcache_attention(d, ctx_on_device(), kSms).ok());
}

// The review's mend (2) (docs/chunk-packgqa-plan.md): packed_tile_mask adds m_block · (128 − 2P)
// to seqlen_q in int, so a packed list needs m_blocks · 128 + max_len <= INT32_MAX. 1 x 5 queries,
// 64:1 heads (g = 64, P = 1: 3 tiles of 2 positions, 384 packed rows), a cache of 2^31 − 1 − 384
// (the limit: packed) or one more token: the heuristic falls back to the unpacked list, pack_gqa 1's
// request is refused (NOT_SUPPORTED naming pack_gqa). The unpacked call's own limit (seqlen_q +
// max_len + 256 < 2^31) passes both.
TEST(KvCachePackGqa, APackedListPastInt32IsRefusedOrUnpacked) {
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();
  auto args = [](int64_t max_len) {
    KvCacheArgs a = chunk_args(1, 5, 4096);
    a.q = tensor_bshd(a.q.data, HOPATTN_DTYPE_BF16, 1, 5, 64, 128);
    a.o = tensor_bshd(a.o.data, HOPATTN_DTYPE_BF16, 1, 5, 64, 128);
    a.lse = tensor_lse(static_cast<float*>(a.lse.data), 1, 64, 5);
    // Caches of up to 2^39 bytes, far from the other tensors and each other (fake addresses).
    a.k_cache = tensor_bshd(fake(0x100000000000), HOPATTN_DTYPE_BF16, 1, max_len, 1, 128);
    a.v_cache = tensor_bshd(fake(0x200000000000), HOPATTN_DTYPE_BF16, 1, max_len, 1, 128);
    return a;
  };
  experimental::Overrides fwd = packing();
  fwd.decode_path = "fwd";
  // At the limit: packed, by the heuristic and by pack_gqa 1.
  KvCacheArgs a = args(kLimit - 384);
  KvCachePlan p = experimental::plan_kvcache_attention(a, kSms, fwd);
  ASSERT_TRUE(p.fwd_path);
  EXPECT_TRUE(p.pack_gqa);
  a.pack_gqa = 1;
  p = experimental::plan_kvcache_attention(a, kSms, fwd);
  ASSERT_TRUE(p.fwd_path);
  EXPECT_TRUE(p.pack_gqa);
  // One token past it: the heuristic's plan is unpacked (and passes the check); pack_gqa 1 is
  // refused by the plan and the check (NOT_SUPPORTED naming pack_gqa 1).
  a = args(kLimit - 383);
  p = experimental::plan_kvcache_attention(a, kSms, fwd);
  ASSERT_TRUE(p.fwd_path);
  EXPECT_FALSE(p.pack_gqa);
  a.workspace_bytes = p.workspace_bytes;
  EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, fwd).ok())
      << experimental::check_kvcache_attention(a, ctx_on_device(), kSms, fwd).to_string();
  a.pack_gqa = 1;
  p = experimental::plan_kvcache_attention(a, kSms, fwd);
  EXPECT_FALSE(p.fwd_path);
  EXPECT_FALSE(p.pack_gqa);
  const Status s = experimental::check_kvcache_attention(a, ctx_on_device(), kSms, fwd);
  expect_error(s, "pack_gqa 1", StatusCode::kNotSupported);
  expect_error(s, "would exceed INT32_MAX", StatusCode::kNotSupported);
  // With packing off (Overrides::chunk_pack_gqa) nothing packs on the chunk path: pack_gqa 1 is the
  // decode kernels' and passes.
  experimental::Overrides unpacked;
  unpacked.decode_path = "fwd";
  unpacked.chunk_pack_gqa = false;
  p = experimental::plan_kvcache_attention(a, kSms, unpacked);
  ASSERT_TRUE(p.fwd_path);
  EXPECT_FALSE(p.pack_gqa);
  EXPECT_TRUE(experimental::check_kvcache_attention(a, ctx_on_device(), kSms, unpacked).ok())
      << experimental::check_kvcache_attention(a, ctx_on_device(), kSms, unpacked).to_string();
  // The same 1 x 5 x 64:1 call on a short cache packs (the limit is the cache's, not the shape's).
  a = args(4096);
  EXPECT_TRUE(experimental::plan_kvcache_attention(a, kSms, fwd).pack_gqa);
}

// kv16_mma_swap_8w_1cta (decode_registry.hpp's max_rows and limits) takes at most 8 query rows a
// row group and no options: forced onto anything else it is refused with the reason; forced onto a
// paged cache it runs; the defaults pick it only within them (and for contiguous caches only).
TEST(KvCachePlan, RowLimitsAreRefusedWithTheReason) {
  constexpr const char* kRow = "kv16_mma_swap_8w_1cta";
  experimental::Overrides o;
  o.decode_kernel = kRow;
  auto forced = [&](const KvCacheArgs& a) { return experimental::check_kvcache_attention(a, ctx_on_device(), kSms, o); };
  auto with_qlen = [](KvCacheArgs a, int sq) {
    a.q = tensor_bshd(a.q.data, a.q.dtype, 4, sq, 32, 128);
    a.o = tensor_bshd(a.o.data, a.o.dtype, 4, sq, 32, 128);
    a.lse = tensor_lse(static_cast<float*>(a.lse.data), 4, 32, sq);
    return a;
  };
  KvCacheArgs a = valid_args();  // q_len 1, 8 query heads a KV head: 8 packed rows
  EXPECT_TRUE(forced(a).ok()) << forced(a).to_string();
  const KvCachePlan p = experimental::plan_kvcache_attention(a, kSms, o);
  EXPECT_STREQ(p.kernel, kRow);
  EXPECT_TRUE(p.pack_gqa);
  EXPECT_EQ(p.num_splits, 8);  // 16 tiles of one CTA per SM, as kv16_split_1cta's plan
  {
    // Its splits are at least 512 keys (split_keys): a 1 x 1024 cache splits 2 ways, not 8 (the
    // 8 warps take one 64-key tile each); forced, it still takes up to a split per 128 keys.
    KvCacheArgs s = valid_args();
    for (Tensor* t : {&s.q, &s.o}) t->shape[0] = 1;
    s.lse.shape[0] = 1;
    for (Tensor* t : {&s.k_cache, &s.v_cache}) *t = tensor_bshd(t->data, t->dtype, 1, 1024, 4, 128);
    s.cache_seqlens.shape[0] = 1;
    ASSERT_TRUE(check(s).ok()) << check(s).to_string();
    EXPECT_STREQ(plan_kvcache_attention(s, kSms).kernel, kRow);
    EXPECT_EQ(plan_kvcache_attention(s, kSms).num_splits, 2);
    experimental::Overrides split1;
    split1.decode_kernel = "kv16_split_1cta";
    EXPECT_EQ(experimental::plan_kvcache_attention(s, kSms, split1).num_splits, 8);
    s.num_splits = 8;
    EXPECT_EQ(plan_kvcache_attention(s, kSms).num_splits, 8);
    s.num_splits = 100;
    EXPECT_EQ(plan_kvcache_attention(s, kSms).num_splits, 8);
  }
  EXPECT_STREQ(plan_kvcache_attention(a, kSms).kernel, kRow);  // the default of this call
  a = with_qlen(valid_args(), 2);
  expect_error(forced(a),
               "kernel 'kv16_mma_swap_8w_1cta' takes at most 8 query rows a row group; this call has 16 (seqlen_q 2 x 8 "
               "query heads a KV head, packed; with pack_gqa 0 a row group is one query head's seqlen_q rows)",
               StatusCode::kNotSupported);
  a.pack_gqa = 0;  // 2 rows a query head
  EXPECT_TRUE(forced(a).ok()) << forced(a).to_string();
  a = with_qlen(valid_args(), 9);
  a.pack_gqa = 0;
  expect_error(forced(a), "takes at most 8 query rows a row group; this call has 9 (seqlen_q 9, one query head a row group)",
               StatusCode::kNotSupported);
  // A paged cache: the row reads it, forced or by default.
  a = paged_args();
  EXPECT_TRUE(forced(a).ok()) << forced(a).to_string();
  EXPECT_STREQ(experimental::plan_kvcache_attention(a, kSms, o).kernel, kRow);
  EXPECT_STREQ(plan_kvcache_attention(a, kSms).kernel, kRow);
  const std::string options = "kernel 'kv16_mma_swap_8w_1cta' does not take a sliding window, softcap or sinks";
  a = valid_args();
  a.window = 1, a.window_left = 128, a.window_right = 0;
  expect_error(forced(a), options, StatusCode::kNotSupported);
  a = valid_args();
  a.softcap = 30.0f;
  expect_error(forced(a), options, StatusCode::kNotSupported);
  a = valid_args();
  a.sinks = valid_sinks();
  expect_error(forced(a), options, StatusCode::kNotSupported);
  expect_error(forced(int8_args()), "kernel 'kv16_mma_swap_8w_1cta' does not exist for an int8 cache at hdim 128",
               StatusCode::kNotSupported);
  // The plan asks no workspace of a refused call (the size query of a forced kernel: KvRun).
  EXPECT_EQ(experimental::plan_kvcache_attention(with_qlen(valid_args(), 2), kSms, o).workspace_bytes, 0u);
}

}  // namespace
}  // namespace hopattn
