// seqlen_k == 0: every query row attends to nothing, so O = 0 and LSE = -inf (the head's sink with
// attention sinks: the denominator holds only it). The outputs are
// strided, so a memset cannot do it; one small grid-stride kernel writes both.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "attention/device/forward_dispatch.hpp"
#include "common/cuda_check.hpp"

namespace hopattn::attention {
namespace {

// One thread per output element (of O) and per row (of LSE); O is 16-bit (bf16 for e4m3 inputs).
__global__ void fill_empty_attention_kernel(FwdParams p) {
  const int64_t rows = int64_t(p.batch) * p.seqlen_q * p.heads_q;
  const int64_t total = rows * p.hdim;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / p.hdim;
    const int d = int(i % p.hdim);
    const int h = int(row % p.heads_q);
    const int64_t bs = row / p.heads_q;
    const int s = int(bs % p.seqlen_q);
    const int b = int(bs / p.seqlen_q);
    uint16_t* o = static_cast<uint16_t*>(p.o);
    o[b * p.o_batch_stride + s * p.o_seq_stride + h * p.o_head_stride + d] = 0;  // +0.0 in bf16 and fp16
    if (d == 0 && p.lse != nullptr)
      p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + s * p.lse_seq_stride] =
          p.sinks != nullptr ? p.sinks[h] : -std::numeric_limits<float>::infinity();
  }
}

}  // namespace

Status write_empty_attention(const FwdParams& p, Stream stream) {
  const int64_t total = int64_t(p.batch) * p.seqlen_q * p.heads_q * p.hdim;
  const int threads = 256;
  const int blocks = int(std::min<int64_t>((total + threads - 1) / threads, 4096));
  fill_empty_attention_kernel<<<blocks, threads, 0, stream>>>(p);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status();
}

}  // namespace hopattn::attention
