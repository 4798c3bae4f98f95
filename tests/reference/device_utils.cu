#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/cuda_check.hpp"
#include "common/dtype.hpp"
#include "device_utils.hpp"

namespace hopattn::reference {
namespace {

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Box-Muller on two 32-bit uniforms from one hash of (seed, i).
__device__ __forceinline__ float normal_at(uint64_t seed, int64_t i) {
  const uint64_t h = splitmix64(seed * 0x632be59bd9b4e019ull + uint64_t(i));
  const float u1 = (float((h >> 40) & 0xffffffu) + 0.5f) * (1.0f / 16777216.0f);
  const float u2 = float((h >> 8) & 0xffffffu) * (1.0f / 16777216.0f);
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

template <typename T>
__global__ void fill_normal_kernel(T* p, int64_t n, uint64_t seed, float stddev) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = T(normal_at(seed, i) * stddev);
}

// INT8: the normal value rounded and clamped to the symmetric range [-127, 127] of the
// quantized KV cache (stddev in quantized units).
__global__ void fill_normal_int8_kernel(int8_t* p, int64_t n, uint64_t seed, float stddev) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = int8_t(fminf(fmaxf(rintf(normal_at(seed, i) * stddev), -127.0f), 127.0f));
}

template <typename T>
__global__ void fill_value_kernel(T* p, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = value;
}

int grid_for(int64_t n) { return int(std::clamp<int64_t>((n + 255) / 256, 1, 8192)); }

}  // namespace

void fill_normal(void* data, hopattn_dtype_t dtype, int64_t n, uint64_t seed, float stddev, Stream stream) {
  if (n == 0) return;
  switch (dtype) {
    case HOPATTN_DTYPE_BF16:
      fill_normal_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<__nv_bfloat16*>(data), n, seed, stddev);
      break;
    case HOPATTN_DTYPE_FP16:
      fill_normal_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<__half*>(data), n, seed, stddev);
      break;
    case HOPATTN_DTYPE_FP32:
      fill_normal_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<float*>(data), n, seed, stddev);
      break;
    case HOPATTN_DTYPE_E4M3:  // rounded to nearest even, saturated to ±448 (cuda_fp8.h)
      fill_normal_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data), n, seed, stddev);
      break;
    case HOPATTN_DTYPE_INT8:
      fill_normal_int8_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<int8_t*>(data), n, seed, stddev);
      break;
    default: throw std::runtime_error("fill_normal: unsupported dtype");
  }
  HOPATTN_CUDA_CHECK(cudaGetLastError());
}

void fill_nan(void* data, size_t element_size, int64_t n, Stream stream) {
  if (n == 0) return;
  switch (element_size) {
    case 2: fill_value_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<uint16_t*>(data), n, uint16_t(0x7fff)); break;
    case 4: fill_value_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<float*>(data), n, std::numeric_limits<float>::quiet_NaN()); break;
    case 8: fill_value_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<double*>(data), n, std::numeric_limits<double>::quiet_NaN()); break;
    default: throw std::runtime_error("fill_nan: unsupported element size");
  }
  HOPATTN_CUDA_CHECK(cudaGetLastError());
}

std::vector<float> download_as_float(const void* data, hopattn_dtype_t dtype, int64_t n) {
  std::vector<float> out(n);
  if (n == 0) return out;
  if (dtype == HOPATTN_DTYPE_FP32) {
    HOPATTN_CUDA_CHECK(cudaMemcpy(out.data(), data, n * 4, cudaMemcpyDeviceToHost));
    return out;
  }
  if (dtype == HOPATTN_DTYPE_E4M3) {
    std::vector<__nv_fp8_e4m3> bytes(n);
    HOPATTN_CUDA_CHECK(cudaMemcpy(bytes.data(), data, n, cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < n; ++i) out[i] = float(bytes[i]);
    return out;
  }
  std::vector<uint16_t> bits(n);
  HOPATTN_CUDA_CHECK(cudaMemcpy(bits.data(), data, n * 2, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < n; ++i) out[i] = bits_to_float(bits[i], dtype);
  return out;
}

void upload_from_float(void* data, hopattn_dtype_t dtype, const float* host, int64_t n) {
  if (n == 0) return;
  if (dtype == HOPATTN_DTYPE_FP32) {
    HOPATTN_CUDA_CHECK(cudaMemcpy(data, host, n * 4, cudaMemcpyHostToDevice));
    return;
  }
  std::vector<uint16_t> bits(n);
  for (int64_t i = 0; i < n; ++i) bits[i] = float_to_bits(host[i], dtype);
  HOPATTN_CUDA_CHECK(cudaMemcpy(data, bits.data(), n * 2, cudaMemcpyHostToDevice));
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) HOPATTN_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_, bytes_ = o.bytes_;
    o.ptr_ = nullptr;
  }
  return *this;
}

DeviceBuffer upload_ints(const std::vector<int32_t>& v) {
  DeviceBuffer buf(std::max<size_t>(v.size(), 1) * 4);
  if (!v.empty()) HOPATTN_CUDA_CHECK(cudaMemcpy(buf.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  return buf;
}

}  // namespace hopattn::reference
