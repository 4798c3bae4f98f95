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
  int sm_count = 0;  // the device's SMs, queried at run time: a persistent grid's size limit
                     // (0: unknown, one CTA per tile)
};

// D as a TMA store sees it: contiguous along N (row-major) or along M, and the leading
// dimension in elements. A stride of an extent-1 dimension is never used, so it is replaced by
// the contiguous extent rounded up to 16 bytes (TMA wants a 16-byte multiple even when unused).
struct OutputLayout {
  bool row_major = true;
  int64_t ld = 0;
};

inline OutputLayout output_layout(const GemmProblem& p, int element_bytes) {
  const bool row_ok = p.d_stride_n == 1 || p.n <= 1;
  const bool col_ok = p.d_stride_m == 1 || p.m <= 1;
  OutputLayout l;
  l.row_major = row_ok && (!col_ok || p.m <= 1 || p.n > 1);
  const int64_t per_16b = 16 / element_bytes;
  const int64_t extent = l.row_major ? p.n : p.m;
  const bool single = l.row_major ? p.m <= 1 : p.n <= 1;
  l.ld = single ? (extent + per_16b - 1) / per_16b * per_16b : (l.row_major ? p.d_stride_m : p.d_stride_n);
  return l;
}

// Builds the canonical problem from arguments that passed check_gemm (variant left as given).
GemmProblem make_problem(const hopattn_gemm_args_t& args);

}  // namespace hopattn::gemm
