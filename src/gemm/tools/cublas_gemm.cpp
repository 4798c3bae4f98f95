#include "gemm/tools/cublas_gemm.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <string>

namespace hopattn::gemm::tools {
namespace {

cudaDataType_t cuda_type(hopattn_dtype_t t) {
  switch (t) {
    case HOPATTN_DTYPE_BF16: return CUDA_R_16BF;
    case HOPATTN_DTYPE_FP16: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

bool row_major(const Tensor& t) { return t.stride[1] == 1 && !(t.stride[0] == 1 && t.shape[1] <= 1 && t.shape[0] > 1); }
int64_t leading_dim(const Tensor& t) {
  const int64_t ld = row_major(t) ? t.stride[0] : t.stride[1];
  const int64_t minimum = row_major(t) ? t.shape[1] : t.shape[0];
  return ld < minimum || ld < 1 ? std::max<int64_t>(minimum, 1) : ld;  // unused when the other extent is 1
}

}  // namespace

CublasCall plan_cublas_call(const GemmArgs& a) {
  CublasCall c;
  const int64_t m = a.a.shape[0], k = a.a.shape[1], n = a.b.shape[1];
  const bool d_row = row_major(a.d);
  c.first = d_row ? &a.b : &a.a;
  c.second = d_row ? &a.a : &a.b;
  c.rows = d_row ? n : m, c.cols = d_row ? m : n, c.k = k;
  c.transpose_first = row_major(*c.first) != d_row;
  c.transpose_second = row_major(*c.second) != d_row;
  c.ld_first = leading_dim(*c.first), c.ld_second = leading_dim(*c.second), c.ld_d = leading_dim(a.d);
  return c;
}

CublasGemm::CublasGemm() {
  cublasHandle_t h = nullptr;
  if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) handle_ = h;
}

CublasGemm::~CublasGemm() {
  if (handle_) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

Status CublasGemm::run(const GemmArgs& a, Stream stream) {
  if (!handle_) return Status(StatusCode::kInternal, "cublasCreate failed");
  if (a.beta != 0.0f && a.c.data != a.d.data)
    return Status::unsupported("cuBLAS baseline: beta != 0 needs c to be d (cuBLAS updates in place)");
  auto h = static_cast<cublasHandle_t>(handle_);
  cublasSetStream(h, stream);
  const CublasCall c = plan_cublas_call(a);
  const cublasOperation_t op1 = c.transpose_first ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op2 = c.transpose_second ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasStatus_t st = cublasGemmEx(
      h, op1, op2, int(c.rows), int(c.cols), int(c.k), &a.alpha, c.first->data, cuda_type(c.first->dtype),
      int(c.ld_first), c.second->data, cuda_type(c.second->dtype), int(c.ld_second), &a.beta, a.d.data,
      cuda_type(a.d.dtype), int(c.ld_d), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS)
    return Status(StatusCode::kInternal, std::string("cublasGemmEx: ") + cublasGetStatusString(st));
  return Status();
}

Status CublasGemm::product_fp32(const GemmArgs& args, float* product, Stream stream) {
  GemmArgs p = args;
  p.d = matrix(product, HOPATTN_DTYPE_FP32, args.a.shape[0], args.b.shape[1], true);
  p.c = p.d;
  p.beta = 0.0f;
  return run(p, stream);
}

}  // namespace hopattn::gemm::tools
