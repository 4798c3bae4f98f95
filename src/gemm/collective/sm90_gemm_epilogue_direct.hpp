// Epilogue from registers straight to global memory: D = alpha·acc + beta·C, one element per
// accumulator register, predicated on the problem's M and N (residue tiles). C is read only when
// beta != 0, so a NaN-filled (or absent) C cannot leak into D when beta == 0. D and C take any
// strides and the output type (bf16, fp16, fp32) is chosen at run time: the store loop is the
// only code that depends on it.
#pragma once

#include <cstdint>

#include <cute/tensor.hpp>
#include <cutlass/bfloat16.h>
#include <cutlass/half.h>

#include "gemm/device/gemm_problem.hpp"

namespace hopattn::gemm {

struct DirectEpilogueParams {
  void* d = nullptr;
  const void* c = nullptr;
  int64_t d_stride_m = 0, d_stride_n = 0;
  int64_t c_stride_m = 0, c_stride_n = 0;
  float alpha = 1.0f, beta = 0.0f;
  int m = 0, n = 0;
  hopattn_dtype_t out_dtype = HOPATTN_DTYPE_BF16;
};

inline DirectEpilogueParams make_direct_epilogue_params(const GemmProblem& p) {
  DirectEpilogueParams e;
  e.d = p.d, e.c = p.c;
  e.d_stride_m = p.d_stride_m, e.d_stride_n = p.d_stride_n;
  e.c_stride_m = p.c_stride_m, e.c_stride_n = p.c_stride_n;
  e.alpha = p.alpha, e.beta = p.beta;
  e.m = p.m, e.n = p.n;
  e.out_dtype = p.out_dtype;
  return e;
}

template <class Out, class Accum, class Coords>
CUTE_DEVICE void store_direct_as(const DirectEpilogueParams& p, const Accum& acc, const Coords& coords,
                                 int m0, int n0) {
  Out* d = static_cast<Out*>(p.d);
  const Out* c = static_cast<const Out*>(p.c);
  const bool read_c = p.beta != 0.0f;
  CUTE_UNROLL
  for (int i = 0; i < cute::size(acc); ++i) {
    const int m = m0 + int(cute::get<0>(coords(i)));
    const int n = n0 + int(cute::get<1>(coords(i)));
    if (m < p.m && n < p.n) {
      float v = p.alpha * acc(i);
      if (read_c) v += p.beta * float(c[m * p.c_stride_m + n * p.c_stride_n]);
      d[m * p.d_stride_m + n * p.d_stride_n] = Out(v);
    }
  }
}

// acc: `thread`'s accumulators (MMA, MMA_M, MMA_N) of the (BLK_M, BLK_N) tile (m_blk, n_blk).
template <class TiledMma, int kBlockM, int kBlockN, class Accum>
CUTE_DEVICE void store_direct(const DirectEpilogueParams& p, const Accum& acc, int thread, int m_blk, int n_blk) {
  using namespace cute;
  cute::Tensor cD = make_identity_tensor(make_shape(Int<kBlockM>{}, Int<kBlockN>{}));  // (BLK_M, BLK_N) -> (m, n)
  cute::Tensor tCcD = TiledMma{}.get_slice(thread).partition_C(cD);                     // (MMA, MMA_M, MMA_N)
  const int m0 = m_blk * kBlockM, n0 = n_blk * kBlockN;
  switch (p.out_dtype) {
    case HOPATTN_DTYPE_FP32: store_direct_as<float>(p, acc, tCcD, m0, n0); break;
    case HOPATTN_DTYPE_FP16: store_direct_as<cutlass::half_t>(p, acc, tCcD, m0, n0); break;
    default: store_direct_as<cutlass::bfloat16_t>(p, acc, tCcD, m0, n0); break;
  }
}

}  // namespace hopattn::gemm
