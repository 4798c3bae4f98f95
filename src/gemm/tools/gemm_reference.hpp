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

}  // namespace hopattn::gemm::tools
