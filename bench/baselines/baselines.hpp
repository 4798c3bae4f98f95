// The libraries hopattn is measured against: cuDNN's SDPA forward (through the dlopen'ed plugin)
// and cuBLAS GEMM. Tools and tests use these; libhopattn itself never does.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "hopattn/hopattn.hpp"

namespace hopattn::baselines {

class CudnnSdpa {
 public:
  // Loads libhopattn_cudnn.so (next to libhopattn.so, or $HOPATTN_CUDNN_PLUGIN) and through it
  // libcudnn. Returns nullptr and says why when either cannot be loaded.
  // cudnn_library: a libcudnn.so.9 to use instead of the loader's first (e.g. PyTorch's, in
  // site-packages/nvidia/cudnn/lib: the newest cuDNN on a machine is often not the system one).
  // It is loaded first, globally, so the plugin's libcudnn.so.9 dependency resolves to it.
  static std::unique_ptr<CudnnSdpa> load(std::string* why, const std::string& cudnn_library = "");
  ~CudnnSdpa();

  size_t version() const;  // cudnnGetVersion() of the library actually loaded, e.g. 91400
  std::string version_string() const;
  // Runs cuDNN's SDPA forward: 16-bit inputs through its SDPA, e4m3 inputs through its FP8 SDPA
  // (cudnn_plugin_abi.h, hopattn_cudnn_sdpa_fp8_forward: o bf16, fp16 or e4m3, per-tensor or no
  // descales, scale_s 256). The first call for a new problem builds and caches a graph. What cuDNN
  // (or a plugin without the FP8 entry point) does not take is kNotSupported with the reason.
  Status forward(const AttentionForwardArgs& args, Stream stream) const;
  // Whether the loaded plugin has the FP8 entry point (a plugin built before it has not).
  bool has_fp8() const { return fp8_forward_ != nullptr; }

 private:
  CudnnSdpa() = default;
  void* handle_ = nullptr;
  std::string path_;
  size_t (*version_)(void) = nullptr;
  int (*forward_)(const hopattn_attention_fwd_args_t*, void*, char*, size_t) = nullptr;
  int (*fp8_forward_)(const hopattn_attention_fwd_args_t*, void*, char*, size_t) = nullptr;  // optional
};

// Row-major D(m×n) = A(m×k)·B(k×n) in bf16 with float accumulation, through cuBLAS
// (cublasGemmEx, CUBLAS_COMPUTE_32F). Pointers are device memory; strides are contiguous.
class CublasGemm {
 public:
  CublasGemm();
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;
  Status gemm_bf16(int m, int n, int k, const void* a, const void* b, void* d, Stream stream);

 private:
  void* handle_ = nullptr;
};

}  // namespace hopattn::baselines
