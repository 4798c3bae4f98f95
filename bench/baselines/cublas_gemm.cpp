#include "baselines/cublas_gemm.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace hopattn::gemm::tools {
namespace {

cudaDataType_t cuda_type(hopattn_dtype_t t) {
  switch (t) {
    case HOPATTN_DTYPE_BF16: return CUDA_R_16BF;
    case HOPATTN_DTYPE_FP16: return CUDA_R_16F;
    case HOPATTN_DTYPE_E4M3: return CUDA_R_8F_E4M3;
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

namespace {

constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;  // cuBLASLt's recommendation for Hopper

Status lt_status(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return Status();
  return Status(StatusCode::kInternal, std::string(what) + ": " + cublasGetStatusString(st));
}

// Owns the cuBLASLt descriptors of one call.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtDescriptors() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

float scale_or_one(float s) { return s == 0.0f ? 1.0f : s; }

}  // namespace

CublasLtFp8::CublasLtFp8() {
  cublasLtHandle_t h = nullptr;
  if (cublasLtCreate(&h) == CUBLAS_STATUS_SUCCESS) handle_ = h;
  if (cudaMalloc(&workspace_, kLtWorkspaceBytes) != cudaSuccess) workspace_ = nullptr;
  // Each scale on its own 256-byte boundary: cuBLASLt 13.1 refuses (NOT_SUPPORTED, after its
  // heuristic accepted the problem) a B scale pointer 4 bytes past A's (probe on the H200,
  // 2026-11-30 r6; separate aligned scales ran at 1530 TFLOP/s at 4096³).
  if (cudaMalloc(reinterpret_cast<void**>(&scales_), kScaleStride * 2 * sizeof(float)) != cudaSuccess) scales_ = nullptr;
}

CublasLtFp8::~CublasLtFp8() {
  if (scales_) cudaFree(scales_);
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

Status CublasLtFp8::run(const GemmArgs& a, Stream stream, bool fast_accum) {
  if (!handle_ || !workspace_ || !scales_) return Status(StatusCode::kInternal, "cuBLASLt: setup failed");
  if (a.a.dtype != HOPATTN_DTYPE_E4M3 || a.b.dtype != HOPATTN_DTYPE_E4M3)
    return Status::unsupported("cuBLASLt FP8 baseline: a and b must be e4m3");
  if (a.beta != 0.0f && a.c.data != a.d.data)
    return Status::unsupported("cuBLASLt FP8 baseline: beta != 0 needs c to be d (updated in place)");
  const CublasCall c = plan_cublas_call(a);
  if (!c.transpose_first || c.transpose_second)
    return Status::unsupported("cuBLASLt FP8 baseline: needs K-major operands (a row-major, b column-major)");
  // The first operand's scale: b's when D is row-major (plan_cublas_call computes Dᵀ = Bᵀ·Aᵀ).
  const float first = scale_or_one(c.first == &a.a ? a.scale_a : a.scale_b);
  const float second = scale_or_one(c.first == &a.a ? a.scale_b : a.scale_a);
  if (first != uploaded_[0] || second != uploaded_[1]) {
    const float host[2] = {first, second};
    if (cudaMemcpy(scales_, &host[0], sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(scales_ + kScaleStride, &host[1], sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
      return Status(StatusCode::kInternal, "cuBLASLt FP8 baseline: uploading the scales failed");
    uploaded_[0] = first, uploaded_[1] = second;
  }
  auto h = static_cast<cublasLtHandle_t>(handle_);
  const cudaDataType_t out = cuda_type(a.d.dtype);
  LtDescriptors l;
  if (Status s = lt_status(cublasLtMatmulDescCreate(&l.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate"); !s.ok())
    return s;
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  const void* scale_first = scales_;
  const void* scale_second = scales_ + kScaleStride;
  const int8_t fast = fast_accum ? 1 : 0;
  cublasLtMatmulDescSetAttribute(l.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t));
  cublasLtMatmulDescSetAttribute(l.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n));
  cublasLtMatmulDescSetAttribute(l.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_first, sizeof(scale_first));
  cublasLtMatmulDescSetAttribute(l.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_second, sizeof(scale_second));
  cublasLtMatmulDescSetAttribute(l.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast));
  // Column-major layouts: the first operand is stored (K, rows) and read transposed, the second
  // (K, cols), D (rows, cols); C has D's layout (in place).
  if (Status s = lt_status(cublasLtMatrixLayoutCreate(&l.a, CUDA_R_8F_E4M3, uint64_t(c.k), uint64_t(c.rows), c.ld_first),
                           "cublasLtMatrixLayoutCreate(A)");
      !s.ok())
    return s;
  if (Status s = lt_status(cublasLtMatrixLayoutCreate(&l.b, CUDA_R_8F_E4M3, uint64_t(c.k), uint64_t(c.cols), c.ld_second),
                           "cublasLtMatrixLayoutCreate(B)");
      !s.ok())
    return s;
  if (Status s = lt_status(cublasLtMatrixLayoutCreate(&l.d, out, uint64_t(c.rows), uint64_t(c.cols), c.ld_d),
                           "cublasLtMatrixLayoutCreate(D)");
      !s.ok())
    return s;
  if (Status s = lt_status(cublasLtMatmulPreferenceCreate(&l.pref), "cublasLtMatmulPreferenceCreate"); !s.ok()) return s;
  const uint64_t workspace = kLtWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(l.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
  static_assert(sizeof(cublasLtMatmulAlgo_t) == sizeof(algo_), "cublasLtMatmulAlgo_t is 8 x uint64");
  const int64_t key[8] = {c.rows, c.cols, c.k, c.ld_first, c.ld_second, c.ld_d, int64_t(out), fast};
  if (!algo_valid_ || !std::equal(key, key + 8, algo_key_)) {
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    if (Status s = lt_status(cublasLtMatmulAlgoGetHeuristic(h, l.op, l.a, l.b, l.d, l.d, l.pref, 1, &heuristic, &found),
                             "cublasLtMatmulAlgoGetHeuristic");
        !s.ok())
      return s;
    if (found == 0) return Status::unsupported("cuBLASLt FP8 baseline: no algorithm for this problem");
    std::memcpy(algo_, &heuristic.algo, sizeof(algo_));
    std::copy(key, key + 8, algo_key_);
    algo_valid_ = true;
  }
  cublasLtMatmulAlgo_t algo;
  std::memcpy(&algo, algo_, sizeof(algo));
  return lt_status(cublasLtMatmul(h, l.op, &a.alpha, c.first->data, l.a, c.second->data, l.b, &a.beta, a.d.data, l.d,
                                  a.d.data, l.d, &algo, workspace_, kLtWorkspaceBytes,
                                  static_cast<cudaStream_t>(stream)),
                   "cublasLtMatmul");
}

Status CublasLtFp8::product_fp32(const GemmArgs& args, float* product, Stream stream) {
  GemmArgs p = args;
  p.d = matrix(product, HOPATTN_DTYPE_FP32, args.a.shape[0], args.b.shape[1], true);
  p.c = p.d;
  p.beta = 0.0f;
  return run(p, stream, false);
}

}  // namespace hopattn::gemm::tools
