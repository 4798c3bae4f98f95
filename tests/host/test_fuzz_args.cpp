// Seeded argument fuzzing of the C ABI, without a GPU (the checks run their host rules first):
// each case mutates one to four fields of a valid argument struct (forward attention, attention
// over a KV cache, its append, int8 quantization, FP8 quantization, GEMM) — tensor pointers, dtypes, ranks, extents,
// strides, scalars, struct sizes, the forward's window/softcap/sinks, variable-length fields and
// e4m3 descales, the
// KV cache's page table — and asserts
//   - no crash (a crash fails the test binary);
//   - a status that is OK or an error with a message (never an empty one, never kInternal);
//   - the same verdict from the check and from the call whenever the check reports an argument
//     error (the call must refuse before any device work, with the same message);
//   - hopattn_kvcache_workspace_size refuses every call the check refuses, with the same message;
//     hopattn_attention_forward_workspace_size refuses only calls the check refuses, with its message.
// Pointers are fake addresses: a call is only made where the check has refused it. The seed
// and the iteration count are printed; a failure names the case so it can be replayed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hopattn/gemm.h"
#include "hopattn/hopattn.h"
#include "hopattn/kvcache.h"

namespace {

constexpr int kIterations = 4000;  // per operation (~0.3 s each on the 2-core machine)
constexpr uint64_t kSeed = 20261203;

void* fake(uintptr_t addr) { return reinterpret_cast<void*>(addr); }

hopattn_tensor_t bshd(uintptr_t addr, hopattn_dtype_t dtype, int64_t b, int64_t s, int64_t h, int64_t d) {
  return hopattn_tensor_bshd(fake(addr), dtype, b, s, h, d);
}

hopattn_tensor_t contiguous(uintptr_t addr, hopattn_dtype_t dtype, std::initializer_list<int64_t> shape) {
  hopattn_tensor_t t{};
  t.data = fake(addr);
  t.dtype = dtype;
  t.rank = int32_t(shape.size());
  int i = 0;
  for (int64_t e : shape) t.shape[i++] = e;
  int64_t stride = 1;
  for (int j = t.rank - 1; j >= 0; --j) {
    t.stride[j] = stride;
    stride *= t.shape[j];
  }
  return t;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  int pick(int n) { return int(rng_() % uint64_t(n)); }

  int64_t extent() {
    static const int64_t kValues[] = {-1, 0, 1, 2, 17, 63, 64, 113, 127, 128, 129, 1000, 65535, 65536,
                                      int64_t(INT32_MAX), int64_t(INT32_MAX) + 1, int64_t(1) << 40,
                                      std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
    return pick(4) == 0 ? int64_t(rng_()) : kValues[pick(int(std::size(kValues)))];
  }

  int64_t stride() {
    static const int64_t kValues[] = {-1, 0, 1, 2, 3, 8, 64, 127, 128, 4096, int64_t(1) << 39, int64_t(1) << 40,
                                      std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
    return pick(4) == 0 ? int64_t(rng_()) : kValues[pick(int(std::size(kValues)))];
  }

  void* pointer(const std::vector<hopattn_tensor_t*>& all, void* current) {
    switch (pick(5)) {
      case 0: return nullptr;
      case 1: return static_cast<char*>(current) + 1 + pick(15);                 // misaligned
      case 2: return all[size_t(pick(int(all.size())))]->data;                   // another tensor's memory
      case 3: return static_cast<char*>(all[size_t(pick(int(all.size())))]->data) + 256 * pick(64);  // inside one
      default: return fake(uintptr_t(rng_()) & ~uintptr_t(15));
    }
  }

  void tensor(hopattn_tensor_t* t, const std::vector<hopattn_tensor_t*>& all) {
    switch (pick(5)) {
      case 0: t->data = pointer(all, t->data); break;
      case 1: t->dtype = hopattn_dtype_t(pick(12) - 2); break;  // -2 .. 9: out-of-range values too
      case 2: t->rank = pick(8) - 1; break;
      case 3: t->shape[pick(HOPATTN_MAX_RANK)] = extent(); break;
      default: t->stride[pick(HOPATTN_MAX_RANK)] = stride(); break;
    }
  }

  float scale() {
    static const float kValues[] = {0.0f, 1.0f, -1.0f, 1e-30f, 1e30f, std::numeric_limits<float>::infinity(),
                                    -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
    return kValues[pick(int(std::size(kValues)))];
  }

  int32_t small_int() {
    static const int32_t kValues[] = {-2, -1, 0, 1, 2, 3, 4, 16, 64, 127, 128, 129, INT32_MAX, INT32_MIN};
    return kValues[pick(int(std::size(kValues)))];
  }

  // A struct_size larger than the struct: the caller owns those bytes (Padded below), zero or not.
  uint32_t struct_size(uint32_t real) {
    static const uint32_t kValues[] = {0u, 1u, 8u, 0u, 0u, 1u << 20, UINT32_MAX};
    const int i = pick(int(std::size(kValues)) + 3);
    if (i == 3) return real - 8;
    if (i == 4) return real + 8;
    if (i >= int(std::size(kValues))) return real;
    return kValues[i];
  }

 private:
  std::mt19937_64 rng_;
};

// An argument struct with bytes after it that the caller owns: a struct_size up to 64 bytes past
// the struct reads them (zero, or one set: "a field of a newer hopattn.h").
template <class T>
struct Padded {
  T args{};
  unsigned char tail[64] = {};
};

template <class T>
void mutate_size(Mutator& m, Padded<T>* p) {
  p->args.struct_size = m.struct_size(sizeof(T));
  if (p->args.struct_size > sizeof(T) && m.pick(2) == 0) p->tail[m.pick(8)] = 1;
}

std::string text(const hopattn_status_t& s) { return "code " + std::to_string(int(s.code)) + ": " + s.message; }

// An argument error: the verdict the call must repeat before any device work.
bool is_argument_error(const hopattn_status_t& s) {
  return s.code == HOPATTN_INVALID_ARGUMENT || s.code == HOPATTN_NOT_SUPPORTED;
}

void expect_sane(const hopattn_status_t& s, const std::string& what) {
  EXPECT_NE(s.code, HOPATTN_INTERNAL) << what << ": " << text(s);
  if (s.code != HOPATTN_OK) {
    EXPECT_NE(s.message[0], '\0') << what << ": an error without a message";
  }
}

void expect_same(const hopattn_status_t& check, const hopattn_status_t& call, const std::string& what) {
  EXPECT_EQ(call.code, check.code) << what << ": check said " << text(check) << ", the call " << text(call);
  EXPECT_STREQ(call.message, check.message) << what;
}

TEST(FuzzArgs, AttentionForward) {
  Mutator m(kSeed);
  int refused = 0;
  for (int it = 0; it < kIterations; ++it) {
    Padded<hopattn_attention_fwd_args_t> padded;
    hopattn_attention_fwd_args_t& a = padded.args;
    a.struct_size = sizeof(a);
    // Half the cases start as a padded batch (a third of them with e4m3 inputs and their descales,
    // 0.5), half as a variable-length one (0.4).
    const bool varlen = m.pick(2) == 0;
    const bool fp8 = !varlen && m.pick(3) == 0;
    if (varlen) {
      a.q = contiguous(0x10000000, HOPATTN_DTYPE_BF16, {1000, 8, 128});
      a.k = contiguous(0x20000000, HOPATTN_DTYPE_BF16, {3000, 2, 128});
      a.v = contiguous(0x30000000, HOPATTN_DTYPE_BF16, {3000, 2, 128});
      a.o = contiguous(0x40000000, HOPATTN_DTYPE_BF16, {1000, 8, 128});
      a.lse = contiguous(0x50000000, HOPATTN_DTYPE_FP32, {8, 1000});
      a.cu_seqlens_q = contiguous(0x60010000, HOPATTN_DTYPE_INT32, {6});
      a.cu_seqlens_k = contiguous(0x60020000, HOPATTN_DTYPE_INT32, {6});
      if (m.pick(2) == 0) a.seqused_k = contiguous(0x60030000, HOPATTN_DTYPE_INT32, {5});
      a.max_seqlen_q = 600, a.max_seqlen_k = 2000;
      a.workspace = fake(0x70000000);
      a.workspace_bytes = size_t(1) << 20;
    } else {
      a.q = bshd(0x10000000, HOPATTN_DTYPE_BF16, 2, 100, 8, 128);
      a.k = bshd(0x20000000, HOPATTN_DTYPE_BF16, 2, 300, 2, 128);
      a.v = bshd(0x30000000, HOPATTN_DTYPE_BF16, 2, 300, 2, 128);
      a.o = bshd(0x40000000, HOPATTN_DTYPE_BF16, 2, 100, 8, 128);
      a.lse = contiguous(0x50000000, HOPATTN_DTYPE_FP32, {2, 8, 100});
      if (fp8) {
        for (hopattn_tensor_t* t : {&a.q, &a.k, &a.v}) t->dtype = HOPATTN_DTYPE_E4M3;
        if (m.pick(4) != 0) {  // descales (or none: 1)
          a.q_descale = contiguous(0x61000000, HOPATTN_DTYPE_FP32, {2, 2});
          a.k_descale = contiguous(0x62000000, HOPATTN_DTYPE_FP32, {2, 2});
          a.v_descale = contiguous(0x63000000, HOPATTN_DTYPE_FP32, {2, 2});
        }
      }
    }
    // The options of 0.3 start valid in some cases (a window, a softcap, sinks) and are mutated
    // like the rest.
    if (m.pick(3) == 0) a.window = 1, a.window_left = 64, a.window_right = 0;
    if (m.pick(3) == 0) a.softcap = 30.0f;
    if (m.pick(3) == 0) a.sinks = contiguous(0x60000000, HOPATTN_DTYPE_FP32, {8});
    const std::vector<hopattn_tensor_t*> all = {&a.q,         &a.k,          &a.v,           &a.o,
                                                &a.lse,       &a.sinks,      &a.cu_seqlens_q, &a.cu_seqlens_k,
                                                &a.seqused_k, &a.q_descale,  &a.k_descale,   &a.v_descale};
    const int mutations = 1 + m.pick(4);
    for (int j = 0; j < mutations; ++j) {
      switch (m.pick(16)) {
        case 0: a.softmax_scale = m.scale(); break;
        case 1: a.causal = m.small_int(); break;
        case 2: mutate_size(m, &padded); break;
        case 3: a.window = m.small_int(); break;
        case 4: a.window_left = m.small_int(); break;
        case 5: a.window_right = m.small_int(); break;
        case 6: a.softcap = m.scale(); break;
        case 7: a.max_seqlen_q = m.small_int(); break;
        case 8: a.max_seqlen_k = m.small_int(); break;
        case 9: a.workspace = m.pick(2) ? m.pointer(all, a.workspace) : nullptr; break;
        case 10: a.workspace_bytes = size_t(m.extent()); break;
        default: m.tensor(all[size_t(m.pick(int(all.size())))], all); break;
      }
    }
    const std::string what = "forward case " + std::to_string(it) + " (seed " + std::to_string(kSeed) + ")";
    const hopattn_status_t check = hopattn_attention_forward_check(&a, nullptr);
    expect_sane(check, what);
    if (is_argument_error(check)) {
      ++refused;
      expect_same(check, hopattn_attention_forward(&a, nullptr), what);
    }
    // The workspace size checks every rule but the workspace's: what it refuses, the call refuses
    // with the same message.
    size_t bytes = 0;
    const hopattn_status_t size = hopattn_attention_forward_workspace_size(&a, &bytes);
    expect_sane(size, what + " (workspace size)");
    if (is_argument_error(size)) expect_same(size, check, what + " (workspace size)");
    if (HasFailure()) return;
  }
  std::printf("forward: %d cases, %d refused by the argument rules\n", kIterations, refused);
  EXPECT_GT(refused, kIterations / 2);  // the mutations do break the rules
}

void fill_kvcache(hopattn_kvcache_args_t* a, bool int8, bool tail, bool paged = false) {
  *a = hopattn_kvcache_args_t{};
  a->struct_size = sizeof(*a);
  const hopattn_dtype_t cache = int8 ? HOPATTN_DTYPE_INT8 : HOPATTN_DTYPE_BF16;
  a->q = bshd(0x10000000, HOPATTN_DTYPE_BF16, 4, 1, 32, 128);
  a->k_cache = bshd(0x20000000, cache, 4, 1024, 8, 128);
  a->v_cache = bshd(0x30000000, cache, 4, 1024, 8, 128);
  if (paged) {  // 0.4: the same 1024 positions per sequence as 8 pages of 128 from a pool of 40
    a->k_cache = bshd(0x20000000, cache, 40, 128, 8, 128);
    a->v_cache = bshd(0x30000000, cache, 40, 128, 8, 128);
    a->page_table = contiguous(0xc0000000, HOPATTN_DTYPE_INT32, {4, 8});
  }
  a->cache_seqlens = contiguous(0x40000000, HOPATTN_DTYPE_INT32, {4});
  a->o = bshd(0x50000000, HOPATTN_DTYPE_BF16, 4, 1, 32, 128);
  a->lse = contiguous(0x60000000, HOPATTN_DTYPE_FP32, {4, 32, 1});
  if (int8) {
    a->quant_block = 128;
    a->k_scale = contiguous(0x70000000, HOPATTN_DTYPE_FP32, {4, 8, 8, 128});
    a->v_scale = contiguous(0x80000000, HOPATTN_DTYPE_FP32, {4, 1024, 8});
    if (paged) {  // the scales paged by the same ids: (pages, page_size / quant_block, ...), (pages, page_size, ...)
      a->k_scale = contiguous(0x70000000, HOPATTN_DTYPE_FP32, {40, 1, 8, 128});
      a->v_scale = contiguous(0x80000000, HOPATTN_DTYPE_FP32, {40, 128, 8});
    }
    if (tail) {
      a->k_tail = bshd(0x90000000, HOPATTN_DTYPE_BF16, 4, 128, 8, 128);
      a->v_tail = bshd(0xa0000000, HOPATTN_DTYPE_BF16, 4, 128, 8, 128);
    }
  }
  a->workspace = fake(0xb0000000);
  a->workspace_bytes = size_t(1) << 24;
}

TEST(FuzzArgs, KvCacheAttention) {
  Mutator m(kSeed + 1);
  int refused = 0;
  for (int it = 0; it < kIterations; ++it) {
    Padded<hopattn_kvcache_args_t> padded;
    hopattn_kvcache_args_t& a = padded.args;
    // A quarter of the cases start paged (16-bit and int8 pools, with the int8 scales paged).
    const bool int8 = m.pick(2) == 0, tail = m.pick(2) == 0;
    fill_kvcache(&a, int8, tail, m.pick(4) == 0);
    // The options (0.4) start valid in some cases (a window, a softcap, sinks; int8 caches refuse
    // them) and are mutated like the rest.
    if (m.pick(3) == 0) a.window = 1, a.window_left = 64, a.window_right = 0;
    if (m.pick(3) == 0) a.softcap = 30.0f;
    if (m.pick(3) == 0) a.sinks = contiguous(0xd0000000, HOPATTN_DTYPE_FP32, {32});
    const std::vector<hopattn_tensor_t*> all = {&a.q,       &a.k_cache, &a.v_cache, &a.cache_seqlens,
                                                &a.o,       &a.lse,     &a.k_scale, &a.v_scale,
                                                &a.k_tail,  &a.v_tail,  &a.page_table, &a.sinks};
    const int mutations = 1 + m.pick(4);
    for (int j = 0; j < mutations; ++j) {
      switch (m.pick(16)) {
        case 0: a.softmax_scale = m.scale(); break;
        case 1: a.causal = m.small_int(); break;
        case 2: a.num_splits = m.small_int(); break;
        case 3: a.pack_gqa = m.small_int(); break;
        case 4: a.quant_block = m.small_int(); break;
        case 5: mutate_size(m, &padded); break;
        case 6:
          a.workspace = m.pick(2) ? m.pointer(all, a.workspace) : a.workspace;
          a.workspace_bytes = m.pick(2) ? size_t(m.extent()) : a.workspace_bytes;
          break;
        case 7: a.window = m.small_int(); break;
        case 8: a.window_left = m.small_int(); break;
        case 9: a.window_right = m.small_int(); break;
        case 10: a.softcap = m.scale(); break;
        default: m.tensor(all[size_t(m.pick(int(all.size())))], all); break;
      }
    }
    const std::string what = "kvcache case " + std::to_string(it) + " (seed " + std::to_string(kSeed + 1) + ")";
    // The call's own host rules (hopattn_kvcache_attention has no separate check entry point):
    // the workspace query must refuse exactly what the call refuses.
    size_t bytes = 0;
    const hopattn_status_t size = hopattn_kvcache_workspace_size(&a, &bytes);
    expect_sane(size, what);
    if (is_argument_error(size)) {
      ++refused;
      expect_same(size, hopattn_kvcache_attention(&a, nullptr), what);
    }
    if (HasFailure()) return;
  }
  std::printf("kvcache: %d cases, %d refused by the argument rules\n", kIterations, refused);
  EXPECT_GT(refused, kIterations / 2);
}

// The append (0.3; paged caches 0.4): its check entry point and the call give the same verdict on
// every argument error, with the rotary tables, q / q_rotated, in-place lengths and a page table
// mutated with the rest.
TEST(FuzzArgs, KvCacheAppend) {
  Mutator m(kSeed + 4);
  int refused = 0;
  for (int it = 0; it < kIterations; ++it) {
    Padded<hopattn_kvcache_append_args_t> padded;
    hopattn_kvcache_append_args_t& a = padded.args;
    a.struct_size = sizeof(a);
    a.k_new = bshd(0x10000000, HOPATTN_DTYPE_BF16, 4, 3, 8, 128);
    a.v_new = bshd(0x18000000, HOPATTN_DTYPE_BF16, 4, 3, 8, 128);
    a.k_cache = bshd(0x20000000, HOPATTN_DTYPE_BF16, 4, 1024, 8, 128);
    a.v_cache = bshd(0x30000000, HOPATTN_DTYPE_BF16, 4, 1024, 8, 128);
    if (m.pick(3) == 0) {  // a paged cache: 40 pages of 64 tokens, 16 per sequence
      a.k_cache = bshd(0x20000000, HOPATTN_DTYPE_BF16, 40, 64, 8, 128);
      a.v_cache = bshd(0x30000000, HOPATTN_DTYPE_BF16, 40, 64, 8, 128);
      a.page_table = contiguous(0xc0000000, HOPATTN_DTYPE_INT32, {4, 16});
    }
    a.cache_seqlens = contiguous(0x40000000, HOPATTN_DTYPE_INT32, {4});
    a.seqlens_out = m.pick(2) == 0 ? a.cache_seqlens : contiguous(0x48000000, HOPATTN_DTYPE_INT32, {4});
    if (m.pick(2) == 0) {
      a.rotary_cos = contiguous(0x50000000, HOPATTN_DTYPE_FP32, {1024, 32});
      a.rotary_sin = contiguous(0x58000000, HOPATTN_DTYPE_FP32, {1024, 32});
      a.rotary_interleaved = m.pick(2);
      if (m.pick(2) == 0) {
        a.q = bshd(0x60000000, HOPATTN_DTYPE_BF16, 4, 2, 32, 128);
        a.q_rotated = bshd(0x68000000, HOPATTN_DTYPE_BF16, 4, 2, 32, 128);
      }
    }
    const std::vector<hopattn_tensor_t*> all = {&a.k_new,      &a.v_new,      &a.k_cache,     &a.v_cache,
                                                &a.cache_seqlens, &a.k_scale,  &a.v_scale,     &a.k_tail,
                                                &a.v_tail,     &a.rotary_cos, &a.rotary_sin,  &a.q,
                                                &a.q_rotated,  &a.seqlens_out, &a.page_table};
    const int mutations = 1 + m.pick(4);
    for (int j = 0; j < mutations; ++j) {
      switch (m.pick(10)) {
        case 0: a.quant_block = m.small_int(); break;
        case 1: a.rotary_interleaved = m.small_int(); break;
        case 2: mutate_size(m, &padded); break;
        default: m.tensor(all[size_t(m.pick(int(all.size())))], all); break;
      }
    }
    const std::string what = "append case " + std::to_string(it) + " (seed " + std::to_string(kSeed + 4) + ")";
    const hopattn_status_t check = hopattn_kvcache_append_check(&a, nullptr);
    expect_sane(check, what);
    if (is_argument_error(check)) {
      ++refused;
      expect_same(check, hopattn_kvcache_append(&a, nullptr), what);
    }
    if (HasFailure()) return;
  }
  std::printf("append: %d cases, %d refused by the argument rules\n", kIterations, refused);
  EXPECT_GT(refused, kIterations / 2);
}

TEST(FuzzArgs, KvCacheQuantize) {
  Mutator m(kSeed + 2);
  int refused = 0;
  for (int it = 0; it < kIterations; ++it) {
    Padded<hopattn_kvcache_quantize_args_t> padded;
    hopattn_kvcache_quantize_args_t& a = padded.args;
    a.struct_size = sizeof(a);
    a.k = bshd(0x10000000, HOPATTN_DTYPE_BF16, 2, 256, 8, 128);
    a.v = bshd(0x20000000, HOPATTN_DTYPE_BF16, 2, 256, 8, 128);
    a.k_int8 = bshd(0x30000000, HOPATTN_DTYPE_INT8, 2, 256, 8, 128);
    a.v_int8 = bshd(0x40000000, HOPATTN_DTYPE_INT8, 2, 256, 8, 128);
    a.k_scale = contiguous(0x50000000, HOPATTN_DTYPE_FP32, {2, 2, 8, 128});
    a.v_scale = contiguous(0x60000000, HOPATTN_DTYPE_FP32, {2, 256, 8});
    a.quant_block = 128;
    const std::vector<hopattn_tensor_t*> all = {&a.k, &a.v, &a.k_int8, &a.v_int8, &a.k_scale, &a.v_scale};
    const int mutations = 1 + m.pick(4);
    for (int j = 0; j < mutations; ++j) {
      switch (m.pick(8)) {
        case 0: a.quant_block = m.small_int(); break;
        case 1: mutate_size(m, &padded); break;
        default: m.tensor(all[size_t(m.pick(int(all.size())))], all); break;
      }
    }
    const std::string what = "quantize case " + std::to_string(it) + " (seed " + std::to_string(kSeed + 2) + ")";
    const hopattn_status_t call = hopattn_kvcache_quantize_int8(&a, nullptr);
    expect_sane(call, what);
    refused += is_argument_error(call);
    if (HasFailure()) return;
  }
  std::printf("quantize: %d cases, %d refused by the argument rules\n", kIterations, refused);
  EXPECT_GT(refused, kIterations / 2);
}

// FP8 quantization (0.5): (2, 256, 8, 128) bf16 into e4m3 with (2, 2) descales.
TEST(FuzzArgs, Fp8Quantize) {
  Mutator m(kSeed + 3);
  int refused = 0;
  for (int it = 0; it < kIterations; ++it) {
    Padded<hopattn_fp8_quantize_args_t> padded;
    hopattn_fp8_quantize_args_t& a = padded.args;
    a.struct_size = sizeof(a);
    a.x = bshd(0x10000000, HOPATTN_DTYPE_BF16, 2, 256, 8, 128);
    a.out = bshd(0x20000000, HOPATTN_DTYPE_E4M3, 2, 256, 8, 128);
    a.descale = contiguous(0x30000000, HOPATTN_DTYPE_FP32, {2, 2});
    const std::vector<hopattn_tensor_t*> all = {&a.x, &a.out, &a.descale};
    const int mutations = 1 + m.pick(4);
    for (int j = 0; j < mutations; ++j) {
      if (m.pick(8) == 0) mutate_size(m, &padded);
      else m.tensor(all[size_t(m.pick(int(all.size())))], all);
    }
    const std::string what = "fp8 quantize case " + std::to_string(it) + " (seed " + std::to_string(kSeed + 3) + ")";
    const hopattn_status_t call = hopattn_fp8_quantize(&a, nullptr);
    expect_sane(call, what);
    refused += is_argument_error(call);
    if (HasFailure()) return;
  }
  std::printf("fp8 quantize: %d cases, %d refused by the argument rules\n", kIterations, refused);
  EXPECT_GT(refused, kIterations / 2);
}

#if HOPATTN_WITH_GEMM
TEST(FuzzArgs, Gemm) {
  Mutator m(kSeed + 3);
  int refused = 0;
  for (int it = 0; it < kIterations; ++it) {
    hopattn_gemm_args_t a{};
    a.a = hopattn_matrix(fake(0x10000000), HOPATTN_DTYPE_BF16, 512, 256, 1, 0);
    a.b = hopattn_matrix(fake(0x20000000), HOPATTN_DTYPE_BF16, 256, 384, 0, 0);
    a.c = hopattn_matrix(fake(0x30000000), HOPATTN_DTYPE_BF16, 512, 384, 1, 0);
    a.d = hopattn_matrix(fake(0x40000000), HOPATTN_DTYPE_BF16, 512, 384, 1, 0);
    a.alpha = 1.0f, a.beta = 0.5f;
    const std::vector<hopattn_tensor_t*> all = {&a.a, &a.b, &a.c, &a.d};
    const int mutations = 1 + m.pick(4);
    for (int j = 0; j < mutations; ++j) {
      switch (m.pick(10)) {
        case 0: a.alpha = m.scale(); break;
        case 1: a.beta = m.scale(); break;
        case 2: a.scale_a = m.scale(); break;
        case 3: a.variant = m.small_int(); break;
        default: m.tensor(all[size_t(m.pick(int(all.size())))], all); break;
      }
    }
    const std::string what = "gemm case " + std::to_string(it) + " (seed " + std::to_string(kSeed + 3) + ")";
    const hopattn_status_t check = hopattn_gemm_check(&a, nullptr);
    expect_sane(check, what);
    if (is_argument_error(check)) {
      ++refused;
      expect_same(check, hopattn_gemm(&a, nullptr), what);
    }
    if (HasFailure()) return;
  }
  std::printf("gemm: %d cases, %d refused by the argument rules\n", kIterations, refused);
  EXPECT_GT(refused, kIterations / 2);
}

#endif  // HOPATTN_WITH_GEMM

}  // namespace
