// Small inline-PTX helpers of the mma.sync int8 decode kernels (kernel/sm90_decode_int8_mma.hpp):
// shared-memory addresses and loads (16-, 8- and 4-byte), mma.sync m16n8k16, cp.async and its
// mbarrier arrival, the P·V loops' register shift (pop_front), packed f16/bf16 arithmetic,
// movmatrix and a one-instruction LOP3.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cutlass/numeric_types.h>

#include <cstdint>
#include <type_traits>

namespace hopattn::attention {
namespace int8_mma_detail {

CUTE_DEVICE uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

CUTE_DEVICE uint4 lds128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}
CUTE_DEVICE int lds_s32(uint32_t addr) {
  int v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}
template <class T>
CUTE_DEVICE T* lds_ptr(T* const* addr) {
  uint64_t v;
  asm volatile("ld.shared.b64 %0, [%1];" : "=l"(v) : "r"(smem_u32(addr)));
  return reinterpret_cast<T*>(v);
}
CUTE_DEVICE float4 lds128f(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr));
  return v;
}

// D = A·B + D, m16n8k16, fp32 accumulators.
template <class Element>
CUTE_DEVICE void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<Element, cutlass::bfloat16_t>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

CUTE_DEVICE void cp_async_4(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
CUTE_DEVICE void cp_async_mbarrier_arrive_noinc(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_u32(bar)) : "memory");
}

// kWords (4, 2 or 1) consecutive 32-bit words of shared memory at addr (aligned to their size):
// a K row's or a V row's bytes of the pass.
template <int kWords>
CUTE_DEVICE void lds_words(uint32_t (&w)[kWords], uint32_t addr) {
  if constexpr (kWords == 4) {
    const uint4 raw = lds128(addr);
    w[0] = raw.x, w[1] = raw.y, w[2] = raw.z, w[3] = raw.w;
  } else if constexpr (kWords == 2) {
    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "r"(addr));
  } else {
    static_assert(kWords == 1, "4, 2 or 1 words");
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(w[0]) : "r"(addr));
  }
}

// The P·V loop's fragment of P: pa[0], the rest shifted down (the loop is not unrolled, and a
// register array is indexed only by constants). kRegs: 4 (P's A fragment) or 2 (P'ᵀ's B fragment).
template <int kSteps, int kRegs>
CUTE_DEVICE void pop_front(uint32_t (&pa)[kSteps][kRegs], uint32_t (&out)[kRegs]) {
  CUTE_UNROLL
  for (int x = 0; x < kRegs; ++x) out[x] = pa[0][x];
  CUTE_UNROLL
  for (int r = 0; r < kSteps - 1; ++r)
    CUTE_UNROLL
    for (int x = 0; x < kRegs; ++x) pa[r][x] = pa[r + 1][x];
}

CUTE_DEVICE uint32_t hadd2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

CUTE_DEVICE uint32_t movmatrix_trans(uint32_t x) {
  uint32_t d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(x));
  return d;
}

CUTE_DEVICE uint32_t sub_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("sub.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
CUTE_DEVICE uint32_t mul_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// (a & mask) | c in one LOP3: written out, ptxas splits it in two (both constants immediates).
CUTE_DEVICE uint32_t and_or(uint32_t a, uint32_t mask, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(mask), "r"(c));
  return d;
}

}  // namespace int8_mma_detail
}  // namespace hopattn::attention
