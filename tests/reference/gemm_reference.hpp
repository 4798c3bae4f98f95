// Host-side GEMM helpers for the tests, `hopattn gemm --check` and the bench: dense host copies
// of strided device matrices, the fp64 reference and the error tolerance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hopattn/gemm.h"
#include "hopattn/hopattn.hpp"

namespace hopattn::gemm::tools {

// A matrix on the host as dense row-major floats (values exactly as stored on the device).
struct HostMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> v;
  float at(int64_t i, int64_t j) const { return v[size_t(i * cols + j)]; }
};

// Elements a rank-2 descriptor spans in memory: max offset + 1 (0 when empty).
int64_t storage_elements(const Tensor& t);
// Copies a strided device matrix to the host (synchronous).
HostMatrix download_matrix(const Tensor& t);

// fp64 reference of D = alpha·A·B + beta·C (c may be null when beta == 0) and, per element,
// the magnitude bound sum_k |alpha·a_ik·b_kj| + |beta·c_ij| that scales the rounding error.
struct Reference {
  std::vector<double> d, magnitude;
};
Reference reference_gemm(const HostMatrix& a, const HostMatrix& b, const HostMatrix* c, float alpha, float beta);

// Allowed |D - reference|: fp32 accumulation over K (2^-18 of the magnitude bound: the tensor
// cores' fp32 accumulation truncates, so its error grows with K/16 accumulator updates) plus
// rounding to the output type (half an ulp of the reference: 2^-8 bf16, 2^-11 fp16, 2^-24 fp32).
double tolerance(double reference, double magnitude, hopattn_dtype_t out_dtype);
// Ours against a library's fp32 result of the same product (cublas_gemm.hpp: product_fp32), inputs
// of unit scale. Both accumulate in fp32 in different orders: the accumulation term is derived
// from K (K·2^-19 · scale², a few accumulator ulps per k16 step). The reference keeps fp32, so
// only our output is rounded to the output type: half an ulp of the value (2^-8 bf16, 2^-11 fp16,
// 2^-24 fp32). A reference rounded to the output type (let alone reduced in it) would need more:
// see cublas_gemm.hpp for the 0.149 error cuBLAS showed at K = 4096 with a bf16 output.
double tolerance_vs_library(double value, int64_t k, double input_scale, hopattn_dtype_t out_dtype);

// The first element of `d` (poisoned before the run) that breaks the tolerance, NaN included;
// returns "" when all match, else a message with the coordinates and values.
std::string compare_with_reference(const HostMatrix& d, const Reference& ref, hopattn_dtype_t out_dtype);
// `product`: the library's alpha·A·B in fp32 (dense row-major, M x N); the reference is
// product + beta·C, added here in fp64 (c may be null when beta == 0).
std::string compare_with_library(const HostMatrix& d, const HostMatrix& product, const HostMatrix* c, float beta,
                                 int64_t k, double input_scale, hopattn_dtype_t out_dtype);

// ---- FP8 (e4m3) ---------------------------------------------------------------------------------
// Hopper's FP8 WGMMA does not accumulate in fp32. The model used here (measured by third parties
// on H800/H100: DeepSeek-V3 technical report §3.5.2, SageAttention2; not documented by NVIDIA):
// per k32 instruction, the 32 products are aligned to the largest one's exponent and only the
// top 14 bits (sign included) of each are kept, the rest truncated; the sum is added to the
// accumulator, which keeps 13 mantissa bits (truncated). So the error of one element is bounded
// by a sum over the k32 steps s of
//   sum over the step's products p of min(|p|, ulp_s)   ulp_s = 2^(floor(log2 max|p|) - 11)
//                                                       (the window's lowest bit; a product mantissa
//                                                       may carry into 2^1, hence -11, not -12),
//                                                       0 for a product on the ulp_s grid
//   + 2^(floor(log2 |S_s|) - 12)                        the accumulator's truncation (13 mantissa
//                                                       bits, one bit of margin), 0 when the partial
//                                                       sum S_s lies on that grid
// times kFp8ModelMargin (the model is a third party's, measured on other parts). The steps follow
// the kernel's K order (k-tiles in order, k32 WGMMAs in order). Inputs on a small-integer grid
// (tools::E4m3Values::kSmallIntegers, partial sums below 2^12) make every term 0: the product is
// then exact and the test as strict as for fp32 output rounding alone.
constexpr double kFp8ModelMargin = 2.0;
constexpr int kFp8StepK = 32;  // K of one e4m3 WGMMA instruction

// The accumulation bound of one dot product from its K products, in the order above.
double fp8_accumulation_bound(const double* products, int64_t k);

// fp64 D = alpha·A·B + beta·C (alpha: alpha·scale_a·scale_b, in fp64) of decoded e4m3 A and B,
// and per element the bound |alpha|·fp8_accumulation_bound and |beta·c| for the tolerance.
// Rows run on several threads (the sweep has products of up to 1000 x 1000 x 4096).
struct Fp8Reference {
  std::vector<double> d, accumulation_bound, c_term;
};
Fp8Reference reference_gemm_e4m3(const HostMatrix& a, const HostMatrix& b, const HostMatrix* c, double alpha,
                                 float beta);
// Allowed |D - reference|: the accumulation bound, the fp32 epilogue (alpha·acc + beta·c: a few
// 2^-24 of each term) and half an ulp of the output type.
double tolerance_e4m3(double reference, double accumulation_bound, double c_term, hopattn_dtype_t out_dtype);
// The first element of `d` (poisoned before the run) that breaks tolerance_e4m3, NaN included;
// "" when all match.
std::string compare_with_e4m3_reference(const HostMatrix& d, const Fp8Reference& ref, hopattn_dtype_t out_dtype);

}  // namespace hopattn::gemm::tools
