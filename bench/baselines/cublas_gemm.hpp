// cuBLAS as the GEMM baseline and large-size reference: the same arguments as hopattn::gemm::gemm
// (any of the four A/B layouts, bf16/fp16 in, bf16/fp16/fp32 out, alpha/beta), through
// cublasGemmEx with fp32 compute. cuBLAS updates D in place, so beta != 0 needs c to be d itself.
//
// run() is the speed baseline: cuBLAS's default algorithm for the requested output type. With a
// 16-bit D that algorithm may split K and add the partial sums in the output type (cuBLAS's
// "reduced precision reduction", on by default; CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION
// turns it off), so its error is up to an output ulp of the partial sums, not of the result: on
// the H200, m=1024 n=3000 k=4096 (ccr) gave D(0,6) = 0.9297 where the fp64 value of the same bf16
// inputs is 0.7807. A reference must therefore come from product_fp32(), never from run().
#pragma once

#include <cstdint>

#include "gemm/gemm.hpp"

namespace hopattn::gemm::tools {

// How one GemmArgs maps onto column-major cublasGemmEx(op1, op2, rows, cols, k, first, ld_first,
// second, ld_second, d, ld_d). A column-major D is op(A)·op(B); a row-major D is computed as its
// transpose Dᵀ = op(B)ᵀ·op(A)ᵀ, which swaps the operands and flips each one's transpose flag.
// Plain data, no cuBLAS types: the host tests evaluate it on small matrices for every layout.
struct CublasCall {
  const Tensor* first = nullptr;
  const Tensor* second = nullptr;
  bool transpose_first = false, transpose_second = false;
  int64_t rows = 0, cols = 0, k = 0;
  int64_t ld_first = 0, ld_second = 0, ld_d = 0;
};
CublasCall plan_cublas_call(const GemmArgs& args);

class CublasGemm {
 public:
  CublasGemm();
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  // D = alpha·A·B + beta·C in D's type (the baseline; see above for its rounding).
  Status run(const GemmArgs& args, Stream stream);
  // The reference: alpha·A·B in fp32 into `product`, a dense row-major (M, N) fp32 device buffer
  // (M·N floats). An fp32 output keeps every reduction inside cuBLAS in fp32; the caller adds
  // beta·C itself (compare_with_library does, in fp64).
  Status product_fp32(const GemmArgs& args, float* product, Stream stream);

 private:
  void* handle_ = nullptr;
};

// cuBLASLt for e4m3 inputs: the FP8 speed baseline (and an fp32 product for `hopattn gemm
// --check`). cuBLASLt takes FP8 only in its "TN" form — in column-major terms A transposed, B not:
// both operands K-major, which is exactly what hopattn's e4m3 GEMM accepts (A row-major, B
// column-major); plan_cublas_call then yields (T, N) for either D layout. Per-tensor scales go in
// as device floats (CUBLASLT_MATMUL_DESC_A/B_SCALE_POINTER), uploaded when they change; alpha and
// beta stay host floats, so D = alpha·scale_a·scale_b·A·B + beta·C as in hopattn_gemm_args_t.
// Compute type fp32. A 32 MiB workspace is allocated with the object.
//
// fast_accum: CUBLASLT_MATMUL_DESC_FAST_ACCUM. Off (cuBLASLt's default) cuBLASLt promotes the
// tensor cores' partial sums into fp32 registers periodically; on it accumulates in the tensor
// cores only, as hopattn's kernel does (see gemm_reference.hpp for that precision).
class CublasLtFp8 {
 public:
  CublasLtFp8();
  ~CublasLtFp8();
  CublasLtFp8(const CublasLtFp8&) = delete;
  CublasLtFp8& operator=(const CublasLtFp8&) = delete;

  // D = alpha·scale_a·scale_b·A·B + beta·C in D's type (bf16, fp16 or fp32); beta != 0 needs c == d.
  Status run(const GemmArgs& args, Stream stream, bool fast_accum = false);
  // alpha·scale_a·scale_b·A·B into a dense row-major (M, N) fp32 device buffer.
  Status product_fp32(const GemmArgs& args, float* product, Stream stream);

 private:
  void* handle_ = nullptr;
  void* workspace_ = nullptr;
  static constexpr int kScaleStride = 64;  // floats: 256 bytes between the two scales
  float* scales_ = nullptr;  // device: scale of cuBLASLt's A at 0, of its B at kScaleStride
  float uploaded_[2] = {0.0f, 0.0f};
  // The heuristic's algorithm for the last problem (a cublasLtMatmulAlgo_t, 8 x uint64): the
  // heuristic query costs more host time than a small GEMM takes on the GPU.
  int64_t algo_key_[8] = {};
  uint64_t algo_[8] = {};
  bool algo_valid_ = false;
};

}  // namespace hopattn::gemm::tools
