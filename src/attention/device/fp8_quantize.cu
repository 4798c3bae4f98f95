// FP8 quantization for the forward call's e4m3 inputs (hopattn_fp8_quantize): argument checks and
// four small kernels over the (batch, kv-head) groups (with hadamard = 1, each row rotated first in
// the amax and quantize kernels, a warp per row), in stream order: descale = 0; amax into it
// (a block reduction, then an integer atomicMax on the float's bits, exact for non-negative
// floats); out = e4m3(x / (amax / 448)); descale = amax / 448 (1 where amax is 0). The division and
// the conversion (round to nearest even, saturating) match the host reference
// (tests/reference/attention_fp8.cpp, quantize_e4m3) bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "attention/device/kvcache_int8_rounding.cuh"
#include "common/cuda_check.hpp"
#include "common/status_util.hpp"
#include "common/tensor_checks.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn {
namespace {

constexpr const char* kDims[4] = {"batch", "seqlen", "heads", "hdim"};
constexpr const char* kDescaleDims[2] = {"batch", "heads_kv"};
constexpr const char* kNames[3] = {"x", "out", "descale"};
constexpr int kThreads = 256;
#define HOPATTN_QUANT_UNROLL _Pragma("unroll")

struct QuantParams {
  const void* x;
  uint8_t* out;
  float* descale;
  int batch, seqlen, heads, hdim, heads_kv;
  int64_t x_st[3], out_st[3], ds_st[2];  // x, out: batch, seqlen, head strides; descale: batch, head
  bool bf16;
};

using int8_rounding::load_element;

// ---- hadamard = 1: each hdim row rotated (hopattn.h), a warp per row ----------------------------

// Row r of group g (r = t · group + h % group) -> its first element's offset in a tensor of strides st.
__device__ inline int64_t row_offset(const QuantParams& p, const int64_t (&st)[3], int g, int64_t r) {
  const int group = p.heads / p.heads_kv;
  const int h = (g % p.heads_kv) * group + int(r % group);
  return (g / p.heads_kv) * st[0] + (r / group) * st[1] + h * st[2];
}

// The rotation of one row held by a warp, kE elements per lane (element i = lane · kE + k; hdim =
// 32 · kE): the signs, the butterflies of stride 1, 2, ..., hdim / 2 ((a, b) -> (a + b, a - b) for
// the pair (i, i + stride)), one multiply by the float nearest 1/sqrt(hdim); the host reference
// (tests/reference/attention_fp8.cpp, hadamard_rotate) runs the same operations in the same order.
template <int kE>
__device__ inline void rotate_row(float (&v)[kE], int lane) {
  HOPATTN_QUANT_UNROLL
  for (int k = 0; k < kE; ++k) v[k] *= float(HOPATTN_FP8_HADAMARD_SIGN(lane * kE + k));
  HOPATTN_QUANT_UNROLL
  for (int h = 1; h < kE; h *= 2)  // strides within a lane
    HOPATTN_QUANT_UNROLL
    for (int k = 0; k < kE; ++k)
      if ((k & h) == 0) {
        const float a = v[k], b = v[k + h];
        v[k] = a + b, v[k + h] = a - b;
      }
  HOPATTN_QUANT_UNROLL
  for (int m = 1; m < 32; m *= 2) {  // strides kE · m: lane pairs (lane, lane ^ m)
    const bool low = (lane & m) == 0;
    HOPATTN_QUANT_UNROLL
    for (int k = 0; k < kE; ++k) {
      const float other = __shfl_xor_sync(0xffffffffu, v[k], m);
      v[k] = low ? v[k] + other : other - v[k];  // a + b on the lower index, a - b on the upper
    }
  }
  const float norm = 1.0f / sqrtf(float(32 * kE));  // the float nearest 1/sqrt(hdim): a power of two for 64·4^k
  HOPATTN_QUANT_UNROLL
  for (int k = 0; k < kE; ++k) v[k] *= norm;
}

template <int kE>
__device__ inline void load_row(const QuantParams& p, int g, int64_t r, int lane, float (&v)[kE]) {
  const int64_t base = row_offset(p, p.x_st, g, r);
  HOPATTN_QUANT_UNROLL
  for (int k = 0; k < kE; ++k) v[k] = load_element(p.x, base + lane * kE + k, p.bf16);
}

// The groups: g = b · heads_kv + hk, each of seqlen · (heads / heads_kv) · hdim elements.
__device__ inline int64_t group_elems(const QuantParams& p) {
  return int64_t(p.seqlen) * (p.heads / p.heads_kv) * p.hdim;
}
__device__ inline float* descale_of(const QuantParams& p, int g) {
  return p.descale + (g / p.heads_kv) * p.ds_st[0] + (g % p.heads_kv) * p.ds_st[1];
}
// Element e of group g: (b, t, h, d) -> the offset in a tensor of strides st.
__device__ inline int64_t offset_of(const QuantParams& p, const int64_t (&st)[3], int g, int64_t e) {
  const int group = p.heads / p.heads_kv;
  const int d = int(e % p.hdim);
  const int h = (g % p.heads_kv) * group + int(e / p.hdim % group);
  const int64_t t = e / (int64_t(p.hdim) * group);
  return (g / p.heads_kv) * st[0] + t * st[1] + h * st[2] + d;
}
__device__ inline float scale_of(float amax) { return amax > 0.0f ? amax / 448.0f : 1.0f; }

__global__ void zero_descale_kernel(QuantParams p) {
  const int groups = p.batch * p.heads_kv;
  for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += gridDim.x * blockDim.x) *descale_of(p, g) = 0.0f;
}

// Grid (chunks, groups): a block's amax over its chunk of the group, one atomicMax per block.
__global__ void amax_kernel(QuantParams p) {
  __shared__ float warp_max[kThreads / 32];
  const int groups = p.batch * p.heads_kv;
  const int64_t n = group_elems(p);
  for (int g = blockIdx.y; g < groups; g += gridDim.y) {
    float amax = 0.0f;  // fmaxf ignores NaN, as the host reference's std::max does
    for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x)
      amax = fmaxf(amax, fabsf(load_element(p.x, offset_of(p, p.x_st, g, e), p.bf16)));
    for (int off = 16; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
    if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kThreads / 32; ++w) amax = fmaxf(amax, warp_max[w]);
      atomicMax(reinterpret_cast<int*>(descale_of(p, g)), __float_as_int(amax));  // amax >= 0: ints order alike
    }
    __syncthreads();
  }
}

__global__ void quantize_kernel(QuantParams p) {
  const int groups = p.batch * p.heads_kv;
  const int64_t n = group_elems(p);
  for (int g = blockIdx.y; g < groups; g += gridDim.y) {
    const float scale = scale_of(*descale_of(p, g));  // the amax, until finalize_kernel
    for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
      const float v = load_element(p.x, offset_of(p, p.x_st, g, e), p.bf16) / scale;
      p.out[offset_of(p, p.out_st, g, e)] = uint8_t(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
    }
  }
}

// The rotated forms of amax_kernel and quantize_kernel: grid (chunks, groups), a warp per row.
template <int kE>
__global__ void rotated_amax_kernel(QuantParams p) {
  __shared__ float warp_max[kThreads / 32];
  const int groups = p.batch * p.heads_kv, lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int64_t rows = int64_t(p.seqlen) * (p.heads / p.heads_kv);
  for (int g = blockIdx.y; g < groups; g += gridDim.y) {
    float amax = 0.0f;
    for (int64_t r = blockIdx.x * int64_t(kThreads / 32) + warp; r < rows; r += int64_t(gridDim.x) * (kThreads / 32)) {
      float v[kE];
      load_row<kE>(p, g, r, lane, v);
      rotate_row<kE>(v, lane);
      HOPATTN_QUANT_UNROLL
      for (int k = 0; k < kE; ++k) amax = fmaxf(amax, fabsf(v[k]));
    }
    for (int off = 16; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
    if (lane == 0) warp_max[warp] = amax;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kThreads / 32; ++w) amax = fmaxf(amax, warp_max[w]);
      atomicMax(reinterpret_cast<int*>(descale_of(p, g)), __float_as_int(amax));
    }
    __syncthreads();
  }
}

template <int kE>
__global__ void rotated_quantize_kernel(QuantParams p) {
  const int groups = p.batch * p.heads_kv, lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int64_t rows = int64_t(p.seqlen) * (p.heads / p.heads_kv);
  for (int g = blockIdx.y; g < groups; g += gridDim.y) {
    const float scale = scale_of(*descale_of(p, g));  // the amax, until finalize_kernel
    for (int64_t r = blockIdx.x * int64_t(kThreads / 32) + warp; r < rows; r += int64_t(gridDim.x) * (kThreads / 32)) {
      float v[kE];
      load_row<kE>(p, g, r, lane, v);
      rotate_row<kE>(v, lane);
      const int64_t base = row_offset(p, p.out_st, g, r);
      HOPATTN_QUANT_UNROLL
      for (int k = 0; k < kE; ++k)
        p.out[base + lane * kE + k] = uint8_t(__nv_cvt_float_to_fp8(v[k] / scale, __NV_SATFINITE, __NV_E4M3));
    }
  }
}

template <int kE>
void launch_rotated(dim3 grid, const QuantParams& p, Stream stream) {
  rotated_amax_kernel<kE><<<grid, kThreads, 0, stream>>>(p);
  rotated_quantize_kernel<kE><<<grid, kThreads, 0, stream>>>(p);
}

__global__ void finalize_kernel(QuantParams p) {
  const int groups = p.batch * p.heads_kv;
  for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += gridDim.x * blockDim.x) {
    float* d = descale_of(p, g);
    *d = scale_of(*d);
  }
}

Status query_context(const Fp8QuantizeArgs& a, Stream stream, DeviceContext* ctx) {
  const void* ptrs[3] = {a.x.data, a.out.data, a.descale.data};
  return query_device_context(stream, ptrs, 3, ctx);
}

}  // namespace

Status check_fp8_quantize(const Fp8QuantizeArgs& a, const DeviceContext& ctx) {
  if (Status s = check_versioned_header<hopattn_fp8_quantize_args_t>(a, "args"); !s.ok()) return s;
  if (Status s = check_geometry(a.x, "x", 4, kDims); !s.ok()) return s;
  if (Status s = check_geometry(a.out, "out", 4, kDims); !s.ok()) return s;
  if (Status s = check_geometry(a.descale, "descale", 2, kDescaleDims); !s.ok()) return s;
  if (a.x.dtype != HOPATTN_DTYPE_BF16 && a.x.dtype != HOPATTN_DTYPE_FP16)
    return Status::unsupported(cat("x: dtype ", hopattn_dtype_name(a.x.dtype), " is not supported; supported: bf16, fp16"));
  if (a.out.dtype != HOPATTN_DTYPE_E4M3)
    return Status::invalid(cat("out: dtype must be e4m3, got ", hopattn_dtype_name(a.out.dtype)));
  if (a.descale.dtype != HOPATTN_DTYPE_FP32)
    return Status::invalid(cat("descale: dtype must be fp32, got ", hopattn_dtype_name(a.descale.dtype)));
  for (int i = 0; i < 4; ++i)
    if (a.out.shape[i] != a.x.shape[i])
      return Status::invalid(cat("out.shape[", i, "] (", kDims[i], ") = ", a.out.shape[i], " differs from x's ", a.x.shape[i]));
  const int64_t heads = a.x.shape[2], heads_kv = a.descale.shape[1];
  if (a.descale.shape[0] != a.x.shape[0])
    return Status::invalid(cat("descale.shape[0] (batch) = ", a.descale.shape[0], " differs from x's batch ", a.x.shape[0]));
  if (heads_kv == 0 ? heads != 0 : heads % heads_kv != 0)
    return Status::invalid(cat("descale.shape[1] (heads_kv) = ", heads_kv, " does not divide x's heads = ", heads));
  if (a.hadamard != 0 && a.hadamard != 1)
    return Status::invalid(cat("hadamard: must be 0 or 1, got ", a.hadamard));
  if (a.hadamard == 1 && (a.x.shape[3] < 32 || a.x.shape[3] > 256 || (a.x.shape[3] & (a.x.shape[3] - 1)) != 0))
    return Status::unsupported(cat("hadamard: hdim ", a.x.shape[3], " is not a power of two from 32 to 256"));
  const Tensor* ts[3] = {&a.x, &a.out, &a.descale};
  for (int i = 0; i < 2; ++i)
    if (ts[i]->stride[3] != 1 && ts[i]->shape[3] > 1)
      return Status::invalid(cat(kNames[i], ".stride[3] = ", ts[i]->stride[3], ": the last dimension (hdim) must be contiguous"));
  for (int i = 0; i < 3; ++i)
    if (Status s = check_pointer_and_alignment(*ts[i], kNames[i], i == 0 ? 2 : (i == 1 ? 1 : 4)); !s.ok()) return s;
  for (int out = 1; out < 3; ++out) {
    if (Status s = check_no_self_overlap(*ts[out], kNames[out]); !s.ok()) return s;
    for (int other = 0; other < 3; ++other)
      if (other != out && overlaps(byte_range(*ts[out]), byte_range(*ts[other])))
        return Status::invalid(cat(kNames[out], ": overlaps ", kNames[other], " in memory"));
  }
  return check_placement(ctx, kNames, 3);
}

Status fp8_quantize(const Fp8QuantizeArgs& a, Stream stream) {
  // The argument rules first: they need no device (a machine without a GPU still gets them).
  if (Status s = check_fp8_quantize(a, host_only_context()); !s.ok()) return s;
  DeviceContext ctx;
  if (Status s = query_context(a, stream, &ctx); !s.ok()) return s;
  if (Status s = check_fp8_quantize(a, ctx); !s.ok()) return s;
  if (is_empty(a.descale)) return Status();  // no group
  QuantParams p{a.x.data,
                static_cast<uint8_t*>(a.out.data),
                static_cast<float*>(a.descale.data),
                int(a.x.shape[0]), int(a.x.shape[1]), int(a.x.shape[2]), int(a.x.shape[3]), int(a.descale.shape[1]),
                {a.x.stride[0], a.x.stride[1], a.x.stride[2]},
                {a.out.stride[0], a.out.stride[1], a.out.stride[2]},
                {a.descale.stride[0], a.descale.stride[1]},
                a.x.dtype == HOPATTN_DTYPE_BF16};
  const int64_t groups = element_count(a.descale);
  const int64_t per_group = is_empty(a.x) ? 0 : element_count(a.x) / groups;
  const unsigned small = unsigned(std::min<int64_t>((groups + kThreads - 1) / kThreads, 1024));
  // About 4 waves of 256-thread blocks over all groups; each block strides over its group's chunk.
  const dim3 grid(unsigned(std::clamp<int64_t>((per_group + kThreads * 8 - 1) / (kThreads * 8), 1, 1024)),
                  unsigned(std::min<int64_t>(groups, 65535)));
  zero_descale_kernel<<<small, kThreads, 0, stream>>>(p);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  if (per_group > 0 && a.hadamard == 1) {
    // A warp per row: about 4 waves of 8-row blocks over each group's rows.
    const int64_t rows = per_group / a.x.shape[3];
    const dim3 row_grid(unsigned(std::clamp<int64_t>((rows + 8 * 8 - 1) / (8 * 8), 1, 1024)), grid.y);
    switch (a.x.shape[3]) {  // 32 · kE: the check allows 32, 64, 128, 256
      case 32: launch_rotated<1>(row_grid, p, stream); break;
      case 64: launch_rotated<2>(row_grid, p, stream); break;
      case 128: launch_rotated<4>(row_grid, p, stream); break;
      default: launch_rotated<8>(row_grid, p, stream); break;
    }
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  } else if (per_group > 0) {
    amax_kernel<<<grid, kThreads, 0, stream>>>(p);
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
    quantize_kernel<<<grid, kThreads, 0, stream>>>(p);
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  }
  finalize_kernel<<<small, kThreads, 0, stream>>>(p);
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status();
}

}  // namespace hopattn

extern "C" hopattn_status_t hopattn_fp8_quantize(const hopattn_fp8_quantize_args_t* args, void* stream) {
  return hopattn::versioned_c_call(args, [&](const hopattn::Fp8QuantizeArgs& a) {
    return hopattn::fp8_quantize(a, static_cast<hopattn::Stream>(stream));
  });
}
