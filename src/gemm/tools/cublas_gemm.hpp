// cuBLAS as the GEMM baseline and large-size reference: the same arguments as hopattn::gemm::gemm
// (any of the four A/B layouts, bf16/fp16 in, bf16/fp16/fp32 out, alpha/beta), through
// cublasGemmEx with fp32 compute. cuBLAS updates D in place, so beta != 0 needs c to be d itself.
#pragma once

#include "gemm/gemm.hpp"

namespace hopattn::gemm::tools {

class CublasGemm {
 public:
  CublasGemm();
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  Status run(const GemmArgs& args, Stream stream);

 private:
  void* handle_ = nullptr;
};

}  // namespace hopattn::gemm::tools
