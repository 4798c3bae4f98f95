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
// That the accumulator joins the alignment was found on the host (one-off programs
// tests/host/diag_fp8_h256_{row,group}.cpp, at commit 72fce21; never built by CMake): with it, the kernel's recurrence emulated on the e4m3 codes gives
// Fp8Forward.ManyTilesPerCta's hdim-256 non-causal case (seed 506) exactly as the H100 and H200
// did (max O error 2.19 at (b 3, q 914, h 3, d 230), -14.625 against fp64 -12.44; max LSE error
// 0.236); with the step aligned to its own largest product only (this model's first form) the
// same emulation gave 0.70 and 0.12, and that yardstick did not see the kernel's error (1.35x its
// bound). The kernel's S differs from a float32 dot product by up to (hdim / 32) x 2^-12 of the
// |S| bound (fp8_check.cpp's LSE floor); with near-one-hot rows that moves O by more than twice a
// float32-S yardstick's own error. O += P·V (P and V e4m3) is accumulated the same way, over 32
// keys per k-step, onto O. The yardsticks apply it to the e4m3 code values, as the kernel's
// WGMMAs see them, with the descales applied after (fp8_scale_log2, v_descale on O): on the
// dequantized floats (full-mantissa products) it cuts bits the code products (at most 8
// significant bits) mostly keep, and overstated the kernel (that hdim-256 group: max O error
// 3.22, LSE 0.75, against the GPU's 2.19 and 0.236, which the codes give exactly). A model, not
// the hardware's documented arithmetic: the GPU tests are its check.
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

// The FP8 kernel's softmax (src/attention/collective/sm90_fwd_softmax.hpp, OnlineSoftmax with
// kMaxOffset 8; src/attention/kernel/sm90_fwd_ws_fp8.hpp, tile_softmax_scale), for the yardsticks
// that run on the e4m3 codes: S is the codes' dot product (fp8_wgmma_dot), its exponent's scale
// scale_log2 = softmax_scale · q_descale · k_descale · log2(e) in that float order, and per KV
// block of the kernel's block_n (fp8_kernel_block_n) the running maximum m (raw S units) gives
// offset = m · scale_log2 - 8, P = exp2(s · scale_log2 - offset) (<= 256, rounded to e4m3 for
// P·V; the row sum takes the unrounded float32 P), alpha = exp2(offset_old - offset) rescales O
// and the row sum; O = acc · (1 / sum) · v_descale, LSE = offset · ln 2 + log(sum). The kernel's
// FFMAs are fmaf here; its ex2.approx is exp2 in double rounded to float, so that the CPU and GPU
// yardsticks get the same P bit for bit.
inline constexpr float kFp8MaxOffset = 8.0f;

// The keys per KV block of the FP8 kernel at a head dim (src/attention/kernel/sm90_fwd_config.hpp:
// 128 x 128 tiles at hdim 64 and 128, 128 x 64 at hdim 256). The online maximum, O's rescale and
// the P·V k-steps (32 keys from the block's start) follow these blocks, which start at multiples
// of block_n from key 0.
HOPATTN_REF_HD inline int fp8_kernel_block_n(int hdim) { return hdim > 128 ? 64 : 128; }

HOPATTN_REF_HD inline float fp8_scale_log2(float softmax_scale, float q_descale, float k_descale) {
  return softmax_scale * q_descale * k_descale * 1.4426950408889634f;  // float(M_LOG2E)
}
HOPATTN_REF_HD inline float fp8_softmax_offset(float m, float scale_log2) { return fmaf(m, scale_log2, -kFp8MaxOffset); }
// The rows whose P·V takes the row sums (mma_sums) keep a row's maximum m while a block's new one
// exceeds it by at most this (log2 units after scaling): the kernel's kFp8MaxLagLog2
// (src/attention/collective/sm90_fwd_fp8.hpp), its rule (OnlineSoftmax::online_exp) in float.
inline constexpr float kFp8MmaSumsLagLog2 = 0.8f;
HOPATTN_REF_HD inline float fp8_lagging_max(float m, float m_new, float scale_log2) {
  return m != -INFINITY && (m_new - m) * scale_log2 <= kFp8MmaSumsLagLog2 ? m : m_new;
}
HOPATTN_REF_HD inline float fp8_exp2(float x) { return float(exp2(double(x))); }
// P of score s against the block's offset (before the e4m3 rounding).
HOPATTN_REF_HD inline float fp8_softmax_p(float s, float scale_log2, float offset) {
  return fp8_exp2(fmaf(s, scale_log2, -offset));
}
// The LSE of a row (sum > 0): (m · scale_log2 - 8) · ln 2 + log(sum), as the kernel's finalize.
HOPATTN_REF_HD inline float fp8_softmax_lse(float m, float scale_log2, float sum) {
  return fmaf(fp8_softmax_offset(m, scale_log2), 0.693147180559945309f, logf(sum));
}

}  // namespace hopattn::reference
