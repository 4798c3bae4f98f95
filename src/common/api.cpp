// Small pieces of the public API that belong to no operation.
#include <cuda_runtime.h>

#include <string>

#include "common/cuda_check.hpp"
#include "hopattn/hopattn.hpp"
#include "hopattn/kvcache.hpp"  // tensor_seqlens

namespace hopattn {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotSupported: return "not supported";
    case StatusCode::kCudaError: return "CUDA error";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Tensor tensor_lse(float* data, long long batch, long long heads, long long seqlen) {
  Tensor t{};
  t.data = data;
  t.dtype = HOPATTN_DTYPE_FP32;
  t.rank = 3;
  t.shape[0] = batch, t.shape[1] = heads, t.shape[2] = seqlen;
  t.stride[2] = 1, t.stride[1] = seqlen, t.stride[0] = heads * seqlen;
  return t;
}

Tensor tensor_lse_varlen(float* data, long long heads, long long total) {
  Tensor t{};
  t.data = data;
  t.dtype = HOPATTN_DTYPE_FP32;
  t.rank = 2;
  t.shape[0] = heads, t.shape[1] = total;
  t.stride[1] = 1, t.stride[0] = total;
  return t;
}

Tensor tensor_cu_seqlens(int32_t* data, long long batch) { return tensor_seqlens(data, batch + 1); }

Tensor tensor_sinks(float* data, long long heads_q) {
  Tensor t{};
  t.data = data;
  t.dtype = HOPATTN_DTYPE_FP32;
  t.rank = 1;
  t.shape[0] = heads_q;
  t.stride[0] = 1;
  return t;
}

Tensor tensor_descale(float* data, long long batch, long long heads_kv) {
  Tensor t{};
  t.data = data;
  t.dtype = HOPATTN_DTYPE_FP32;
  t.rank = 2;
  t.shape[0] = batch, t.shape[1] = heads_kv;
  t.stride[0] = heads_kv, t.stride[1] = 1;
  return t;
}

bool has_sm90_gpu(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    if (why) *why = err != cudaSuccess ? cuda_error_string(err, "cudaGetDeviceCount") : "no CUDA device";
    return false;
  }
  std::string seen;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    if (prop.major == 9) return true;
    seen += (seen.empty() ? "" : ", ") + std::string(prop.name) + " (sm_" +
            std::to_string(prop.major) + std::to_string(prop.minor) + ")";
  }
  if (why) *why = "no sm_90 GPU; found " + seen;
  return false;
}

}  // namespace hopattn

extern "C" {

hopattn_tensor_t hopattn_tensor_bshd(void* data, hopattn_dtype_t dtype, int64_t batch,
                                     int64_t seqlen, int64_t heads, int64_t hdim) {
  hopattn_tensor_t t{};
  t.data = data;
  t.dtype = dtype;
  t.rank = 4;
  t.shape[0] = batch, t.shape[1] = seqlen, t.shape[2] = heads, t.shape[3] = hdim;
  t.stride[3] = 1, t.stride[2] = hdim, t.stride[1] = heads * hdim, t.stride[0] = seqlen * heads * hdim;
  return t;
}

hopattn_tensor_t hopattn_tensor_thd(void* data, hopattn_dtype_t dtype, int64_t total, int64_t heads, int64_t hdim) {
  hopattn_tensor_t t{};
  t.data = data;
  t.dtype = dtype;
  t.rank = 3;
  t.shape[0] = total, t.shape[1] = heads, t.shape[2] = hdim;
  t.stride[2] = 1, t.stride[1] = hdim, t.stride[0] = heads * hdim;
  return t;
}

const char* hopattn_dtype_name(hopattn_dtype_t dtype) {
  switch (dtype) {
    case HOPATTN_DTYPE_BF16: return "bf16";
    case HOPATTN_DTYPE_FP16: return "fp16";
    case HOPATTN_DTYPE_FP32: return "fp32";
    case HOPATTN_DTYPE_E4M3: return "e4m3";
    case HOPATTN_DTYPE_INT8: return "int8";
    case HOPATTN_DTYPE_INT32: return "int32";
  }
  return "unknown";
}

#define HOPATTN_STR_(x) #x
#define HOPATTN_STR(x) HOPATTN_STR_(x)
const char* hopattn_version(void) {
  return HOPATTN_STR(HOPATTN_VERSION_MAJOR) "." HOPATTN_STR(HOPATTN_VERSION_MINOR) "." HOPATTN_STR(HOPATTN_VERSION_PATCH);
}

int32_t hopattn_abi_version(void) { return HOPATTN_ABI_VERSION; }

}  // extern "C"
