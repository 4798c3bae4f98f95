// Hopper's FP8 WGMMA accumulation, modelled for the FP8 yardsticks
// (attention_cpu_fp8_lowp, attention_gpu_fp8_lowp): the tensor cores do not accumulate e4m3
// products in float32. Each k-step of 32 products is added to the accumulator with the products
// aligned to the largest exponent among them AND the incoming accumulator, each product cut to 13
// fraction bits below that (toward zero), and the running sum kept in an e8m13 format (13 of
// float32's 23 fraction bits), truncated (FP22; DeepSeek-V3's report, §3.3.2, on the same tensor
// cores: "around 14 bits"). Once the running sum outgrows the products (a large score after the
// first k-steps), every product is cut at the sum's quantum, not at its own step's largest: the
// per-product truncation errors of a step add up (32 per step), where an exactly summed step
// loses at most one quantum.
//
// That the accumulator joins the alignment was found on the host (tests/host/diag_fp8_h256_row.cpp,
// diag_fp8_h256_group.cpp): with it, the kernel's recurrence emulated on the e4m3 codes gives
// Fp8Forward.ManyTilesPerCta's hdim-256 non-causal case (seed 506) exactly as the H100 and H200
// did (max O error 2.19 at (b 3, q 914, h 3, d 230), -14.625 against fp64 -12.44; max LSE error
// 0.236); with the step aligned to its own largest product only (this model's first form) the
// same emulation gave 0.70 and 0.12, and that yardstick did not see the kernel's error (1.35x its
// bound). The kernel's S differs from a float32 dot product by up to (hdim / 32) x 2^-12 of the
// |S| bound (fp8_check.cpp's LSE floor); with near-one-hot rows that moves O by more than twice a
// float32-S yardstick's own error. O += P·V (P and V e4m3) is accumulated the same way, over 32
// keys per k-step, onto O. A model, not the hardware's documented arithmetic: the GPU tests are
// its check.
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
// products, each step's products (and the incoming acc) aligned to the largest magnitude among
// them and acc, the running sum truncated after each step.
template <class Product>
HOPATTN_REF_HD inline float fp8_wgmma_accumulate(float acc, Product product, int n) {
  for (int i0 = 0; i0 < n; i0 += kFp8AccStep) {
    const int end = i0 + kFp8AccStep < n ? i0 + kFp8AccStep : n;
    float largest = fabsf(acc);  // the accumulator takes part in the alignment
    for (int i = i0; i < end; ++i) largest = fmaxf(largest, fabsf(product(i)));
    float step = 0.0f;
    if (largest > 0.0f) {
      // Aligned to the largest: multiples of 2^(e - 13), e its exponent, toward zero. (Not below
      // float32's smallest subnormal: a quantum of 0 would make the step NaN.) acc itself is on
      // that grid unless a product outgrows it.
      const int e = ilogbf(largest) - kFp8AccFractionBits;
      const float quantum = ldexpf(1.0f, e > -149 ? e : -149);
      for (int i = i0; i < end; ++i) step += truncf(product(i) / quantum) * quantum;
      acc = truncf(acc / quantum) * quantum;
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
