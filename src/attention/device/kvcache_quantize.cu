// INT8 KV-cache quantization (hopattn_kvcache_quantize_int8): argument checks and two small
// kernels, K scaled per (block of quant_block tokens, kv-head, channel), V per (token, kv-head).
// Rounding (kvcache_int8_rounding.cuh) matches the host reference
// (tests/reference/kvcache_reference.cpp) bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "attention/device/kvcache_int8_rounding.cuh"
#include "common/cuda_check.hpp"
#include "common/status_util.hpp"
#include "common/tensor_checks.hpp"
#include "hopattn/kvcache.hpp"

namespace hopattn {
namespace {

constexpr const char* kDims[4] = {"batch", "seqlen", "heads", "hdim"};
constexpr const char* kKScaleDims[4] = {"batch", "blocks", "heads_kv", "hdim"};
constexpr const char* kVScaleDims[3] = {"batch", "seqlen", "heads_kv"};
constexpr const char* kNames[6] = {"k", "v", "k_int8", "v_int8", "k_scale", "v_scale"};

struct QuantParams {
  const void *k, *v;
  int8_t *kq, *vq;
  float *ks, *vs;
  int batch, len, heads, hdim, block;
  int64_t k_st[3], v_st[3], kq_st[3], vq_st[3], ks_st[3], vs_st[3];  // batch, seq/block, head strides
  bool bf16;
};

using int8_rounding::k_scale_of;
using int8_rounding::load_element;
using int8_rounding::quantize_value;
using int8_rounding::v_scale_of;

// One thread per (batch, block, head, channel): amax over the block's tokens, then quantize them.
__global__ void quantize_k_kernel(QuantParams p) {
  const int64_t blocks = p.len / p.block;
  const int64_t total = int64_t(p.batch) * blocks * p.heads * p.hdim;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int c = int(i % p.hdim);
    const int h = int(i / p.hdim % p.heads);
    const int blk = int(i / (int64_t(p.hdim) * p.heads) % blocks);
    const int b = int(i / (int64_t(p.hdim) * p.heads * blocks));
    auto src = [&](int t) { return b * p.k_st[0] + int64_t(t) * p.k_st[1] + h * p.k_st[2] + c; };
    float amax = 0.0f;
    for (int t = blk * p.block; t < (blk + 1) * p.block; ++t) amax = fmaxf(amax, fabsf(load_element(p.k, src(t), p.bf16)));
    const float scale = k_scale_of(amax);
    p.ks[b * p.ks_st[0] + blk * p.ks_st[1] + h * p.ks_st[2] + c] = scale;
    for (int t = blk * p.block; t < (blk + 1) * p.block; ++t)
      p.kq[b * p.kq_st[0] + int64_t(t) * p.kq_st[1] + h * p.kq_st[2] + c] =
          quantize_value(load_element(p.k, src(t), p.bf16), scale);
  }
}

// One warp per (batch, token, head): amax over the channels, then quantize them.
__global__ void quantize_v_kernel(QuantParams p) {
  const int64_t rows = int64_t(p.batch) * p.len * p.heads;
  const int lane = threadIdx.x % 32;
  for (int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32; r < rows;
       r += int64_t(gridDim.x) * blockDim.x / 32) {
    const int h = int(r % p.heads);
    const int t = int(r / p.heads % p.len);
    const int b = int(r / (int64_t(p.heads) * p.len));
    const int64_t src = b * p.v_st[0] + int64_t(t) * p.v_st[1] + h * p.v_st[2];
    float amax = 0.0f;
    for (int c = lane; c < p.hdim; c += 32) amax = fmaxf(amax, fabsf(load_element(p.v, src + c, p.bf16)));
    for (int off = 16; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
    const float scale = v_scale_of(amax);
    if (lane == 0) p.vs[b * p.vs_st[0] + int64_t(t) * p.vs_st[1] + h * p.vs_st[2]] = scale;
    const int64_t dst = b * p.vq_st[0] + int64_t(t) * p.vq_st[1] + h * p.vq_st[2];
    for (int c = lane; c < p.hdim; c += 32) p.vq[dst + c] = quantize_value(load_element(p.v, src + c, p.bf16), scale);
  }
}

bool same_shape(const Tensor& a, const Tensor& b) {
  for (int i = 0; i < 4; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

Status query_context(const KvCacheQuantizeArgs& a, Stream stream, DeviceContext* ctx) {
  const void* ptrs[6] = {a.k.data, a.v.data, a.k_int8.data, a.v_int8.data, a.k_scale.data, a.v_scale.data};
  return query_device_context(stream, ptrs, 6, ctx);
}

}  // namespace

Status check_kvcache_quantize(const KvCacheQuantizeArgs& a, const DeviceContext& ctx) {
  if (Status s = check_versioned_header<hopattn_kvcache_quantize_args_t>(a, "args"); !s.ok()) return s;
  const Tensor* ts[4] = {&a.k, &a.v, &a.k_int8, &a.v_int8};
  for (int i = 0; i < 4; ++i)
    if (Status s = check_geometry(*ts[i], kNames[i], 4, kDims); !s.ok()) return s;
  if (Status s = check_geometry(a.k_scale, "k_scale", 4, kKScaleDims); !s.ok()) return s;
  if (Status s = check_geometry(a.v_scale, "v_scale", 3, kVScaleDims); !s.ok()) return s;
  if (a.k.dtype != HOPATTN_DTYPE_BF16 && a.k.dtype != HOPATTN_DTYPE_FP16)
    return Status::unsupported(cat("k: dtype ", hopattn_dtype_name(a.k.dtype), " is not supported; supported: bf16, fp16"));
  if (a.v.dtype != a.k.dtype)
    return Status::invalid(cat("v: dtype ", hopattn_dtype_name(a.v.dtype), " does not match k's ", hopattn_dtype_name(a.k.dtype)));
  if (a.k_int8.dtype != HOPATTN_DTYPE_INT8 || a.v_int8.dtype != HOPATTN_DTYPE_INT8)
    return Status::invalid(cat(a.k_int8.dtype != HOPATTN_DTYPE_INT8 ? "k_int8" : "v_int8", ": dtype must be int8"));
  if (a.k_scale.dtype != HOPATTN_DTYPE_FP32 || a.v_scale.dtype != HOPATTN_DTYPE_FP32)
    return Status::invalid(cat(a.k_scale.dtype != HOPATTN_DTYPE_FP32 ? "k_scale" : "v_scale", ": dtype must be fp32"));
  for (int i = 1; i < 4; ++i)
    if (!same_shape(*ts[i], a.k)) return Status::invalid(cat(kNames[i], ": shape differs from k's"));
  for (int i = 0; i < 4; ++i)
    if (ts[i]->stride[3] != 1 && ts[i]->shape[3] > 1)
      return Status::invalid(cat(kNames[i], ": the last dimension (hdim) must be contiguous"));
  if (a.quant_block != 64 && a.quant_block != 128)
    return Status::invalid(cat("quant_block: ", a.quant_block, " is not 64 or 128"));
  const int64_t b = a.k.shape[0], len = a.k.shape[1], h = a.k.shape[2], d = a.k.shape[3];
  if (len % a.quant_block != 0)
    return Status::invalid(cat("k: seqlen ", len, " is not a multiple of quant_block = ", a.quant_block,
                               " (only full blocks are quantized)"));
  const Tensor &ks = a.k_scale, &vs = a.v_scale;
  if (ks.shape[0] != b || ks.shape[1] != len / a.quant_block || ks.shape[2] != h || ks.shape[3] != d)
    return Status::invalid(cat("k_scale: shape must be (batch, seqlen / quant_block, heads_kv, hdim) = (", b, ", ",
                               len / a.quant_block, ", ", h, ", ", d, ")"));
  if (vs.shape[0] != b || vs.shape[1] != len || vs.shape[2] != h)
    return Status::invalid(cat("v_scale: shape must be (batch, seqlen, heads_kv) = (", b, ", ", len, ", ", h, ")"));
  const Tensor* all[6] = {&a.k, &a.v, &a.k_int8, &a.v_int8, &a.k_scale, &a.v_scale};
  for (int i = 0; i < 6; ++i)
    if (Status s = check_pointer_and_alignment(*all[i], kNames[i], i < 2 ? 2 : (i < 4 ? 1 : 4)); !s.ok()) return s;
  for (int out = 2; out < 6; ++out)
    if (Status s = check_no_self_overlap(*all[out], kNames[out]); !s.ok()) return s;
  for (int out = 2; out < 6; ++out)
    for (int other = 0; other < 6; ++other)
      if (other != out && overlaps(byte_range(*all[out]), byte_range(*all[other])))
        return Status::invalid(cat(kNames[out], ": overlaps ", kNames[other], " in memory"));
  return check_placement(ctx, kNames, 6);
}

Status kvcache_quantize_int8(const KvCacheQuantizeArgs& a, Stream stream) {
  // The argument rules first: they need no device (a machine without a GPU still gets them).
  if (Status s = check_kvcache_quantize(a, host_only_context()); !s.ok()) return s;
  DeviceContext ctx;
  if (Status s = query_context(a, stream, &ctx); !s.ok()) return s;
  if (Status s = check_kvcache_quantize(a, ctx); !s.ok()) return s;
  if (is_empty(a.k)) return Status();
  QuantParams p{a.k.data, a.v.data, static_cast<int8_t*>(a.k_int8.data), static_cast<int8_t*>(a.v_int8.data),
                static_cast<float*>(a.k_scale.data), static_cast<float*>(a.v_scale.data),
                int(a.k.shape[0]), int(a.k.shape[1]), int(a.k.shape[2]), int(a.k.shape[3]), a.quant_block,
                {a.k.stride[0], a.k.stride[1], a.k.stride[2]}, {a.v.stride[0], a.v.stride[1], a.v.stride[2]},
                {a.k_int8.stride[0], a.k_int8.stride[1], a.k_int8.stride[2]},
                {a.v_int8.stride[0], a.v_int8.stride[1], a.v_int8.stride[2]},
                {a.k_scale.stride[0], a.k_scale.stride[1], a.k_scale.stride[2]},
                {a.v_scale.stride[0], a.v_scale.stride[1], a.v_scale.stride[2]},
                a.k.dtype == HOPATTN_DTYPE_BF16};
  const int threads = 256;
  const int64_t k_items = element_count(a.k_scale), v_rows = element_count(a.v_scale);
  quantize_k_kernel<<<unsigned(std::min<int64_t>((k_items + threads - 1) / threads, 8192)), threads, 0, stream>>>(p);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  quantize_v_kernel<<<unsigned(std::min<int64_t>((v_rows * 32 + threads - 1) / threads, 8192)), threads, 0, stream>>>(p);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status();
}

}  // namespace hopattn

extern "C" hopattn_status_t hopattn_kvcache_quantize_int8(const hopattn_kvcache_quantize_args_t* args, void* stream) {
  return hopattn::versioned_c_call(args, [&](const hopattn::KvCacheQuantizeArgs& a) {
    return hopattn::kvcache_quantize_int8(a, static_cast<hopattn::Stream>(stream));
  });
}
