#include "gemm/tools/cublas_gemm.hpp"

#include <cublas_v2.h>

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
  const int m = int(a.a.shape[0]), k = int(a.a.shape[1]), n = int(a.b.shape[1]);
  // cuBLAS is column-major. A column-major D is computed as op(A)·op(B); a row-major D as its
  // transpose Dᵀ = op(B)ᵀ·op(A)ᵀ, which swaps the operands and flips each one's transpose flag.
  const bool d_row = row_major(a.d);
  const Tensor& first = d_row ? a.b : a.a;
  const Tensor& second = d_row ? a.a : a.b;
  const int rows = d_row ? n : m, cols = d_row ? m : n;
  const cublasOperation_t op1 = (row_major(first) == d_row) ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op2 = (row_major(second) == d_row) ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasStatus_t st =
      cublasGemmEx(h, op1, op2, rows, cols, k, &a.alpha, first.data, cuda_type(first.dtype), int(leading_dim(first)),
                   second.data, cuda_type(second.dtype), int(leading_dim(second)), &a.beta, a.d.data,
                   cuda_type(a.d.dtype), int(leading_dim(a.d)), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS)
    return Status(StatusCode::kInternal, std::string("cublasGemmEx: ") + cublasGetStatusString(st));
  return Status();
}

}  // namespace hopattn::gemm::tools
