// KV-cache attention: each argument rule, the split/packing plan and the workspace check,
// without a GPU (fake, never dereferenced pointers; the SM count passed in).
#include <gtest/gtest.h>

#include <limits>

#include <string>

#include "attention/decode_params.hpp"
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
  a.workspace = fake(0x60000000);
  a.workspace_bytes = size_t(1) << 30;
  return a;
}

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

Status check(const KvCacheArgs& a, DeviceContext ctx = {}) { return check_kvcache_attention(a, ctx, kSms); }

TEST(KvCacheChecks, ValidCallsPass) {
  EXPECT_TRUE(check(valid_args()).ok()) << check(valid_args()).to_string();
  EXPECT_TRUE(check(int8_args()).ok()) << check(int8_args()).to_string();
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
  EXPECT_EQ(tail.variant, plain.variant);
  const size_t rows = size_t(64) * 32 * 1;
  EXPECT_EQ(tail.workspace_bytes, 2 * rows * (128 + 1) * sizeof(float));
  a.workspace = nullptr;
  expect_error(check(a), "workspace: " + std::to_string(tail.workspace_bytes) + " bytes needed for 1 KV splits and the tail block");
  KvCacheArgs s = tail_args();  // 16 packed tiles: split; one slot more than the splits
  const KvCachePlan split = plan_kvcache_attention(s, kSms);
  ASSERT_GT(split.num_splits, 1);
  EXPECT_EQ(split.workspace_bytes, size_t(split.num_splits + 1) * size_t(4 * 32) * (128 + 1) * sizeof(float));
}

// Variant 22: the heuristic's splits become the big ones, as many small ones follow (8:7:1), and
// the workspace holds a partial for each.
TEST(KvCachePlan, UnevenVariant22AddsSmallSplits) {
  KvCacheArgs a = valid_args();
  const KvCachePlan even = plan_kvcache_attention(a, kSms);
  ASSERT_GT(even.num_splits, 1);
  EXPECT_EQ(even.small_splits, 0);
  a.variant = 22;
  const KvCachePlan u = plan_kvcache_attention(a, kSms);
  EXPECT_EQ(u.variant, 22);
  EXPECT_EQ(u.small_splits, even.num_splits);
  EXPECT_EQ(u.num_splits, 2 * even.num_splits);
  EXPECT_EQ(u.big_weight, 7);
  EXPECT_EQ(u.small_weight, 1);
  EXPECT_EQ(u.workspace_bytes, size_t(u.num_splits) * size_t(4 * 32) * (128 + 1) * sizeof(float));
  a.num_splits = 3;  // forced: the big splits
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 6);
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
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
  a.variant = 23;
  expect_error(check(a), "variant: 23 is not 0 (default), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, "
                         "18, 19, 20, 21 or 22");
  for (int v : {7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}) {
    a.variant = v;
    expect_error(check(a), "variant: " + std::to_string(v) + " applies to an int8 cache only");
  }
  {  // variants 9-21 exist at hdim 128 only
    KvCacheArgs h64 = int8_args();
    for (Tensor* t : {&h64.q, &h64.o, &h64.k_cache, &h64.v_cache}) *t = tensor_bshd(t->data, t->dtype, t->shape[0], t->shape[1], t->shape[2], 64);
    h64.k_scale = tensor_bshd(h64.k_scale.data, HOPATTN_DTYPE_FP32, 4, 64, 4, 64);
    h64.lse.data = nullptr;
    EXPECT_TRUE(check(h64).ok()) << check(h64).to_string();
    for (int v : {9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}) {
      h64.variant = v;
      expect_error(check(h64), "variant: " + std::to_string(v) + " is compiled for hdim 128 only, q has hdim 64");
    }
  }
  a.variant = 3;
  expect_error(check(a), "variant: 3 applies to an int8 cache only");
  a.variant = 4;
  expect_error(check(a), "variant: 4 applies to an int8 cache only");
  a.variant = 5;
  expect_error(check(a), "variant: 5 applies to an int8 cache only");
  a = int8_args();
  a.variant = 6;
  expect_error(check(a), "variant: 6 (balanced split-KV) applies to a 16-bit cache only");
  a.variant = 22;
  expect_error(check(a), "variant: 22 (uneven splits) applies to a 16-bit cache only");
  for (int v : {3, 4, 5}) {
    a.variant = v;
    EXPECT_TRUE(check(a).ok()) << "variant " << v << ": " << check(a).to_string();
  }
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
  a.variant = 2;  // two CTAs per SM: 264 slots; 16 splits make 256 CTAs (97 %, the fewest >= 95 %)
  EXPECT_EQ(plan_kvcache_attention(a, kSms).num_splits, 16);
  a.variant = 0;
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
  EXPECT_EQ(p.variant, 2);  // 512 tiles: two CTAs per SM
  EXPECT_EQ(plan_kvcache_attention(valid_args(), kSms).variant, 1);  // 16 tiles: one CTA per SM, splits
  // INT8, hdim 128, q_len 1 (8 packed rows): the register-dequantizing mma.sync warps with their
  // own rings, V folded into P, the keys as the mma's M, K in packed bf16 pairs (20), and from
  // three waves of three CTAs per SM on the 4-warp CTAs (21); 9-16 rows: the rows as M (16, 17);
  // at hdim 64 the swapped-operand consumer (4).
  EXPECT_EQ(plan_kvcache_attention(int8_args(), kSms).variant, 20);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 9), 1);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 11), 1);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 13), 2);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 14), 1);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 15), 3);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 16), 1);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 17), 3);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 18), 1);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 19), 3);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 20), 1);
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 21), 3);
  {
    KvCacheArgs many = int8_args();  // 128 x 4 KV heads = 512 tiles >= 3 x 132: variant 21, one split
    for (Tensor* t : {&many.q, &many.o, &many.k_cache, &many.v_cache}) t->shape[0] = 128;
    many.k_scale.shape[0] = many.v_scale.shape[0] = 128;
    const KvCachePlan mp = plan_kvcache_attention(many, kSms);
    EXPECT_EQ(mp.variant, 21);
    EXPECT_EQ(mp.num_splits, 1);
    for (Tensor* t : {&many.q, &many.o}) t->shape[1] = 2;  // q_len 2: 16 packed rows, the rows as M
    many.lse.data = nullptr;
    EXPECT_EQ(plan_kvcache_attention(many, kSms).variant, 17);
  }
  {
    KvCacheArgs h64 = int8_args();
    for (Tensor* t : {&h64.q, &h64.o}) t->shape[3] = 64;
    for (Tensor* t : {&h64.k_cache, &h64.v_cache}) t->shape[3] = 64;
    h64.k_scale.shape[3] = 64;
    EXPECT_EQ(plan_kvcache_attention(h64, kSms).variant, 4);
  }
  // q_len 4 (32 packed rows): one consumer; 16 tiles -> one CTA per SM (2), 64 tiles -> two (3).
  a = int8_args();
  for (Tensor* t : {&a.q, &a.o}) t->shape[1] = 4;
  a.lse = tensor_lse(static_cast<float*>(a.lse.data), 4, 32, 4);
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  EXPECT_EQ(plan_kvcache_attention(a, kSms).variant, 2);
  for (Tensor* t : {&a.q, &a.o}) t->shape[0] = 16;
  for (Tensor* t : {&a.k_cache, &a.v_cache}) t->shape[0] = 16;
  a.k_scale.shape[0] = a.v_scale.shape[0] = 16;
  EXPECT_EQ(plan_kvcache_attention(a, kSms).variant, 3);
  for (Tensor* t : {&a.q, &a.o}) t->shape[1] = 1;  // back to q_len 1 at batch 16
  EXPECT_EQ(plan_kvcache_attention(a, kSms).variant, 20);
  for (Tensor* t : {&a.q, &a.o}) t->shape[1] = 2;  // q_len 2: 16 packed rows
  EXPECT_EQ(plan_kvcache_attention(a, kSms).variant, 16);
}

// Variant 5 (int8, K converted in the consumer's registers) is forceable but never the default
// (measured slower than 4); it plans as 4 does: two CTAs per SM. (The default at hdim 128 is 16 or 17.)
TEST(KvCachePlan, Int8Variant5IsForcedOnlyAndPlansLikeVariant4) {
  EXPECT_EQ(attention::decode_ctas_per_sm(128, true, 5), 2);
  EXPECT_EQ(attention::decode_ctas_per_sm(64, true, 5), 2);
  EXPECT_EQ(attention::decode_ctas_per_sm(256, true, 5), 1);  // hdim 256 runs the one-consumer kernel
  KvCacheArgs a = int8_args();
  EXPECT_NE(plan_kvcache_attention(a, kSms).variant, 5);
  for (int64_t q_len : {1, 4}) {  // 8 and 32 packed rows: a forced 5 with more than 16 rows is allowed too
    for (Tensor* t : {&a.q, &a.o}) t->shape[1] = q_len;
    a.lse = tensor_lse(static_cast<float*>(a.lse.data), 4, 32, q_len);
    a.variant = 4;
    const KvCachePlan p4 = plan_kvcache_attention(a, kSms);
    a.variant = 5;
    const KvCachePlan p5 = plan_kvcache_attention(a, kSms);
    EXPECT_TRUE(check(a).ok()) << "q_len " << q_len << ": " << check(a).to_string();
    EXPECT_EQ(p5.variant, 5);
    EXPECT_EQ(p5.num_splits, p4.num_splits) << "q_len " << q_len;
    EXPECT_EQ(p5.pack_gqa, p4.pack_gqa) << "q_len " << q_len;
    EXPECT_EQ(p5.workspace_bytes, p4.workspace_bytes) << "q_len " << q_len;
    a.variant = 0;
    EXPECT_NE(plan_kvcache_attention(a, kSms).variant, 5) << "q_len " << q_len;
  }
}

// Variant 6 (16-bit, balanced split-KV) is forceable but never the default; it keeps variant 1's
// CTAs per row group (at most one per chunk) and sizes its workspace for the chunk partials of
// the longest possible row group plus the header and one counter per row group.
TEST(KvCachePlan, BalancedVariant6IsForcedOnlyAndSizesItsWorkspace) {
  KvCacheArgs a = valid_args();
  EXPECT_NE(plan_kvcache_attention(a, kSms).variant, 6);
  a.variant = 1;
  const KvCachePlan p1 = plan_kvcache_attention(a, kSms);
  a.variant = 6;
  const KvCachePlan p6 = plan_kvcache_attention(a, kSms);
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  EXPECT_EQ(p6.variant, 6);
  EXPECT_EQ(p6.pack_gqa, p1.pack_gqa);
  const int64_t max_len = a.k_cache.shape[1], hdim = a.q.shape[3];
  const int64_t block_n = hdim == 256 ? 64 : 128;
  const int64_t chunks = attention::balanced_chunks(int((max_len + block_n - 1) / block_n));
  EXPECT_EQ(p6.num_splits, std::max<int64_t>(std::min<int64_t>(p1.num_splits, chunks), 1));
  const int64_t rows_total = a.q.shape[0] * a.q.shape[1] * a.q.shape[2];
  const int64_t rows = p6.pack_gqa ? a.q.shape[1] * (a.q.shape[2] / a.k_cache.shape[2]) : a.q.shape[1];
  const int64_t groups = a.q.shape[0] * (p6.pack_gqa ? a.k_cache.shape[2] : a.q.shape[2]) * ((rows + 63) / 64);
  const attention::BalancedLayout l = attention::balanced_workspace_layout(groups, chunks, rows_total, int(hdim));
  EXPECT_EQ(p6.workspace_bytes, l.bytes);
  EXPECT_GE(l.o_part, l.counters + size_t(groups) * 4);
  EXPECT_EQ(l.o_part % 256, 0u);
  a.workspace_bytes = p6.workspace_bytes - 1;
  expect_error(check(a), "workspace: ");
  // A workspace that is not 16-byte aligned is refused (the header holds a 64-bit word).
  a.workspace_bytes = p6.workspace_bytes + 64;
  a.workspace = static_cast<char*>(a.workspace) + 4;
  expect_error(check(a), "workspace: variant 6 needs a 16-byte aligned workspace");
}

}  // namespace
}  // namespace hopattn
