// The canonical GEMM problem the kernels see, built from checked GemmArgs. Plain data: shared by
// the host-only checks and the kernel instances.
//
// The kernels compute D(M,N) = alpha · A(M,K) · B(N,K)ᵀ + beta · C(M,N), with B viewed as (N,K)
// (WGMMA's view). An operand is K-major (its K elements contiguous) or MN-major. Three
// combinations are compiled: (K,K), (K,MN), (MN,MN). The fourth, (MN,K), is the transpose of
// (K,MN): Dᵀ = Bᵀ·Aᵀ swaps the operands, M with N and D's strides, so make_problem rewrites it.
#pragma once

#include <cstdint>

#include "hopattn/gemm.h"

namespace hopattn::gemm {

enum class Major : int { kK = 0, kMN = 1 };

struct GemmProblem {
  int m = 0, n = 0, k = 0;
  hopattn_dtype_t dtype = HOPATTN_DTYPE_BF16;      // A and B
  hopattn_dtype_t out_dtype = HOPATTN_DTYPE_BF16;  // C and D
  const void* a = nullptr;  // (M, K)
  int64_t lda = 0;          // stride of the non-contiguous mode, in elements
  Major major_a = Major::kK;
  const void* b = nullptr;  // (N, K)
  int64_t ldb = 0;
  Major major_b = Major::kK;
  void* d = nullptr;  // (M, N), any strides
  int64_t d_stride_m = 0, d_stride_n = 0;
  const void* c = nullptr;  // (M, N), read only when beta != 0
  int64_t c_stride_m = 0, c_stride_n = 0;
  float alpha = 1.0f, beta = 0.0f;
  bool swapped = false;  // the operands were exchanged (Dᵀ = Bᵀ·Aᵀ)
  hopattn_gemm_variant_t variant = HOPATTN_GEMM_AUTO;
};

// Builds the canonical problem from arguments that passed check_gemm (variant left as given).
GemmProblem make_problem(const hopattn_gemm_args_t& args);

}  // namespace hopattn::gemm
