#include "baselines/baselines.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "baselines/cudnn_plugin_abi.h"

namespace hopattn::baselines {
namespace {

// The plugin sits next to libhopattn.so; find that file through one of its symbols.
std::string default_plugin_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&hopattn_version), &info) && info.dli_fname) {
    std::string lib = info.dli_fname;
    const size_t slash = lib.rfind('/');
    return (slash == std::string::npos ? std::string(".") : lib.substr(0, slash)) + "/libhopattn_cudnn.so";
  }
  return "libhopattn_cudnn.so";
}

}  // namespace

std::unique_ptr<CudnnSdpa> CudnnSdpa::load(std::string* why, const std::string& cudnn_library) {
  if (!cudnn_library.empty() && dlopen(cudnn_library.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    if (why) *why = "cannot load the cuDNN library " + cudnn_library + ": " + dlerror();
    return nullptr;
  }
  const char* env = std::getenv("HOPATTN_CUDNN_PLUGIN");
  const std::string path = env && *env ? env : default_plugin_path();
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    if (why) *why = "cannot load the cuDNN baseline (" + path + "): " + dlerror();
    return nullptr;
  }
  auto abi = reinterpret_cast<hopattn_cudnn_plugin_abi_fn>(dlsym(h, "hopattn_cudnn_plugin_abi"));
  std::unique_ptr<CudnnSdpa> out(new CudnnSdpa());
  out->handle_ = h;
  out->version_ = reinterpret_cast<hopattn_cudnn_version_fn>(dlsym(h, "hopattn_cudnn_version"));
  out->forward_ = reinterpret_cast<hopattn_cudnn_sdpa_forward_fn>(dlsym(h, "hopattn_cudnn_sdpa_forward"));
  if (!abi || abi() != HOPATTN_CUDNN_PLUGIN_ABI || !out->version_ || !out->forward_) {
    if (why) *why = "the cuDNN baseline plugin " + path + " has a different ABI: rebuild it";
    return nullptr;
  }
  // Optional: a plugin built before the FP8 entry point loads without it (has_fp8() false).
  out->fp8_forward_ = reinterpret_cast<hopattn_cudnn_sdpa_fp8_forward_fn>(dlsym(h, "hopattn_cudnn_sdpa_fp8_forward"));
  out->path_ = path;
  return out;
}

CudnnSdpa::~CudnnSdpa() {
  // The plugin keeps cuDNN handles and graphs alive in static storage: never unload it.
}

size_t CudnnSdpa::version() const { return version_(); }

std::string CudnnSdpa::version_string() const {
  const size_t v = version();  // major*10000 + minor*100 + patch since cuDNN 9
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

Status CudnnSdpa::forward(const AttentionForwardArgs& args, Stream stream) const {
  // cuDNN's validate() rejects this case ("Bottom right causal mask does not support
  // max_s_q > max_s_kv"); report it as unsupported rather than as a failure.
  if (args.causal && args.q.shape[1] > args.k.shape[1])
    return Status::unsupported("cuDNN: a bottom-right causal mask needs seqlen_q <= seqlen_k");
  char err[1024] = {0};
  if (args.q.dtype == HOPATTN_DTYPE_E4M3) {
    if (fp8_forward_ == nullptr)
      return Status::unsupported("cuDNN: the baseline plugin " + path_ +
                                 " has no FP8 entry point (hopattn_cudnn_sdpa_fp8_forward): rebuild it");
    const int rc = fp8_forward_(&args, stream, err, sizeof(err));
    if (rc == HOPATTN_CUDNN_NOT_SUPPORTED) return Status::unsupported(std::string("cuDNN FP8: ") + err);
    if (rc != 0) return Status(StatusCode::kInternal, std::string("cuDNN FP8: ") + err);
    return Status();
  }
  if (forward_(&args, stream, err, sizeof(err)) != 0) return Status(StatusCode::kInternal, std::string("cuDNN: ") + err);
  return Status();
}

CublasGemm::CublasGemm() {
  cublasHandle_t h = nullptr;
  if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) handle_ = h;
}

CublasGemm::~CublasGemm() {
  if (handle_) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

Status CublasGemm::gemm_bf16(int m, int n, int k, const void* a, const void* b, void* d, Stream stream) {
  if (!handle_) return Status(StatusCode::kInternal, "cublasCreate failed");
  auto h = static_cast<cublasHandle_t>(handle_);
  cublasSetStream(h, stream);
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major D = A·B is column-major Dᵀ = Bᵀ·Aᵀ: swap the operands, no transposes.
  const cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_16BF, n,
                                         a, CUDA_R_16BF, k, &beta, d, CUDA_R_16BF, n,
                                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS)
    return Status(StatusCode::kInternal, std::string("cublasGemmEx: ") + cublasGetStatusString(st));
  return Status();
}

}  // namespace hopattn::baselines
