// Hopper's FP8 WGMMA accumulation, modelled for the FP8 yardsticks
// (attention_cpu_fp8_lowp, attention_gpu_fp8_lowp): the tensor cores do not accumulate e4m3
// products in float32. Each k-step of 32 products is summed with the products aligned to the
// largest of them and truncated to 13 fraction bits below it, and the running sum is kept in an
// e8m13 format (13 of float32's 23 fraction bits), truncated (FP22; DeepSeek-V3's report, §3.3.2,
// on the same tensor cores: "around 14 bits"). The kernel's S differs from a float32 dot product
// by up to (hdim / 32) x 2^-12 of the |S| bound (fp8_check.cpp's LSE floor); with near-one-hot
// rows that moves O by more than twice a float32-S yardstick's own error (H100, 2026-12-06: hdim
// 128 and 256 grids at 1.1-1.6x that bound). The model makes the yardstick's S err the same way,
// so that "2 x the yardstick's error" bounds the kernel again; O += P·V (P and V e4m3) is
// accumulated the same way, over 32 keys per k-step, onto O (at hdim 256 the float32-O yardstick
// was still exceeded 1.35x). A model, not the hardware's
// documented arithmetic: the GPU tests are its check.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define HOPATTN_REF_HD __host__ __device__
#else
#define HOPATTN_REF_HD
#endif

namespace hopattn::reference {

inline constexpr int kFp8AccFractionBits = 13;  // e8m13
inline constexpr int kFp8AccStep = 32;          // products per WGMMA k-step (e4m3: k = 32)

// x with its float32 fraction cut to kFp8AccFractionBits bits, toward zero.
HOPATTN_REF_HD inline float fp8_acc_truncate(float x) {
  uint32_t bits;
#if defined(__CUDA_ARCH__)
  bits = __float_as_uint(x);
#else
  std::memcpy(&bits, &x, 4);
#endif
  bits &= ~((1u << (23 - kFp8AccFractionBits)) - 1u);
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  std::memcpy(&x, &bits, 4);
  return x;
#endif
}

// acc + the sum of product(i) for i in [0, n), as the model above computes it: in k-steps of 32
// products, each step's sum aligned to its largest product, the running sum truncated after each.
template <class Product>
HOPATTN_REF_HD inline float fp8_wgmma_accumulate(float acc, Product product, int n) {
  for (int i0 = 0; i0 < n; i0 += kFp8AccStep) {
    const int end = i0 + kFp8AccStep < n ? i0 + kFp8AccStep : n;
    float largest = 0.0f;
    for (int i = i0; i < end; ++i) largest = fmaxf(largest, fabsf(product(i)));
    float step = 0.0f;
    if (largest > 0.0f) {
      // The products aligned to the largest: multiples of 2^(e - 13), e its exponent, toward zero.
      // (Not below float32's smallest subnormal: a quantum of 0 would make the step NaN.)
      const int e = ilogbf(largest) - kFp8AccFractionBits;
      const float quantum = ldexpf(1.0f, e > -149 ? e : -149);
      for (int i = i0; i < end; ++i) step += truncf(product(i) / quantum) * quantum;
    }
    acc = fp8_acc_truncate(acc + step);
  }
  return acc;
}

// The dot product of q and k (n values; k read through load(j)): S = Q·Kᵀ's WGMMA.
template <class LoadK>
HOPATTN_REF_HD inline float fp8_wgmma_dot(const float* q, LoadK load, int n) {
  return fp8_wgmma_accumulate(0.0f, [&](int i) { return q[i] * load(i); }, n);
}

}  // namespace hopattn::reference
