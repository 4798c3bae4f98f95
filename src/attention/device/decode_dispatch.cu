// Decode dispatch: the compiled (dtype, head dim) instance for a DecodeParams, and the device
// record of bad cache_seqlens entries that the kernels write and hopattn_kvcache_device_check
// reads.
#include <cuda_runtime.h>

#include <string>

#include "attention/device/decode_dispatch.hpp"
#include "common/cuda_check.hpp"
#include "hopattn/hopattn.h"

namespace hopattn::attention {

#define HOPATTN_FWD_INSTANCE(ENUM, NAME, HDIM)                               \
  Status run_decode_##NAME##_hd##HDIM(const DecodeParams&, Stream);        \
  Status run_decode_combine_##NAME##_hd##HDIM(const DecodeParams&, Stream);
#include "fwd_instances.inc"
#undef HOPATTN_FWD_INSTANCE

namespace {
// {recorded (0/1), batch index, length}; one per device, in this library's module.
__device__ int32_t g_decode_error[3];
}  // namespace

Status decode_error_record(int32_t** ptr) {
  void* p = nullptr;
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetSymbolAddress(&p, g_decode_error));
  *ptr = static_cast<int32_t*>(p);
  return Status();
}

Status read_and_clear_decode_error(Stream stream, int32_t (&record)[3]) {
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream));
  int32_t* ptr = nullptr;
  if (Status s = decode_error_record(&ptr); !s.ok()) return s;
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaMemcpy(record, ptr, sizeof(record), cudaMemcpyDeviceToHost));
  if (record[0] != 0) HOPATTN_RETURN_IF_CUDA_ERROR(cudaMemset(ptr, 0, sizeof(record)));
  return Status();
}

Status run_decode(const DecodeParams& p, Stream stream) {
#define HOPATTN_FWD_INSTANCE(ENUM, NAME, HDIM) \
  if (p.dtype == ENUM && p.hdim == HDIM) return run_decode_##NAME##_hd##HDIM(p, stream);
#include "fwd_instances.inc"
#undef HOPATTN_FWD_INSTANCE
  return Status::unsupported(std::string("kvcache attention: no decode instance is compiled for dtype ") +
                             hopattn_dtype_name(p.dtype) + ", hdim " + std::to_string(p.hdim) + " in this build");
}

Status run_decode_combine(const DecodeParams& p, Stream stream) {
#define HOPATTN_FWD_INSTANCE(ENUM, NAME, HDIM) \
  if (p.dtype == ENUM && p.hdim == HDIM) return run_decode_combine_##NAME##_hd##HDIM(p, stream);
#include "fwd_instances.inc"
#undef HOPATTN_FWD_INSTANCE
  return Status::unsupported(std::string("kvcache attention: no decode instance is compiled for dtype ") +
                             hopattn_dtype_name(p.dtype) + ", hdim " + std::to_string(p.hdim) + " in this build");
}

}  // namespace hopattn::attention
